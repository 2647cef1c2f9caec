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
(:func:`gpulab.network.scale_out`; ranks default to all its GPUs, and ``--ranks``,
which counts the ranks of all nodes, must equal them); ``--nics COUNTxRATE``
(``8x400G``: NICs per node and Gb/s per NIC), ``--fabric ib|roce|efa|tcpx`` and
``--sharp on`` change its network, and are refused where every rank sits in one
NVLink domain (they would change nothing). ``--nvls on`` is refused on a system
whose NVLink fabric has no in-switch reduction.

Process model: one process per GPU (torchrun, or mpirun with nccl-tests ``-g 1``)
at every node count; ``--gpus-per-process G`` (``-g G``) models nccl-tests ``-g G``
inside a node. The table's header says which.

Under the table, a ``# CAVEAT`` line marks a preset that no measurement checks for
collectives (no run of ours, no published nccl-tests result in ``gpulab/data``
naming it, no ``gpulab fit`` calibration); in CSV/JSON it goes to stderr. Where
published nccl-tests runs of the same preset and size (GPUs, or nodes across the
network) put a point of the model outside :data:`gpulab.network.POINT_TARGET`, a
``# CHECK`` line there gives the model's median error per size band against them.
Where published runs check the preset but none at this size (node count; GPUs and
GPUs per process) or none of this collective, a ``# NOTE`` line says where they are:
the numbers are then the model's extrapolation from them.
``--list-systems`` lists every node preset and cluster preset from the data files:
GPUs, NVLink or PCIe, NICs, fabric, and what each supports: ``copies`` (the copy
kinds of its measured copy calibration, the hardware time; ``--caller pytorch: ...``
where it has none, only the PyTorch-loop model), ``collectives`` (every preset;
``checked`` where a measurement checks them, else ``unvalidated``) and ``multi_node``
(``yes`` where the preset has a network, ``with --nics and --fabric`` where those
flags must describe it).

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
import functools
import re

from .. import calibration, collectives, network, pcie, systems, units
from .base import (add_network_args, check_network_flags, check_nvls,
                   describe_network, emit, nvls_enabled, one_line, resolve_system,
                   scale_unit)

__all__ = ["register", "parse_size", "sweep_sizes", "MAX_SIZE"]

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kKmMgG]?)\s*$")
_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_MAX_ROWS = 10_000
#: Largest size of a sweep: 1 TiB (1024G), a bound of this command, above the memory
#: of every GPU in gpulab/data (the models take any float; a size past it is a typo).
MAX_SIZE = 1024**4
_SIZES = ("1 to 1024G bytes (1 TiB) with an optional suffix K, M or G (powers of "
          "1024, as in nccl-tests: 8, 64K, 4G)")


def parse_size(text):
    """Parse a byte count like nccl-tests: ``8``, ``64K``, ``1.5M``, ``4G`` (K/M/G =
    powers of 1024), from 1 byte to :data:`MAX_SIZE` (1 TiB = ``1024G``). T, P and
    exponents (``1e6``) are refused, as nccl-tests knows only K, M and G. Raises
    :class:`argparse.ArgumentTypeError` on bad input.

    >>> parse_size("4G"), parse_size("64k"), parse_size("0.5K"), parse_size("1024G")
    (4294967296, 65536, 512, 1099511627776)
    """
    shown = repr(text[:40] + ("..." if len(text) > 40 else "")) \
        if isinstance(text, str) else repr(text)
    if isinstance(text, str) and re.match(r"^\s*-", text):
        raise argparse.ArgumentTypeError(
            f"invalid size {shown}: must be positive: {_SIZES}")
    m = _SIZE_RE.match(text) if isinstance(text, str) else None
    if not m:
        why = ""
        if isinstance(text, str) and re.match(r"^\s*[\d.]+\s*[tTpPeE]", text):
            why = "; T, P and exponents are not taken (nccl-tests knows K, M, G)"
        raise argparse.ArgumentTypeError(f"invalid size {shown}: give {_SIZES}{why}")
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if value > MAX_SIZE:
        raise argparse.ArgumentTypeError(
            f"invalid size {shown}: above the largest size, 1024G = 1 TiB "
            f"({MAX_SIZE} bytes); give {_SIZES}")
    if value < 1 or not value.is_integer():
        raise argparse.ArgumentTypeError(f"invalid size {shown}: must be {_SIZES}")
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


def _scale_up(s):
    """``NVLink4 nvswitch, NVLS`` or ``PCIe only``: how the GPUs of a node meet."""
    if s.nvlink.fabric == "none" or s.nvlink.generation is None:
        return "PCIe only (no NVLink)"
    nvls = ", NVLS" if s.nvlink.nvls else ""
    domain = (f", {s.nvlink_domain}-GPU domain" if s.nvlink_domain != s.gpus_per_node
              else "")
    return f"NVLink{s.nvlink.generation} {s.nvlink.fabric}{nvls}{domain}"


def _nics(s):
    """``8x 400G ConnectX-7`` per node, or ``none``."""
    nw = s.network
    if nw is None:
        return "none"
    rate = nw.nic_rate.bytes_per_s * 8 / 1e9
    return f"{nw.nics_per_node:g}x {rate:g}G" + (f" {nw.nic}" if nw.nic else "")


def _copies_cell(system):
    """--list-systems' copies column: the kinds of the hardware copy calibration
    (default and --caller cuda), else the PyTorch-loop model's (--caller pytorch)."""
    hw = _copy_kinds(system)
    if hw:
        return " ".join(hw)
    loop = _copy_kinds(system, "pytorch")
    return f"--caller pytorch: {' '.join(loop)}" if loop else "none"


def _list_systems(args, out):
    """Every node preset (gpulab.systems) and every cluster preset
    (gpulab.network.CLUSTER_PRESETS), from the data files, one line each."""
    rows = []

    def add(name, kind, s, nodes, description, source, accessed):
        nw = s.network
        checked, what = _collective_check(name, s, None if kind == "node" else
                                          2 * s.gpus_per_node)
        rows.append({"system": name, "kind": kind, "nodes": nodes,
                     "gpus": f"{s.gpus_per_node}x {s.gpu}" + (
                         f" per node, {s.n_gpus} in all" if s.n_gpus != s.gpus_per_node
                         else ""),
                     "nvlink": s.nvlink.fabric, "scale_up": _scale_up(s),
                     "p2p_via": s.p2p.via,
                     "pcie": f"Gen{s.pcie.generation} x{s.pcie.lanes}",
                     "nics_per_node": _nics(s),
                     "fabric": nw.fabric if nw is not None else "none",
                     "copies": _copies_cell(s),
                     "collectives": ("checked" if checked else "unvalidated") + (
                         "" if kind == "node" else " (2+ nodes)"),
                     "multi_node": ("yes (--nodes N)" if nw is not None else
                                    "with --nics and --fabric"),
                     "description": one_line(description)})
        if args.format != "table":
            rows[-1].update(collectives_check=what or None, source=source,
                            accessed=accessed)

    for name in systems.names():
        s = systems.get(name)
        add(name, "node", s, str(s.nodes), s.description, s.source, s.accessed)
    for name in network.CLUSTER_PRESETS:
        s = network.scale_out(name, 1)
        rec = network.cluster_preset(name)
        add(name, f"cluster of {rec['node']}", s, "--nodes N", rec["description"],
            rec["source"], rec["accessed"])
    emit(rows, args.format, out)
    return 0


#: Presets whose collectives our own runs check, where the data files have no field
#: saying so: the 2-GPU machine of our nccl-tests sweeps (gpulab/data/nccl_model.yaml
#: is fitted to them, held-out runs check it).
_OWN_COLLECTIVE_RUNS = {
    "h200-x2-measured": "our own 2x H200 nccl-tests sweeps (gpulab/data/measurements)"}
def _public_systems(multi_node):
    """{preset name: rows} of the published nccl-tests results that check it: the
    multi-node ones (gpulab.network.public_results) or the single-server ones
    (gpulab.calibration.public_singlenode_results)."""
    return dict(_public_index(bool(multi_node))[0])


@functools.lru_cache(maxsize=2)
def _public_index(multi_node):
    """The published rows, read once per process: ({preset: rows}, {preset: {(size,
    GPUs per process, collective)}}) with size the node count across nodes (GPUs per
    process None), else the GPU count."""
    rows = network.public_results() if multi_node \
        else calibration.public_singlenode_results()
    counts, runs = {}, {}
    for r in rows:
        name = r.get("system")
        if name in (None, "", "none"):
            continue
        counts[name] = counts.get(name, 0) + 1
        key = (r["nodes"], None, r["collective"]) if multi_node \
            else (r["gpus"], r["gpus_per_process"] or 1, r["collective"])
        runs.setdefault(name, set()).add(key)
    return counts, {k: frozenset(v) for k, v in runs.items()}


def _collective_check(name, system, n_ranks=None):
    """(checked, what): whether a measurement checks the collective model of preset
    or file ``name`` at ``n_ranks`` (default: all its GPUs), from the data: a fitted
    ``collective_model`` (gpulab fit), a cluster preset's ``collective_check``, the
    published nccl-tests results that name the preset (multi-node ones when the
    ranks cross the network, single-server ones otherwise), or our own runs."""
    n = system.n_gpus if n_ranks is None else n_ranks
    multi = n > system.scale_up_domain
    check = getattr(system, "collective_check", None)     # a field the data may add
    if check:
        return True, one_line(check.get("source", check) if isinstance(check, dict)
                              else check)
    if system.collective_model is not None:
        src = system.collective_model.get("source", "gpulab fit") \
            if isinstance(system.collective_model, dict) else "gpulab fit"
        return True, f"calibrated on measured sweeps ({one_line(src)})"
    name = str(name)
    if name in network.CLUSTER_PRESETS:
        rec = network.cluster_preset(name)
        check = rec.get("collective_check")
        if check:
            return True, one_line(check.get("source", check)
                                  if isinstance(check, dict) else check)
        if not multi:
            name = rec["node"]
    if name in _OWN_COLLECTIVE_RUNS and not multi:
        return True, _OWN_COLLECTIVE_RUNS[name]
    rows = _public_systems(multi).get(name)
    if rows:
        where = ("gpulab/data/measurements/public_multinode.csv" if multi
                 else "gpulab/data/measurements/public_singlenode.csv")
        return True, f"published nccl-tests results ({rows} rows in {where})"
    return False, ""


#: Collective-only flags: refused with --copy.
_COLLECTIVE_FLAGS = ("ranks", "transport", "algorithm", "protocol", "nvls",
                     "gpus_per_process", "nodes", "nics", "fabric", "sharp")
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
    system = resolve_system(args, parser)
    sizes = sweep_sizes(args.min_bytes, args.max_bytes, args.factor)
    if len(sizes) > _MAX_ROWS:
        parser.error(f"argument --factor: the sweep would have {len(sizes)} rows "
                     f"(at most {_MAX_ROWS})")
    if args.collective is not None:
        return _predict_collective(args, out, system, sizes)
    _check_copy_support(parser, args, system)
    return _predict_copy(args, out, system, sizes)


def _copy_kinds(system, caller=None):
    """The copy kinds (of ``pcie.HARDWARE_COPY_KINDS``) ``system`` has a model for:
    with ``caller`` None or ``cuda`` those of its hardware copy calibration
    (:func:`gpulab.pcie.hardware_copy`, pinned memory, one direction), with
    ``pytorch`` those of the PyTorch-loop model (:func:`gpulab.pcie.copy_time`)."""
    kinds = []
    for kind in pcie.HARDWARE_COPY_KINDS:
        try:
            if caller == "pytorch":
                pcie.copy_time([1.0], kind, system=system, caller="pytorch")
            else:
                pcie.hardware_copy(kind, system=system)
        except ValueError:
            continue
        kinds.append(kind)
    return kinds


def _copy_presets(kind, memory, direction):
    """The node presets whose hardware copy calibration covers this copy."""
    found = []
    for name in systems.names():
        try:
            pcie.hardware_copy(kind, memory=memory, direction=direction, system=name)
        except ValueError:
            continue
        found.append(name)
    return found


def _check_copy_support(parser, args, system):
    """Refuse, before any model call, a copy the system has no model for: the
    hardware time (default, and --caller cuda) needs a measured copy calibration;
    --caller pytorch has the PyTorch-loop model of h2d, d2h and p2p."""
    memory, direction = args.memory or "pinned", args.direction or "one"
    if args.caller == "pytorch":
        kinds = _copy_kinds(system, "pytorch")
        if args.copy not in kinds:
            parser.error(f"argument --copy: --caller pytorch models {', '.join(kinds)} "
                         f"copies, not {args.copy}; give --caller cuda or leave "
                         "--caller out for the hardware time")
        return
    try:
        pcie.hardware_key(args.copy, memory=memory, direction=direction)
    except ValueError as exc:
        flag = "--direction" if "direction" in str(exc).split(";")[0] else "--memory"
        parser.error(f"argument {flag}: {one_line(exc)}")
    try:
        pcie.hardware_copy(args.copy, memory=memory, direction=direction,
                           system=system)
    except ValueError:
        what = " ".join(x for x in (args.copy, memory if args.copy in ("h2d", "d2h")
                                    else "", "both directions" if direction == "both"
                                    else "") if x)
        has = _copy_presets(args.copy, memory, direction)
        alt = ("; or --caller pytorch (PyTorch back-to-back loop model: "
               f"{', '.join(_copy_kinds(system, 'pytorch'))} on {args.system})"
               if args.copy in _copy_kinds(system, "pytorch") else "")
        parser.error(f"argument --system: {args.system} has no measured copy "
                     f"calibration for {what} copies (the hardware time needs one; "
                     f"see --list-systems, column copies): presets with one: "
                     f"{', '.join(has) or 'none'}{alt}")


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
    if args.nodes is not None and n != system.n_gpus:
        # --ranks counts the ranks of all nodes: fewer would model fewer nodes
        parser.error(
            f"argument --ranks: {n} disagrees with --nodes {args.nodes}, which has "
            f"{system.n_gpus} GPUs ({args.nodes} {scale_unit(system, args.nodes)} x "
            f"{system.n_gpus // args.nodes}); "
            f"--ranks counts the ranks of all nodes: give --ranks {system.n_gpus} or "
            "leave it out (or fewer --nodes)")
    check_network_flags(parser, args, system, n)
    check_nvls(parser, args, system)
    transport = args.transport or "p2p"
    algorithm = args.algorithm or "auto"
    protocol = args.protocol or "auto"
    nvls = nvls_enabled(args.nvls)
    # one process per GPU (torchrun, mpirun + nccl-tests -g 1) at every node count,
    # unless --gpus-per-process says otherwise: passed explicitly, so the process
    # model never follows the model's own default
    gpp = 1 if args.gpus_per_process is None else args.gpus_per_process
    try:
        pred = collectives.predict(args.collective, [float(s) for s in sizes], n,
                                   system, transport=transport, algorithm=algorithm,
                                   protocol=protocol, nvls=nvls,
                                   gpus_per_process=gpp)
    except ValueError as exc:
        parser.error(_model_error(one_line(exc)))
    checked, _ = _collective_check(args.system, system, n)
    caveat = _public_check(args.system, system, n, args.nodes, gpp) if checked \
        else _caveat(args.system, system, n)
    if checked:
        note = _coverage_note(args.system, system, n, args.nodes, gpp, args.collective)
        caveat = caveat if note is None else note if caveat is None \
            else f"{caveat}; {note[len('NOTE: '):]}"
    us = pred.time / units.US
    alg = pred.algbw / units.GB
    bus = pred.busbw / units.GB
    if args.format == "table":
        try:
            _collective_table(args, out, system, n, transport, sizes, pred, gpp,
                              caveat)
        except ValueError as exc:
            parser.error(_model_error(one_line(exc)))
        return 0
    if caveat:
        import sys
        sys.stderr.write(f"gpulab predict: warning: {caveat}\n")
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




def _caveat(name, system, n):
    """The line under the table of a preset whose collectives nothing checks."""
    where = ("across nodes" if n > system.scale_up_domain
             else "inside one NVLink domain" if system.nvlink.fabric != "none"
             else "inside one node")
    return (f"CAVEAT: {name} is unvalidated for collectives {where}: no measurement "
            "of ours and no published nccl-tests result in gpulab's data checks it, "
            "so these numbers are the model's extrapolation, not a checked "
            "prediction; measure before relying on them (gpulab compare)")


def _coverage_note(name, system, n, nodes, gpp, collective):
    """The line under the table of a preset that published runs check, but not at
    this size (node count across the network; GPUs and GPUs per process inside one
    domain) or not for this collective: where the runs are, so the reader knows the
    numbers are the model's extrapolation from them. None where a run matches, or
    where no published run names the preset."""
    multi = n > system.scale_up_domain
    runs = _public_index(multi)[1].get(str(name))
    if not runs:
        return None
    here = (nodes, None) if multi else (n, gpp)
    size = (f"{nodes} {scale_unit(system, nodes)}" if multi
            else f"{n} GPUs, {gpp} GPU(s) per process")
    match = sorted({c for s, g, c in runs if (s, g) == here})
    if collective in match:
        return None
    if match:
        return (f"NOTE: the published nccl-tests runs of {name} on {size} are of "
                f"{', '.join(match)} only: for {collective} these numbers are the "
                "model's extrapolation, not a checked prediction")
    sizes = sorted({(s, g) for s, g, _ in runs})
    where = (f"{', '.join(str(s) for s, _ in sizes)} {scale_unit(system)}" if multi
             else ", ".join(f"{s} GPUs with {g} per process" for s, g in sizes))
    colls = ", ".join(sorted({c for _, _, c in runs}))
    return (f"NOTE: no published nccl-tests run of {name} on {size}: its published "
            f"runs are on {where} ({colls}), so these numbers are the model's "
            "extrapolation beyond them")


def _public_check(name, system, n, nodes, gpp=1):
    """The line under the table of a checked preset whose published runs at this size
    (its GPUs and process model inside one domain; its node count across the network)
    have a point outside the model's point target; None where they have none, or no
    run matches."""
    multi = n > system.scale_up_domain
    name = str(name)
    if name not in (network.CLUSTER_PRESETS if multi else ()) \
            and name not in systems.names():
        return None                     # a system file: no published run names it
    if multi:
        where = "gpulab/data/measurements/public_multinode.csv"
        size = f"{nodes} {scale_unit(system, nodes)}" if nodes is not None else None
        groups = network.public_errors(name, nodes) if nodes is not None else []
    else:
        where = "gpulab/data/measurements/public_singlenode.csv"
        size = f"{n} GPUs, {gpp} GPU(s) per process"
        groups = [e for e in calibration.public_singlenode_errors(name, n)
                  if (e["gpus_per_process"] or 1) == gpp]
    if not groups or all(e["points_within"] >= 1.0 for e in groups):
        return None
    bands = []
    for band, _, _, metric, _ in network.BANDS:
        g = [e for e in groups if e["band"] == band]
        if not g:
            continue
        pts = sum(e["points"] for e in g)
        med = sorted(e["median_error"] for e in g)[len(g) // 2]
        plural = "point" if pts == 1 else "points"
        bands.append(f"{100 * med:+.0f}% {metric} {band} ({pts} {plural})")
    worst = max((e["worst_error"] for e in groups), key=abs)
    return (f"CHECK: published nccl-tests runs of {name} on {size} ({where}) against "
            f"this model, (model - published) / published, median per size band: "
            f"{'; '.join(bands)}; worst {100 * worst:+.0f}%, beyond the "
            f"{100 * network.POINT_TARGET:.0f}% the model aims at: where they differ, "
            "the published run is the better number")


def _collective_table(args, out, system, n, transport, sizes, pred, gpp, caveat):
    coll = args.collective
    if transport == "shm":
        via = "SHM: P2P disabled, staged through host memory over PCIe"
    elif system.nvlink.generation is None or system.nvlink.fabric == "none":
        via = "P2P over PCIe"
    else:
        via = f"P2P over NVLink{system.nvlink.generation}"
    line = units.fmt_bandwidth(collectives.fabric_bandwidth(system, transport))
    net = describe_network(system, n, nvls=nvls_enabled(args.nvls))
    net = f"; {net}" if net else ""
    factor = collectives.busbw_factor(coll, n)
    per_rank = coll in _PER_RANK_COUNT
    if args.gpus_per_process is None:
        gpp_how = ("one process per GPU, as torchrun or mpirun with nccl-tests -g 1, "
                   "at every node count; -g N / --gpus-per-process N models "
                   "nccl-tests -g N")
    else:
        gpp_how = (f"nccl-tests -g {gpp}: {n // gpp} process(es) of {gpp} GPU(s)"
                   if gpp > 1 else "one process per GPU, as nccl-tests -g 1")
    out.write(
        f"# gpulab predict: {coll}, {system.name}, nranks {n}, transport {transport} "
        f"({via}), model: NCCL-like (see gpulab.collectives)\n"
        f"# {system.n_gpus}x {system.gpu}; line rate per GPU {line}{net}; algorithm "
        f"{args.algorithm or 'auto'}, protocol {args.protocol or 'auto'}, NVLS "
        f"{'allowed' if nvls_enabled(args.nvls) else 'off'} (--nvls "
        f"{args.nvls or 'auto'}); process model: {gpp} GPU(s) per process "
        f"({gpp_how})\n"
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
    if caveat:
        out.write(f"# {caveat}\n")
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
                   help="collective: ranks of all nodes, one per GPU (default: the "
                        "system's GPUs; with --nodes it must be nodes x GPUs per node)")
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
                   help="collective: GPUs one process drives (default: 1, one process "
                        "per GPU as torchrun or mpirun with nccl-tests -g 1, at every "
                        "node count; G: nccl-tests -g G inside one node, 1 to the GPUs "
                        "per node, dividing the ranks). Changes the host's time per call")
    s.add_argument("-g", dest="gpus_per_process", type=_gpus_per_process, metavar="G",
                   help="same as --gpus-per-process (nccl-tests' -g)")
    add_network_args(s)
    s.add_argument("--min-bytes", "-b", type=parse_size, default=8, metavar="SIZE",
                   help="smallest size, 1 to 1024G = 1 TiB (default: 8)")
    s.add_argument("--max-bytes", "-e", type=parse_size, default=4 * 1024**3,
                   metavar="SIZE", help="largest size, 1 to 1024G = 1 TiB (default: 4G)")
    s.add_argument("--factor", "-f", type=_factor, default=2,
                   help="multiplication factor between sizes (default: 2)")
    s.add_argument("--list-systems", action="store_true",
                   help="list every node preset and cluster preset (GPUs, NVLink or "
                        "PCIe, NICs, fabric; which copies, collectives and multi-node "
                        "runs each supports) and exit")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_predict, _predict_parser=s)
