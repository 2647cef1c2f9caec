"""``gpulab nvlink-status FILE``: read ``nvidia-smi nvlink --status`` output: active
links and their rate per GPU (GB/s per direction), and what is missing.

nvidia-smi prints the raw signalling rate per link (symbol rate x bits per symbol x
lanes: 26.562 GB/s on an H100/H200 link); the table prints it as ``raw`` and, for a
known NVLink GPU, the ``data`` rate after line coding (25 GB/s there), the rate that
``gpulab topo`` and ``gpulab specs`` print.

Each GPU's links are compared with the links per GPU of its generation (from
``gpulab/data``, when the name shows a known SXM GPU) and with the other GPUs of
the capture. A GPU with fewer links, inactive links, a capture that ends inside a
GPU's list, or GPUs missing (gaps in the indices, or below ``--gpus N``) each
print a warning line (``# WARNING: ...`` under the table, and on stderr) and the
exit status is 1.
"""
from __future__ import annotations

import sys

from .. import links, measurements, specs, units
from .base import emit, gpu_model, int_type, read_text_file


#: Largest --gpus: the GPU count gpulab.measurements.check_nvlink_status takes.
MAX_GPUS = 1024


def register(sub, fmt):
    """Add ``gpulab nvlink-status`` to the ``gpulab`` parser."""
    s = sub.add_parser("nvlink-status",
                       help="read `nvidia-smi nvlink --status` output",
                       description="Read `nvidia-smi nvlink --status` output: links "
                                   "per GPU and their rate, checked against the "
                                   "GPU's generation; exit status 1 when links or "
                                   "GPUs are missing.")
    s.add_argument("file", help="file with the command's output")
    s.add_argument("--gpus", type=int_type("GPU count", 1, MAX_GPUS), metavar="N",
                   help=f"GPUs the machine has, 1 to {MAX_GPUS} (reports those absent "
                        "from the file)")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_nvlink_status)


def _coding(device_name):
    """(line-code efficiency, NVLink generation) of the GPU an nvidia-smi name
    names (data / raw per link, :func:`gpulab.links.nvlink_link_bandwidth`), or
    (None, None) for a name that is not a known NVLink GPU."""
    model = gpu_model(device_name)
    spec = specs.gpu(model) if model else None
    gen = spec.nvlink_generation if spec is not None and spec.nvlink_links else None
    if gen is None:
        return None, None
    raw = links.nvlink_link_bandwidth(gen, raw=True).bytes_per_s
    return links.nvlink_link_bandwidth(gen).bytes_per_s / raw, gen


def _data(raw, coding, fmt):
    """The data rate of a raw rate [B/s] in GB/s, '?' when the coding is unknown."""
    if not raw:
        return "-" if fmt.endswith("g") else f"{0:{fmt}}"
    return "?" if coding is None else f"{raw * coding / units.GB:{fmt}}"


def _cmd_nvlink_status(args, out):
    text = read_text_file(args.file, "`nvidia-smi nvlink --status` output")
    try:
        status = measurements.check_nvlink_status(text, n_gpus=args.gpus)
    except measurements.NVLinkStatusParseError as exc:
        raise ValueError(f"{args.file}: {exc}") from None
    rows, gens = [], set()
    for g in status.gpus:
        coding, gen = _coding(g["name"])
        gens.add(gen)
        per_link, total = g["per_link"] or 0.0, g["sum_per_direction"]
        rows.append({"gpu": g["gpu"], "links_active": g["links_active"],
                     "links_total": g["links_listed"],
                     "links_expected": ("?" if g["links_expected"] is None
                                        else g["links_expected"]),
                     "link_raw_GBps_per_direction": (f"{per_link / units.GB:g}"
                                                     if per_link else "-"),
                     "link_data_GBps_per_direction": _data(per_link, coding, ".4g"),
                     "gpu_raw_GBps_per_direction": f"{total / units.GB:.1f}",
                     "gpu_data_GBps_per_direction": _data(total, coding, ".1f")})
    emit(rows, args.format, out)
    if args.format == "table" and rows:
        known = sorted(g for g in gens if g is not None)
        out.write("# GB/s per direction, GB = 1e9 B; raw = signalling rate as "
                  "nvidia-smi prints it (symbol rate x bits per symbol x lanes), data "
                  "= raw x the line-code efficiency of "
                  f"{', '.join(f'NVLink{g}' for g in known) or 'the GPU generation'}"
                  " (gpulab specs nvlink), the rate gpulab topo and gpulab specs "
                  "print; '?' where the GPU name is not a known NVLink GPU\n")
    for p in status.problems:
        if args.format == "table":
            out.write(f"# WARNING: {p}\n")
        sys.stderr.write(f"gpulab nvlink-status: warning: {args.file}: {p}\n")
    return 1 if status.problems else 0
