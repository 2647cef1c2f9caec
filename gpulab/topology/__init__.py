"""Server topology: CPUs, PCIe switches, GPUs, NICs and NVLink as a graph.

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

One module per part: :mod:`.graph` (the graph, its data and builders), :mod:`.paths`
(path classes, bandwidth, latency, P2P and NCCL transport) and :mod:`.topo_matrix`
(``nvidia-smi topo -m`` reader and writer); this package re-exports their public names.
"""
from __future__ import annotations

from .graph import (  # noqa: F401
    NODE_KINDS,
    EDGE_KINDS,
    PATH_CLASSES,
    IOMMU_MODES,
    P2P_LEVELS,
    PCIE_CLASS_RANK,
    NCCL_LEVEL_OF,
    CPULink,
    cpu_link_table,
    assumption,
    cpu_link,
    cpu_links,
    Topology,
    check_topology,
    check_node,
    GraphBuilder,
    pcie_params,
    layout_a,
    layout_b,
    nvswitch_node,
    pcie_box,
)
from .paths import (  # noqa: F401
    pcie_view,
    path,
    path_class,
    concurrent_bandwidth,
    bottleneck_bandwidth,
    path_latency,
    p2p_possible,
    nccl_transport,
    pair_table,
)
from .topo_matrix import (  # noqa: F401
    TopoParseError,
    TopoMatrix,
    read_topo_matrix,
    parse_topo_matrix,
    render_topo_matrix,
)

__all__ = [
    "NODE_KINDS",
    "EDGE_KINDS",
    "PATH_CLASSES",
    "IOMMU_MODES",
    "P2P_LEVELS",
    "CPULink",
    "assumption",
    "cpu_link",
    "cpu_links",
    "Topology",
    "layout_a",
    "layout_b",
    "nvswitch_node",
    "pcie_box",
    "path",
    "path_class",
    "concurrent_bandwidth",
    "bottleneck_bandwidth",
    "path_latency",
    "p2p_possible",
    "nccl_transport",
    "pair_table",
    "TopoParseError",
    "TopoMatrix",
    "read_topo_matrix",
    "parse_topo_matrix",
    "render_topo_matrix",
]
