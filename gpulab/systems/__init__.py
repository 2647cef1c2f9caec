"""System presets: what a whole server looks like to the copy and collective models.

A :class:`System` bundles the GPU, its NVLink fabric, its PCIe host link and the
measured or cited efficiencies of host<->device and GPU<->GPU copies. Presets live
in ``gpulab/data/systems.yaml``; a user describes their own server in a YAML file
with the same schema and loads it with :func:`load` (or passes its path wherever a
system name is accepted, see :func:`resolve`).

Schema of one system (all keys required unless marked optional)::

    systems:
      my-server:
        description: "8x H100 SXM5 with NVSwitch"
        gpu: H100                  # a name from gpulab.specs.gpu_names()
        gpu_variant: SXM5 80GB     # optional: a variant from gpulab.specs.gpu_variants(gpu)
                                   # selects that row; other text is a note
        n_gpus: 8                  # GPUs in the whole system
        gpus_per_node: 8
        nvlink:
          generation: 4
          links_per_gpu: 18
          fabric: nvswitch         # or hybrid_cube_mesh / mesh / none
          nvls: true               # optional (default false): in-switch reduction
          domain_gpus: 8           # optional (default gpus_per_node; 1 without NVLink)
          switch_chips: 4          # optional, nvswitch only: NVSwitch chips per domain
          # peer_links: [[0, 1, ...], ...]  # optional; required for hybrid_cube_mesh
        pcie: {generation: 5, lanes: 16, max_payload_bytes: 256}
                                   # optional p2p: false where the driver refuses
                                   # PCIe peer-to-peer (GeForce): p2p.via must be host
        host_copy:
          source: "where the numbers come from"
          pinned:                  # page-locked host memory, direct DMA
            h2d: {latency_s: 5.0e-6, efficiency: 0.88, issue_floor_s: 2.4e-5}
            d2h: {latency_s: 5.0e-6, efficiency: 0.88, issue_floor_s: 2.4e-5}
          pageable:                # staged through a pinned bounce buffer
            h2d: {latency_s: 6.0e-5, host_memcpy_gb_per_s: 27.0, issue_floor_s: 3.0e-5}
            d2h: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 18.0, issue_floor_s: 3.3e-5}
        p2p: {via: nvlink, latency_s: 1.5e-5, efficiency: 0.88, issue_floor_s: 5.1e-5,
              source: "..."}
        copy_hardware:             # optional: the hardware apart from the caller
          kind: measured           # or assumed
          source: "..."
          accessed: "2026-12-01"
          h2d_pinned: {latency_s: 3.9e-6, pipelined_s: 2.6e-6,
                       bandwidth_gb_per_s: 55.4, cuda_issue_s: 2.5e-6}
          # also d2h_pinned, h2d_pageable, d2h_pageable, h2d_pinned_both,
          # d2h_pinned_both, d2d, p2p (each may add its own kind and source; a
          # pageable one may add knee_bytes and bandwidth_above_knee_gb_per_s:
          # larger copies run, as a whole, at that rate; fitted on the host)
        network:                   # optional: the scale-out path between nodes
          nic: ConnectX-7          # a name from gpulab.specs.nics()
          nics_per_node: 8
          fabric: infiniband       # or roce, efa, tcpx (ethernet: read as roce)
          nic_gbit_per_s: 400.0    # optional: the NIC's rate (required with nic: null)
          sharp: false             # optional: NCCL may reduce in the switches
          gdr: true                # optional: GPUDirect RDMA (false: via host memory)
          topology: rail_optimized # optional: or fat_tree
          oversubscription: 1.0    # optional: leaf-to-spine (1 = non-blocking)
          leaf_nodes: 32           # optional: nodes under one leaf group
        source: "where the hardware description comes from"
        accessed: "2026-11-30"

NVLink fabrics (:data:`FABRICS`): ``nvswitch`` (every GPU reaches every other GPU of
its NVLink domain through switch chips, over all of its links), ``hybrid_cube_mesh``
(DGX-1: direct links, some pairs with two links, some pairs with none; the
``peer_links`` matrix says which), ``mesh`` (direct links split evenly among the
peers unless ``peer_links`` says otherwise) and ``none``. ``nvls`` marks in-switch
reduction (NVLink SHARP), a feature of the third-generation NVSwitch and later: it
needs ``fabric: nvswitch`` and NVLink 4 or newer (A100's second-generation NVSwitch
has none). ``domain_gpus`` is the number of GPUs in one NVLink domain: the GPUs of a
node (the default), fewer (bridged pairs in a PCIe server) or several nodes' worth
(an NVL72 rack: ``nvswitch`` only). ``peer_links`` is a ``domain_gpus`` x
``domain_gpus`` symmetric matrix of link counts with a zero diagonal (row sums at most
``links_per_gpu``). Systems of several nodes whose GPUs are not all in one NVLink
domain need a ``network`` section.

Units: seconds, fractions, GB/s (1e9 bytes per second, per direction). Write small
numbers with a decimal point (``6.0e-6``): YAML 1.1 reads ``6e-6`` as text.
``efficiency`` is the achieved large-copy bandwidth as a fraction of the nominal
path rate (PCIe: the encoded rate of the link; NVLink: the per-direction rate of the
links between the two GPUs). ``issue_floor_s`` is the shortest time per copy when
copies are issued back to back (the host cannot issue them faster); 0 disables it.
In ``host_copy`` and ``p2p`` the presets' values come from a PyTorch ``copy_`` loop, so
``issue_floor_s`` is PyTorch's per-call cost. ``copy_hardware`` keeps the hardware
(``latency_s`` of one isolated copy, ``pipelined_s`` per queued copy,
``bandwidth_gb_per_s``) apart from the CUDA runtime's per-call ``cuda_issue_s``.
The copy model is in :mod:`gpulab.pcie`.

Examples
--------
>>> from gpulab import systems
>>> systems.names()  # doctest: +NORMALIZE_WHITESPACE
['a100-pcie-x8', 'dgx-1-v100', 'dgx-a100', 'dgx-h100', 'gb200-nvl72', 'h100-pcie',
 'h200-x2-measured', 'hgx-a100-4gpu', 'hgx-b200', 'hgx-h200', 'hgx-h200-2node',
 'l40s-x8', 'rtx-4090-x8']
>>> s = systems.get("hgx-h200")
>>> s.gpu, s.n_gpus, s.nvlink.fabric, s.pcie.generation
('H200', 8, 'nvswitch', 5)
>>> round(s.host_copy.params("pinned", "h2d").efficiency, 2)
0.88
>>> s.nvlink.nvls, s.nodes, s.nvlink_domain, s.network_bandwidth_per_gpu.gb_per_s
(True, 1, 8, 50.0)
>>> two = systems.get("hgx-h200-2node")
>>> two.nodes, two.nvlink_domain, two.network.nic
(2, 8, 'ConnectX-7')

Three modules, re-exported here: :mod:`.model` (the :class:`System` dataclasses and
fabrics), :mod:`.copies` (copy calibrations and the hardware copy section) and
:mod:`.loader` (YAML parsing, presets, :func:`get`, :func:`resolve`).
"""
from __future__ import annotations

from .copies import (  # noqa: F401
    HOST_COPY_DIRECTIONS,
    HOST_COPY_MEMORIES,
    HARDWARE_COPY_KEYS,
    HARDWARE_COPY_FIELDS,
    CopyParams,
    HostCopy,
    HardwareCopy,
    CopyHardware,
)
from .model import (  # noqa: F401
    FABRICS,
    NETWORK_FABRICS,
    NETWORK_TOPOLOGIES,
    HOST_CPUS,
    P2P_VIA,
    NVLinkConfig,
    NetworkConfig,
    PCIeConfig,
    P2PConfig,
    System,
)
from .loader import (  # noqa: F401
    parse,
    load,
    names,
    get,
    nvlink_peers,
    resolve,
)

__all__ = [
    "System", "NVLinkConfig", "PCIeConfig", "CopyParams", "HostCopy", "P2PConfig",
    "HardwareCopy", "CopyHardware", "HARDWARE_COPY_KEYS",
    "NetworkConfig", "FABRICS", "NETWORK_FABRICS", "NETWORK_TOPOLOGIES", "HOST_CPUS", "P2P_VIA", "names", "get", "load",
    "parse", "resolve", "nvlink_peers",
]
