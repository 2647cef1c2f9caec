"""Clusters described by data: a node preset scaled out over a network
(:func:`scale_out`, :data:`CLUSTER_PRESETS`)."""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

from .. import systems
from .._validate import check_int
from . import data

class _PresetNames(Sequence):
    """The cluster preset names, read from ``network.yaml`` on first use (importing
    gpulab reads no data file); behaves as a tuple of str."""

    @functools.cached_property
    def _names(self):
        return tuple(data.cluster_records())

    def __getitem__(self, i):
        return self._names[i]

    def __len__(self):
        return len(self._names)

    def __eq__(self, other):
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __hash__(self):
        return hash(self._names)

    def __repr__(self):
        return repr(self._names)


#: Cluster presets of ``gpulab/data/network.yaml`` (node preset + network), in file
#: order; a sequence of str, read on first use.
CLUSTER_PRESETS = _PresetNames()


def cluster_preset(name):
    """The record of cluster preset ``name``: node preset, ``nics``, fabric,
    topology, oversubscription, SHARP, source.

    >>> cluster_preset("aws-p5")["nics"]
    '32x100G'
    """
    if not isinstance(name, str) or name not in CLUSTER_PRESETS:
        raise ValueError(f"name must be one of {', '.join(CLUSTER_PRESETS)}; "
                         f"got {name!r}")
    return data.cluster_records()[name]


def _base_system(system):
    """(node System, its network or None, base name, fixed fabric or None) of a
    cluster preset name, a system preset name, a YAML path or a System."""
    if isinstance(system, str) and system in CLUSTER_PRESETS:
        rec = cluster_preset(system)
        node = systems.get(rec["node"])
        count, rate = data.parse_nics(rec["nics"])
        net = systems.NetworkConfig(
            nic=rec["nic"], nics_per_node=count, fabric=data.canonical_fabric(
                rec["fabric"]), nic_gbit_per_s=rate, sharp=False, gdr=True,
            topology=rec["topology"], oversubscription=float(rec["oversubscription"]),
            leaf_nodes=rec.get("leaf_nodes"), tuner_latency_s=rec.get("tuner_latency_s"),
            protocols=tuple(rec["nccl_protocols"]) if "nccl_protocols" in rec else None,
            nccl_env=tuple(sorted(rec.get("nccl_env", {}).items())),
            efficiency=(float(rec["fabric_efficiency"]["value"])
                        if "fabric_efficiency" in rec else None),
            host_cpu=(rec["host_cpu"]["vendor"] if "host_cpu" in rec
                      else node.network.host_cpu if node.network is not None
                      else "unknown"))
        node = dataclasses.replace(node, name=system, network=net,
                                   n_gpus=node.scale_up_domain,
                                   description=rec["description"],
                                   source=rec["source"], accessed=rec["accessed"])
        fixed = net.fabric if rec.get("fabric_fixed", False) else None
        return node, net, system, fixed
    try:
        s = systems.resolve(system)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith("system") else f"system: {msg} "
                         f"(or a cluster preset: {', '.join(CLUSTER_PRESETS)})") \
            from None
    return s, s.network, s.name.split(" x")[0], None


#: How the fabrics are named in messages.
_FABRIC_LABEL = {"infiniband": "InfiniBand", "roce": "RoCE", "efa": "EFA",
                 "tcpx": "GPUDirect-TCPX"}


def _check_pcie_carries(node, unit, count, rate, nics):
    """Refuse NICs whose total rate exceeds what the PCIe links of the ``unit`` GPUs
    they serve (a node, or an NVLink domain spanning nodes) carry: GPUDirect RDMA
    moves every network byte over a GPU's PCIe link."""
    from .. import pcie
    link = pcie.encoded_bandwidth(node.pcie.generation, node.pcie.lanes)
    per_gpu = link.bytes_per_s * 8 / 1e9                # Gb/s per direction
    limit = per_gpu * unit
    total = count * rate
    what = "node" if unit == node.gpus_per_node else "NVLink domain"
    if total > limit * (1 + 1e-9):
        raise ValueError(
            f"nics {nics!r} is {total:g} Gb/s per {what}, more than its {unit} "
            f"GPUs' PCIe Gen{node.pcie.generation} x{node.pcie.lanes} links carry "
            f"({unit} x {math.floor(per_gpu)} Gb/s = {math.floor(limit)} Gb/s per "
            f"direction): give at most {math.floor(limit)} Gb/s per {what} "
            "(count x rate)")


def _check_sharp(system, base, fabric, gdr):
    """Refuse in-switch reduction where the network cannot do it. NCCL reduces in
    the switches through CollNet and the NCCL-SHARP plugin, which needs ConnectX-6
    HDR or later, NVIDIA Quantum HDR or later InfiniBand switches and GPUDirect
    RDMA (NVIDIA SHARP 3.9.1 documentation, 'Using NVIDIA SHARP with NVIDIA
    NCCL'); a cluster preset says whether its provider offers it
    (``sharp_capable`` in ``network.yaml``)."""
    if isinstance(system, str) and system in CLUSTER_PRESETS \
            and not cluster_preset(system)["sharp_capable"]:
        raise ValueError(f"sharp: {base}'s network has no in-switch reduction "
                         "(SHARP) that NCCL can use; sharp cannot be True (leave it "
                         "unset or False)")
    if fabric is not None and fabric != "infiniband":
        raise ValueError(f"sharp needs an InfiniBand fabric (NCCL's SHARP plugin runs "
                         f"on NVIDIA Quantum switches); the fabric is "
                         f"{_FABRIC_LABEL.get(fabric, fabric)}: leave sharp unset or "
                         "False, or give fabric='infiniband'")
    if not gdr:
        raise ValueError("sharp needs GPUDirect RDMA (the NCCL-SHARP plugin requires "
                         "it), and this network has none (gdr=False, given or because "
                         "the node's cards do not allow it); sharp cannot be True")


def scale_out(system, nodes, *, nics=None, fabric=None, sharp=None, gdr=None):
    """A cluster of ``nodes`` identical nodes joined by a scale-out network.

    Where a system's NVLink domain is larger than its node (GB200 NVL72: 72 GPUs in
    one rack of 4-GPU trays), ``nodes`` counts NVLink domains (racks): the network
    joins domains, and each domain brings the NICs of all of its trays.

    Parameters
    ----------
    system : str or systems.System
        A cluster preset (:data:`CLUSTER_PRESETS`, e.g. ``"dgx-h100-spod"``), a
        system preset (its ``network`` section is the network) or a System.
    nodes : int
        Nodes (>= 1), or NVLink domains where a domain spans several nodes;
        ``n_gpus = nodes * max(gpus_per_node, nvlink_domain)``.
    nics : str or (int, float), optional
        NICs per node (per NVLink domain where ``nodes`` counts domains: ``"72x400G"``
        for a GB200 NVL72 rack, spread evenly over its trays) and their rate:
        ``"8x400G"`` or ``(8, 400)`` (Gb/s per NIC, per direction); at most what
        those GPUs' PCIe links carry (GPUDirect RDMA crosses them). Default: the
        preset's.
    fabric : {"ib", "infiniband", "roce", "efa", "tcpx", ...}, optional
        Fabric kind (:func:`gpulab.network.fabric_names`). Default: the preset's. A
        cloud preset's fabric is fixed by its provider (``fabric_fixed`` in
        ``network.yaml``): only that fabric is accepted.
    sharp : bool, optional
        Let NCCL reduce in the switches (CollNet/SHARP). Default False (NCCL's
        default: ``NCCL_COLLNET_ENABLE=0``). True needs an InfiniBand fabric,
        GPUDirect RDMA and, for a cluster preset, a provider that offers it
        (``sharp_capable``).
    gdr : bool, optional
        GPUDirect RDMA; False stages data through host memory. Default: the node's,
        True unless its driver refuses peer DMA into GPU memory (``pcie.p2p`` False,
        GeForce cards: NVIDIA's GPUDirect RDMA user manual lists Tesla and Quadro
        GPUs only), where True is refused.

    Returns
    -------
    systems.System
        Its ``network.leaf_nodes`` is set: the preset's, or the topology's rule for
        the node's NIC count (fat tree: ``leaf_ports // NICs``).

    Examples
    --------
    >>> c = scale_out("dgx-h100-spod", 4)
    >>> c.n_gpus, c.nodes, c.network.nics_per_node, c.network.nic_rate.gb_per_s
    (32, 4, 8, 50.0)
    >>> scale_out("hgx-h200", 2, nics="4x200G", fabric="roce").network.fabric
    'roce'
    >>> r = scale_out("gb200-nvl72", 2)
    >>> r.name, r.n_gpus, r.nvlink_domain
    ('gb200-nvl72 x2 racks', 144, 72)
    """
    node, net, base, fixed = _base_system(system)
    n = check_int("nodes", nodes, low=1, high=100_000)
    if sharp is not None and not isinstance(sharp, bool):
        raise ValueError(f"sharp must be True, False or None; got {sharp!r}")
    if gdr is not None and not isinstance(gdr, bool):
        raise ValueError(f"gdr must be True, False or None; got {gdr!r}")
    if not node.pcie.p2p:
        if gdr:
            raise ValueError(f"gdr: {node.name}'s driver refuses peer DMA into its GPUs' "
                             "memory (pcie.p2p false: GeForce cards), so GPUDirect RDMA "
                             "is not available; gdr cannot be True (leave it unset or "
                             "False)")
        gdr = False
    unit = node.scale_up_domain                 # GPUs of one node or NVLink domain
    racks = node.nvlink_domain > node.gpus_per_node
    n_gpus = n * unit
    need_net = n > 1
    parsed = None if nics is None else data.parse_nics(nics)
    if parsed is not None:
        _check_pcie_carries(node, unit, *parsed, nics)
    fab = None if fabric is None else data.canonical_fabric(fabric)
    if fixed is not None and fab is not None and fab != fixed:
        raise ValueError(f"fabric: {base}'s network is {_FABRIC_LABEL[fixed]} "
                         f"(fixed by the provider); fabric cannot be {fabric!r} "
                         f"(leave it unset or give {fixed!r})")
    if sharp:
        _check_sharp(system, base, fab or (net.fabric if net is not None else None),
                     gdr if gdr is not None else net is None or net.gdr)
    if net is None:
        if parsed is None or fab is None:
            if need_net:
                raise ValueError(f"system {node.name!r} has no network section: give "
                                 "nics and fabric to connect its nodes")
        else:
            net = systems.NetworkConfig(nic=None, nics_per_node=1, fabric=fab,
                                        nic_gbit_per_s=parsed[1])
    changes = []
    if net is not None:
        repl = {}
        if parsed is not None:
            count, rate = parsed
            # given per NVLink domain where it spans nodes: each node's share
            per_node = count * node.gpus_per_node / unit if racks else count
            if per_node == int(per_node):
                per_node = int(per_node)
            repl.update(nics_per_node=per_node, nic_gbit_per_s=rate)
            changes.append(f"{count}x{rate:g}G")
        if fab is not None:
            repl["fabric"] = fab
            changes.append(fab)
            if fab != net.fabric:
                repl["efficiency"] = None   # the preset's share was its own fabric's
        if sharp is not None:
            repl["sharp"] = sharp
            if sharp:
                changes.append("SHARP")
        if gdr is False:
            repl["gdr"] = False
            changes.append("no GDR")
        net = dataclasses.replace(net, **repl)
        # the leaf group: the preset's, unless the NIC count changed under a
        # topology whose leaf size depends on it (fat tree: leaf_ports // NICs)
        per_nics = "leaf_ports" in data.topology(net.topology)
        if net.leaf_nodes is None or ("nics_per_node" in repl and per_nics):
            net = dataclasses.replace(net, leaf_nodes=data.leaf_nodes(
                net.topology, net.nics_per_node))
    what = ("rack" if n == 1 else "racks") if racks else "nodes"
    name = f"{base} x{n} {what}" + (f" ({', '.join(changes)})" if changes else "")
    return dataclasses.replace(node, n_gpus=n_gpus, network=net, name=name)
