"""The server graph: devices (CPUs, PCIe switches, GPUs, NICs) and links (PCIe,
NVLink, NVSwitch, CPU-to-CPU) with their bandwidths and latencies, the data it is
built from, and the builders of the course's example servers.

Units are SI: bytes per second (per direction) and seconds.
"""
from __future__ import annotations

import csv
import functools
import io
import itertools
import math
from dataclasses import dataclass

import networkx as nx

from .. import links, pcie, specs, units
from .._validate import check_choice, check_int



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
PCIE_CLASS_RANK = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
NCCL_LEVEL_OF = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB",
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
def cpu_link_table():
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
    table = cpu_link_table()
    check_choice("name", name, table)
    return table[name]


def cpu_links():
    """All CPU-to-CPU link records of ``data/cpu_links.csv``.

    Examples
    --------
    >>> [(c.name, c.links, c.bandwidth.gb_per_s) for c in cpu_links()][:2]
    [('UPI 1.0', 3, 62.4), ('UPI 2.0', 4, 128.0)]
    """
    return list(cpu_link_table().values())


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


class GraphBuilder:
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


def pcie_params(pcie_generation, lanes):
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
    >>> from gpulab.topology import path
    >>> t = layout_a()
    >>> t
    Topology('layout A (2 root complexes)': 2 cpus, 2 switches, 8 gpus, 2 nics)
    >>> path(t, "gpu0", "gpu4")
    ['gpu0', 'sw0', 'cpu0', 'cpu1', 'sw1', 'gpu4']
    """
    gen, width = pcie_params(pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, cpu_link_table())
    b = GraphBuilder("layout A (2 root complexes)")
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
    >>> from gpulab.topology import concurrent_bandwidth, path_class
    >>> t = layout_b()
    >>> path_class(t, "gpu0", "gpu1"), path_class(t, "gpu0", "gpu2")
    ('PIX', 'PXB')
    >>> path_class(layout_b(cascaded=False), "gpu0", "gpu2")
    'PHB'
    >>> up = [("gpu0", "cpu0"), ("gpu2", "cpu0"), ("gpu4", "cpu0"), ("gpu6", "cpu0")]
    >>> [round(bw.gb_per_s, 2) for bw in concurrent_bandwidth(t, up)]
    [15.75, 15.75, 15.75, 15.75]
    """
    gen, width = pcie_params(pcie_generation, lanes)
    if not isinstance(cascaded, bool):
        raise ValueError(f"cascaded must be True or False; got {cascaded!r}")
    b = GraphBuilder("layout B: 1 root complex, "
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
    >>> from gpulab.topology import bottleneck_bandwidth, path_class
    >>> t = nvswitch_node()
    >>> [t.graph.edges["gpu0", s]["links"] for s in t.nvswitches]
    [5, 4, 4, 5]
    >>> bottleneck_bandwidth(t, "gpu0", "gpu5").gb_per_s
    450.0
    >>> path_class(t, "gpu0", "nic0"), path_class(t, "gpu0", "nic2")
    ('PIX', 'NODE')
    """
    planes = assumption("nvswitch_planes")
    ok = list(dict.fromkeys(g.name for g in specs.gpus()   # NVLink cards only
                            if g.nvlink_links and g.nvlink_generation in planes))
    check_choice("gpu", gpu, ok)
    spec = specs.gpu(gpu)
    gen, width = pcie_params(spec.pcie_generation if pcie_generation is None
                              else pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, cpu_link_table())
    split = planes[spec.nvlink_generation]
    b = GraphBuilder(f"NVSwitch node: 8x {gpu}, {len(split)} NVSwitch chips")
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
    >>> from gpulab.topology import path_class
    >>> t = pcie_box()
    >>> [path_class(t, "gpu0", g) for g in ("gpu1", "gpu2", "gpu4")]
    ['PIX', 'NODE', 'SYS']
    """
    n = check_int("n_gpus", n_gpus, low=1, high=16)
    per = check_int("gpus_per_switch", gpus_per_switch, low=1, high=16)
    m = check_int("n_cpus", n_cpus, low=1, high=8)
    gen, width = pcie_params(pcie_generation, lanes)
    check_choice("cpu_link", cpu_link, cpu_link_table())
    b = GraphBuilder(f"PCIe box: {n} GPUs, {per} per switch, {m} CPUs")
    cpus = [b.add("cpu", numa=i) for i in range(m)]
    b.smp(cpus, cpu_link)
    n_sw = math.ceil(n / per)
    for s in range(n_sw):
        sw = b.add("switch")
        b.pcie(cpus[s * m // n_sw], sw, gen, width)
        for _ in range(min(per, n - s * per)):
            b.pcie(sw, b.add("gpu"), gen, width)
    return b.done()
