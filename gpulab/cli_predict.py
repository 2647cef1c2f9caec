"""``gpulab predict``: predicted copy (and, later, collective) times over message sizes.

Sizes follow nccl-tests (``-b/-e/-f``): from ``--min-bytes`` to ``--max-bytes``,
multiplying by ``--factor``; sizes accept the suffixes K, M and G, which are powers of
1024 as in nccl-tests (``64K`` = 65536 bytes). Output columns: ``size_bytes``,
``time_us`` (time per copy) and ``bandwidth_GBps`` (size / time, per direction,
GB = 1e9 bytes), so the output can be compared with a copy benchmark's.

Examples::

    gpulab predict --copy h2d --system hgx-h200
    gpulab predict --copy d2h --memory pageable --system my-server.yaml --format csv
    gpulab predict --copy p2p --system h100-pcie --min-bytes 1M --max-bytes 1G --factor 4
    gpulab predict --list-systems

The subcommand is designed to grow: ``--copy`` sits in a mutually exclusive group to
which the collectives chapter adds ``--collective`` (with ``--ranks``).
"""
from __future__ import annotations

import argparse
import re

from . import pcie, systems, units

__all__ = ["register", "parse_size", "sweep_sizes"]

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kKmMgG]?)\s*$")
_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_MAX_ROWS = 10_000


def parse_size(text):
    """Parse a byte count like nccl-tests: ``8``, ``64K``, ``1.5M``, ``4G`` (K/M/G =
    powers of 1024). Raises :class:`argparse.ArgumentTypeError` on bad input.

    >>> parse_size("4G"), parse_size("64k"), parse_size("0.5K")
    (4294967296, 65536, 512)
    """
    m = _SIZE_RE.match(text) if isinstance(text, str) else None
    if not m:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: give bytes, optionally with K, M or G "
            "(powers of 1024), e.g. 8, 64K, 4G")
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if value < 1 or not value.is_integer():
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: must be a whole number of bytes >= 1")
    return int(value)


def _factor(text):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 2:
        raise argparse.ArgumentTypeError(
            f"invalid factor {text!r}: must be an integer >= 2")
    return value


def sweep_sizes(min_bytes, max_bytes, factor):
    """Sizes of an nccl-tests sweep: ``min_bytes * factor**k <= max_bytes``.

    >>> sweep_sizes(8, 128, 2)
    [8, 16, 32, 64, 128]
    """
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size)
        size *= factor
    return out


def _list_systems(args, out):
    from .cli import emit

    rows = []
    for name in systems.names():
        s = systems.get(name)
        rows.append({"system": name, "gpus": f"{s.n_gpus}x {s.gpu}",
                     "nvlink": s.nvlink.fabric, "p2p_via": s.p2p.via,
                     "pcie": f"Gen{s.pcie.generation} x{s.pcie.lanes}",
                     "description": s.description})
        if args.format != "table":
            rows[-1].update(source=s.source, accessed=s.accessed)
    emit(rows, args.format, out)
    return 0


def _cmd_predict(args, out):
    from .cli import emit

    parser = args._predict_parser
    if args.list_systems:
        return _list_systems(args, out)
    if args.copy is None:
        parser.error("give --copy {h2d,d2h,p2p} (collectives: later)")
    if args.system is None:
        parser.error("the following arguments are required: --system")
    if args.copy == "p2p" and args.memory is not None:
        parser.error("argument --memory: applies to h2d/d2h copies only, not p2p")
    if args.min_bytes > args.max_bytes:
        parser.error(f"argument --min-bytes: {args.min_bytes} is larger than "
                     f"--max-bytes {args.max_bytes}")
    try:
        system = systems.resolve(args.system)
    except ValueError as exc:
        parser.error(f"argument --system: {exc}")
    sizes = sweep_sizes(args.min_bytes, args.max_bytes, args.factor)
    if len(sizes) > _MAX_ROWS:
        parser.error(f"argument --factor: the sweep would have {len(sizes)} rows "
                     f"(at most {_MAX_ROWS})")
    memory = args.memory or "pinned"
    times = pcie.copy_time([float(s) for s in sizes], args.copy, memory=memory,
                           system=system)
    rows = []
    for size, t in zip(sizes, times):
        t = float(t)
        bw = size / t / units.GB
        if args.format == "json":
            rows.append({"size_bytes": size, "time_us": round(t / units.US, 3),
                         "bandwidth_GBps": round(bw, 3)})
        else:
            rows.append({"size_bytes": str(size), "time_us": f"{t / units.US:.3f}",
                         "bandwidth_GBps": f"{bw:.3f}"})
    if args.format == "table":
        what = {"h2d": "host to device", "d2h": "device to host",
                "p2p": f"GPU to GPU via {system.p2p.via}"}[args.copy]
        mem = f", {memory} host memory" if args.copy != "p2p" else ""
        out.write(f"# {args.copy} copy ({what}{mem}) on {system.name}: "
                  f"{system.n_gpus}x {system.gpu}; time per copy, copies issued back "
                  "to back; bandwidth per direction, GB = 1e9 B\n")
        widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in rows[0]}
        rows = [{c: v.rjust(widths[c]) for c, v in r.items()} for r in rows]
    emit(rows, args.format, out)
    return 0


def register(sub, fmt):
    """Add ``gpulab predict`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "predict", help="predicted copy times over message sizes (nccl-tests-like)",
        description="Predict the time and bandwidth of copies over a sweep of sizes "
                    "(nccl-tests -b/-e/-f semantics; K/M/G = powers of 1024). "
                    "Bandwidths are per direction, GB = 1e9 bytes.")
    what = s.add_mutually_exclusive_group()
    what.add_argument("--copy", choices=pcie.COPY_KINDS,
                      help="copy kind: h2d (host to device), d2h, p2p (GPU to GPU)")
    # The collectives chapter adds --collective here (and --ranks below).
    s.add_argument("--system", metavar="NAME|FILE",
                   help="system preset (see --list-systems) or a systems YAML file "
                        "(FILE:NAME picks one of several)")
    s.add_argument("--memory", choices=pcie.MEMORY_KINDS,
                   help="host memory of h2d/d2h copies (default: pinned)")
    s.add_argument("--min-bytes", "-b", type=parse_size, default=8, metavar="SIZE",
                   help="smallest size (default: 8)")
    s.add_argument("--max-bytes", "-e", type=parse_size, default=4 * 1024**3,
                   metavar="SIZE", help="largest size (default: 4G)")
    s.add_argument("--factor", "-f", type=_factor, default=2,
                   help="multiplication factor between sizes (default: 2)")
    s.add_argument("--list-systems", action="store_true",
                   help="list the system presets and exit")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_predict, _predict_parser=s)
