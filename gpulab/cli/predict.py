"""``gpulab predict``: predicted copy and collective times over message sizes.

Sizes follow nccl-tests (``-b/-e/-f``): from ``--min-bytes`` to ``--max-bytes``,
multiplying by ``--factor``; sizes accept the suffixes K, M and G, which are powers of
1024 as in nccl-tests (``64K`` = 65536 bytes).

``--copy {h2d,d2h,d2d,p2p}`` (:mod:`gpulab.pcie`). By default the HARDWARE time of one
isolated copy (:func:`gpulab.pcie.copy_latency`: latency + size / bandwidth, fitted to
our CUDA C++ runs; P2P latency assumed until a 2-GPU run): columns ``size_bytes``,
``hw_time_us`` and ``hw_GBps`` (size / time, per direction, GB = 1e9 bytes).
``--caller cuda|pytorch`` prints instead the time per copy of that caller's
back-to-back loop (hardware plus the caller's per-call issue cost,
:func:`gpulab.pcie.copy_time`): columns ``size_bytes``, ``<caller>_b2b_us`` and
``<caller>_b2b_GBps``, to compare with a copy benchmark written with that caller.
``--direction both``: pinned h2d and d2h at the same time.

Across nodes: ``--nodes N`` scales the system (a system preset, or a cluster preset
of :data:`gpulab.network.CLUSTER_PRESETS` such as ``dgx-h100-spod``) to N nodes
(:func:`gpulab.network.scale_out`; ranks default to all its GPUs); ``--nics
COUNTxRATE`` (``8x400G``: NICs per node and Gb/s per NIC), ``--fabric
ib|roce|efa|tcpx`` and ``--sharp on|off`` change its network.

``--collective NAME --ranks N`` (:func:`gpulab.collectives.predict`) prints what
nccl-tests would print. The table has nccl-tests' out-of-place columns (``size``,
``count``, ``type``, ``redop``, ``root``, ``time(us)``, ``algbw(GB/s)``,
``busbw(GB/s)``, ``#wrong``) plus gpulab's ``algo/proto`` (the algorithm and NCCL
protocol the model picks), and nccl-tests' ``# Avg bus bandwidth`` trailer; every
line that is not data starts with ``#``, as in nccl-tests. As in nccl-tests,
``count`` is the elements per rank for all_gather, reduce_scatter and alltoall
(``size / 4 / n``) and of the whole buffer otherwise (``size / 4``); unlike
nccl-tests, sizes are not rounded down to its 16-byte alignment. CSV columns are
``size_bytes,time_us,algbw_GBps,busbw_GBps`` (GB = 1e9 bytes, the format of our
measured sweeps); JSON adds ``algorithm`` and ``protocol``.

Examples::

    gpulab predict --copy h2d --system hgx-h200
    gpulab predict --copy p2p --system hgx-h200 --caller pytorch
    gpulab predict --copy d2h --memory pageable --system my-server.yaml --format csv
    gpulab predict --copy p2p --system h100-pcie --min-bytes 1M --max-bytes 1G --factor 4
    gpulab predict --collective all_reduce --system hgx-h200 --ranks 8 -b 1M -e 4G
    gpulab predict --collective all_gather --system h200-x2-measured --transport shm
    gpulab predict --collective all_reduce --system dgx-h100-spod --nodes 4
    gpulab predict --collective all_reduce --system hgx-h200 --nodes 2 --nics 8x200G \
        --fabric roce --format csv
    gpulab predict --list-systems
"""
from __future__ import annotations

import argparse
import re

from .. import collectives, network, pcie, systems, units
from .base import emit, nvls_enabled

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


def _int_at_least(what, low):
    """An argparse type: an integer >= ``low`` (the error names ``what``)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: must be an integer >= {low}")
        return value
    return parse


_factor = _int_at_least("factor", 2)
_ranks = _int_at_least("ranks", 1)
_gpus_per_process = _int_at_least("gpus-per-process", 1)
_MAX_NODES = 100_000


def _nodes(text):
    """An argparse type: a node count in [1, 100000]."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= _MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"invalid nodes {text!r}: must be an integer in [1, {_MAX_NODES}]")
    return value


def _nics(text):
    """An argparse type: COUNTxRATE such as ``8x400G``."""
    try:
        network.parse_nics(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("nics must", "must", 1)) \
            from None
    return text


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


#: Collective-only flags: refused with --copy.
_COLLECTIVE_FLAGS = ("ranks", "transport", "algorithm", "protocol", "nvls",
                     "gpus_per_process", "nodes", "nics", "fabric", "sharp")
#: Fabric kinds of --fabric (aliases of gpulab.network's fabric names).
FABRIC_CHOICES = ("ib", "roce", "efa", "tcpx")
#: nccl-tests' reduction op and root per collective (out-of-place columns).
_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}
_ROOT = {"broadcast": 0, "reduce": 0}
#: Collectives whose nccl-tests ``count`` is per rank (size / 4 / n).
_PER_RANK_COUNT = ("all_gather", "reduce_scatter", "alltoall")
#: Model error prefix (the parameter it names) -> flag.
_MODEL_FLAGS = {"algorithm": "--algorithm", "protocol": "--protocol",
                "transport": "--transport", "n_ranks": "--ranks",
                "collective": "--collective", "message_bytes": "--min-bytes",
                "system": "--system", "gpus_per_process": "--gpus-per-process"}


def _cmd_predict(args, out):
    parser = args._predict_parser
    if args.list_systems:
        return _list_systems(args, out)
    if args.copy is None and args.collective is None:
        parser.error("give --copy {%s} or --collective {%s}"
                     % (",".join(pcie.HARDWARE_COPY_KINDS), ",".join(collectives.COLLECTIVES)))
    if args.system is None:
        parser.error("the following arguments are required: --system")
    if args.copy is not None:
        for name in _COLLECTIVE_FLAGS:
            if getattr(args, name) is not None:
                parser.error(f"argument --{name.replace('_', '-')}: applies to "
                             "--collective only, not --copy")
        if args.copy in ("p2p", "d2d") and args.memory is not None:
            parser.error("argument --memory: applies to h2d/d2h copies only, not "
                         f"{args.copy}")
    else:
        for flag in ("memory", "caller", "direction"):
            if getattr(args, flag) is not None:
                parser.error(f"argument --{flag}: applies to --copy only, not "
                             "--collective")
    if args.min_bytes > args.max_bytes:
        parser.error(f"argument --min-bytes: {args.min_bytes} is larger than "
                     f"--max-bytes {args.max_bytes}")
    system = _system(args, parser)
    sizes = sweep_sizes(args.min_bytes, args.max_bytes, args.factor)
    if len(sizes) > _MAX_ROWS:
        parser.error(f"argument --factor: the sweep would have {len(sizes)} rows "
                     f"(at most {_MAX_ROWS})")
    if args.collective is not None:
        return _predict_collective(args, out, system, sizes)
    return _predict_copy(args, out, system, sizes)


def _system(args, parser):
    """The system of ``--system``, scaled out by ``--nodes``/``--nics``/``--fabric``/
    ``--sharp`` when given (or when ``--system`` names a cluster preset)."""
    scaled = any(getattr(args, k, None) is not None
                 for k in ("nodes", "nics", "fabric", "sharp"))
    if not scaled and args.system not in network.CLUSTER_PRESETS:
        try:
            return systems.resolve(args.system)
        except ValueError as exc:
            parser.error(f"argument --system: {exc} (or a cluster preset: "
                         f"{', '.join(network.CLUSTER_PRESETS)})")
    nodes = args.nodes
    if nodes is None:
        try:
            nodes = 1 if args.system in network.CLUSTER_PRESETS \
                else systems.resolve(args.system).nodes
        except ValueError as exc:
            parser.error(f"argument --system: {exc}")
    sharp = None if args.sharp is None else args.sharp == "on"
    try:
        return network.scale_out(args.system, nodes, nics=args.nics,
                                 fabric=args.fabric, sharp=sharp)
    except ValueError as exc:
        msg = str(exc)
        flag = {"nodes": "--nodes", "nics": "--nics", "fabric": "--fabric",
                "sharp": "--sharp"}.get(msg.split(" ", 1)[0], "--system")
        if "give nics and fabric" in msg:
            flag = "--nics"
        parser.error(f"argument {flag}: {msg}")


def _predict_copy(args, out, system, sizes):

    memory = args.memory or "pinned"
    direction = args.direction or "one"
    caller = args.caller
    try:
        times = pcie.copy_time([float(s) for s in sizes], args.copy, memory=memory,
                               system=system, caller=caller, direction=direction)
    except ValueError as exc:
        msg = str(exc).replace("caller='pytorch'", "--caller pytorch")
        parser = args._predict_parser
        flag = {"direction": "--direction", "memory": "--memory", "system": "--system",
                "kind": "--copy"}.get(re.split(r"\W", msg, maxsplit=1)[0], "--copy")
        parser.error(f"argument {flag}: {msg}")
    t_col, bw_col = (("hw_time_us", "hw_GBps") if caller is None
                     else (f"{caller}_b2b_us", f"{caller}_b2b_GBps"))
    rows = []
    for size, t in zip(sizes, times):
        t = float(t)
        bw = size / t / units.GB
        if args.format == "json":
            rows.append({"size_bytes": size, t_col: round(t / units.US, 3),
                         bw_col: round(bw, 3)})
        else:
            rows.append({"size_bytes": str(size), t_col: f"{t / units.US:.3f}",
                         bw_col: f"{bw:.3f}"})
    if args.format == "table":
        what = {"h2d": "host to device", "d2h": "device to host",
                "d2d": "within one GPU",
                "p2p": f"GPU to GPU via {system.p2p.via}"}[args.copy]
        mem = f", {memory} host memory" if args.copy in ("h2d", "d2h") else ""
        both = ", h2d and d2h at the same time" if direction == "both" else ""
        if caller is None:
            how = ("hardware time of one isolated copy (no caller's issue cost; "
                   "--caller cuda|pytorch for a back-to-back loop)")
            if args.copy == "p2p":
                how += "; P2P latency ASSUMED until a 2-GPU run"
        else:
            name = {"cuda": "cudaMemcpyAsync", "pytorch": "PyTorch copy_"}[caller]
            how = (f"time per {name} call issued back to back (hardware + the "
                   "caller's per-call issue cost)")
        out.write(f"# {args.copy} copy ({what}{mem}{both}) on {system.name}: "
                  f"{system.n_gpus}x {system.gpu}; {how}; bandwidth per direction, "
                  "GB = 1e9 B\n")
        widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in rows[0]}
        rows = [{c: v.rjust(widths[c]) for c, v in r.items()} for r in rows]
    emit(rows, args.format, out)
    return 0


def _model_error(message):
    """``argument --FLAG: message`` for a model error naming a parameter."""
    first = message.split(" ", 1)[0].rstrip(":")
    flag = _MODEL_FLAGS.get(first)
    return f"argument {flag}: {message}" if flag else message


def _nccl_time(us):
    """nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, else 0."""
    if us >= 10000.0:
        return f"{us:.0f}"
    if us >= 100.0:
        return f"{us:.1f}"
    return f"{us:.2f}"


def _predict_collective(args, out, system, sizes):

    parser = args._predict_parser
    n = system.n_gpus if args.ranks is None else args.ranks
    if n > system.n_gpus:
        parser.error(f"argument --ranks: {n} is more than the {system.n_gpus} GPUs "
                     f"of system {system.name} (give 1 to {system.n_gpus})")
    transport = args.transport or "p2p"
    algorithm = args.algorithm or "auto"
    protocol = args.protocol or "auto"
    nvls = nvls_enabled(args.nvls)
    try:
        pred = collectives.predict(args.collective, [float(s) for s in sizes], n,
                                   system, transport=transport, algorithm=algorithm,
                                   protocol=protocol, nvls=nvls,
                                   gpus_per_process=args.gpus_per_process)
    except ValueError as exc:
        parser.error(_model_error(str(exc)))
    us = pred.time / units.US
    alg = pred.algbw / units.GB
    bus = pred.busbw / units.GB
    if args.format == "table":
        _collective_table(args, out, system, n, transport, sizes, pred)
        return 0
    rows = []
    for i, size in enumerate(sizes):
        if args.format == "json":
            rows.append({"size_bytes": size, "time_us": round(float(us[i]), 3),
                         "algbw_GBps": round(float(alg[i]), 4),
                         "busbw_GBps": round(float(bus[i]), 4),
                         "algorithm": str(pred.algorithm[i]),
                         "protocol": str(pred.protocol[i])})
        else:
            rows.append({"size_bytes": str(size), "time_us": f"{us[i]:.3f}",
                         "algbw_GBps": f"{alg[i]:.4f}",
                         "busbw_GBps": f"{bus[i]:.4f}"})
    emit(rows, args.format, out)
    return 0




def _collective_table(args, out, system, n, transport, sizes, pred):
    coll = args.collective
    if transport == "shm":
        via = "SHM: P2P disabled, staged through host memory over PCIe"
    elif system.nvlink.generation is None or system.nvlink.fabric == "none":
        via = "P2P over PCIe"
    else:
        via = f"P2P over NVLink{system.nvlink.generation}"
    line = units.fmt_bandwidth(collectives.fabric_bandwidth(system, transport))
    net = ""
    if n > system.scale_up_domain:
        path = network.network_path(system, n, nvls=nvls_enabled(args.nvls))
        nw = system.network
        net = (f"; between {path.nodes} nodes: {nw.nics_per_node:g}x "
               f"{nw.nic_rate.bytes_per_s * 8 / 1e9:g} Gb/s {nw.fabric} NICs per node"
               f" ({nw.topology}, SHARP {'on' if nw.sharp else 'off'}, GPUDirect RDMA "
               f"{'on' if nw.gdr else 'off'}), {path.net_bw / units.GB:.0f} GB/s per "
               "node achieved, per direction (gpulab.network)")
    factor = collectives.busbw_factor(coll, n)
    per_rank = coll in _PER_RANK_COUNT
    gpp = args.gpus_per_process or (min(n, system.gpus_per_node)
                                    if n <= system.scale_up_domain else 1)
    gpp_how = (f"nccl-tests -g {gpp}" if gpp > 1 else "nccl-tests under MPI, -g 1") + \
        ("" if args.gpus_per_process else "; --gpus-per-process changes it")
    out.write(
        f"# gpulab predict: {coll}, {system.name}, nranks {n}, transport {transport} "
        f"({via}), model: NCCL-like (see gpulab.collectives)\n"
        f"# {system.n_gpus}x {system.gpu}; line rate per GPU {line}{net}; algorithm "
        f"{args.algorithm or 'auto'}, protocol {args.protocol or 'auto'}, NVLS "
        f"{'allowed' if nvls_enabled(args.nvls) else 'off'} (--nvls "
        f"{args.nvls or 'auto'}); {gpp} GPU(s) per process ({gpp_how})\n"
        "# Predicted, not measured: nccl-tests' out-of-place columns; #wrong is N/A "
        "(nothing validated)\n"
        f"# algbw = size / time, busbw = algbw x {factor:g} (nccl-tests factor for "
        f"{coll} on {n} ranks); GB/s = 1e9 B/s; size in bytes\n"
        f"# count: float elements {'per rank (size / 4 / nranks)' if per_rank else '(size / 4)'}"
        ", as nccl-tests prints it\n"
        "# algo/proto: gpulab's addition, the algorithm and NCCL protocol the model "
        "picks\n")
    if n == 1:
        hbm = system.gpu_spec.memory_bandwidth
        out.write(
            "# 1 rank: no peer, nothing crosses a link; NCCL copies the send buffer "
            "into the receive buffer inside the GPU (algo 'copy'): time = max(host "
            f"time per call, 2 x size / HBM bandwidth), {system.gpu} HBM "
            f"{hbm / units.GB:g} GB/s (spec, reads + writes); our 1x H200 copies "
            "reach 81-89% of it (64 MiB-1 GiB)\n")
    out.write("#\n")
    cols = ("size", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)",
            "busbw(GB/s)", "#wrong", "algo/proto")
    nccl_widths = (12, 12, 8, 6, 6, 7, 6, 6, 5, 0)
    redop, root = _REDOP.get(coll, "none"), _ROOT.get(coll, -1)
    cells = []
    for i, size in enumerate(sizes):
        count = size // (4 * n) if per_rank else size // 4
        cells.append((str(size), str(count), "float", redop, str(root),
                      _nccl_time(float(pred.time[i]) / units.US),
                      f"{float(pred.algbw[i]) / units.GB:.2f}",
                      f"{float(pred.busbw[i]) / units.GB:.2f}", "N/A",
                      f"{pred.algorithm[i]}/{pred.protocol[i]}"))
    widths = [max(len(c), w, *(len(row[j]) for row in cells))
              for j, (c, w) in enumerate(zip(cols, nccl_widths))]

    def fmt(row):
        body = "  ".join(v.rjust(w) for v, w in zip(row[:-1], widths))
        return f"{body}  {row[-1]}"

    header = fmt(cols)
    out.write("#" + header[1:] + "\n")
    for row in cells:
        out.write(fmt(row) + "\n")
    avg = float(pred.busbw.mean()) / units.GB
    out.write(f"# Avg bus bandwidth    : {avg:g}\n#\n")


def register(sub, fmt):
    """Add ``gpulab predict`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "predict",
        help="predicted copy and collective times over message sizes (nccl-tests-like)",
        description="Predict the time and bandwidth of copies or collectives over a "
                    "sweep of sizes (nccl-tests -b/-e/-f semantics; K/M/G = powers of "
                    "1024). Bandwidths are per direction, GB = 1e9 bytes; collectives "
                    "print nccl-tests' algbw and busbw.")
    what = s.add_mutually_exclusive_group()
    what.add_argument("--copy", choices=pcie.HARDWARE_COPY_KINDS,
                      help="copy kind: h2d (host to device), d2h, d2d (within one "
                           "GPU), p2p (GPU to GPU)")
    what.add_argument("--collective", choices=collectives.COLLECTIVES,
                      help="collective, as nccl-tests' <name>_perf "
                           "(gpulab.collectives.predict)")
    s.add_argument("--system", metavar="NAME|FILE",
                   help="system preset (see --list-systems), a cluster preset "
                        f"({', '.join(network.CLUSTER_PRESETS)}) or a systems YAML "
                        "file (FILE:NAME picks one of several)")
    s.add_argument("--memory", choices=pcie.MEMORY_KINDS,
                   help="host memory of h2d/d2h copies (default: pinned)")
    s.add_argument("--caller", choices=pcie.CALLERS,
                   help="copy: print the time per copy of this caller's back-to-back "
                        "loop (cudaMemcpyAsync or PyTorch copy_) instead of the "
                        "hardware time of one copy (the default)")
    s.add_argument("--direction", choices=pcie.DIRECTIONS,
                   help="copy: one direction (default) or both (pinned h2d and d2h "
                        "at the same time)")
    s.add_argument("--ranks", type=_ranks, metavar="N",
                   help="collective: ranks, one per GPU (default: the system's GPUs)")
    s.add_argument("--transport", choices=collectives.TRANSPORTS,
                   help="collective: p2p (NVLink, or PCIe without NVLink) or shm "
                        "(NCCL_P2P_DISABLE=1: staged through host memory); "
                        "default: p2p")
    s.add_argument("--algorithm", choices=("auto",) + collectives.ALGORITHMS,
                   help="collective: force an algorithm (default: auto, the fastest, "
                        "as NCCL's tuner picks)")
    s.add_argument("--protocol", choices=("auto",) + collectives.PROTOCOLS,
                   help="collective: force an NCCL protocol (default: auto)")
    s.add_argument("--nvls", choices=("auto", "on", "off"),
                   help="collective: in-switch reduction (NVLink SHARP); auto: "
                        "off if the environment sets NCCL_NVLS_ENABLE=0, as NCCL "
                        "does, else on where the NVSwitch supports it")
    s.add_argument("--gpus-per-process", type=_gpus_per_process, metavar="G",
                   help="collective: GPUs one process drives (default: every rank of a "
                        "node, as nccl-tests -g N; 1: one process per GPU, as nccl-tests "
                        "under MPI or torchrun). Changes the host's time per call")
    s.add_argument("--nodes", type=_nodes, metavar="N",
                   help="collective: scale --system out to N nodes "
                        "(gpulab.network.scale_out; ranks default to all GPUs)")
    s.add_argument("--nics", type=_nics, metavar="COUNTxRATE",
                   help="collective: NICs per node and Gb/s per NIC, e.g. 8x400G "
                        "(default: the preset's)")
    s.add_argument("--fabric", choices=FABRIC_CHOICES,
                   help="collective: scale-out fabric: InfiniBand, RoCE, AWS EFA, "
                        "Google GPUDirect-TCPX(O) (default: the preset's)")
    s.add_argument("--sharp", choices=("on", "off"),
                   help="collective: reduction in the network switches (NCCL CollNet "
                        "/ SHARP; default off, as in NCCL)")
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
