"""Shared parts of the ``gpulab`` commands: output formats, flag-named errors, the
sweep reader with usage errors, and small argument types."""
from __future__ import annotations

import argparse
import csv
import json
import os
import re

from .. import nccltests


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


def name_flag(message, flags):
    """Prefix a model error that names a parameter with the CLI flag behind it."""
    for param, flag in flags.items():
        if message.startswith(param):
            return f"{flag} ({param}){message[len(param):]}"
    return message


def nvls_enabled(choice):
    """--nvls: ``on``/``off``, or ``auto`` = as NCCL would here: off when the
    environment sets ``NCCL_NVLS_ENABLE=0`` (NVLink multicast disabled), else on
    wherever the switch supports it."""
    if choice in ("on", "off"):
        return choice == "on"
    return os.environ.get("NCCL_NVLS_ENABLE", "").strip() != "0"


def read_sweeps(parser, path):
    """Every sweep of ``path``, or a usage error naming the file and line."""
    try:
        # read the file here: the reader would take a missing path for nccl-tests
        # text, and its errors name its own parameter, not the user's FILE
        text = read_text_file(path, "nccl-tests output (text, -J JSON, or CSV)")
    except ValueError as exc:
        parser.error(f"argument FILE: {str(exc).removeprefix('file: ')}")
    try:
        return nccltests.parse_all(text, source=path)
    except nccltests.NcclTestsParseError as exc:
        where = f", line {exc.lineno}" if exc.lineno else ""
        quoted = f": {clip(exc.line)!r}" if exc.line is not None else ""
        parser.error(f"argument FILE: {path}{where}: {short_message(exc.reason)}"
                     f"{quoted}")
    except ValueError as exc:
        parser.error(f"argument FILE: {path}: {short_message(exc)}")


def read_text_file(path, expected):
    """The UTF-8 text of ``path``; a ValueError naming the file (and the line of
    the first byte that is not UTF-8) for a missing, unreadable or binary file.
    ``expected`` says what the file should hold."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ValueError(f"file: cannot read {path!r}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ValueError(f"file: {path}: line {line}: not UTF-8 text (binary data?); "
                         f"expected {expected}") from None


def int_type(what, low=1, high=None):
    """An argparse type: an integer in ``[low, high]`` (``high`` None: no upper
    bound); the error names ``what`` and the valid range."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            where = (f"an integer >= {low}" if high is None
                     else f"an integer from {low} to {high}")
            raise argparse.ArgumentTypeError(
                f"invalid {what} {clip(text, 40)!r}: must be {where}")
        return value
    return parse


#: ``--ranks N``: a rank count >= 1.
positive_int = int_type("ranks")


def clip(text, limit=80):
    """``text`` cut to ``limit`` characters, saying how long it was, so that a
    message quoting a file's line stays short (a line may be megabytes).

    >>> clip("x" * 10, 4)
    'xxxx... (10 characters)'
    """
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


#: Longest error message printed (a message quoting input is cut to this).
MAX_MESSAGE = 600
_QUOTED = re.compile(r"'[^'\n]{120,}'|\"[^\"\n]{120,}\"")


def short_message(message, limit=MAX_MESSAGE):
    """``message`` with every long quoted text cut (:func:`clip`), and cut to
    ``limit`` characters in all: errors quote input, which may be huge."""
    message = _QUOTED.sub(lambda m: m.group(0)[0] + clip(m.group(0)[1:-1], 80)
                          + m.group(0)[0], str(message))
    return clip(message, limit)


def one_line(message):
    """``message`` on one line (a model error may span several)."""
    return " ".join(str(message).split())


# --- across nodes: the flags shared by ``predict`` and ``compare`` ---------------------
#: Fabric kinds of --fabric (aliases of gpulab.network's fabric names).
FABRIC_CHOICES = ("ib", "roce", "efa", "tcpx")
MAX_NODES = 100_000
#: The flags that change the network between nodes (their args attribute names).
NETWORK_FLAGS = ("nics", "fabric", "sharp")


def nodes_type(text):
    """An argparse type: a node count in [1, 100000]."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"invalid nodes {text!r}: must be an integer in [1, {MAX_NODES}]")
    return value


def nics_type(text):
    """An argparse type: COUNTxRATE such as ``8x400G``."""
    from .. import network
    try:
        network.parse_nics(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            one_line(str(exc).replace("nics must", "must", 1))) from None
    return text


def scale_unit(system, count=2):
    """What ``--nodes`` counts for ``system``: racks where its NVLink domain spans
    several nodes (GB200 NVL72), nodes otherwise; singular for ``count`` 1."""
    word = "rack" if system.nvlink_domain > system.gpus_per_node else "node"
    return word if count == 1 else word + "s"


def add_network_args(s, what="collective: "):
    """Add ``--nodes``, ``--nics``, ``--fabric`` and ``--sharp`` to parser ``s``."""
    from .. import network
    s.add_argument("--nodes", type=nodes_type, metavar="N",
                   help=f"{what}scale --system out to N nodes (1-{MAX_NODES}; "
                        "gpulab.network.scale_out), a system or a cluster preset ("
                        f"{', '.join(network.CLUSTER_PRESETS)}); on a system whose "
                        "NVLink domain spans nodes (gb200-nvl72) N counts racks")
    s.add_argument("--nics", type=nics_type, metavar="COUNTxRATE",
                   help=f"{what}NICs per node (per rack on gb200-nvl72, e.g. "
                        "72x400G) and Gb/s per NIC, e.g. 8x400G (default: the "
                        "preset's); needs ranks on 2 nodes or more")
    s.add_argument("--fabric", choices=FABRIC_CHOICES,
                   help=f"{what}scale-out fabric: InfiniBand, RoCE, AWS EFA, Google "
                        "GPUDirect-TCPX(O) (default: the preset's); needs ranks on 2 "
                        "nodes or more")
    s.add_argument("--sharp", choices=("on", "off"),
                   help=f"{what}reduction in the network switches (NCCL CollNet / "
                        "SHARP; default off, as in NCCL); on needs ranks on 2 nodes "
                        "or more")


_SCALE_OUT_FLAGS = {"nodes": "--nodes", "nics": "--nics", "fabric": "--fabric",
                    "sharp": "--sharp", "gdr": "--nics", "system": "--system",
                    "name": "--system"}


def resolve_system(args, parser):
    """The System of ``--system``, scaled out by ``--nodes``/``--nics``/``--fabric``/
    ``--sharp`` when given (or when ``--system`` names a cluster preset); a usage
    error naming the flag otherwise."""
    from .. import network, systems
    scaled = any(getattr(args, k, None) is not None
                 for k in ("nodes",) + NETWORK_FLAGS)
    if not scaled and args.system not in network.CLUSTER_PRESETS:
        try:
            return systems.resolve(args.system)
        except ValueError as exc:
            parser.error(f"argument --system: {one_line(exc)} (or a cluster preset: "
                         f"{', '.join(network.CLUSTER_PRESETS)})")
    nodes = args.nodes
    sharp = None if args.sharp is None else args.sharp == "on"
    try:
        if nodes is None:
            # the preset as it is: as many scale-out units (nodes, or NVLink domains
            # that span nodes) as make its GPUs
            nodes = 1
            if args.system not in network.CLUSTER_PRESETS:
                whole = systems.resolve(args.system)
                unit = network.scale_out(whole, 1).n_gpus
                nodes = max(1, whole.n_gpus // max(unit, 1))
        return network.scale_out(args.system, nodes, nics=args.nics,
                                 fabric=args.fabric, sharp=sharp)
    except ValueError as exc:
        msg = one_line(exc)
        first = msg.split(" ", 1)[0].strip(":,;'\"").lower()
        flag = _SCALE_OUT_FLAGS.get(first)
        if flag is None:
            # a message that names no parameter first: the flag it mentions
            named = [f for k, f in _SCALE_OUT_FLAGS.items()
                     if k in ("nics", "fabric", "sharp")
                     and (k in msg.split() or f"{k}=" in msg or f"'{k}'" in msg)]
            flag = named[0] if named else "--system"
        if "give nics and fabric" in msg:
            flag = "--nics"
        parser.error(f"argument {flag}: {msg}")


def check_network_flags(parser, args, system, n_ranks):
    """Refuse ``--nics``, ``--fabric`` and ``--sharp on`` where no rank crosses the
    network: all ``n_ranks`` ranks in one NVLink (scale-up) domain."""
    if n_ranks > system.scale_up_domain:
        return
    for name in NETWORK_FLAGS:
        value = getattr(args, name, None)
        if value is None or (name == "sharp" and value == "off"):
            continue
        shown = f"--{name} {value}"
        parser.error(
            f"argument --{name}: {shown} changes the network between nodes, but the "
            f"{n_ranks} rank(s) fit in one NVLink domain of {args.system} "
            f"({system.scale_up_domain} GPUs), so it would change nothing; it needs "
            "--nodes N with N >= 2 (ranks on 2 or more nodes)")


def check_nvls(parser, args, system):
    """Refuse ``--nvls on`` on a system whose NVLink fabric has no in-switch
    reduction (NVLink SHARP needs a third-generation NVSwitch or later)."""
    if getattr(args, "nvls", None) != "on" or system.nvlink.nvls:
        return
    has = ("no NVLink (PCIe only)" if system.nvlink.fabric == "none" or
           system.nvlink.generation is None else
           f"NVLink{system.nvlink.generation} {system.nvlink.fabric} without it")
    parser.error(f"argument --nvls: on needs in-switch reduction (NVLink SHARP: "
                 f"third-generation NVSwitch or later), but {args.system} has {has}; "
                 "give --nvls auto or off")


def describe_network(system, n_ranks, nvls=True):
    """One phrase: the network ``n_ranks`` ranks of ``system`` cross (the cluster
    model used), or '' when they stay inside one NVLink domain."""
    from .. import network, units
    if n_ranks <= system.scale_up_domain or system.network is None:
        return ""
    path = network.network_path(system, n_ranks, nvls=nvls)
    nw = system.network
    # a node of the network is an NVLink domain: a rack of GB200 NVL72, else a server
    unit = "rack" if system.scale_up_domain > system.gpus_per_node else "node"
    nics = path.nics * system.scale_up_domain / path.ranks_per_node
    return (f"between {path.nodes} {unit}s: {nics:g}x "
            f"{nw.nic_rate.bytes_per_s * 8 / 1e9:g} Gb/s {nw.fabric} NICs per {unit}"
            f" ({nw.topology}, SHARP {'on' if nw.sharp else 'off'}, GPUDirect RDMA "
            f"{'on' if nw.gdr else 'off'}), {path.net_bw / units.GB:.0f} GB/s per "
            f"{unit} achieved, per direction (gpulab.network)")


def _squash(text):
    return "".join(ch for ch in str(text).lower() if ch.isalnum())


def gpu_model(device_name):
    """The GPU of :func:`gpulab.specs.gpu_names` that an nccl-tests device name
    (``NVIDIA H100 80GB HBM3``, ``Tesla V100-SXM3-32GB``) names, or None when it
    names none of them (``NVIDIA Graphics Device``). The longest match wins
    (``A100`` over ``A10``)."""
    from .. import specs
    name = _squash(device_name)
    hits = [g for g in specs.gpu_names() if _squash(g) and _squash(g) in name]
    return max(hits, key=lambda g: len(_squash(g))) if hits else None


def gpu_mismatch(sweep, system):
    """A warning sentence when the GPUs an nccl-tests header lists (its Rank lines,
    or a JSON report's devices) are not the GPU that ``system`` models; None when
    they match or the file names no known GPU."""
    named = {}
    for d in sweep.devices:
        model = gpu_model(d.name)
        if model is not None:
            named.setdefault(model, d.name)
    other = {m: n for m, n in named.items() if m != system.gpu}
    if not other:
        return None
    shown = ", ".join(f"{n!r} ({m})" for m, n in sorted(other.items()))
    return (f"{sweep.source}: the file's GPUs are {shown} but system {system.name} "
            f"models {system.gpu}: the comparison mixes two GPUs (give a --system "
            f"with {' or '.join(sorted(other))} GPUs)")
