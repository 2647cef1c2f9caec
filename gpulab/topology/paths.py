"""Routes between two GPUs of a server graph: the ``nvidia-smi topo -m`` path class,
bottleneck and concurrent bandwidth, latency, whether peer-to-peer DMA is possible and
the transport NCCL would pick.

Units are SI: bytes per second (per direction) and seconds.
"""
from __future__ import annotations

import itertools
import math

import networkx as nx

from .. import units
from .._validate import check_choice

from .graph import IOMMU_MODES, P2P_LEVELS, NCCL_LEVEL_OF, check_node, check_topology


# --- routes, classes, bandwidth ----------------------------------------------------
def pcie_view(g):
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
    view = pcie_view(g)
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
    >>> from gpulab.topology import layout_a, nvswitch_node
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
    view = pcie_view(g)
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
    >>> from gpulab.topology import layout_a
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
    >>> from gpulab.topology import layout_a
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
    >>> from gpulab.topology import layout_a, nvswitch_node
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
    >>> from gpulab.topology import layout_a
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
    * Across sockets (``SYS``): no. Whether a platform forwards P2P over
      UPI/Infinity Fabric depends on the CPU and chipset (no vendor-neutral rule is
      published), and NCCL does not try by default (``NCCL_P2P_LEVEL`` PXB, #37).

    Examples
    --------
    >>> from gpulab.topology import layout_a
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
        return False, ("SYS: the path crosses the CPU-to-CPU link; whether peer traffic "
                       "is forwarded between sockets depends on the CPU and chipset, and "
                       "the model does not count on it")
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
    >>> from gpulab.topology import layout_a, nvswitch_node
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
    level = NCCL_LEVEL_OF[cls]
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
    >>> from gpulab.topology import layout_a
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
