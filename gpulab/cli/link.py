"""``gpulab link``: SerDes arithmetic for one link and one GPU (lane rate, link and GPU
bandwidth, per direction and bidirectional)."""
from __future__ import annotations

import math

from .. import links, specs, units
from .base import emit, name_flag


def register(sub, fmt):
    """Add ``gpulab link`` to the ``gpulab`` parser."""
    s = sub.add_parser("link", help="SerDes arithmetic for one link and one GPU")
    s.add_argument("--generation", type=int,
                   help="NVLink generation preset (1-5); the other flags override it")
    s.add_argument("--baud", type=float, help="symbol rate per lane [GBd]")
    s.add_argument("--bits", type=int, help="bits per symbol (NRZ 1, PAM4 2)")
    s.add_argument("--lanes", type=int, help="lanes per direction per link")
    s.add_argument("--coding", type=float, help="coding efficiency in (0, 1]")
    s.add_argument("--links", type=int, help="links per GPU")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_link)


def _baud(gbaud):
    """--baud [GBd] in Bd, refusing, in GBd (the flag's unit), a value that is not
    > 0 or a finite value that overflows on conversion."""
    if not (gbaud > 0 and math.isfinite(gbaud)):
        raise ValueError(f"--baud (symbol_rate) must be a finite number > 0 GBd "
                         f"(symbol rate per lane); got {gbaud:g} GBd")
    baud = gbaud * 1e9
    if math.isfinite(gbaud) and not math.isfinite(baud):
        raise ValueError(f"--baud (symbol_rate): {gbaud:g} GBd is beyond a "
                         "float's range in Bd; give a real symbol rate")
    return baud


_LINK_FLAGS = {"symbol_rate": "--baud", "bits_per_symbol": "--bits",
               "lanes_per_direction": "--lanes", "coding_efficiency": "--coding",
               "n_links": "--links"}


def _cmd_link(args, out):
    if args.generation is not None:
        # the preset fills in what the flags do not give; a flag always wins
        g = specs.nvlink(args.generation)
        baud = g.symbol_rate if args.baud is None else _baud(args.baud)
        bits = g.bits_per_symbol if args.bits is None else args.bits
        lanes = g.lanes_per_direction if args.lanes is None else args.lanes
        coding = g.coding_efficiency if args.coding is None else args.coding
        n_links = g.links_per_gpu if args.links is None else args.links
    else:
        missing = [n for n in ("baud", "bits", "lanes") if getattr(args, n) is None]
        if missing:
            raise ValueError("give --generation, or all of --baud --bits --lanes "
                             f"(missing: {', '.join('--' + m for m in missing)})")
        baud, bits, lanes = _baud(args.baud), args.bits, args.lanes
        coding = 1.0 if args.coding is None else args.coding
        n_links = 1 if args.links is None else args.links
    try:
        link = links.link_bandwidth(baud, bits, lanes, coding)
        gpu = links.gpu_bandwidth(link, n_links)
    except ValueError as exc:
        raise ValueError(name_flag(str(exc), _LINK_FLAGS)) from None
    if not math.isfinite(2 * gpu.bytes_per_s):
        raise ValueError(f"--links (n_links): the GPU's bidirectional total of "
                         f"{n_links} links overflows a float; give fewer or slower links")
    raw = links.link_bandwidth(baud, bits, lanes, 1.0)
    rows = [{"quantity": "lane rate (raw signalling)",
             "value": f"{links.lane_rate(baud, bits) / 1e9:g} Gb/s"},
            {"quantity": "link raw (signalling)", "value": units.fmt_bandwidth(raw)},
            {"quantity": "link data (after line coding)",
             "value": units.fmt_bandwidth(link)},
            {"quantity": f"GPU data ({n_links} links)",
             "value": units.fmt_bandwidth(gpu)},
            {"quantity": f"GPU data ({n_links} links)",
             "value": units.fmt_bandwidth(gpu.to_bidirectional())}]
    emit(rows, args.format, out)
    return 0
