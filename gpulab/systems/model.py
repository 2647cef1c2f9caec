"""The System model: one server or cluster as the copy and collective models see it
(GPU, NVLink fabric, PCIe host link, scale-out network, copy calibrations). Built by
:mod:`.loader` from ``gpulab/data/systems.yaml`` or a user's YAML file.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import specs, units
from .copies import CopyHardware, CopyParams, HostCopy  # noqa: F401 (annotations)

#: NVLink fabrics: NVSwitch (every GPU reaches every other over all its links),
#: DGX-1's hybrid cube mesh (direct links, uneven per pair, given by ``peer_links``),
#: a direct mesh (links split among the peers), or no NVLink.
FABRICS = ("nvswitch", "hybrid_cube_mesh", "mesh", "none")
#: Scale-out networks between nodes: InfiniBand, RoCE (RDMA over Ethernet), AWS EFA
#: and Google GPUDirect-TCPX(O). ``ethernet`` is read as ``roce`` (older files).
NETWORK_FABRICS = ("infiniband", "roce", "efa", "tcpx")
#: Switch topologies of the scale-out network (see ``gpulab/data/network.yaml``).
NETWORK_TOPOLOGIES = ("rail_optimized", "fat_tree")
#: The host CPU's vendor, as NCCL reads it for its network post overhead
#: (``tuning.cc`` getNetOverhead: 2 us on AMD x86, 1 us on Intel x86 and anything else).
HOST_CPUS = ("intel", "amd", "arm", "unknown")
#: How GPU-to-GPU copies travel.
P2P_VIA = ("nvlink", "pcie", "host")


@dataclass(frozen=True)
class NVLinkConfig:
    """NVLink of each GPU.

    Attributes
    ----------
    generation : int or None
        NVLink generation (None without NVLink).
    links_per_gpu : int
        NVLink links of one GPU.
    fabric : str
        One of :data:`FABRICS`.
    nvls : bool
        In-switch reduction (NVLink SHARP) available: third-generation NVSwitch or
        later. False by default.
    domain_gpus : int or None
        GPUs in one NVLink domain; None means "not given" (see
        :attr:`System.nvlink_domain` for the default).
    peer_links : tuple of tuple of int, or None
        Links between GPU ``i`` and GPU ``j`` of one domain (hybrid cube mesh and
        irregular meshes); None where the fabric is regular.
    switch_chips : int or None
        NVSwitch chips of one NVLink domain (``nvswitch`` only; None: not given).
    """

    generation: int | None
    links_per_gpu: int
    fabric: str
    nvls: bool = False
    domain_gpus: int | None = None
    peer_links: tuple[tuple[int, ...], ...] | None = None
    switch_chips: int | None = None


@dataclass(frozen=True)
class NetworkConfig:
    """Scale-out network of each node.

    Attributes
    ----------
    nic : str or None
        Adapter name in ``gpulab/data/nics.csv``; None for a cloud adapter that is
        not listed there (then ``nic_gbit_per_s`` gives its rate).
    nics_per_node : int or float
        NICs of one node used for GPU traffic (a stand-in system of a parallel group
        may hold a fraction: its share of the node's NICs).
    fabric : str
        One of :data:`NETWORK_FABRICS`.
    nic_gbit_per_s : float or None
        Line rate of one NIC, Gb/s per direction; None: the ``nic`` row's rate.
    sharp : bool
        NCCL may reduce in the switches (CollNet / SHARP). False by default, as in
        NCCL (``NCCL_COLLNET_ENABLE=0``).
    gdr : bool
        GPUDirect RDMA: the NIC reads and writes GPU memory. False: data is staged
        through host memory over each GPU's PCIe link.
    topology : str
        One of :data:`NETWORK_TOPOLOGIES`.
    oversubscription : float
        Leaf-to-spine oversubscription (1 = non-blocking): traffic between nodes of
        different leaf groups gets ``1 / oversubscription`` of the NIC rate.
    leaf_nodes : int or None
        Nodes that reach each other through one switch; None: the topology's
        default (``gpulab/data/network.yaml``).
    tuner_latency_s : float or None
        The latency the network plugin reports to NCCL (``props.latency``), which
        NCCL's tuner adds to every network step of its estimate; None: the
        fabric's (``gpulab/data/network.yaml``). A tuning input, not a
        measured latency. [s]
    protocols : tuple of str or None
        The NCCL protocols a job across nodes may use where the network plugin
        restricts them (aws-ofi-nccl sets ``NCCL_PROTO=simple`` where EFA does not
        deliver 128-byte writes in order); None: all of LL, LL128 and Simple.
    nccl_env : tuple of (str, int)
        NCCL settings the provider's plugin or environment sets for jobs across
        nodes: ``NCCL_BUFFSIZE`` (the Simple buffer, 8 buffer steps),
        ``NCCL_NVLS_CHUNKSIZE``, ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` [B]; empty: NCCL's
        defaults.
    efficiency : float or None
        The share of the NICs' line rate this network delivers, where its provider
        states one for the instance (a cluster preset's ``fabric_efficiency``);
        None: the fabric's (``gpulab/data/network.yaml``).
    host_cpu : str
        One of :data:`HOST_CPUS`: the vendor of the node's CPUs, which sets NCCL's
        network post overhead (2 us on AMD x86, 1 us otherwise); ``unknown``: NCCL's
        default (1 us).
    """

    nic: str | None
    nics_per_node: float
    fabric: str
    nic_gbit_per_s: float | None = None
    sharp: bool = False
    gdr: bool = True
    topology: str = "rail_optimized"
    oversubscription: float = 1.0
    leaf_nodes: int | None = None
    tuner_latency_s: float | None = None
    protocols: tuple | None = None
    nccl_env: tuple = ()
    efficiency: float | None = None
    host_cpu: str = "unknown"

    @property
    def nic_spec(self):
        """The :class:`gpulab.specs.NICSpec` of the adapter (None if unnamed)."""
        return None if self.nic is None else specs.nic(self.nic)

    @property
    def nic_rate(self):
        """Line rate of one NIC, per direction (a :class:`gpulab.units.Bandwidth`)."""
        if self.nic_gbit_per_s is not None:
            return units.Bandwidth(self.nic_gbit_per_s * 1e9 / 8, units.PER_DIRECTION)
        nic = self.nic_spec
        rate = nic.line_rate.to_per_direction() \
            if nic.line_rate.direction != units.PER_DIRECTION else nic.line_rate
        return units.Bandwidth(rate.bytes_per_s * nic.ports, units.PER_DIRECTION)


@dataclass(frozen=True)
class PCIeConfig:
    """Host link of each GPU: PCIe ``generation``, ``lanes`` and ``max_payload_bytes``;
    ``p2p`` is False where the driver refuses PCIe peer-to-peer between the GPUs
    (GeForce cards: GPU-to-GPU data is then staged through host memory, NCCL's SHM
    transport). True by default."""

    generation: int
    lanes: int
    max_payload_bytes: int
    p2p: bool = True


@dataclass(frozen=True)
class P2PConfig:
    """GPU-to-GPU copy parameters: the path (``via``, one of :data:`P2P_VIA`), the
    :class:`CopyParams` and the source."""

    via: str
    params: CopyParams
    source: str


@dataclass(frozen=True)
class System:
    """One server or cluster preset (see the module docstring for the schema)."""

    name: str
    description: str
    gpu: str
    gpu_variant: str | None
    n_gpus: int
    gpus_per_node: int
    nvlink: NVLinkConfig
    pcie: PCIeConfig
    host_copy: HostCopy
    p2p: P2PConfig
    source: str
    accessed: str
    network: NetworkConfig | None = None
    #: Overrides of ``data/nccl_model.yaml`` for this system (calibrated by
    #: ``gpulab fit``): same key paths, e.g. ``transports/p2p/collectives/
    #: all_reduce/efficiency``; ``None`` when the system uses the shared model.
    collective_model: dict | None = None
    #: Hardware copy latency and bandwidth apart from the caller's issue cost
    #: (:class:`CopyHardware`); ``None`` when the system has no such calibration.
    copy_hardware: CopyHardware | None = None

    @property
    def nodes(self):
        """Number of nodes, ``n_gpus / gpus_per_node`` (a whole number: the parser
        refuses anything else)."""
        return self.n_gpus // self.gpus_per_node

    @property
    def n_nodes(self):
        """Same as :attr:`nodes` (older name)."""
        return self.nodes

    @property
    def nvlink_domain(self):
        """GPUs in one NVLink domain: ``nvlink.domain_gpus`` if given, else 1
        without NVLink and ``gpus_per_node`` with it."""
        if self.nvlink.domain_gpus is not None:
            return self.nvlink.domain_gpus
        return 1 if self.nvlink.fabric == "none" else self.gpus_per_node

    @property
    def scale_up_domain(self):
        """GPUs one GPU reaches without the scale-out network: its node, or its whole
        NVLink domain when that spans several nodes (an NVL72 rack)."""
        return max(self.nvlink_domain, self.gpus_per_node)

    @property
    def network_bandwidth_per_gpu(self):
        """Scale-out bandwidth of one GPU, per direction, or None without a network.

        NIC line rate x ports x ``nics_per_node`` / ``gpus_per_node`` (a
        :class:`gpulab.units.Bandwidth`): the GPUs of a node share its NICs.
        """
        if self.network is None:
            return None
        return units.Bandwidth(self.network.nic_rate.bytes_per_s
                               * self.network.nics_per_node / self.gpus_per_node,
                               units.PER_DIRECTION)

    @property
    def gpu_spec(self):
        """The :class:`gpulab.specs.GPUSpec` of the GPU.

        The row of ``gpus.csv`` whose variant is ``gpu_variant`` when it names one
        (``specs.gpu_variants(gpu)``, e.g. ``"PCIe 80GB"``); otherwise the GPU's
        first (flagship) row, which is what a free-text ``gpu_variant`` describes.

        >>> from gpulab import systems
        >>> systems.get("h100-pcie").gpu_spec.fp16_dense_flops / 1e12
        756.0
        """
        variants = specs.gpu_variants(self.gpu)
        return specs.gpu(self.gpu, self.gpu_variant if self.gpu_variant in variants
                         else None)

    @property
    def nvlink_links_to_peer(self):
        """NVLink links a copy between two GPUs of one NVLink domain can use.

        NVSwitch: all links of the GPU; mesh: the links of one GPU split evenly
        among its peers; hybrid cube mesh, or a mesh with ``peer_links``: the links
        between GPU 0 and GPU 1 (the pair a copy benchmark measures by default; other
        pairs differ, see :func:`nvlink_peers`); no NVLink: 0.
        """
        if self.nvlink.fabric == "none":
            return 0
        if self.nvlink.peer_links is not None:
            return self.nvlink.peer_links[0][1] if self.nvlink_domain > 1 else 0
        if self.nvlink.fabric == "nvswitch":
            return self.nvlink.links_per_gpu
        return self.nvlink.links_per_gpu // max(self.nvlink_domain - 1, 1)

