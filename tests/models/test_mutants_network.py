"""gpulab.network: hand-computed cases that kill mutants the other network tests let live.

Constants are NCCL 2.30.7's, as cited in gpulab/data/network.yaml (src/graph/tuning.cc):
base latencies ring LL128 14.0 us; NET latencies ring LL128 4.0 us, tree LL128 8.5 us,
CollNet Chain Simple 30.0 us; NVLink latency CollNet Chain Simple 2.8 us; ring LL128 x 0.92
(120/128); tree LL busbw capped at 39 GB/s on two nodes; tree correction for LL 1.0 up to
1023 B and 0.9 from 1024 B to 2047 B (buckets of log2(size / 64)).
"""
from __future__ import annotations

import re

import pytest

from gpulab import network as N
from gpulab import systems

GB = 1e9


def _one_gpu_nodes():
    """Two nodes of one PCIe H100 each, one ConnectX-7 (400 Gb/s = 50 GB/s) per node."""
    return systems.parse("systems:\n  s:\n    base: h100-pcie\n    n_gpus: 2\n"
                         "    gpus_per_node: 1\n    network: {nic: ConnectX-7, "
                         "nics_per_node: 1, fabric: infiniband}\n")["s"]


def test_a_path_without_network_keeps_its_architecture_and_flags():
    p = N.network_path("h200-x2-measured", 2)
    assert (p.nodes, p.arch, p.gdr, p.sharp, p.nvswitch, p.intra) == \
        (1, "hopper", True, False, True, "nvlink")


def test_nccl_tables_are_read_by_compute_capability_not_nvlink():
    """NCCL indexes its tuning tables by compute capability: an L40S (8.9, no
    NVLink) takes Ampere's row, a PCIe H100 (9.0) Hopper's, a V100 Volta's."""
    assert N.network_path("l40s-x8", 2).arch == "ampere"
    assert N.network_path("h100-pcie", 2).arch == "hopper"
    assert N.network_path("dgx-1-v100", 2).arch == "volta"
    assert N.network_path("hgx-b200", 2).arch == "blackwell"


def test_gpus_without_nvlink_talk_over_pcie():
    p = N.network_path("h100-pcie", 2)
    assert p.intra == "pci"
    # PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 bits = 63.015 GB/s per direction,
    # times h100-pcie's pinned device-to-host efficiency 0.8779 (systems.yaml)
    assert p.nvlink_bw == pytest.approx(32e9 * 16 * 128 / 130 / 8 * 0.8779, rel=1e-12)


def test_a_ring_with_one_rank_per_node_uses_the_tree_s_net_latency():
    # tuning.cc: with one rank per node the ring's network steps take the tree's NET
    # latency. 2 ranks on 2 nodes: 2 network steps, no step inside a node.
    # latency 14.0 us + 2 x 8.5 us = 31 us; bandwidth min(1 x 50 GB/s x 0.94 (InfiniBand),
    # PCIe 55.32 GB/s) x LL128's share; all_reduce on 2 ranks moves 2(2-1)/2 = 1 buffer.
    # LL128's share: min(0.92, perChMaxRingLL128Bw / the channel's speed); one channel
    # of 48 GB/s doubled to two of 24 (ncclTopoDupChannels); a PCIe H100 (compute
    # capability 9.0) takes Hopper's cap, 36.7: 0.92 binds
    r = N.collective_times("all_reduce", [1e6], 2, _one_gpu_nodes(), algorithm="ring",
                           protocol="LL128")
    assert N.network_path(_one_gpu_nodes(), 2).arch == "hopper"
    share = 0.92
    assert r["estimate"][0] == pytest.approx(31e-6 + 1e6 / (47 * GB * share), rel=1e-9)


def test_collnet_chain_without_nvswitch():
    # dgx-1-v100 (hybrid cube mesh, no NVSwitch) x 2 with SHARP: CollNet Chain.
    # latency 2 (g - 1) x 2.8 us + 30.0 us with g = 8 = 69.2 us; bandwidth
    # min(NVLink / 2, network) = min(132.795 / 2, 4 x 12.5 x 0.94) GB/s = 47 GB/s
    c = N.scale_out("dgx-1-v100", 2, sharp=True)
    p = N.network_path(c, 16)
    assert (p.nvswitch, p.net_bw, p.nvlink_bw) == (False, 47 * GB,
                                                   pytest.approx(132.795 * GB, rel=1e-9))
    r = N.collective_times("all_reduce", [1e6], 16, c, algorithm="collnet")
    assert r["time"][0] == pytest.approx(69.2e-6 + 1e6 / (47 * GB), rel=1e-9)


def test_tree_correction_steps_at_1024_bytes():
    # dgx-h100-spod x 2, tree LL: busbw min(0.92 / max(1 / 376, 2 / 378) GB/s x 1/3.8,
    # 39 GB/s) = 39 GB/s; the latency is the same for every size, so it cancels
    c = N.scale_out("dgx-h100-spod", 2)
    t = N.collective_times("all_reduce", [512, 1000, 1023, 1024], 16, c, algorithm="tree",
                           protocol="LL")["estimate"]
    assert t[1] - t[0] == pytest.approx((1000 - 512) / (39 * GB), rel=1e-6)
    assert t[2] - t[0] == pytest.approx((1023 - 512) / (39 * GB), rel=1e-6)
    assert t[3] - t[0] == pytest.approx((1024 / 0.9 - 512) / (39 * GB), rel=1e-6)


def test_an_unknown_system_is_reported_as_the_system_reader_words_it():
    with pytest.raises(ValueError) as err:
        N.scale_out("no-such-node", 2)
    msg = str(err.value)
    assert msg.startswith("system must be a preset name (")
    assert msg.endswith("or a YAML file path; got 'no-such-node'")
    assert re.search(r"cluster preset", msg) is None
