"""``gpulab nvlink-status FILE``: read ``nvidia-smi nvlink --status`` output: active
links and their rate per GPU (GB/s per direction), and what is missing.

Each GPU's links are compared with the links per GPU of its generation (from
``gpulab/data``, when the name shows a known SXM GPU) and with the other GPUs of
the capture. A GPU with fewer links, inactive links, a capture that ends inside a
GPU's list, or GPUs missing (gaps in the indices, or below ``--gpus N``) each
print a warning line (``# WARNING: ...`` under the table, and on stderr) and the
exit status is 1.
"""
from __future__ import annotations

import sys

from .. import measurements, units
from .base import emit, positive_int, read_text_file


def register(sub, fmt):
    """Add ``gpulab nvlink-status`` to the ``gpulab`` parser."""
    s = sub.add_parser("nvlink-status",
                       help="read `nvidia-smi nvlink --status` output",
                       description="Read `nvidia-smi nvlink --status` output: links "
                                   "per GPU and their rate, checked against the "
                                   "GPU's generation; exit status 1 when links or "
                                   "GPUs are missing.")
    s.add_argument("file", help="file with the command's output")
    s.add_argument("--gpus", type=positive_int, metavar="N",
                   help="GPUs the machine has (reports those absent from the file)")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_nvlink_status)


def _cmd_nvlink_status(args, out):
    text = read_text_file(args.file, "`nvidia-smi nvlink --status` output")
    try:
        status = measurements.check_nvlink_status(text, n_gpus=args.gpus)
    except measurements.NVLinkStatusParseError as exc:
        raise ValueError(f"{args.file}: {exc}") from None
    rows = []
    for g in status.gpus:
        rows.append({"gpu": g["gpu"], "links_active": g["links_active"],
                     "links_total": g["links_listed"],
                     "links_expected": ("?" if g["links_expected"] is None
                                        else g["links_expected"]),
                     "per_link_GBps": (f"{g['per_link'] / units.GB:g}"
                                       if g["per_link"] else "-"),
                     "sum_GBps_per_direction":
                         f"{g['sum_per_direction'] / units.GB:.1f}"})
    emit(rows, args.format, out)
    for p in status.problems:
        if args.format == "table":
            out.write(f"# WARNING: {p}\n")
        sys.stderr.write(f"gpulab nvlink-status: warning: {args.file}: {p}\n")
    return 1 if status.problems else 0
