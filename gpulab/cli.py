"""Command-line interface: ``gpulab`` (console script) or ``python -m gpulab``.

Subcommands
-----------
``gpulab specs {gpus,nvlink,pcie} [--format table|csv|json]``
    Print the hardware tables from ``gpulab/data`` with their sources.
``gpulab link (--generation N | --baud GBD --bits B --lanes L) [--coding E] [--links K]``
    SerDes arithmetic: lane, link and per-GPU bandwidth, per direction and
    bidirectional.
``gpulab nvlink-status FILE``
    Read ``nvidia-smi nvlink --status`` output and compare with the spec.
``gpulab topo FILE``
    Read ``nvidia-smi topo -m`` output: path classes, P2P verdicts, NCCL
    transport and expected bandwidth per GPU pair (:mod:`gpulab.cli_topo`).
``gpulab predict --copy {h2d,d2h,p2p} --system NAME``
    Predicted copy times over a size sweep, like a copy benchmark would print.
``gpulab predict --collective all_reduce --system NAME --ranks N``
    Predicted collective times, algbw and busbw in nccl-tests' table format
    (:mod:`gpulab.cli_predict`, model in :mod:`gpulab.collectives`).
``gpulab fit FILE... --system NAME -o my-system.yaml``
    Calibrate the collective model's launch cost and efficiency per collective
    from measured sweeps; the YAML works as ``--system`` (:mod:`gpulab.cli_fit`).
``gpulab compare FILE [FILE...] --system NAME``
    Measured nccl-tests sweeps vs the model per size, with the error and a
    summary per size band (:mod:`gpulab.cli_compare`, readers in
    :mod:`gpulab.nccltests`).
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import sys

from . import __version__, links, measurements, pcie, specs, units

__all__ = ["main", "build_parser", "emit"]

#: Modules (in gpulab) that add subcommands: see build_parser.
_EXTENSIONS = ("cli_topo", "cli_predict", "cli_compare", "cli_fit")


def emit(rows, fmt, out):
    """Write ``rows`` (list of dicts) as an aligned table, CSV or JSON."""
    if not rows:
        return
    cols = list(rows[0])
    if fmt == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
    elif fmt == "csv":
        w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    else:
        cells = [[str(r[c]) for c in cols] for r in rows]
        widths = [max(len(c), *(len(row[i]) for row in cells))
                  for i, c in enumerate(cols)]
        out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
        for row in cells:
            out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()
                      + "\n")


def _specs_rows(table, with_source):
    if table == "gpus":
        rows = [{"gpu": g.name, "variant": g.variant,
                 "fp16_dense_TFLOPS": f"{g.fp16_dense_flops / units.TFLOPS:g}",
                 "fp8_dense_TFLOPS": ("-" if g.fp8_dense_flops is None
                                      else f"{g.fp8_dense_flops / units.TFLOPS:g}"),
                 "memory_GB": f"{g.memory_bytes / units.GB:g}",
                 "memory_bw_GBps": f"{g.memory_bandwidth / units.GB:g}",
                 "nvlink": f"NVLink{g.nvlink_generation} x{g.nvlink_links}",
                 "nvlink_GBps_per_direction":
                     f"{links.nvlink_gpu_bandwidth(g.nvlink_generation, g.nvlink_links).gb_per_s:g}",
                 "source": g.source, "accessed": g.accessed} for g in specs.gpus()]
    elif table == "nvlink":
        rows = []
        for g in specs.nvlink_generations():
            link = links.nvlink_link_bandwidth(g.generation)
            gpu = links.nvlink_gpu_bandwidth(g.generation)
            rows.append({
                "generation": g.generation, "gpu": g.first_gpu,
                "modulation": g.modulation, "GBd": f"{g.symbol_rate / 1e9:.7g}",
                "lanes_per_direction": g.lanes_per_direction,
                "link_GBps_per_direction": f"{link.gb_per_s:g}",
                "links": g.links_per_gpu,
                "gpu_GBps_per_direction": f"{gpu.gb_per_s:g}",
                "gpu_GBps_bidirectional": f"{gpu.to_bidirectional().gb_per_s:g}",
                "source": g.source, "accessed": g.accessed})
    else:
        rows = []
        for g in specs.pcie_generations():
            x16 = pcie.encoded_bandwidth(g.generation, 16)
            rows.append({"generation": g.generation,
                         "GT_per_s": f"{g.transfer_rate_gt_per_s:g}",
                         "encoding": g.encoding,
                         "x16_GBps_per_direction": f"{x16.gb_per_s:.2f}",
                         "source": g.source, "accessed": g.accessed})
    if not with_source:
        for r in rows:
            r.pop("source")
            r.pop("accessed")
    return rows


def _cmd_specs(args, out):
    emit(_specs_rows(args.table, args.sources or args.format != "table"),
          args.format, out)
    return 0


_LINK_FLAGS = {"symbol_rate": "--baud", "bits_per_symbol": "--bits",
               "lanes_per_direction": "--lanes", "coding_efficiency": "--coding",
               "n_links": "--links"}


def _name_flag(message, flags):
    """Prefix a model error that names a parameter with the CLI flag behind it."""
    for param, flag in flags.items():
        if message.startswith(param):
            return f"{flag} ({param}){message[len(param):]}"
    return message


def _cmd_link(args, out):
    if args.generation is not None:
        g = specs.nvlink(args.generation)
        baud, bits, lanes = g.symbol_rate, g.bits_per_symbol, g.lanes_per_direction
        coding = g.coding_efficiency if args.coding is None else args.coding
        n_links = g.links_per_gpu if args.links is None else args.links
    else:
        missing = [n for n in ("baud", "bits", "lanes") if getattr(args, n) is None]
        if missing:
            raise ValueError("give --generation, or all of --baud --bits --lanes "
                             f"(missing: {', '.join('--' + m for m in missing)})")
        baud, bits, lanes = args.baud * 1e9, args.bits, args.lanes
        coding = 1.0 if args.coding is None else args.coding
        n_links = 1 if args.links is None else args.links
    try:
        link = links.link_bandwidth(baud, bits, lanes, coding)
        gpu = links.gpu_bandwidth(link, n_links)
    except ValueError as exc:
        raise ValueError(_name_flag(str(exc), _LINK_FLAGS)) from None
    rows = [{"quantity": "lane rate (raw)",
             "value": f"{links.lane_rate(baud, bits) / 1e9:g} Gb/s"},
            {"quantity": "link", "value": units.fmt_bandwidth(link)},
            {"quantity": f"GPU ({n_links} links)", "value": units.fmt_bandwidth(gpu)},
            {"quantity": f"GPU ({n_links} links)",
             "value": units.fmt_bandwidth(gpu.to_bidirectional())}]
    emit(rows, args.format, out)
    return 0


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


def build_parser():
    """Return the argument parser (exposed for tests and documentation)."""
    p = argparse.ArgumentParser(
        prog="gpulab",
        description="Models of multi-GPU interconnects (units: GB = 1e9 bytes; "
                    "every bandwidth says per direction or bidirectional).")
    p.add_argument("--version", action="version", version=f"gpulab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    fmt = dict(choices=("table", "csv", "json"), default="table",
               help="output format (default: table)")

    s = sub.add_parser("specs", help="print hardware tables with sources")
    s.add_argument("table", choices=("gpus", "nvlink", "pcie"))
    s.add_argument("--sources", action="store_true",
                   help="include source and accessed columns in the table format")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_specs)

    s = sub.add_parser("link", help="SerDes arithmetic for one link and one GPU")
    s.add_argument("--generation", type=int, help="NVLink generation preset (1-5)")
    s.add_argument("--baud", type=float, help="symbol rate per lane [GBd]")
    s.add_argument("--bits", type=int, help="bits per symbol (NRZ 1, PAM4 2)")
    s.add_argument("--lanes", type=int, help="lanes per direction per link")
    s.add_argument("--coding", type=float, help="coding efficiency in (0, 1]")
    s.add_argument("--links", type=int, help="links per GPU")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_link)

    s = sub.add_parser("nvlink-status",
                       help="read `nvidia-smi nvlink --status` output")
    s.add_argument("file", help="file with the command's output")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_nvlink_status)

    # Subcommands of later chapters live in their own modules, each with
    # ``register(subparsers, fmt)`` that adds parsers with ``func(args, out)``.
    for name in _EXTENSIONS:
        importlib.import_module(f".{name}", __package__).register(sub, fmt)
    return p


def main(argv=None, out=None):
    """Run the CLI; return the exit status (2 for usage errors)."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(out)
        return 0
    try:
        return args.func(args, out)
    except ValueError as exc:
        parser.exit(2, f"gpulab {args.command}: error: {exc}\n")
