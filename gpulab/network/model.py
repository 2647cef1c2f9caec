r"""Multi-node collectives: NCCL's tuner picks, the run is modelled.

NCCL picks an algorithm and a protocol per call with a cost model
(``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` in ``src/graph/tuning.cc``):
``time = latency + bytes / bandwidth`` for every (algorithm, protocol), the
smallest wins. This module evaluates the same formulas to make the same pick, with
two changes stated where they apply: the bandwidths are the hardware's achieved
rates (NICs x line rate x fabric efficiency, NVLink x copy efficiency) where NCCL
uses its topology search's speed steps, and the network's latency comes from the
fabric (``gpulab/data/network.yaml``). That estimate is only the pick: the time of
the picked pair is :func:`executed_time`, modelled from how NCCL runs it
(:mod:`gpulab.network.execution`).

Between nodes, NCCL's **Ring** and **Tree** run one channel per NIC (or more), so a
node's whole NIC bandwidth carries the ring: a ring's busbw is
``min(NICs x rate x efficiency, NVLink)``, not one NIC's rate. A **Tree** (all_reduce)
is a chain inside each node and a double binary tree between nodes: on two nodes
each node sends and receives the buffer once over its NICs (the ring: ``2 (n-1)/n``
times), from three nodes about twice. **NVLSTree** reduces inside the node in the
NVSwitch and runs the tree between nodes; **CollNet** reduces in the network switches
(SHARP), so each node sends and receives the buffer once at any node count.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import links, pcie, specs, systems
from .._validate import as_number, check_choice, check_int, finite_answer
from . import data, execution
from .cluster import scale_out

#: nccl-tests collectives.
BUSBW_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
             "alltoall", "sendrecv")
#: Algorithms across nodes (NCCL's names, lower case); ``direct``: point-to-point
#: (alltoall, sendrecv), outside NCCL's tuner.
NET_ALGORITHMS = ("ring", "tree", "nvlstree", "collnet", "direct")
#: How an LL128 or Simple ring across nodes runs (:func:`collective_times`): the model's
#: lockstep stand-in, or the dataflow variant.
RING_FORMS = ("lockstep", "dataflow")
_ARCH = {2: "volta", 3: "ampere", 4: "hopper", 5: "blackwell"}


def _gpu_arch(system):
    """The row of NCCL's per-generation tables a system's GPUs take: NCCL indexes
    them by compute capability (tuning.cc lines 263-266 at v2.30.7: from 10.0
    Blackwell, from 9.0 Hopper, from 8.0 Ampere, else Volta), so an L40S (8.9)
    takes Ampere's and an H100 PCIe Hopper's. Without a compute capability in
    ``gpus.csv``: by the NVLink generation."""
    cc = getattr(system.gpu_spec, "compute_capability", None)
    if cc is None:
        return _ARCH.get(system.nvlink.generation or 0, "volta")
    return "blackwell" if cc >= 10 else "hopper" if cc >= 9 else \
        "ampere" if cc >= 8 else "volta"


def nvls_efficiency(system):
    """In-switch (NVLS) all_reduce algbw as a fraction of the per-direction NVLink
    line rate on ``system``'s GPUs.

    Ours for Hopper: 0.61, an NCCL maintainer's 8x H100 figure (``nccl_model.yaml``,
    nvls/efficiency). Other generations scale it by NCCL's own ratio of NVLS
    efficiencies (``nvlsEfficiency`` in ``tuning.cc``: Hopper 0.85, Blackwell 0.74),
    the one mechanism NCCL itself models for the difference. 0 where the switch
    has no NVLS.

    >>> round(nvls_efficiency("hgx-h200"), 2), round(nvls_efficiency("gb200-nvl72"), 3)
    (0.61, 0.531)
    """
    system = systems.resolve(system)
    arch = _gpu_arch(system)
    effs = data.constant_view("nvls_efficiency")
    if arch not in effs:
        return 0.0
    return specs.assumption("nccl", "nvls/efficiency") * effs[arch] / effs["hopper"]


def busbw_factor(op, n_ranks):
    """The nccl-tests factor turning algbw into busbw for ``op`` on ``n_ranks``
    (nccl-tests ``doc/PERFORMANCE.md``).

    >>> busbw_factor("all_reduce", 8)
    1.75
    """
    check_choice("op", op, BUSBW_OPS)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


@dataclass(frozen=True)
class NetworkPath:
    """What a collective of ``n_ranks`` sees of a cluster (see :func:`network_path`).

    Attributes
    ----------
    nodes : int
        NVLink domains the ranks span (nodes; an NVL72 rack counts as one).
    ranks_per_node : float
    nics : float
        NICs the ranks of one node use (their share of the node's NICs).
    nic_rate : float
        Line rate of one NIC, per direction. [B/s]
    net_bw : float
        Achieved network bandwidth of one node's ranks, per direction:
        ``nics x nic_rate x efficiency`` (/ oversubscription beyond one leaf group;
        without GPUDirect RDMA at most the ranks' PCIe links). [B/s]
    nvlink_bw : float
        Achieved NVLink (or PCIe) rate of one GPU, per direction. [B/s]
    nvls_bw : float or None
        In-switch (NVLS) reduction rate of one GPU's buffer, or None without NVLS.
    hops : int
        Switches between two nodes.
    extra_latency_s : float
        Latency each network step adds to NCCL's own network constants (the
        fabric's, and the switch hops beyond one). [s]
    fabric, arch : str
    gdr, sharp, nvswitch : bool
    intra : str
        ``"nvlink"`` or ``"pci"``: the hardware between the GPUs of a node.
    alltoall_bw : float or None
        A node's network rate for alltoall, where every node talks to every other
        and more bytes leave the leaf group than a ring's or tree's (None: as
        ``net_bw``). [B/s]
    tuner_latency_s : float
        The latency the network plugin reports to NCCL (``props.latency``): NCCL's
        tuner adds it to each network step of its estimate (twice for Simple); it
        steers the pick and is not a time (0 for InfiniBand/RoCE and TCPX, 75 us
        from aws-ofi-nccl on most EFA instances). [s]
    protocols : tuple of str
        The protocols NCCL may use across these nodes (all three unless the
        network plugin sets ``NCCL_PROTO``).
    nccl_env : tuple of (str, int)
        Buffer and NVLS chunk sizes the provider sets, as (name, bytes) pairs
        (``NCCL_BUFFSIZE``, ``NCCL_NVLS_CHUNKSIZE``, ``NCCL_NVLSTREE_MAX_CHUNKSIZE``);
        empty: NCCL's defaults.
    net_overhead_s : float
        NCCL's network post overhead for the node's CPU (``tuning.cc``
        getNetOverhead: 2 us on AMD x86 hosts, 1 us otherwise): each step of a ring
        across nodes costs at least this (three times with Simple). [s]
    """

    nodes: int
    ranks_per_node: float
    nics: float
    nic_rate: float
    net_bw: float
    nvlink_bw: float
    nvls_bw: float | None
    hops: int
    extra_latency_s: float
    fabric: str
    arch: str
    gdr: bool
    sharp: bool
    nvswitch: bool
    intra: str = "nvlink"
    alltoall_bw: float | None = None
    tuner_latency_s: float = 0.0
    protocols: tuple = data.PROTOCOLS
    nccl_env: tuple = ()
    net_overhead_s: float = 1.0e-6


#: How ranks sit on the leaf groups of a fat tree: ``ordered`` (nodes of a job in
#: order, a group's nodes next to each other, as schedulers place them) or
#: ``worst`` (every node's traffic crosses the spines at once).
PLACEMENTS = ("ordered", "worst")


def network_path(system, n_ranks, nvls=True, placement="ordered"):
    """The network as ``n_ranks`` ranks of ``system`` use it.

    Ranks fill one NVLink domain after another; the ranks of a node use their share
    of its NICs (``nics_per_node x ranks / GPUs``). Beyond one leaf group of an
    oversubscribed fat tree (ratio ``o``), ``placement="ordered"`` (the default)
    keeps a node's rate for rings and trees unless ``o`` exceeds the group's size
    (only the edges between groups use the uplinks) and gives alltoall
    ``rate / max(1, (1 - leaf / nodes) o)``; ``"worst"`` divides every node's rate
    by ``o``.

    Examples
    --------
    >>> from gpulab import network
    >>> p = network_path(network.scale_out("dgx-h100-spod", 2), 16)
    >>> p.nodes, p.nics, round(p.net_bw / 1e9)          # 8 x 50 GB/s x 0.94
    (2, 8.0, 376)
    """
    system = systems.resolve(system)
    n = check_int("n_ranks", n_ranks, low=1, high=system.n_gpus)
    check_choice("placement", placement, PLACEMENTS)
    net = system.network
    domain = system.scale_up_domain
    nodes = max(1, math.ceil(n / domain))
    ppn = n / nodes
    arch = _gpu_arch(system)
    nvswitch = system.nvlink.fabric == "nvswitch"
    intra = "pci" if system.nvlink.fabric == "none" \
        or system.nvlink.generation is None else "nvlink"
    if intra == "pci":
        line = pcie.encoded_bandwidth(system.pcie.generation,
                                      system.pcie.lanes).bytes_per_s
        nv_bw = line * system.host_copy.params("pinned", "d2h").efficiency
    else:
        line = links.nvlink_gpu_bandwidth(system.nvlink.generation,
                                          system.nvlink.links_per_gpu).bytes_per_s
        nv_bw = line * system.p2p.params.efficiency
    nvls_bw = None
    if nvls and nvswitch and getattr(system.nvlink, "nvls", False):
        nvls_bw = line * nvls_efficiency(system)
    if net is None:
        if nodes > 1:
            raise ValueError(f"system {system.name!r} has no network section: "
                             f"{n} ranks span {nodes} nodes")
        return NetworkPath(1, ppn, 0.0, 0.0, math.inf, nv_bw, nvls_bw, 0, 0.0, "none",
                           arch, True, False, nvswitch, intra)
    fab = data.fabric(net.fabric)
    topo = data.topology(net.topology)
    leaf = net.leaf_nodes or topo["leaf_nodes"]
    nics_domain = net.nics_per_node * domain / system.gpus_per_node
    nics = nics_domain * ppn / domain
    rate = net.nic_rate.bytes_per_s
    eff = fab.efficiency if net.efficiency is None else net.efficiency
    net_bw = nics * rate * eff
    beyond = nodes > leaf
    a2a_bw = None
    if beyond and net.oversubscription > 1:
        o = net.oversubscription
        if placement == "worst":
            net_bw /= o
        else:
            # ordered: a ring's or tree's edge that leaves a leaf group carries one
            # node's traffic over the group's uplinks (leaf x rate / o), which
            # binds only when o exceeds the group's size; an alltoall sends the
            # share (1 - leaf / nodes) of every node's bytes over them
            a2a_bw = net_bw / max(1.0, (1 - leaf / nodes) * o)
            net_bw = min(net_bw, net_bw * leaf / o)
    hops = topo["hops_beyond"] if beyond else topo["hops_inside"]
    extra = fab.extra_latency_s + (hops - 1) * fab.switch_hop_s
    tuner = fab.tuner_latency_s if net.tuner_latency_s is None else net.tuner_latency_s
    host = pcie.encoded_bandwidth(system.pcie.generation,
                                  system.pcie.lanes).bytes_per_s
    pinned = system.host_copy.params("pinned", "d2h")
    # with GPUDirect RDMA the NIC reads and writes GPU memory across the GPU's PCIe
    # link, so a node's ranks reach the network at most at their links' rate (one
    # GPU with four NICs still moves one PCIe link's worth)
    net_bw = min(net_bw, ppn * host * pinned.efficiency)
    if not net.gdr:
        # NCCL without GPUDirect RDMA: the kernels write and read pinned host buffers
        # and the NIC reads and writes those; a GPU and its NIC share one PCIe uplink
        # (the PCIe switch of a DGX-style node), which then carries every network
        # byte twice per direction. No copy per step: the kernels do the staging.
        net_bw = min(net_bw, ppn * host * pinned.efficiency / 2)
    if a2a_bw is not None:
        a2a_bw = min(a2a_bw, net_bw)
    overhead = data.constant_view("net_overhead_amd_s" if net.host_cpu == "amd"
                                  else "net_overhead_s")
    return NetworkPath(nodes, ppn, nics, rate, net_bw, nv_bw, nvls_bw, hops, extra,
                       fab.name, arch, net.gdr, net.sharp, nvswitch, intra, a2a_bw,
                       tuner, net.protocols or data.PROTOCOLS, net.nccl_env, overhead)


# --- NCCL's latencies ----------------------------------------------------------------
def _hw(kind, algo, proto):
    return data.constant_view("hw_latency_s")[kind][algo].get(proto, 0.0)


def _base(algo, proto):
    return data.constant_view("base_latency_s")[algo].get(proto, 0.0)


def _inter_lat(p, algo, proto, run=False):
    """Latency of one network step. [s]

    The tuner's (``run=False``, tuning.cc lines 386-391 at v2.30.7-1): the NET latency of the
    algorithm (the tree's with one rank per node) plus the latency the network
    plugin reports, twice for Simple (NCCL's allowance for the flush). The run's
    (``run=True``, ours): the same NET latency plus the fabric's own latency once;
    a GPUDirect flush (before Hopper) is a read inside the node, not another
    network crossing, and is not modelled."""
    own = "tree" if p.ranks_per_node == 1 and algo in ("ring", "tree") else algo
    if run:
        return _hw("net", own, proto) + p.extra_latency_s
    lat = _hw("net", own, proto) + p.tuner_latency_s
    return lat + (p.tuner_latency_s if proto == "Simple" else 0.0)


def _ll_max(p):
    ll = data.constant_view("ll_max_bw_gb_per_s")
    return 1e9 * (ll["two_nodes"] if p.nodes <= 2 else ll["more_nodes"])


def _wire(collective, n):
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def _tree_correction(s, proto, smooth=False):
    """NCCL's tree correction of the bandwidth per size (tuning.cc 620-642 at v2.30.7-1): a step
    per power of two, as NCCL's tuner reads it. ``smooth=True`` (ours, for the
    run's time): the same table read linearly between the middles of its steps in
    log2(size), so a larger message never takes less time where a step rises."""
    table = np.asarray(data.constant_view("tree_correction")[proto])
    x = np.log2(np.maximum(np.asarray(s, float) / 64, 1))
    out = np.ones_like(np.asarray(s, float))
    if smooth:
        mids = np.arange(table.size) + 0.5
        return np.interp(x, np.append(mids, table.size + 0.5),
                         np.append(table, 1.0), left=table[0])
    idx = np.floor(x).astype(int)
    ok = (np.asarray(s, float) >= 64) & (idx < table.size)
    out[ok] = table[idx[ok]]
    return out


def _ring(collective, s, n, p, proto, kind, run=False):
    f = data.constant_view("protocol_factor")
    nsteps = 2 * (n - 1) if collective == "all_reduce" else (
        n - 1 if collective in ("all_gather", "reduce_scatter") else n)
    if collective in ("broadcast", "reduce"):
        lat = _base("ring", proto) + _inter_lat(p, "ring", proto, run)
    else:
        overhead = p.net_overhead_s * (3 if proto == "Simple" else 1)
        intra = max(_hw(kind, "ring", proto), overhead)
        n_inter = 2 * (p.nodes - 1) if collective == "all_reduce" else p.nodes - 1
        lat = _base("ring", proto) + (nsteps - n_inter) * intra \
            + n_inter * _inter_lat(p, "ring", proto, run)
    lat = np.full(s.shape, lat)
    if collective == "all_reduce" and proto == "Simple":
        channels = max(1.0, 2 * p.nics)          # rings doubled (connect.cc line 460, v2.30.7-1)
        plateau = data.constant_view("ring_simple_plateau") if p.arch != "volta" else 1.9
        lat = np.where(s / (channels * n) >= 64, lat * plateau, lat)
    b = min(p.net_bw, p.nvlink_bw)
    if proto == "LL":
        b = min(b * f["ring_LL"], _ll_max(p))
    elif proto == "LL128":
        b *= _ring_ll128_share(p)
    return lat + _wire(collective, n) * s / b


def _tree_factor(p):
    """Buffers each node sends (and receives) over its NICs per all_reduce: once on
    two nodes (each node is the other's root in one of the two trees), about twice
    from three nodes (an inner node of one tree, a leaf of the other)."""
    return 1.0 if p.nodes <= 2 else 2.0


_SPEED_ARRAY = {"volta": "inter_default", "ampere": "inter_default",
                "hopper": "inter_sm90", "blackwell": "inter_sm100"}


def _tuner_channels(p):
    """(channels, network speed, tree bwIntra) of NCCL's topology search for one
    node's ranks [GB/s per channel]: see :func:`tuner_tree_share`."""
    arr = data.mechanic("topology/speed_arrays_gb_per_s")[_SPEED_ARRAY[p.arch]]
    channels = max(1.0, min(p.nics, p.ranks_per_node))
    nic = p.nics * p.nic_rate / channels / 1e9          # one channel's NIC [GB/s]
    i = next((k for k, v in enumerate(arr) if v <= nic), len(arr) - 1)
    speed = arr[i]
    if speed >= 25.0 and not (p.arch in ("hopper", "blackwell") and speed < 50.0
                              and channels > 4):
        channels, speed = 2 * channels, speed / 2
        i = next((k for k, v in enumerate(arr) if v <= speed), len(arr) - 1)
    intra = speed
    if p.nodes <= 2:
        while i > 0 and intra < 2 * speed and channels * arr[i - 1] <= p.nvlink_bw / 1e9:
            i -= 1
            intra = arr[i]
    return channels, speed, intra


def _per_channel_cap(p, kind):
    """NCCL's per-channel bandwidth cap ``kind`` (``tree``, ``tree_LL128``,
    ``ring_LL128``) for this GPU generation and node count. [GB/s]"""
    col = 1 if p.nodes <= 2 else 2
    return data.mechanic("tuning/per_channel_max_bw_gb_per_s")[kind][p.arch][col]


def tuner_tree_share(p, proto="Simple"):
    """NCCL's tuner's tree all_reduce busBw as a share of its ring's, across nodes.

    NCCL's own rules (v2.30.7; file and line in ``nccl_mechanics.yaml``), followed
    for one channel per NIC (or NIC group) of a GPU:

    - the search's per-channel speed is the first of its speed array
      (``topology/speed_arrays_gb_per_s``, by GPU generation) not above one NIC's
      line rate (search.cc 1153-1174); ``ncclTopoDupChannels`` doubles the
      channels and halves the speed from 25 GB/s unless the GPU is newer than sm80,
      the speed below 50 GB/s and there are more than 4 channels (search.cc
      1036-1049; ours: "newer than sm80" read as Hopper or Blackwell, so an sm89
      card is treated as sm80); the ring's busBw is channels x speed;
    - on two nodes the tuner reads the graph's ``bwIntra`` (tuning.cc line 306),
      which the search raises for trees, a speed step at a time, up to twice the
      network speed while the channels fit in one GPU's NVLink (search.cc
      1279-1283); beyond two nodes it reads ``bwInter``;
    - the tree's busBw is min(0.92 x channels x speed, channels x
      ``perChMaxTreeBw``) (tuning.cc line 331), and with LL128 at most 120/128 of
      that and channels x ``perChMaxTreeLL128Bw`` (lines 333-335); the caps per
      GPU generation and node count are ``tuning/per_channel_max_bw_gb_per_s``.

    Ours: NVLink's capacity is the achieved rate (``nvlink_bw``), not NCCL's
    per-link figure; the search's other passes (crossNic, path types, timeouts)
    are not followed. The tuner then converts the tree's busBw to algorithm
    bandwidth with 0.5 (tuning.cc line 380) where the ring uses nRanks / nsteps:
    that is :func:`_tree`'s business.

    >>> from gpulab import network
    >>> p = network_path(network.scale_out("dgx-a100-spod", 2), 16)
    >>> round(tuner_tree_share(p), 3)          # the cap: 23.6 / 24 per channel
    0.983
    >>> p = network_path(network.scale_out("aws-p4de", 2), 16)
    >>> round(tuner_tree_share(p), 2)          # bwIntra raised to twice 12 GB/s
    1.84
    """
    if not isinstance(p, NetworkPath):
        raise ValueError(f"p must be a NetworkPath (gpulab.network.network_path); "
                         f"got {p!r}")
    check_choice("proto", proto, data.PROTOCOLS)
    _ch, speed, intra = _tuner_channels(p)
    share = min(0.92 * intra, _per_channel_cap(p, "tree")) / speed
    if proto == "LL128":
        share = min(share * data.constant_view("protocol_factor")["tree_LL128"],
                    _per_channel_cap(p, "tree_LL128") / speed)
    return share


def _ring_ll128_share(p):
    """NCCL's ring LL128 busBw over the ring's Simple one across nodes:
    min(0.92, ``perChMaxRingLL128Bw`` / the channel's speed) (tuning.cc lines
    328-329 at v2.30.7-1)."""
    _ch, speed, _intra = _tuner_channels(p)
    return min(data.constant_view("protocol_factor")["ring_LL128"],
               _per_channel_cap(p, "ring_LL128") / speed)


def _tree(s, n, p, proto, kind, run=False):
    """NCCL's tuner estimate of the tree all_reduce: its busBw
    (:func:`tuner_tree_share` of the ring's, here of the node's network rate) times
    0.5 (tuning.cc line 380 at v2.30.7; line 349 at v2.28.3; the same ``.5`` at
    v2.18.5 line 199) at every node count. On two nodes the run sends each buffer
    once per node, not twice (:func:`_tree_factor`, :func:`executed_time`), but the
    tuner does not count that: it picks the tree for large messages only where the
    search could raise the tree's NVLink speed (few or slow NICs per node)."""
    f = data.constant_view("protocol_factor")
    lat = _base("tree", proto) + 2 * ((p.ranks_per_node - 1) * _hw(kind, "tree", proto)
                                      + math.floor(math.log2(p.nodes))
                                      * _inter_lat(p, "tree", proto, run))
    b = 0.5 * tuner_tree_share(p) * p.net_bw
    if p.ranks_per_node > 1:           # the chain (ours): each GPU sends up and down
        b = min(b, f["tree"] * p.nvlink_bw / 2)
    if proto == "LL":
        b = min(b * f["tree_LL"], _ll_max(p))
    elif proto == "LL128":
        b *= tuner_tree_share(p, "LL128") / tuner_tree_share(p)
    return lat + s / (b * _tree_correction(s, proto))


def _nvls_heads(p):
    """NVLSTree's heads per node (NVLink domain): one per GPU, at most NCCL's
    ``NCCL_MAX_NVLS_ARITY`` (32); each head drives its NIC, so a domain of more
    GPUs than that reaches the network through the heads' share of its NICs only."""
    return max(1, min(int(round(p.ranks_per_node)),
                      int(execution.mechanic("channels/nvls_max_heads"))))


def _nvlstree_net_bw(p):
    """The network rate NVLSTree gets per node: the heads' NICs. [B/s]"""
    share = min(1.0, _nvls_heads(p) / max(p.ranks_per_node, 1e-12))
    return p.net_bw * share


def _nvlstree(s, n, p, kind, run=False):
    lat = _hw(kind, "nvlstree", "Simple") + 2 * math.floor(math.log2(p.nodes)) \
        * _inter_lat(p, "nvlstree", "Simple", run)
    b = 1.0 / max(1.0 / p.nvls_bw, _tree_factor(p) / _nvlstree_net_bw(p))
    return lat + s / b


def _collnet(s, n, p, kind, run=False):
    f = data.constant_view("protocol_factor")
    g = p.ranks_per_node
    algo = "collnet_direct" if p.nvswitch else "collnet_chain"
    if p.nvswitch:      # tuning.cc 418-421 (v2.30.7-1): 0.4 us per extra local rank
        lat = 2 * (min(1, g - 1) * _hw(kind, algo, "Simple") + (g - 1) * 0.4e-6)
    else:
        lat = 2 * (g - 1) * _hw(kind, algo, "Simple")
    lat += _inter_lat(p, algo, "Simple", run)
    intra = p.nvls_bw if p.nvls_bw else p.nvlink_bw / 2
    b = 1.0 / max(1.0 / intra, 1.0 / p.net_bw)     # the switch reduces: S per node
    if p.nvswitch and p.arch in ("hopper", "blackwell"):
        b *= f["collnet_direct_sm90"]
    return lat + s / b


def _direct(collective, s, n, p, kind, run=False):
    """alltoall / sendrecv across nodes: one network step of NCCL's point-to-point
    path; bytes bound by the NICs and NVLink (alltoall: every rank's traffic to the
    other nodes through the node's NICs)."""
    lat = _base("ring", "Simple") + _inter_lat(p, "ring", "Simple", run)
    g = p.ranks_per_node
    if collective == "alltoall":
        t_net = g * (n - g) / n / (p.alltoall_bw or p.net_bw)
        t_nv = (g - 1) / n / p.nvlink_bw
        return lat + s * max(t_net, t_nv)
    # sendrecv: one rank per node sends across (the next node's first rank); it
    # has its share of the NICs, and at least one whole NIC where the node has one
    fab_nic = p.net_bw / max(p.nics, 1e-12) if p.nics >= 1 else p.net_bw
    return lat + s / min(max(p.net_bw / g, min(fab_nic, p.net_bw)), p.nvlink_bw)


def candidates(collective, p, algorithm="auto"):
    """The (algorithm, protocol) pairs NCCL would consider across nodes.

    LL128 needs GPUDirect RDMA (NCCL enables it only up to a PXN/PXB path between
    GPU and NIC, tuning.cc 518-536 at v2.30.7-1); NVLSTree needs NVLS and two or more ranks per
    node; CollNet needs SHARP in the switches.
    """
    if collective in ("alltoall", "sendrecv"):
        algos = ["direct"]
    elif collective == "all_reduce":
        algos = ["ring", "tree"]
        if p.nvls_bw and p.ranks_per_node >= 2:
            algos.append("nvlstree")
        if p.sharp:
            algos.append("collnet")
    else:
        algos = ["ring"]
    if algorithm != "auto":
        if algorithm not in algos:
            why = {"tree": "all_reduce", "nvlstree": "all_reduce on NVSwitch nodes "
                   "with NVLS and two or more ranks per node",
                   "collnet": "all_reduce with SHARP in the switches (sharp=True)",
                   "direct": "alltoall or sendrecv", "ring": "a collective other than "
                   "alltoall and sendrecv"}.get(algorithm, "one NVLink domain")
            raise ValueError(f"algorithm {algorithm!r} across {p.nodes} nodes needs "
                             f"{why}; available for {collective}: {', '.join(algos)}")
        algos = [algorithm]
    out = []
    for a in algos:
        if a in ("ring", "tree"):
            protos = ("LL", "LL128", "Simple") if p.gdr else ("LL", "Simple")
        else:
            protos = ("Simple",)
        # a plugin's NCCL_PROTO (aws-ofi-nccl: Simple without in-order delivery)
        out.extend((a, pr) for pr in protos if pr in p.protocols)
    return out


def _net_devices(p):
    """Network devices NCCL sees for one node's ranks: one per NIC, except on EFA,
    where aws-ofi-nccl groups the NICs under each GPU into one multi-rail device
    (aws/aws-ofi-nccl commit 2daf7d303aa1, src/nccl_ofi_topo.cpp: each GPU adds a
    group to the PCIe subtree holding NICs, ``propagate_accel_count`` lines
    931-962; the subtree's NICs are split into that many groups,
    ``create_groups_from_info_list`` lines 1092-1121): 32 EFA NICs of a p5 are 8
    devices."""
    if p.fabric == "efa":
        return min(p.nics, max(1.0, p.ranks_per_node))
    return p.nics


def _max_channels(p):
    """Channels of an inter-node ring or tree: NCCL doubles the rings its search
    finds, one per network device (connect.cc), so two per device the node's ranks
    use (:func:`_net_devices`), at least 2 and at most 32 (our reading; a public log
    of 8-NIC H100 nodes shows 16: ``nccl_mechanics.yaml``,
    topology/h100_multi_node_observed)."""
    return int(min(32, max(2, 2 * round(_net_devices(p)))))


def _intra_hop(proto):
    """Latency of one NVLink/PCIe step of ``proto`` as our 2x H200 runs measured it
    (``nccl_model.yaml``, transports/p2p/protocols)."""
    return specs.assumption("nccl", f"transports/p2p/protocols/{proto}")["hop_latency_s"]


def _proto_rate(proto):
    """Share of a channel's rate a protocol carries as data: LL half (a flag per
    4 data bytes), LL128 120/128 (NCCL tuning.cc's factors)."""
    f = data.constant_view("protocol_factor")
    return {"LL": f["ring_LL"], "LL128": f["ring_LL128"], "Simple": 1.0}[proto]


def executed_time(collective, s, n, p, algo, proto, ring_form="lockstep"):
    """Time of the (algorithm, protocol) NCCL chose, as it runs: channels used for
    the size, pieces and the pipeline over the path's hops
    (:mod:`gpulab.network.execution`): ring, tree and NVLSTree; CollNet and the
    point-to-point calls keep the form of the tuner's estimate. ``ring_form``: see
    :func:`collective_times`. [s]"""
    if algo == "nvlstree":
        return _nvlstree_executed(s, p)
    if algo not in ("ring", "tree") or collective not in (
            "all_reduce", "all_gather", "reduce_scatter"):
        return _one(collective, s, n, p, algo, proto, run=True)
    nc_max = _max_channels(p)
    share = _proto_rate(proto)
    lat_net = _inter_lat(p, algo, proto, run=True)
    lat_in = _intra_hop(proto)
    if algo == "ring":
        if p.nodes > 1:
            # NCCL's tuner charges every step of a ring across nodes at least the
            # network post overhead (tuning.cc lines 404-410 at v2.30.7-1; 2 us on AMD x86 hosts,
            # 1 us otherwise, three times with Simple): ours to take it as a floor of
            # the run's steps inside a node too
            lat_in = max(lat_in, p.net_overhead_s * (3 if proto == "Simple" else 1))
        nc = execution.channels_used(s, nc_max, proto, n, "ring")
        steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
        if proto == "LL":
            # LL forwards each line as its flag arrives and waits for credit only
            # NCCL_STEPS ahead: the ring runs as a dataflow (ring_dataflow_time); across
            # nodes LL carries at most NCCL's llMaxBw (its tuner's cap, tuning.cc line
            # 327 at v2.30.7-1, read here as the rate LL reaches over the network: ours)
            hops = [("intra", lat_in, p.nvlink_bw * share / nc_max),
                    ("net", lat_net, min(p.net_bw * share, _ll_max(p)) / nc_max)]
            ppn = int(round(p.ranks_per_node))
            if ppn >= 1 and n % ppn == 0:
                return _base("ring", proto) + execution.ring_dataflow_time(
                    s, nc, n, ppn, steps, proto, hops)
            return _base("ring", proto) + execution.ring_time(s, nc, n, steps, proto,
                                                               hops)
        hops = [("intra", lat_in, p.nvlink_bw * share / nc_max),
                ("net", lat_net, p.net_bw * share / nc_max)]
        step = _simple_step(p) if proto == "Simple" else None
        chunk = None if step is None else step * execution.mechanic(
            "buffers/chunk_slice_steps")["all_reduce"]["chunkSteps"]
        ppn = int(round(p.ranks_per_node))
        if ring_form == "dataflow" and ppn >= 1 and n % ppn == 0:
            # the variant: LL128 and Simple as the dataflow our mixed-ring run found
            # for their small calls (network.mixed_ring_check)
            return _base("ring", proto) + execution.ring_dataflow_time(
                s, nc, n, ppn, steps, proto, hops, max_chunk=chunk)
        # the model: lockstep, a stand-in for a per-step network cost of the middle
        # band that the dataflow form lacks (it overcharges small calls)
        return _base("ring", proto) + execution.ring_time(s, nc, n, steps, proto, hops,
                                                           max_chunk=chunk)
    nc = execution.channels_used(s, nc_max, proto, n, "tree")
    piece = execution.tree_piece(s, nc, proto,
                                 step=_simple_step(p) if proto == "Simple" else None)
    hi, hn = execution.tree_hops(p.ranks_per_node, p.nodes)
    # the chain sends each byte up and down over a GPU's links; a node sends and
    # receives the buffer _tree_factor times over its NICs
    # the tree streams at NCCL's own size-dependent tree efficiency (its tuner's
    # treeCorrectionFactor, tuning.cc 620-627 at v2.30.7-1: measured by NCCL's authors, not us)
    corr = _tree_correction(s, proto, smooth=True)
    rate_in = p.nvlink_bw * share * corr / (2 * nc_max)
    rate_net = p.net_bw * share * corr / (_tree_factor(p) * nc_max)
    return _base("tree", proto) + execution.pipeline_time(
        s, nc, execution.store_forward_piece(piece, proto, "intra"),
        execution.store_forward_piece(piece, proto, "net"), hi, hn, lat_in, lat_net,
        rate_in, rate_net)


def _simple_step(p):
    """One Simple buffer step where the provider sets ``NCCL_BUFFSIZE`` (the buffer
    is ``NCCL_STEPS`` steps, ``init.cc``), else None (NCCL's 512 KiB). [B]"""
    buff = dict(p.nccl_env).get("NCCL_BUFFSIZE")
    return None if buff is None else buff / execution.mechanic("buffers/nccl_steps")


def _nvlstree_executed(s, p):
    """NVLSTree as it runs: every GPU of a node (at most 32) is a head with its NIC, each of
    NCCL's NVLS channels (16 on Hopper, 32 on Blackwell) runs one op per head; an
    op's pieces are reduced in the switch (one NVLink step up, one down) and cross
    the tree's network levels up and down. The node's buffer is reduced at the
    NVLS rate and sent ``_tree_factor`` times over its NICs."""
    heads = _nvls_heads(p)
    ops = execution.nvls_channels(p.arch, p.nodes) * heads
    env = dict(p.nccl_env)
    piece = execution.nvlstree_piece(s, ops, p.nodes,
                                     nvls_chunk=env.get("NCCL_NVLS_CHUNKSIZE"),
                                     tree_max=env.get("NCCL_NVLSTREE_MAX_CHUNKSIZE"))
    hi, hn = 2, 2 * max(1, math.ceil(math.log2(p.nodes)))
    rate_in = p.nvls_bw / ops
    rate_net = _nvlstree_net_bw(p) / (_tree_factor(p) * ops)
    t = execution.pipeline_time(s, ops, piece, piece, hi, hn, _intra_hop("Simple"),
                                _inter_lat(p, "nvlstree", "Simple", run=True), rate_in,
                                rate_net)
    return _base("nvlstree", "Simple") + t


def _one(collective, s, n, p, algo, proto, run=False):
    """NCCL's tuner estimate of (algo, proto) (``run=True``: the same form with the
    run's network latency, for the algorithms :func:`executed_time` does not
    model step by step)."""
    kind = p.intra
    if algo == "ring":
        return _ring(collective, s, n, p, proto, kind, run)
    if algo == "tree":
        return _tree(s, n, p, proto, kind, run)
    if algo == "nvlstree":
        return _nvlstree(s, n, p, kind, run)
    if algo == "collnet":
        return _collnet(s, n, p, kind, run)
    return _direct(collective, s, n, p, kind, run)


@finite_answer
def collective_times(collective, message_bytes, n_ranks, system, *, algorithm="auto",
                     protocol="auto", nvls=True, host_time=0.0, placement="ordered",
                     ring_form="lockstep"):
    """Times of a collective across nodes, as NCCL's tuner would run it.

    Parameters
    ----------
    collective : str
        One of :data:`BUSBW_OPS`.
    message_bytes : array_like
        nccl-tests' ``size``. [B]
    n_ranks : int
        Ranks; they must span two or more nodes (NVLink domains).
    system : systems.System or str
    algorithm : "auto" or one of :data:`NET_ALGORITHMS`
    protocol : "auto" or one of ``"LL"``, ``"LL128"``, ``"Simple"``
    nvls : bool
        Allow NVLSTree where the NVSwitch reduces in the switch.
    host_time : float or array_like
        The host's time per call (the caller's launch model); each time is at
        least this. [s]
    placement : {"ordered", "worst"}
        Beyond one leaf group of an oversubscribed fat tree: ``ordered`` (a
        job's nodes in order, so only the edges between groups use the uplinks)
        or ``worst`` (every node's bandwidth divided by the oversubscription).
    ring_form : {"lockstep", "dataflow"}
        How an LL128 or Simple ring across nodes runs: ``lockstep`` (the model, every
        step paced by the slowest edge: a stand-in that overcharges small calls) or
        ``dataflow`` (a variant: each piece pays the edges it crosses, as
        :func:`gpulab.network.mixed_ring_check` found for small calls). LL rings run
        as a dataflow in both.

    Returns
    -------
    dict
        ``time`` [s] (the run, :func:`executed_time`), ``estimate`` [s] (NCCL's
        tuner estimate of the pick), ``algorithm`` and ``protocol`` (arrays, one
        per size).

    Examples
    --------
    >>> from gpulab import network
    >>> c = network.scale_out("dgx-h100-spod", 2)
    >>> r = collective_times("all_reduce", [8, 2**30], 16, c)
    >>> r["algorithm"].tolist()
    ['tree', 'nvlstree']
    """
    check_choice("collective", collective, BUSBW_OPS)
    system = systems.resolve(system)
    n = check_int("n_ranks", n_ranks, low=2, high=system.n_gpus)
    check_choice("algorithm", algorithm, ("auto",) + NET_ALGORITHMS)
    check_choice("protocol", protocol, ("auto",) + data.PROTOCOLS)
    if not isinstance(nvls, (bool, np.bool_)):
        raise ValueError(f"nvls must be True or False; got {nvls!r}")
    check_choice("ring_form", ring_form, RING_FORMS)
    s = np.atleast_1d(as_number("message_bytes", message_bytes, low=0,
                                low_inclusive=False, max_ndim=1)).astype(float)
    p = network_path(system, n, nvls=bool(nvls), placement=placement)
    if p.nodes < 2:
        raise ValueError(f"n_ranks must span two or more nodes of {system.name!r} "
                         f"({system.scale_up_domain} GPUs each); got {n}")
    pairs = candidates(collective, p, algorithm)
    if protocol != "auto":
        pairs = [(a, pr) for a, pr in pairs if pr == protocol]
        if not pairs:
            raise ValueError(f"protocol {protocol!r} is not available for {collective} "
                             f"with algorithm {algorithm!r} here")
    # NCCL's tuner picks by its estimate (tuning.cc's latency + bytes / bandwidth);
    # the call then runs as executed_time says; the host's time per call only floors
    # the result (nccl-tests issues calls back to back)
    est = np.vstack([_one(collective, s, n, p, a, pr) for a, pr in pairs])
    best = np.argmin(est, axis=0)
    idx = np.arange(s.size)
    run = np.zeros(s.shape)
    for i, (a, pr) in enumerate(pairs):     # each pair's run only where it is picked
        where = best == i
        if where.any():
            run[where] = executed_time(collective, s[where], n, p, a, pr, ring_form)
    return {"time": np.maximum(host_time, run),
            "estimate": est[best, idx],
            "algorithm": np.array([pairs[i][0] for i in best]),
            "protocol": np.array([pairs[i][1] for i in best])}


@finite_answer
def algorithm_table(collective, sizes, nodes, system, *, nics=None, fabric=None,
                    sharp=None, gdr=None, nvls=True):
    """Every algorithm's predicted time per size on ``nodes`` nodes (the explorer's
    table): the fastest protocol of each algorithm, and which one NCCL's tuner picks.

    Parameters
    ----------
    collective : str
    sizes : array_like
        nccl-tests' ``size``. [B]
    nodes : int
        Nodes (>= 2); all their GPUs are ranks.
    system : str or systems.System
        A cluster preset, a system preset or a System (see :func:`scale_out`).
    nics, fabric, sharp, gdr
        As in :func:`scale_out`.
    nvls : bool

    Returns
    -------
    list of dict
        One row per (size, algorithm): ``size_bytes``, ``algorithm``, ``protocol``,
        ``time_s``, ``algbw`` and ``busbw`` [B/s], ``chosen`` (True for NCCL's pick).

    Examples
    --------
    >>> rows = algorithm_table("all_reduce", [2**30], 2, "dgx-a100-spod")
    >>> [(r["algorithm"], r["chosen"]) for r in rows]
    [('ring', True), ('tree', False)]
    """
    c = scale_out(system, check_int("nodes", nodes, low=2, high=100_000), nics=nics,
                  fabric=fabric, sharp=sharp, gdr=gdr)
    s = np.atleast_1d(as_number("sizes", sizes, low=0, low_inclusive=False,
                                high=1e18, max_ndim=1)).astype(float)
    n = c.n_gpus
    p = network_path(c, n, nvls=nvls)
    best = collective_times(collective, s, n, c, nvls=nvls)
    factor = busbw_factor(collective, n)
    algos = list(dict.fromkeys(a for a, _ in candidates(collective, p)))
    rows = []
    for j, size in enumerate(s):
        for a in algos:
            r = collective_times(collective, s[j:j + 1], n, c, algorithm=a, nvls=nvls)
            t = float(r["time"][0])
            rows.append({"size_bytes": float(size), "algorithm": a,
                         "protocol": str(r["protocol"][0]), "time_s": t,
                         "algbw": size / t, "busbw": size / t * factor,
                         "chosen": a == best["algorithm"][j]})
    return rows
