"""``gpulab nvlink-status FILE``: read ``nvidia-smi nvlink --status`` output: active
links and their rate per GPU (GB/s per direction)."""
from __future__ import annotations

from .. import measurements, units
from .base import emit


def register(sub, fmt):
    """Add ``gpulab nvlink-status`` to the ``gpulab`` parser."""
    s = sub.add_parser("nvlink-status",
                       help="read `nvidia-smi nvlink --status` output")
    s.add_argument("file", help="file with the command's output")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_nvlink_status)


def _cmd_nvlink_status(args, out):
    try:
        with open(args.file, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"file: cannot read {args.file!r}: {exc.strerror}") from None
    status = measurements.parse_nvlink_status(text)
    rows = []
    for gpu, rates in status.items():
        active = [r for r in rates if r > 0]
        rows.append({"gpu": gpu, "links_active": len(active),
                     "links_total": len(rates),
                     "per_link_GBps": f"{active[0] / units.GB:g}" if active else "-",
                     "sum_GBps_per_direction": f"{sum(active) / units.GB:.1f}"})
    emit(rows, args.format, out)
    return 0
