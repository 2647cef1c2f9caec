r"""Server topology: CPUs, PCIe switches, GPUs, NICs and NVLink as a graph.

A :class:`Topology` wraps a :class:`networkx.Graph` whose nodes are

=========  ==========  ===============================================
name       ``kind``    what
=========  ==========  ===============================================
``cpu0``   cpu         a CPU socket / NUMA node with its root complex
``sw0``    switch      a PCIe switch
``gpu0``   gpu         a GPU
``nic0``   nic         a network adapter (InfiniBand / Ethernet)
``nvsw0``  nvswitch    an NVSwitch chip
=========  ==========  ===============================================

and whose edges carry ``kind`` (``"pcie"``, ``"nvlink"`` GPU-GPU,
``"nvswitch"`` GPU-NVSwitch, ``"upi"`` CPU-CPU) and ``bandwidth`` (a
per-direction :class:`gpulab.units.Bandwidth`; links are full duplex). PCIe edges
that end on a CPU carry ``host_bridge``: two devices under one CPU but different
host bridges are ``NODE`` apart, under one host bridge ``PHB``.

Bandwidths come from the data, never from literals here::

    PCIe, per direction   = GT/s x lanes x encoding efficiency / 8
                            (pcie.encoded_bandwidth, data/pcie.csv)
    NVLink, per direction = links x per-link rate  (links.nvlink_link_bandwidth)
    CPU-CPU, per direction = links x GT/s x data bits per transfer / 8
                                                    (data/cpu_links.csv)

and latencies and NVSwitch layouts from ``data/topology_assumptions.yaml``.

Path classes are the vocabulary of ``nvidia-smi topo -m`` (NVML's topology
levels): ``X`` self, ``NV#`` a bonded set of # NVLinks, ``PIX`` at most one PCIe
switch, ``PXB`` several switches without the host bridge, ``PHB`` through a
host bridge, ``NODE`` between host bridges of one NUMA node, ``SYS`` across the
CPU-to-CPU link.

Examples
--------
>>> from gpulab import topology as T
>>> a = T.layout_a()
>>> T.path_class(a, "gpu0", "gpu1"), T.path_class(a, "gpu0", "gpu4")
('PIX', 'SYS')
>>> round(T.bottleneck_bandwidth(a, "gpu0", "gpu4").gb_per_s, 2)
63.02
>>> T.path_class(T.nvswitch_node(), "gpu0", "gpu7")
'NV18'
"""
from __future__ import annotations

import csv
import functools
import io
import itertools
import math
import re
from dataclasses import dataclass, field

import networkx as nx

from . import links, pcie, specs, units
from ._validate import check_choice, check_int

__all__ = [
    "pair_table",
    "Topology", "TopoMatrix", "TopoParseError", "CPULink",
    "NODE_KINDS", "EDGE_KINDS", "PATH_CLASSES", "IOMMU_MODES", "P2P_LEVELS",
    "assumption", "cpu_link", "cpu_links",
    "layout_a", "layout_b", "nvswitch_node", "pcie_box",
    "path", "path_class", "bottleneck_bandwidth", "path_latency",
    "concurrent_bandwidth", "p2p_possible", "nccl_transport",
    "read_topo_matrix", "parse_topo_matrix", "render_topo_matrix",
]

#: Node kinds and the prefix of their names.
NODE_KINDS = {"cpu": "cpu", "switch": "sw", "gpu": "gpu", "nic": "nic",
              "nvswitch": "nvsw"}
#: Edge kinds.
EDGE_KINDS = ("pcie", "nvlink", "nvswitch", "upi")
#: nvidia-smi path classes from near to far (``NV#`` stands for NV1, NV2, ...).
PATH_CLASSES = ("X", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS")
#: IOMMU settings understood by :func:`p2p_possible`.
IOMMU_MODES = ("off", "passthrough", "on")
#: Values of ``NCCL_P2P_LEVEL`` from near to far.
P2P_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")

_PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
_PCIE_CLASS_RANK = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
_NCCL_LEVEL_OF = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB",
                  "SYS": "SYS"}


# --- data --------------------------------------------------------------------------
@dataclass(frozen=True)
class CPULink:
    """A CPU-to-CPU (SMP) interconnect, a row of ``data/cpu_links.csv``.

    Attributes
    ----------
    transfer_rate_gt_per_s : float
        Transfers per second of one link, in GT/s.
    data_bits_per_transfer : int
        Payload bits one link moves per transfer, each direction.
    links : int
        Links between the two sockets of a 2-socket server.
    link_bandwidth : units.Bandwidth
        One link, per direction.
    """

    name: str
    vendor: str
    first_cpu: str
    year: int
    transfer_rate_gt_per_s: float
    data_bits_per_transfer: int
    links: int
    link_bandwidth: units.Bandwidth
    source: str
    accessed: str

    @property
    def bandwidth(self) -> units.Bandwidth:
        """All ``links`` together, per direction."""
        return self.link_bandwidth * self.links


@functools.lru_cache(maxsize=None)
def _cpu_link_table():
    out = {}
    for r in csv.DictReader(io.StringIO(specs.read_data_text("cpu_links.csv"))):
        rate = float(r["transfer_rate_gt_per_s"])
        bits = int(r["data_bits_per_transfer"])
        out[r["name"]] = CPULink(
            name=r["name"], vendor=r["vendor"], first_cpu=r["first_cpu"],
            year=int(r["year"]), transfer_rate_gt_per_s=rate,
            data_bits_per_transfer=bits, links=int(r["links"]),
            link_bandwidth=units.Bandwidth(rate * 1e9 * bits * units.BIT,
                                           units.PER_DIRECTION),
            source=r["source"], accessed=r["accessed"])
    return out


def assumption(name):
    """Value of a default in ``data/topology_assumptions.yaml``.

    Parameters
    ----------
    name : str
        ``"pcie_switch_latency_s"``, ``"root_complex_latency_s"``,
        ``"smp_link_latency_s"``, ``"nvswitch_latency_s"`` (seconds) or
        ``"nvswitch_planes"`` (links per GPU to each NVSwitch chip, by NVLink
        generation).

    Examples
    --------
    >>> assumption("pcie_switch_latency_s")
    1.15e-07
    >>> assumption("nvswitch_planes")[4]
    [5, 4, 4, 5]
    """
    value = specs.assumption("topology", name)
    if isinstance(value, dict):
        return {k: list(v) for k, v in value.items()}
    return float(value)


def cpu_link(name="UPI 2.0"):
    """The CPU-to-CPU link record ``name`` (see :func:`cpu_links`).

    Examples
    --------
    >>> link = cpu_link("UPI 2.0")
    >>> link.link_bandwidth.gb_per_s, link.bandwidth.gb_per_s
    (32.0, 128.0)
    """
    table = _cpu_link_table()
    check_choice("name", name, table)
    return table[name]


def cpu_links():
    """All CPU-to-CPU link records of ``data/cpu_links.csv``.

    Examples
    --------
    >>> [(c.name, c.links, c.bandwidth.gb_per_s) for c in cpu_links()][:2]
    [('UPI 1.0', 3, 62.4), ('UPI 2.0', 4, 128.0)]
    """
    return list(_cpu_link_table().values())


def _pcie_bandwidth(generation, lanes):
    """Encoded PCIe rate per direction: GT/s x lanes x encoding efficiency / 8."""
    return pcie.encoded_bandwidth(generation, lanes)


# --- the graph ---------------------------------------------------------------------
class Topology:
    """A server's interconnect graph (a thin wrapper of :class:`networkx.Graph`).

    Build one with :func:`layout_a`, :func:`layout_b`, :func:`nvswitch_node`,
    :func:`pcie_box` or :func:`parse_topo_matrix`; query it with the module's
    functions.

    Attributes
    ----------
    graph : networkx.Graph
        Nodes carry ``kind``, ``index`` and ``label``; edges carry ``kind`` and
        ``bandwidth`` (per direction), NVLink edges ``links``, PCIe edges
        ``generation`` and ``lanes``.
    name : str
        A short description.
    """

    def __init__(self, graph, name=""):
        if not isinstance(graph, nx.Graph) or graph.is_directed():
            raise ValueError("graph must be an undirected networkx.Graph; "
                             f"got {graph!r}")
        self.graph = graph
        self.name = str(name)

    def _of(self, kind):
        return sorted((n for n, d in self.graph.nodes(data=True)
                       if d.get("kind") == kind),
                      key=lambda n: self.graph.nodes[n].get("index", 0))

    @property
    def cpus(self):
        """CPU node names, in index order."""
        return self._of("cpu")

    @property
    def switches(self):
        """PCIe switch node names."""
        return self._of("switch")

    @property
    def gpus(self):
        """GPU node names, in index order."""
        return self._of("gpu")

    @property
    def nics(self):
        """NIC node names, in index order."""
        return self._of("nic")

    @property
    def nvswitches(self):
        """NVSwitch node names."""
        return self._of("nvswitch")

    @property
    def devices(self):
        """GPUs, then NICs: the rows and columns of ``nvidia-smi topo -m``."""
        return self.gpus + self.nics

    def __repr__(self):
        parts = [f"{len(getattr(self, k))} {k}" for k in
                 ("cpus", "switches", "gpus", "nics", "nvswitches")
                 if getattr(self, k)]
        return f"Topology({self.name!r}: {', '.join(parts)})"


def check_topology(topo):
    """Return ``topo`` if it is a :class:`Topology`, else raise ValueError naming ``topo``."""
    if not isinstance(topo, Topology):
        raise ValueError("topo must be a gpulab.topology.Topology (build one with "
                         f"layout_a(), parse_topo_matrix(), ...); got {topo!r}")
    return topo


def check_node(topo, name, param, kinds=None):
    """Return ``name`` if it is a node of ``topo`` (of one of ``kinds``, e.g. ``("gpu",)``).

    Raises ValueError naming the caller's parameter ``param`` otherwise.
    """
    g = topo.graph
    if not isinstance(name, str) or name not in g:
        some = ", ".join(repr(n) for n in (topo.devices or list(g))[:4])
        raise ValueError(f"{param} must be a node of the topology (e.g. {some}); "
                         f"got {name!r}")
    if kinds is not None and g.nodes[name]["kind"] not in kinds:
        raise ValueError(f"{param} must be a {' or '.join(kinds).upper()} node; "
                         f"{name!r} is a {g.nodes[name]['kind']}")
    return name


class _Builder:
    """Adds nodes and edges with consistent attributes."""

    def __init__(self, name):
        self.g = nx.Graph()
        self.name = name
        self.count = dict.fromkeys(NODE_KINDS, 0)
        self.host_bridges = {}

    def add(self, kind, label=None, **attrs):
        i = self.count[kind]
        self.count[kind] += 1
        n = f"{NODE_KINDS[kind]}{i}"
        default = {"cpu": f"CPU{i}", "switch": f"PCIe switch {i}", "gpu": f"GPU{i}",
                   "nic": f"NIC{i}", "nvswitch": f"NVSwitch {i}"}[kind]
        latency = {"cpu": "root_complex_latency_s", "switch": "pcie_switch_latency_s",
                   "nvswitch": "nvswitch_latency_s"}.get(kind)
        self.g.add_node(n, kind=kind, index=i, label=label or default,
                        latency=assumption(latency) if latency else 0.0, **attrs)
        return n

    def pcie(self, parent, child, generation, lanes, host_bridge=None):
        attrs = {"kind": "pcie", "generation": generation, "lanes": lanes,
                 "bandwidth": _pcie_bandwidth(generation, lanes), "latency": 0.0}
        if self.g.nodes[parent]["kind"] == "cpu":
            if host_bridge is None:              # a root port of its own
                host_bridge = self.host_bridges.get(parent, 0)
                self.host_bridges[parent] = host_bridge + 1
            attrs["host_bridge"] = host_bridge
        self.g.add_edge(parent, child, **attrs)

    def nvlink(self, a, b, n_links, generation, kind="nvlink"):
        self.g.add_edge(a, b, kind=kind, links=n_links, generation=generation,
                        bandwidth=links.nvlink_link_bandwidth(generation) * n_links,
                        latency=0.0)

    def smp(self, cpus, link_name):
        rec = cpu_link(link_name)
        for a, b in itertools.combinations(cpus, 2):
            self.g.add_edge(a, b, kind="upi", link=rec.name, links=rec.links,
                            bandwidth=rec.bandwidth,
                            latency=assumption("smp_link_latency_s"))

    def done(self):
        return Topology(self.g, self.name)


def _pcie_params(pcie_generation, lanes):
    gen = check_int("pcie_generation", pcie_generation, low=1, high=6)
    width = check_int("lanes", lanes, low=1, high=32)
    if width not in _PCIE_WIDTHS:
        raise ValueError(f"lanes must be one of {', '.join(map(str, _PCIE_WIDTHS))}; "
                         f"got {lanes!r}")
    return gen, width


# --- builders ----------------------------------------------------------------------
def layout_a(*, pcie_generation=5, lanes=16, cpu_link="UPI 2.0"):
    """The source article's layout A: two root complexes, one switch each.

    Two CPU sockets joined by ``cpu_link``; under each a PCIe switch with four
    GPUs and one NIC (``gpu0-3`` and ``nic0`` under ``cpu0``, ``gpu4-7`` and
    ``nic1`` under ``cpu1``). No NVLink: this is the PCIe view.

    Parameters
    ----------
    pcie_generation : int, default 5
        PCIe generation of every link (1-6).
    lanes : int, default 16
        Width of every link (1, 2, 4, 8, 12, 16 or 32).
    cpu_link : str, default "UPI 2.0"
        A name of :func:`cpu_links`.

    Returns
    -------
    Topology

    Notes
    -----
    Sources: the article's section 3.2 (layout A); source-facts #29, #36, #37:
    each GPU has its own x16 link, sharing happens on switch uplinks and on the
    cross-socket path.

    Examples
    --------
    >>> t = layout_a()
    >>> t
    Topology('layout A (2 root complexes)': 2 cpus, 2 switches, 8 gpus, 2 nics)
    >>> path(t, "gpu0", "gpu4")
    ['gpu0', 'sw0', 'cpu0', 'cpu1', 'sw1', 'gpu4']
    """
    gen, width = _pcie_params(pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, _cpu_link_table())
    b = _Builder("layout A (2 root complexes)")
    cpus = [b.add("cpu", numa=i) for i in range(2)]
    b.smp(cpus, cpu_link)
    for c in cpus:
        sw = b.add("switch")
        b.pcie(c, sw, gen, width)
        for _ in range(4):
            b.pcie(sw, b.add("gpu"), gen, width)
        b.pcie(sw, b.add("nic"), gen, width)
    return b.done()


def layout_b(*, pcie_generation=5, lanes=16, cascaded=True):
    """The source article's layout B: one root complex, four switches.

    ``sw0``-``sw3`` hold two GPUs each (``gpu0-1`` under ``sw0`` ...). With
    ``cascaded=True`` (default) they hang below one more switch, ``sw4``, whose
    single uplink to ``cpu0`` all eight GPUs share: the article's "share the
    uplink bandwidth". GPUs under different leaf switches are then ``PXB``
    apart (two or more bridges, no host bridge). With ``cascaded=False`` each
    leaf switch has its own root port on the one host bridge, GPUs under
    different switches are ``PHB`` apart, and nothing is shared below the CPU.

    Parameters
    ----------
    pcie_generation : int, default 5
        PCIe generation of every link (1-6).
    lanes : int, default 16
        Width of every link (1, 2, 4, 8, 12, 16 or 32).
    cascaded : bool, default True
        Put the four switches under a shared upstream switch.

    Returns
    -------
    Topology

    Notes
    -----
    Sources: the article's section 3.2 (layout B); source-facts #29, #36.

    Examples
    --------
    >>> t = layout_b()
    >>> path_class(t, "gpu0", "gpu1"), path_class(t, "gpu0", "gpu2")
    ('PIX', 'PXB')
    >>> path_class(layout_b(cascaded=False), "gpu0", "gpu2")
    'PHB'
    >>> up = [("gpu0", "cpu0"), ("gpu2", "cpu0"), ("gpu4", "cpu0"), ("gpu6", "cpu0")]
    >>> [round(bw.gb_per_s, 2) for bw in concurrent_bandwidth(t, up)]
    [15.75, 15.75, 15.75, 15.75]
    """
    gen, width = _pcie_params(pcie_generation, lanes)
    if not isinstance(cascaded, bool):
        raise ValueError(f"cascaded must be True or False; got {cascaded!r}")
    b = _Builder("layout B: 1 root complex, "
                 + ("cascaded switches" if cascaded else "4 switches on root ports"))
    cpu = b.add("cpu", numa=0)
    leaves = [b.add("switch") for _ in range(4)]
    if cascaded:
        top = b.add("switch", label="PCIe switch 4 (uplink)")
        b.pcie(cpu, top, gen, width)
        for sw in leaves:
            b.pcie(top, sw, gen, width)
    else:
        for sw in leaves:
            b.pcie(cpu, sw, gen, width, host_bridge=0)
    for sw in leaves:
        for _ in range(2):
            b.pcie(sw, b.add("gpu"), gen, width)
    return b.done()


def nvswitch_node(gpu="H100", *, pcie_generation=None, lanes=16,
                  cpu_link="UPI 2.0"):
    """A DGX/HGX-style 8-GPU node: NVSwitch fabric plus the PCIe tree.

    NVLink: each GPU's links are spread over the NVSwitch chips as in
    ``assumption("nvswitch_planes")`` (H100/H200: 18 NVLink4 links split
    5/4/4/5 over four chips). PCIe (vendor-typical, not a specific product's
    documented tree): two CPU sockets, two PCIe switches per socket on
    separate host bridges, each switch with two GPUs and two NICs.

    Parameters
    ----------
    gpu : str, default "H100"
        A GPU of ``data/gpus.csv`` whose NVLink generation has an NVSwitch
        layout in the data (A100, H100, H200, B200).
    pcie_generation : int, optional
        Defaults to the GPU's host interface generation.
    lanes : int, default 16
        Width of every PCIe link.
    cpu_link : str, default "UPI 2.0"
        A name of :func:`cpu_links` (DGX H100/H200 use Xeon Platinum 8480C).

    Returns
    -------
    Topology

    Notes
    -----
    Sources: source-facts #49 and #50 (4 NVSwitch chips, every chip connects
    all 8 GPUs, links split 5/4/4/5; FM-UG, Klockwood); DGX BasePOD (8
    ConnectX-7, one per GPU). NVLink through the switches is shared by all of
    a GPU's peers (source-facts #30, #51, #53).

    Examples
    --------
    >>> t = nvswitch_node()
    >>> [t.graph.edges["gpu0", s]["links"] for s in t.nvswitches]
    [5, 4, 4, 5]
    >>> bottleneck_bandwidth(t, "gpu0", "gpu5").gb_per_s
    450.0
    >>> path_class(t, "gpu0", "nic0"), path_class(t, "gpu0", "nic2")
    ('PIX', 'NODE')
    """
    planes = assumption("nvswitch_planes")
    ok = [g.name for g in specs.gpus() if g.nvlink_generation in planes]
    check_choice("gpu", gpu, ok)
    spec = specs.gpu(gpu)
    gen, width = _pcie_params(spec.pcie_generation if pcie_generation is None
                              else pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, _cpu_link_table())
    split = planes[spec.nvlink_generation]
    b = _Builder(f"NVSwitch node: 8x {gpu}, {len(split)} NVSwitch chips")
    cpus = [b.add("cpu", numa=i) for i in range(2)]
    b.smp(cpus, cpu_link)
    gpus = []
    for c in cpus:
        for _ in range(2):
            sw = b.add("switch")
            b.pcie(c, sw, gen, width)
            for _ in range(2):
                g = b.add("gpu", model=gpu)
                gpus.append(g)
                b.pcie(sw, g, gen, width)
            for _ in range(2):
                b.pcie(sw, b.add("nic"), gen, width)
    for n_links in split:
        s = b.add("nvswitch")
        for g in gpus:
            b.nvlink(g, s, n_links, spec.nvlink_generation, kind="nvswitch")
    return b.done()


def pcie_box(n_gpus=8, *, gpus_per_switch=2, n_cpus=2, pcie_generation=5, lanes=16,
             cpu_link="UPI 2.0"):
    """A plain PCIe GPU server: GPUs under PCIe switches, no NVLink.

    ``ceil(n_gpus / gpus_per_switch)`` switches, each on its own host bridge,
    dealt out to the CPUs in contiguous blocks. With the defaults: ``gpu0-1``
    under ``sw0`` and ``gpu2-3`` under ``sw1`` on ``cpu0``, ``gpu4-7`` on
    ``cpu1``, so GPU0-GPU1 is ``PIX``, GPU0-GPU2 ``NODE``, GPU0-GPU4 ``SYS``.

    Parameters
    ----------
    n_gpus : int, default 8
        Number of GPUs (1-16).
    gpus_per_switch : int, default 2
        GPUs below each switch (1-16).
    n_cpus : int, default 2
        CPU sockets (1-8).
    pcie_generation : int, default 5
        PCIe generation of every link.
    lanes : int, default 16
        Width of every link.
    cpu_link : str, default "UPI 2.0"
        A name of :func:`cpu_links`.

    Returns
    -------
    Topology

    Examples
    --------
    >>> t = pcie_box()
    >>> [path_class(t, "gpu0", g) for g in ("gpu1", "gpu2", "gpu4")]
    ['PIX', 'NODE', 'SYS']
    """
    n = check_int("n_gpus", n_gpus, low=1, high=16)
    per = check_int("gpus_per_switch", gpus_per_switch, low=1, high=16)
    m = check_int("n_cpus", n_cpus, low=1, high=8)
    gen, width = _pcie_params(pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, _cpu_link_table())
    b = _Builder(f"PCIe box: {n} GPUs, {per} per switch, {m} CPUs")
    cpus = [b.add("cpu", numa=i) for i in range(m)]
    b.smp(cpus, cpu_link)
    n_sw = math.ceil(n / per)
    for s in range(n_sw):
        sw = b.add("switch")
        b.pcie(cpus[s * m // n_sw], sw, gen, width)
        for _ in range(min(per, n - s * per)):
            b.pcie(sw, b.add("gpu"), gen, width)
    return b.done()


# --- routes, classes, bandwidth ----------------------------------------------------
def _pcie_view(g):
    return nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v]["kind"]
                            in ("pcie", "upi"))


def _nvlink_routes(g, a, b):
    """NVLink routes between GPUs a and b as [(nodes, links)], most links first."""
    routes = []
    if g.has_edge(a, b) and g.edges[a, b]["kind"] == "nvlink":
        routes.append(([a, b], g.edges[a, b]["links"]))
    for s in g.neighbors(a):
        if (g.nodes[s]["kind"] == "nvswitch" and g.has_edge(s, b)
                and g.edges[a, s]["kind"] == g.edges[s, b]["kind"] == "nvswitch"):
            routes.append(([a, s, b], min(g.edges[a, s]["links"],
                                          g.edges[s, b]["links"])))
    routes.sort(key=lambda r: -r[1])
    return routes


def _routes(topo, a, b):
    """Routes of a transfer a -> b as [(nodes, weight)], weights summing to 1.

    GPU pairs with NVLink use it (as NCCL does), striped over every NVSwitch in
    proportion to the links; everything else takes the PCIe/CPU-link path.
    """
    g = topo.graph
    if g.nodes[a]["kind"] == g.nodes[b]["kind"] == "gpu":
        nv = _nvlink_routes(g, a, b)
        if nv:
            total = sum(w for _, w in nv)
            return [(p, w / total) for p, w in nv]
    view = _pcie_view(g)
    for graph in (view, g):
        if nx.has_path(graph, a, b):
            return [(nx.shortest_path(graph, a, b), 1.0)]
    raise ValueError(f"b: no path from {a!r} to {b!r} in this topology")


def _pair(topo, a, b, kinds=None):
    check_topology(topo)
    check_node(topo, a, "a", kinds)
    check_node(topo, b, "b", kinds)
    return a, b


def path(topo, a, b):
    """The nodes a transfer from ``a`` to ``b`` passes, ends included.

    GPU pairs connected by NVLink take it (NCCL prefers NVLink); with several
    NVSwitch chips the route through the chip with most links is listed, though
    traffic is striped over all of them (see :func:`bottleneck_bandwidth`).
    Everything else follows the PCIe tree and the CPU-to-CPU link.

    Parameters
    ----------
    topo : Topology
    a, b : str
        Node names (``"gpu0"``, ``"nic1"``, ``"cpu0"`` ...).

    Returns
    -------
    list of str

    Examples
    --------
    >>> path(layout_a(), "gpu0", "nic0")
    ['gpu0', 'sw0', 'nic0']
    >>> path(nvswitch_node(), "gpu0", "gpu1")
    ['gpu0', 'nvsw0', 'gpu1']
    """
    _pair(topo, a, b)
    if a == b:
        return [a]
    return list(_routes(topo, a, b)[0][0])


def _nv_links(topo, a, b):
    g = topo.graph
    if g.nodes[a]["kind"] != "gpu" or g.nodes[b]["kind"] != "gpu":
        return 0
    return sum(w for _, w in _nvlink_routes(g, a, b))


def _pcie_class(topo, a, b):
    g = topo.graph
    view = _pcie_view(g)
    if not nx.has_path(view, a, b):
        return "SYS"
    p = nx.shortest_path(view, a, b)
    inner = p[1:-1]
    cpus = [i for i, n in enumerate(p) if 0 < i < len(p) - 1
            and g.nodes[n]["kind"] == "cpu"]
    if len(cpus) >= 2:
        return "SYS"
    if len(cpus) == 1:
        i = cpus[0]
        hb_in = g.edges[p[i - 1], p[i]].get("host_bridge")
        hb_out = g.edges[p[i], p[i + 1]].get("host_bridge")
        return "PHB" if hb_in == hb_out else "NODE"
    n_sw = sum(g.nodes[n]["kind"] == "switch" for n in inner)
    return "PIX" if n_sw <= 1 else "PXB"


def path_class(topo, a, b):
    """The ``nvidia-smi topo -m`` class of the connection between two devices.

    Parameters
    ----------
    topo : Topology
    a, b : str
        GPU or NIC nodes.

    Returns
    -------
    str
        ``"X"`` (same device), ``"NV#"`` (``#`` bonded NVLinks, e.g.
        ``"NV18"``), ``"PIX"``, ``"PXB"``, ``"PHB"``, ``"NODE"`` or ``"SYS"``.

    Notes
    -----
    The definitions are the legend ``nvidia-smi topo -m`` prints (the real
    capture is in ``data/measurements/raw/h200-x2-2026-11-30/topo-m.txt``):
    ``PIX`` at most a single PCIe bridge, ``PXB`` multiple bridges without the
    host bridge, ``PHB`` through a host bridge, ``NODE`` between host bridges
    within a NUMA node, ``SYS`` across the SMP interconnect (QPI/UPI). Through
    NVSwitch chips, ``#`` counts the links the two GPUs can use together:
    the sum over chips of the smaller of their link counts (18 on HGX H100).

    Examples
    --------
    >>> t = layout_a()
    >>> [path_class(t, "gpu0", x) for x in ("gpu0", "gpu1", "nic0", "gpu4", "nic1")]
    ['X', 'PIX', 'PIX', 'SYS', 'SYS']
    """
    _pair(topo, a, b, ("gpu", "nic"))
    if a == b:
        return "X"
    n = _nv_links(topo, a, b)
    return f"NV{n}" if n else _pcie_class(topo, a, b)


def concurrent_bandwidth(topo, transfers):
    """Per-transfer bandwidth of simultaneous transfers, max-min fair.

    Every edge carries up to its bandwidth in each direction independently
    (full duplex). Rates are raised together until an edge-direction is full;
    the transfers crossing it are frozen there, and the rest keep rising
    (progressive filling, which gives the max-min fair allocation). A GPU pair
    on NVSwitch spreads its traffic over the chips in proportion to its links.

    Parameters
    ----------
    topo : Topology
    transfers : sequence of (str, str)
        ``(source, destination)`` node pairs, e.g. ``("gpu0", "cpu0")`` for a
        device-to-host copy into ``cpu0``'s memory.

    Returns
    -------
    list of units.Bandwidth
        Per direction, one per transfer, in order.

    Notes
    -----
    Shared-uplink contention (source-facts #29): ``k`` transfers through one
    link each get ``1/k`` of it. Protocol efficiency is not applied here: the
    figures are encoded line rates.

    Examples
    --------
    >>> t = layout_a()
    >>> four = [(f"gpu{i}", "cpu0") for i in range(4)]
    >>> [round(bw.gb_per_s, 3) for bw in concurrent_bandwidth(t, four)]
    [15.754, 15.754, 15.754, 15.754]
    >>> both = concurrent_bandwidth(t, [("gpu0", "cpu0"), ("cpu0", "gpu0")])
    >>> round(both[0].gb_per_s, 2), round(both[1].gb_per_s, 2)
    (63.02, 63.02)
    """
    check_topology(topo)
    if isinstance(transfers, (str, bytes)) or not hasattr(transfers, "__iter__"):
        raise ValueError("transfers must be a sequence of (source, destination) "
                         f"pairs; got {transfers!r}")
    transfers = list(transfers)
    usage = {}                       # (u, v) -> {transfer: fraction of its rate}
    for i, t in enumerate(transfers):
        if (isinstance(t, (str, bytes)) or not hasattr(t, "__len__") or len(t) != 2):
            raise ValueError("transfers must be a sequence of (source, destination) "
                             f"pairs; item {i} is {t!r}")
        a, b = t
        for name in (a, b):
            if not isinstance(name, str) or name not in topo.graph:
                raise ValueError(f"transfers: item {i} names {name!r}, which is not "
                                 "a node of the topology")
        if a == b:
            raise ValueError(f"transfers: item {i} goes from {a!r} to itself")
        for nodes, w in _routes(topo, a, b):
            for u, v in zip(nodes, nodes[1:]):
                usage.setdefault((u, v), {})
                usage[(u, v)][i] = usage[(u, v)].get(i, 0.0) + w
    cap = {e: topo.graph.edges[e]["bandwidth"].bytes_per_s for e in usage}
    rate = [0.0] * len(transfers)
    active = set(range(len(transfers)))
    while active:
        best = math.inf
        for e, users in usage.items():
            share = sum(f for i, f in users.items() if i in active)
            if share > 0:
                used = sum(rate[i] * f for i, f in users.items())
                best = min(best, (cap[e] - used) / share)
        if not math.isfinite(best):
            break
        best = max(best, 0.0)
        for i in active:
            rate[i] += best
        frozen = set()
        for e, users in usage.items():
            used = sum(rate[i] * f for i, f in users.items())
            if used >= cap[e] * (1 - 1e-12):
                frozen |= {i for i in users if i in active}
        if not frozen:
            break
        active -= frozen
    return [units.Bandwidth(r, units.PER_DIRECTION) for r in rate]


def bottleneck_bandwidth(topo, a, b):
    """Bandwidth of one transfer from ``a`` to ``b`` alone, per direction.

    The smallest edge bandwidth on the path; NVLink through NVSwitch chips adds
    up the chips (for each chip the smaller of the two GPUs' link counts, times
    the per-link rate: 18 x 25 GB/s = 450 GB/s on HGX H100).

    Parameters
    ----------
    topo : Topology
    a, b : str
        Different node names.

    Returns
    -------
    units.Bandwidth
        Per direction (encoded line rate, before protocol overhead).

    Examples
    --------
    >>> round(bottleneck_bandwidth(layout_a(), "gpu0", "gpu1").gb_per_s, 3)
    63.015
    >>> bottleneck_bandwidth(nvswitch_node("A100"), "gpu0", "gpu1").gb_per_s
    300.0
    """
    _pair(topo, a, b)
    if a == b:
        raise ValueError(f"b must differ from a; both are {a!r}")
    return concurrent_bandwidth(topo, [(a, b)])[0]


def path_latency(topo, a, b):
    """Hardware forwarding latency of the path from ``a`` to ``b``.

    The sum of the latencies of the switches, root complexes and NVSwitch
    chips the path passes through (its ends excluded) plus one
    CPU-to-CPU crossing where it takes one. Defaults in
    ``data/topology_assumptions.yaml``.

    Parameters
    ----------
    topo : Topology
    a, b : str
        Node names.

    Returns
    -------
    float
        Latency. [s]

    Notes
    -----
    This is the hardware part only. A GPU-to-GPU copy seen by software takes
    microseconds (source-facts #27: ~1.8-2.3 us over NVLink), dominated by the
    software and DMA set-up, not by these hops.

    Examples
    --------
    >>> t = layout_a()
    >>> units.fmt_time(path_latency(t, "gpu0", "gpu1"))
    '115 ns'
    >>> units.fmt_time(path_latency(t, "gpu0", "gpu4"))
    '780 ns'
    """
    _pair(topo, a, b)
    if a == b:
        return 0.0
    nodes = _routes(topo, a, b)[0][0]
    g = topo.graph
    hops = sum(g.nodes[n].get("latency", 0.0) for n in nodes[1:-1])
    return hops + sum(g.edges[u, v].get("latency", 0.0)
                      for u, v in zip(nodes, nodes[1:]))


def _check_iommu(acs_enabled, iommu):
    if not isinstance(acs_enabled, bool):
        raise ValueError(f"acs_enabled must be True or False; got {acs_enabled!r}")
    check_choice("iommu", iommu, IOMMU_MODES)


def p2p_possible(topo, a, b, *, acs_enabled=False, iommu="off"):
    """Whether two devices can do direct peer-to-peer DMA, and why.

    Parameters
    ----------
    topo : Topology
    a, b : str
        Two different GPU or NIC nodes (GPU-NIC is GPUDirect RDMA).
    acs_enabled : bool, default False
        Whether PCIe Access Control Services P2P redirect is on in the switch
        downstream ports (the kernel or BIOS may enable it with the IOMMU).
    iommu : {"off", "passthrough", "on"}
        The IOMMU (VT-d / AMD-Vi) mode; ``"on"`` means DMA is translated.

    Returns
    -------
    (bool, str)
        The verdict and the reason.

    Notes
    -----
    Following the NCCL User Guide (Troubleshooting: "PCI Access Control
    Services (ACS)" and "IOMMU") and the GPUDirect Storage best-practices guide:

    * NVLink (``NV#``): yes; PCIe ACS and the IOMMU do not apply.
    * Under common switches (``PIX``/``PXB``) with ACS redirect off and no
      IOMMU translation: yes, requests turn around in the switch.
    * ACS P2P redirect on, or IOMMU translation on: every peer request is sent
      up to the root complex, so no direct switch-local P2P; it is slow or
      hangs. The fix is to disable ACS (it must be *off*, not on: source-facts
      #42) and to turn the IOMMU off or to passthrough (#43).
    * Through a root complex (``PHB``/``NODE``): possible where the CPU forwards
      peer traffic, at lower bandwidth (#41).
    * Across sockets (``SYS``): no; many platforms do not forward P2P over
      UPI/Infinity Fabric and NCCL does not try by default (#37).

    Examples
    --------
    >>> t = layout_a()
    >>> p2p_possible(t, "gpu0", "gpu1")[0]
    True
    >>> p2p_possible(t, "gpu0", "gpu1", acs_enabled=True)[0]
    False
    >>> p2p_possible(t, "gpu0", "gpu4")[0]
    False
    """
    _pair(topo, a, b, ("gpu", "nic"))
    _check_iommu(acs_enabled, iommu)
    if a == b:
        raise ValueError(f"b must differ from a; both are {a!r}")
    cls = path_class(topo, a, b)
    if cls.startswith("NV"):
        return True, (f"{cls}: NVLink peer access; PCIe ACS and the IOMMU do not "
                      "apply")
    if cls == "SYS":
        return False, ("SYS: the path crosses the CPU-to-CPU link; most platforms "
                       "do not forward PCIe peer traffic between sockets")
    if iommu == "on":
        return False, (f"{cls}: IOMMU translation sends peer requests to the root "
                       "complex (slow or hangs); set the IOMMU off or to passthrough")
    if cls in ("PHB", "NODE"):
        return True, (f"{cls}: peer traffic turns around in the CPU root complex, "
                      "slower than in a switch")
    if acs_enabled:
        return False, (f"{cls}: ACS P2P redirect sends peer requests up to the root "
                       "complex (slow or hangs); disable ACS on the switch ports")
    extra = " (check the kernel left ACS off)" if iommu == "passthrough" else ""
    return True, f"{cls}: peer requests turn around in the PCIe switch{extra}"


def nccl_transport(topo, a, b, *, acs_enabled=False, iommu="off", p2p_level="PXB"):
    """The transport NCCL would pick between two GPUs of one node, and why.

    Parameters
    ----------
    topo : Topology
    a, b : str
        Two different GPU nodes.
    acs_enabled, iommu
        As in :func:`p2p_possible`.
    p2p_level : {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"}, default "PXB"
        ``NCCL_P2P_LEVEL``: the farthest path class on which NCCL uses P2P.

    Returns
    -------
    (str, str)
        ``"P2P/NVLink"``, ``"P2P/PCIe"`` or ``"SHM"`` (through a shared buffer
        in host memory), and the reason.

    Notes
    -----
    NCCL User Guide, Environment Variables, ``NCCL_P2P_LEVEL``: the level is the
    maximum distance at which P2P is used; ``PHB`` covers the whole NUMA node
    (nvidia-smi's ``PHB`` and ``NODE``). Without the variable, NCCL's
    ``ncclTopoCheckP2p`` (src/graph/paths.cc) uses ``PXB``, except on AMD CPUs
    with at most two GPUs (``SYS``). NCCL cannot see ACS or the IOMMU: on
    ``PIX``/``PXB`` it still picks P2P, and the redirected traffic is slow or
    hangs (NCCL Troubleshooting).

    Examples
    --------
    >>> t = layout_a()
    >>> nccl_transport(t, "gpu0", "gpu1")[0], nccl_transport(t, "gpu0", "gpu4")[0]
    ('P2P/PCIe', 'SHM')
    >>> nccl_transport(nvswitch_node(), "gpu0", "gpu4")[0]
    'P2P/NVLink'
    """
    _pair(topo, a, b, ("gpu",))
    _check_iommu(acs_enabled, iommu)
    check_choice("p2p_level", p2p_level, P2P_LEVELS)
    if a == b:
        raise ValueError(f"b must differ from a; both are {a!r}")
    cls = path_class(topo, a, b)
    rank = P2P_LEVELS.index
    if p2p_level == "LOC":
        return "SHM", "NCCL_P2P_LEVEL=LOC disables P2P: through host memory"
    if cls.startswith("NV"):
        return "P2P/NVLink", f"{cls}: NVLink, used at any NCCL_P2P_LEVEL but LOC"
    level = _NCCL_LEVEL_OF[cls]
    if rank(level) > rank(p2p_level):
        return "SHM", (f"{cls} is beyond NCCL_P2P_LEVEL={p2p_level}: through a "
                       "shared buffer in host memory")
    ok, why = p2p_possible(topo, a, b, acs_enabled=acs_enabled, iommu=iommu)
    if ok:
        return "P2P/PCIe", f"{cls} is within NCCL_P2P_LEVEL={p2p_level}"
    if cls == "SYS":
        return "SHM", f"{why}; CUDA reports no peer access, so NCCL uses SHM"
    return "P2P/PCIe", (f"NCCL picks P2P ({cls} within NCCL_P2P_LEVEL={p2p_level}) "
                        f"but cannot see ACS/IOMMU: {why}")


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
        gen, width = _pcie_params(pcie_generation, lanes)
        nvgen = check_int("nvlink_generation", nvlink_generation, low=1, high=5)
        check_choice("cpu_link", cpu_link, _cpu_link_table())
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
        return _PCIE_CLASS_RANK.get(cls[(x, y)])          # None for NV# pairs

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

    b = _Builder("from nvidia-smi topo -m")
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
    gpulab.topology.TopoParseError: text: line 3: GPU1-GPU0 is PXB but ...
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
    view = _pcie_view(g)

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


def pair_table(topo, *, acs_enabled=False, iommu="off", p2p_level="PXB"):
    """One row per GPU pair: path class, P2P verdict, NCCL transport, bottleneck.

    What ``gpulab topo`` prints and the labs tabulate for a server.

    Parameters
    ----------
    topo : Topology
    acs_enabled : bool
        ACS P2P redirect on in the PCIe switches.
    iommu : str
        One of :data:`IOMMU_MODES`.
    p2p_level : str
        ``NCCL_P2P_LEVEL`` as :func:`nccl_transport` takes it.

    Returns
    -------
    list of dict
        Keys ``pair`` ("GPU0-GPU1"), ``class`` (path class), ``p2p`` ("yes"/"no"),
        ``p2p_reason``, ``nccl_transport``, ``nccl_reason`` and ``bottleneck`` (a
        per-direction :class:`gpulab.units.Bandwidth`).

    Examples
    --------
    >>> rows = pair_table(layout_a())
    >>> rows[0]["pair"], rows[0]["p2p"]
    ('GPU0-GPU1', 'yes')
    """
    check_topology(topo)
    rows = []
    g = topo.graph
    for a, b in itertools.combinations(topo.gpus, 2):
        ok, why = p2p_possible(topo, a, b, acs_enabled=acs_enabled, iommu=iommu)
        transport, nccl_why = nccl_transport(topo, a, b, acs_enabled=acs_enabled,
                                             iommu=iommu, p2p_level=p2p_level)
        rows.append({"pair": f"{g.nodes[a]['label']}-{g.nodes[b]['label']}",
                     "class": path_class(topo, a, b),
                     "p2p": "yes" if ok else "no", "p2p_reason": why,
                     "nccl_transport": transport, "nccl_reason": nccl_why,
                     "bottleneck": bottleneck_bandwidth(topo, a, b)})
    return rows
