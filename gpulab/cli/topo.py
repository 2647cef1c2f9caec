"""``gpulab topo FILE``: read `nvidia-smi topo -m` output.

For each GPU pair: the path class, whether peer-to-peer DMA is possible and
why, the transport NCCL would pick, and the bottleneck bandwidth per direction
(GB = 1e9 bytes; the data rate, after line coding, as ``gpulab specs`` prints it, not
the raw signalling rate of ``nvidia-smi nvlink --status``) of the graph
:mod:`gpulab.topology` builds from the matrix.
"""
from __future__ import annotations

from .. import topology, units
from .base import clip, emit, read_text_file, short_message


def _cmd_topo(args, out):
    text = read_text_file(args.file, "`nvidia-smi topo -m` output")
    try:
        matrix = topology.read_topo_matrix(text)
        topo = matrix.to_topology(nvlink_generation=args.nvlink_generation,
                                  pcie_generation=args.pcie_generation,
                                  lanes=args.lanes)
    except topology.TopoParseError as exc:
        # the message may quote the line already; a line may be megabytes: quote
        # it once, cut to a few dozen characters
        message = short_message(exc.message)
        line = str(exc.line or "")
        quoted = ("" if line.strip()[-40:] in str(exc.message)
                  else f": {clip(line)!r}")
        raise ValueError(f"{args.file}: line {exc.lineno}: {message}{quoted}") from None
    rows = []
    for r in topology.pair_table(topo, acs_enabled=args.acs, iommu=args.iommu,
                                 p2p_level=args.p2p_level):
        bw = r.pop("bottleneck")
        rows.append({**r, "bottleneck_data_GBps_per_direction":
                     f"{bw.bytes_per_s / units.GB:.1f}"})
    if args.format != "table":
        emit(rows, args.format, out)
        return 0
    # table: reasons as numbered notes under the table, so rows stay short
    notes = {}
    short = []
    for r in rows:
        marks = []
        for key in ("p2p_reason", "nccl_reason"):
            marks.append(notes.setdefault(r[key], len(notes) + 1))
        short.append({"pair": r["pair"], "class": r["class"],
                      "p2p": f"{r['p2p']} [{marks[0]}]",
                      "nccl_transport": f"{r['nccl_transport']} [{marks[1]}]",
                      "bottleneck_data_GBps_per_direction":
                          r["bottleneck_data_GBps_per_direction"]})
    if not short:
        out.write("no GPU pairs in the matrix (one GPU)\n")
        return 0
    emit(short, "table", out)
    out.write("\n")
    for text, n in notes.items():
        out.write(f"[{n}] {text}\n")
    out.write(f"\nAssumed: NVLink{args.nvlink_generation}, "
              f"PCIe Gen{args.pcie_generation} x{args.lanes}, "
              f"ACS P2P redirect {'on' if args.acs else 'off'}, "
              f"IOMMU {args.iommu}, NCCL_P2P_LEVEL={args.p2p_level}. Bandwidths are "
              "data rates per direction (GB = 1e9 B): the raw signalling rate x "
              "line-code efficiency, before protocol overhead (raw and data per link: "
              "gpulab specs nvlink; nvidia-smi nvlink --status prints the raw rate).\n")
    return 0


def register(sub, fmt):
    """Add ``gpulab topo`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "topo", help="read `nvidia-smi topo -m` output: path classes, P2P, NCCL",
        description="Read the output of `nvidia-smi topo -m` and print, for each GPU "
                    "pair, the path class, whether P2P DMA is possible, the transport "
                    "NCCL would use and the bottleneck bandwidth per direction "
                    "(data rate, after line coding).")
    s.add_argument("file", help="file with the command's output")
    s.add_argument("--format", **fmt)
    s.add_argument("--nvlink-generation", type=int, default=4,
                   help="NVLink generation for NV# bonds (default: 4)")
    s.add_argument("--pcie-generation", type=int, default=5,
                   help="PCIe generation of every link (default: 5)")
    s.add_argument("--lanes", type=int, default=16,
                   help="PCIe link width (default: 16)")
    s.add_argument("--acs", action="store_true",
                   help="assume ACS P2P redirect is on in the PCIe switches")
    s.add_argument("--iommu", choices=topology.IOMMU_MODES, default="off",
                   help="IOMMU mode (default: off)")
    s.add_argument("--p2p-level", choices=topology.P2P_LEVELS, default="PXB",
                   help="NCCL_P2P_LEVEL (default: PXB, NCCL's default on Intel hosts)")
    s.set_defaults(func=_cmd_topo)
