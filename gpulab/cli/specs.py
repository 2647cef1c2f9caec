"""``gpulab specs {gpus,nvlink,pcie}``: the hardware tables of ``gpulab/data`` with their
sources (every bandwidth per direction, and bidirectional where the table says so)."""
from __future__ import annotations

from .. import links, pcie, specs, units
from .base import emit


def register(sub, fmt):
    """Add ``gpulab specs`` to the ``gpulab`` parser."""
    s = sub.add_parser("specs", help="print hardware tables with sources")
    s.add_argument("table", choices=("gpus", "nvlink", "pcie"))
    s.add_argument("--sources", action="store_true",
                   help="include kind (spec / measured / derived / assumed), source and "
                        "accessed columns in the table format")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_specs)


def _specs_rows(table, with_source):
    if table == "gpus":
        rows = [{"gpu": g.name, "variant": g.variant,
                 "fp16_dense_TFLOPS": f"{g.fp16_dense_flops / units.TFLOPS:g}",
                 "fp8_dense_TFLOPS": ("-" if g.fp8_dense_flops is None
                                      else f"{g.fp8_dense_flops / units.TFLOPS:g}"),
                 "memory_GB": f"{g.memory_bytes / units.GB:g}",
                 "memory_bw_GBps": f"{g.memory_bandwidth / units.GB:g}",
                 "nvlink": (f"NVLink{g.nvlink_generation} x{g.nvlink_links}"
                            if g.nvlink_links else "none"),
                 "nvlink_data_GBps_per_direction":
                     (f"{links.nvlink_gpu_bandwidth(g.nvlink_generation, g.nvlink_links).gb_per_s:g}"
                      if g.nvlink_links else "-"),
                 "kind": g.kind, "source": g.source, "accessed": g.accessed}
                for g in specs.gpus()]
    elif table == "nvlink":
        rows = []
        for g in specs.nvlink_generations():
            raw = links.nvlink_link_bandwidth(g.generation, raw=True)
            link = links.nvlink_link_bandwidth(g.generation)
            gpu = links.nvlink_gpu_bandwidth(g.generation)
            rows.append({
                "generation": g.generation, "gpu": g.first_gpu,
                "modulation": g.modulation, "GBd": f"{g.symbol_rate / 1e9:.7g}",
                "lanes_per_direction": g.lanes_per_direction,
                "link_raw_GBps_per_direction": f"{raw.gb_per_s:.7g}",
                "link_data_GBps_per_direction": f"{link.gb_per_s:g}",
                "links": g.links_per_gpu,
                "gpu_data_GBps_per_direction": f"{gpu.gb_per_s:g}",
                "gpu_data_GBps_bidirectional": f"{gpu.to_bidirectional().gb_per_s:g}",
                "kind": g.kind, "source": g.source, "accessed": g.accessed})
    else:
        rows = []
        for g in specs.pcie_generations():
            x16 = pcie.encoded_bandwidth(g.generation, 16)
            rows.append({"generation": g.generation,
                         "GT_per_s": f"{g.transfer_rate_gt_per_s:g}",
                         "encoding": g.encoding,
                         "x16_data_GBps_per_direction": f"{x16.gb_per_s:.2f}",
                         "kind": g.kind, "source": g.source, "accessed": g.accessed})
    if not with_source:
        for r in rows:
            r.pop("kind")
            r.pop("source")
            r.pop("accessed")
    return rows


#: The legend under a table: which rates are raw and which data (the same words as
#: ``gpulab nvlink-status`` and ``gpulab topo``).
RATE_LEGEND = ("GB/s per direction unless the column says bidirectional, GB = 1e9 B; "
               "raw = signalling rate (symbol rate x bits per symbol x lanes, as "
               "`nvidia-smi nvlink --status` reports it on Hopper), data = raw x "
               "line-code efficiency, the rate left for packets before protocol "
               "overhead")
_LEGEND = {"nvlink": RATE_LEGEND,
           "gpus": "nvlink_data: GB/s per direction, GB = 1e9 B, data rate (after line "
                   "coding; `gpulab specs nvlink` shows the raw signalling rate too)",
           "pcie": "x16_data: GB/s per direction, GB = 1e9 B, data rate (after the "
                   "encoding: 8b/10b, 128b/130b), before protocol overhead"}


def _cmd_specs(args, out):
    emit(_specs_rows(args.table, args.sources or args.format != "table"),
          args.format, out)
    if args.format == "table":
        out.write(f"# {_LEGEND[args.table]}\n")
    return 0
