"""``nvidia-smi topo -m``: read its matrix (with the legend, NIC list and affinity
columns) into a :class:`TopoMatrix` and a server graph, and write one from a graph.

Units are SI: bytes per second (per direction) and seconds.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import networkx as nx

from .._validate import check_choice, check_int

from .graph import GraphBuilder, PCIE_CLASS_RANK, cpu_link_table, pcie_params, check_topology
from .paths import pcie_view, path_class


# --- nvidia-smi topo -m: reader and writer -----------------------------------------
class TopoParseError(ValueError):
    """Malformed or inconsistent ``nvidia-smi topo -m`` text.

    Attributes
    ----------
    lineno : int
        1-based number of the offending line.
    line : str
        Its content.
    """

    def __init__(self, message, lineno=1, line=""):
        self.lineno, self.line, self.message = lineno, line, message
        super().__init__(f"text: line {lineno}: {message}: {line!r}")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DEVICE = re.compile(r"GPU(?:0|[1-9][0-9]{0,3})|NIC(?:0|[1-9][0-9]{0,3})"
                     r"|[a-z][a-z0-9]*_(?:0|[1-9][0-9]{0,3})", re.ASCII)
_CLASS = re.compile(r"X|NV([1-9][0-9]{0,3})|PIX|PXB|PHB|NODE|SYS|SOC", re.ASCII)
_AFFINITY = (("CPU", "Affinity"), ("NUMA", "Affinity"), ("GPU", "NUMA", "ID"))
_RANGES = r"N/A|[0-9]{1,6}(-[0-9]{1,6})?(,[0-9]{1,6}(-[0-9]{1,6})?)*"
_AFFINITY_VALUE = {
    "CPU Affinity": re.compile(_RANGES, re.ASCII),
    "NUMA Affinity": re.compile(_RANGES, re.ASCII),
    "GPU NUMA ID": re.compile(r"N/A|[0-9]{1,6}", re.ASCII),
}
_LEGEND_ENTRY = re.compile(r"\s*(X|SYS|SOC|NODE|PHB|PXB|PIX|NV#)\s*=.*")
_NIC_LEGEND = re.compile(r"\s*(NIC(?:0|[1-9][0-9]{0,3})):\s*(\S+)\s*", re.ASCII)
_COMMAND = re.compile(r"\s*(\S*[$#]\s*)?nvidia-smi\s+topo\b.*")
_LEGEND = ("X    = Self",
           "SYS  = Connection traversing PCIe as well as the SMP interconnect between "
           "NUMA nodes (e.g., QPI/UPI)",
           "NODE = Connection traversing PCIe as well as the interconnect between PCIe "
           "Host Bridges within a NUMA node",
           "PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically "
           "the CPU)",
           "PXB  = Connection traversing multiple PCIe bridges (without traversing the "
           "PCIe Host Bridge)",
           "PIX  = Connection traversing at most a single PCIe bridge",
           "NV#  = Connection traversing a bonded set of # NVLinks")


@dataclass(frozen=True)
class TopoMatrix:
    """The content of an ``nvidia-smi topo -m`` output, as read.

    Attributes
    ----------
    devices : tuple of str
        Column names in order (``"GPU0"``, ..., ``"NIC0"``, ...).
    classes : dict
        ``{(row, column): class}`` for every pair, e.g. ``("GPU0", "GPU1"):
        "NV18"``; ``"SOC"`` (old name) is stored as ``"SYS"``.
    cpu_affinity, numa_affinity, gpu_numa_id : dict
        ``{device: text}`` for the rows that give them.
    nic_names : dict
        ``{"NIC0": "mlx5_0", ...}`` from the NIC legend.
    lines : dict
        ``{device: line number of its row}`` (1-based).
    texts : dict
        ``{line number: text}`` of the input (ANSI codes removed), for error
        messages.
    """

    devices: tuple
    classes: dict
    cpu_affinity: dict = field(default_factory=dict)
    numa_affinity: dict = field(default_factory=dict)
    gpu_numa_id: dict = field(default_factory=dict)
    nic_names: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict, repr=False)

    def to_topology(self, *, nvlink_generation=4, pcie_generation=5, lanes=16,
                    cpu_link="UPI 2.0"):
        """Build a :class:`Topology` consistent with the matrix.

        The matrix gives path classes, not the tree, so the graph is the
        simplest one that reproduces every class: devices joined by ``SYS``
        sit on different CPUs (devices whose classes say nothing, such as
        NVLink pairs, are grouped by NUMA affinity); ``NODE`` separates host
        bridges, ``PHB`` separate switch trees on one host bridge, ``PXB``
        separate leaf switches under a common upstream switch, and ``PIX``
        groups share one switch. ``NV#`` between every pair of three or more
        GPUs with the same ``#`` becomes one NVSwitch (``#`` links per GPU),
        other ``NV#`` pairs direct NVLink bonds. The matrix does not say the
        generations or widths: give them.

        Parameters
        ----------
        nvlink_generation : int, default 4
        pcie_generation : int, default 5
        lanes : int, default 16
        cpu_link : str, default "UPI 2.0"

        Returns
        -------
        Topology

        Raises
        ------
        TopoParseError
            If no PCIe tree gives the matrix (naming the first row it
            contradicts), or NVLink is claimed for a NIC.
        """
        gen, width = pcie_params(pcie_generation, lanes)
        nvgen = check_int("nvlink_generation", nvlink_generation, low=1, high=5)
        check_choice("cpu_link", cpu_link, cpu_link_table())
        return _matrix_to_topology(self, nvgen, gen, width, cpu_link)


def _fail(tm, dev, message):
    ln = tm.lines.get(dev, 1)
    raise TopoParseError(message, ln, tm.texts.get(ln, ""))


def _node_name(dev, nic_order):
    if dev.startswith("GPU"):
        return "gpu" + dev[3:]
    return f"nic{nic_order[dev]}"


def _groups(items, joined):
    """Connected groups of ``items`` under the symmetric relation ``joined``."""
    parent = {x: x for x in items}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in itertools.combinations(items, 2):
        if joined(x, y):
            parent[find(y)] = find(x)
    out = {}
    for x in items:
        out.setdefault(find(x), []).append(x)
    return list(out.values())


def _matrix_to_topology(tm, nvgen, gen, width, cpu_link_name):
    devs = list(tm.devices)
    cls = tm.classes
    nics = [d for d in devs if not d.startswith("GPU")]
    nic_order = {d: i for i, d in enumerate(nics)}
    name = {d: _node_name(d, nic_order) for d in devs}

    def rank(x, y):
        return PCIE_CLASS_RANK.get(cls[(x, y)])          # None for NV# pairs

    # NVLink sanity
    for (x, y), c in cls.items():
        if c.startswith("NV") and not (x.startswith("GPU") and y.startswith("GPU")):
            _fail(tm, x, f"{x}-{y} is {c}, but NVLink joins GPUs only")

    # sockets: joined by any class nearer than SYS; then merged by NUMA affinity
    comps = _groups(devs, lambda x, y: (rank(x, y) or 9) <= 4)
    numa = {d: tm.numa_affinity.get(d) for d in devs}
    sockets = []
    for comp in comps:
        keys = {numa[d] for d in comp} - {None}
        for s in sockets:
            if (keys & {numa[d] for d in s}) and not any(
                    rank(x, y) == 5 for x in comp for y in s):
                s.extend(comp)
                break
        else:
            sockets.append(list(comp))

    b = GraphBuilder("from nvidia-smi topo -m")
    cpus = []
    for s in sockets:
        keys = sorted({numa[d] for d in s} - {None, "N/A"})
        cpus.append(b.add("cpu", numa=keys[0] if len(keys) == 1 else None))
    b.smp(cpus, cpu_link_name)
    nodes = {}
    for d in devs:                      # GPUs and NICs in column order
        kind = "gpu" if d.startswith("GPU") else "nic"
        attrs = {"matrix_name": d}
        for key, table in (("cpu_affinity", tm.cpu_affinity),
                           ("numa_affinity", tm.numa_affinity),
                           ("gpu_numa_id", tm.gpu_numa_id)):
            if d in table:
                attrs[key] = table[d]
        if d in tm.nic_names:
            attrs["device"] = tm.nic_names[d]
        elif kind == "nic" and not d.startswith("NIC"):
            attrs["device"] = d             # old style: mlx5_0 as the column
        n = name[d]
        b.g.add_node(n, kind=kind, index=int(re.sub(r"\D", "", n)),
                     label=d if kind == "gpu" else f"NIC{nic_order[d]}",
                     latency=0.0, **attrs)
        nodes[d] = n
    hb_next = {}
    for s, cpu in zip(sockets, cpus):
        for hb in _groups(s, lambda x, y: (rank(x, y) or 9) <= 3):
            h = hb_next.get(cpu, 0)
            hb_next[cpu] = h + 1
            for tree in _groups(hb, lambda x, y: (rank(x, y) or 9) <= 2):
                leaves = _groups(tree, lambda x, y: rank(x, y) == 1)
                if len(tree) == 1:
                    b.pcie(cpu, nodes[tree[0]], gen, width, host_bridge=h)
                    continue
                top = b.add("switch")
                b.pcie(cpu, top, gen, width, host_bridge=h)
                for leaf in leaves:
                    sw = top
                    if len(leaves) > 1:
                        sw = b.add("switch")
                        b.pcie(top, sw, gen, width)
                    for d in leaf:
                        b.pcie(sw, nodes[d], gen, width)

    # NVLink: all-pairs-equal cliques of >= 3 GPUs become one NVSwitch
    gpus = [d for d in devs if d.startswith("GPU")]
    nv = {}
    for x, y in itertools.combinations(gpus, 2):
        c = cls[(x, y)]
        if c.startswith("NV"):
            nv[(x, y)] = int(c[2:])
    for comp in _groups(gpus, lambda x, y: (x, y) in nv or (y, x) in nv):
        counts = {nv.get((x, y)) for x, y in itertools.combinations(comp, 2)}
        if len(comp) >= 3 and len(counts) == 1 and None not in counts:
            s = b.add("nvswitch")
            for d in comp:
                b.nvlink(nodes[d], s, next(iter(counts)), nvgen, kind="nvswitch")
        else:
            for x, y in itertools.combinations(comp, 2):
                if (x, y) in nv:
                    b.nvlink(nodes[x], nodes[y], nv[(x, y)], nvgen)
    topo = b.done()

    # the graph must give back every class of the matrix
    for x, y in itertools.combinations(devs, 2):
        got, want = path_class(topo, nodes[x], nodes[y]), cls[(x, y)]
        if got != want:
            _fail(tm, y, f"{x}-{y} is {want}, but the rest of the matrix puts them "
                         f"{got} apart: no PCIe tree gives this matrix")
    return topo


def _split_lines(text):
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def read_topo_matrix(text):
    """Read the text of ``nvidia-smi topo -m`` into a :class:`TopoMatrix`.

    Accepts the real output: a header of device columns (``GPU0`` ...,
    ``NIC0`` ... or old-style ``mlx5_0``) followed by ``CPU Affinity``,
    ``NUMA Affinity`` and ``GPU NUMA ID`` (any subset), possibly underlined
    with ANSI escape codes; one row per device, tab- or space-separated, with
    ``X`` on the diagonal; NIC rows without affinities; then the ``Legend:``
    block and the ``NIC Legend:`` (``NIC0: mlx5_0``). Leading blank lines and
    the command line itself are skipped.

    Parameters
    ----------
    text : str
        The command's output.

    Returns
    -------
    TopoMatrix

    Raises
    ------
    TopoParseError
        (a ValueError) naming the first bad line, its number and content:
        unknown tokens or classes, missing or duplicated rows, ``X`` off the
        diagonal, an asymmetric matrix, unknown lines after the matrix.

    Examples
    --------
    >>> from gpulab import measurements
    >>> m = read_topo_matrix(measurements.raw_capture("h200-x2-2026-11-30",
    ...                                               "topo-m.txt"))
    >>> m.devices, m.classes[("GPU0", "GPU1")], m.numa_affinity["GPU1"]
    (('GPU0', 'GPU1'), 'NV18', '0')
    >>> read_topo_matrix("GPU0 GPU1\\nGPU0 X PIX\\nGPU1 PXB X\\n")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpulab.topology.topo_matrix.TopoParseError: text: line 3: GPU1-GPU0 is PXB but ...
    """
    if not isinstance(text, str):
        raise TopoParseError(f"text must be a str, got {type(text).__name__}", 1, "")
    raw = _split_lines(text)
    lines = [_ANSI.sub("", ln) for ln in raw]
    texts = {i + 1: ln for i, ln in enumerate(lines)}
    n_lines = len(lines)
    i = 0
    while i < n_lines and (not lines[i].strip() or _COMMAND.fullmatch(lines[i])):
        i += 1
    if i == n_lines:
        raise TopoParseError("no matrix header (a line naming GPU0 ...) found",
                             n_lines, lines[-1] if lines else "")

    def fail(k, msg):
        raise TopoParseError(msg, k + 1, lines[k])

    # header
    toks = lines[i].split()
    devices, columns, j = [], [], 0
    while j < len(toks):
        for words in _AFFINITY:
            if tuple(toks[j:j + len(words)]) == words:
                col = " ".join(words)
                if col in columns:
                    fail(i, f"column {col!r} appears twice")
                columns.append(col)
                j += len(words)
                break
        else:
            t = toks[j]
            if columns:
                fail(i, f"device column {t!r} after the affinity columns")
            if not _DEVICE.fullmatch(t):
                fail(i, f"expected the header (GPU0 GPU1 ... CPU Affinity ...), "
                        f"found {t!r}")
            if t in devices:
                fail(i, f"column {t!r} appears twice")
            devices.append(t)
            j += 1
    if not any(d.startswith("GPU") for d in devices):
        fail(i, "the header names no GPU column")
    n = len(devices)

    # rows
    classes, lineof = {}, {}
    aff = {c: {} for c in _AFFINITY_VALUE}
    k = i + 1
    for r, dev in enumerate(devices):
        if k >= n_lines or not lines[k].strip() or lines[k].strip() == "Legend:":
            kk = min(k, n_lines - 1)
            fail(kk, f"the matrix ends after {r} rows; expected a row for {dev}")
        toks = lines[k].split()
        if toks[0] != dev:
            if toks[0] in lineof:
                fail(k, f"second row for {toks[0]}")
            fail(k, f"expected the row of {dev}, found {toks[0]!r}")
        cells = toks[1:1 + n]
        if len(cells) < n:
            fail(k, f"row {dev} has {len(cells)} entries, expected {n}")
        for c, (col, cell) in enumerate(zip(devices, cells)):
            if not _CLASS.fullmatch(cell):
                fail(k, f"{dev}-{col}: unknown path class {cell!r} (expected X, NV#, "
                        "PIX, PXB, PHB, NODE or SYS)")
            if (cell == "X") != (c == r):
                fail(k, f"{dev}-{col}: 'X' (self) belongs on the diagonal only")
            classes[(dev, col)] = "SYS" if cell == "SOC" else cell
        extra = toks[1 + n:]
        if len(extra) > len(columns):
            fail(k, f"row {dev} has {len(extra)} values after the matrix, but the "
                    f"header has {len(columns)} affinity columns")
        for col, value in zip(columns, extra):
            if not _AFFINITY_VALUE[col].fullmatch(value):
                fail(k, f"{dev}: bad {col} value {value!r}")
            aff[col][dev] = value
        lineof[dev] = k + 1
        k += 1
    for r, x in enumerate(devices):
        for y in devices[:r]:
            if classes[(x, y)] != classes[(y, x)]:
                fail(lineof[x] - 1,
                     f"{x}-{y} is {classes[(x, y)]} but {y}-{x} is "
                     f"{classes[(y, x)]} (the matrix must be symmetric)")

    # legend
    nic_names = {}
    while k < n_lines:
        s = lines[k].strip()
        m = _NIC_LEGEND.fullmatch(lines[k])
        if (not s or s in ("Legend:", "NIC Legend:")
                or _LEGEND_ENTRY.fullmatch(lines[k])):
            pass
        elif m:
            if m.group(1) not in devices:
                fail(k, f"{m.group(1)} is not a column of the matrix")
            if m.group(1) in nic_names:
                fail(k, f"second legend line for {m.group(1)}")
            nic_names[m.group(1)] = m.group(2)
        elif s.split()[0] in devices:
            fail(k, f"second row for {s.split()[0]}")
        else:
            fail(k, "unexpected line after the matrix")
        k += 1
    return TopoMatrix(devices=tuple(devices), classes=classes,
                      cpu_affinity=aff["CPU Affinity"],
                      numa_affinity=aff["NUMA Affinity"],
                      gpu_numa_id=aff["GPU NUMA ID"], nic_names=nic_names,
                      lines=lineof, texts=texts)


def parse_topo_matrix(text):
    """Read ``nvidia-smi topo -m`` output into a :class:`Topology`.

    ``read_topo_matrix(text).to_topology()`` with its defaults (NVLink4,
    PCIe Gen5 x16, UPI 2.0); call those two yourself to choose others.

    Parameters
    ----------
    text : str
        The command's output.

    Returns
    -------
    Topology

    Raises
    ------
    TopoParseError
        (a ValueError) naming the line, for malformed or inconsistent input.

    Examples
    --------
    >>> from gpulab.topology import bottleneck_bandwidth
    >>> from gpulab import measurements
    >>> t = parse_topo_matrix(measurements.raw_capture("h200-x2-2026-11-30",
    ...                                                "topo-m.txt"))
    >>> path_class(t, "gpu0", "gpu1"), bottleneck_bandwidth(t, "gpu0", "gpu1").gb_per_s
    ('NV18', 450.0)
    """
    return read_topo_matrix(text).to_topology()


def render_topo_matrix(topo):
    """Write a topology as ``nvidia-smi topo -m`` would print it.

    Tab-separated header and rows (GPUs, then NICs), ``X`` on the diagonal,
    the path classes of :func:`path_class`, CPU and NUMA affinity of each GPU
    (``N/A`` where unknown), the legend and the NIC legend. Reading the result
    back with :func:`parse_topo_matrix` gives the same classes.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    str

    Examples
    --------
    >>> from gpulab.topology import pcie_box
    >>> render_topo_matrix(pcie_box(2, n_cpus=1)).splitlines()[1].split("\\t")
    ['GPU0', ' X ', 'PIX', 'N/A', '0', '', 'N/A']
    """
    check_topology(topo)
    g = topo.graph
    devs = topo.devices
    if not topo.gpus:
        raise ValueError("topo must have at least one GPU")
    names = {d: g.nodes[d].get("matrix_name") or g.nodes[d]["label"].split()[0]
             for d in devs}
    nic_names = {d: f"NIC{i}" for i, d in enumerate(topo.nics)}
    names.update(nic_names)
    view = pcie_view(g)

    def socket(d):
        for c in topo.cpus:
            if nx.has_path(view, d, c) and sum(
                    g.nodes[n]["kind"] == "cpu"
                    for n in nx.shortest_path(view, d, c)) == 1:
                return g.nodes[c].get("numa")
        return None

    out = ["\t" + "\t".join([names[d] for d in devs]
                            + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for a in devs:
        cells = [" X " if a == b else path_class(topo, a, b) for b in devs]
        row = [names[a], *cells]
        if g.nodes[a]["kind"] == "gpu":
            numa = g.nodes[a].get("numa_affinity")
            if numa is None:
                s = socket(a)
                numa = "N/A" if s is None else str(s)
            row += [g.nodes[a].get("cpu_affinity", "N/A"), numa, "",
                    g.nodes[a].get("gpu_numa_id", "N/A")]
        out.append("\t".join(row))
    out += ["", "Legend:", ""] + ["  " + e for e in _LEGEND]
    if topo.nics:
        out += ["", "NIC Legend:", ""]
        for i, d in enumerate(topo.nics):
            out.append(f"  NIC{i}: {g.nodes[d].get('device', f'mlx5_{i}')}")
    return "\n".join(out) + "\n"
