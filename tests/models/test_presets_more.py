"""More hardware presets: Blackwell, 4-GPU NVLink mesh and PCIe-only servers
(systems.yaml), the cloud and SuperPOD cluster presets (network.yaml), GB200 racks
as the unit of scale_out, leaf-group sizes and scale_out's refusals.

The key numbers are written out from the documents each preset cites."""
from __future__ import annotations

import textwrap

import pytest

from gpulab import links, network as N, systems
from gpulab.network import data as netdata

ACCESSED = "2026-12-02"
NODE_PRESETS = ("hgx-b200", "hgx-a100-4gpu", "a100-pcie-x8", "l40s-x8", "rtx-4090-x8")
CLUSTERS = ("dgx-b200-spod", "gcp-a3-high", "gcp-a3-ultra", "gcp-a4", "aws-p4de",
            "aws-p5e", "aws-p5en")


# --- node presets -----------------------------------------------------------------------
@pytest.mark.parametrize("name", NODE_PRESETS)
def test_new_node_presets_load_with_source_and_date(name):
    s = systems.get(name)
    assert s.name == name and s.n_gpus == s.gpus_per_node
    assert s.source.strip() and s.accessed == ACCESSED
    assert s.host_copy.source.strip() and s.p2p.source.strip()
    assert s.gpu_spec.source.strip() and s.gpu_spec.kind in ("spec", "derived")


def test_hgx_b200_numbers_of_the_dgx_b200_user_guide():
    """DGX B200 user guide: 2 fifth-generation NVLink switches, 14.4 TB/s aggregate
    = 8 GPUs x 1.8 TB/s bidirectional = 900 GB/s per direction per GPU (18 links of
    50 GB/s); 8x single-port ConnectX-7 of 400 Gb/s = 50 GB/s per GPU."""
    s = systems.get("hgx-b200")
    nv = s.nvlink
    assert (nv.generation, nv.links_per_gpu, nv.fabric, nv.switch_chips, nv.nvls) == \
        (5, 18, "nvswitch", 2, True)
    per_gpu = links.nvlink_gpu_bandwidth(nv.generation, nv.links_per_gpu)
    assert per_gpu.gb_per_s == pytest.approx(900.0)
    assert 8 * per_gpu.to_bidirectional().gb_per_s == pytest.approx(14_400.0)
    assert (s.network.nic, s.network.nics_per_node) == ("ConnectX-7", 8)
    assert s.network.nic_rate.gb_per_s * 8 == pytest.approx(400.0)        # Gb/s
    assert s.network_bandwidth_per_gpu.gb_per_s == pytest.approx(50.0)
    assert (s.pcie.generation, s.pcie.lanes) == (5, 16)


def test_hgx_a100_4gpu_is_a_mesh_of_four_links_per_pair():
    """12 NVLink3 links per GPU over 3 peers: 4 per pair (nvidia-smi NV4), 4 x 25 =
    100 GB/s per direction between any two GPUs; no NVSwitch."""
    s = systems.get("hgx-a100-4gpu")
    assert (s.n_gpus, s.nvlink.fabric, s.nvlink.links_per_gpu) == (4, "mesh", 12)
    assert s.nvlink.switch_chips is None and not s.nvlink.nvls
    peers = systems.nvlink_peers(s)
    assert peers == {g: {p: 4 for p in range(4) if p != g} for g in range(4)}
    pair = links.nvlink_gpu_bandwidth(3, s.nvlink_links_to_peer)
    assert pair.gb_per_s == pytest.approx(100.0)
    assert s.pcie.generation == 4 and s.network is None


@pytest.mark.parametrize("name, gpu, variant, pcie_gen, via, p2p_ok", [
    ("a100-pcie-x8", "A100", "PCIe 80GB", 4, "pcie", True),
    ("l40s-x8", "L40S", "PCIe 48GB", 4, "pcie", True),
    ("rtx-4090-x8", "RTX 4090", "GeForce 24GB", 4, "host", False),
])
def test_pcie_only_servers(name, gpu, variant, pcie_gen, via, p2p_ok):
    s = systems.get(name)
    assert (s.gpu, s.gpu_variant, s.gpu_spec.variant) == (gpu, variant, variant)
    assert s.nvlink.fabric == "none" and s.nvlink_links_to_peer == 0
    assert s.nvlink_domain == 1 and s.n_gpus == 8
    assert (s.pcie.generation, s.pcie.lanes, s.pcie.p2p) == (pcie_gen, 16, p2p_ok)
    assert s.p2p.via == via


@pytest.mark.parametrize("name, variant, tflops, mem_gb, bw_gb_per_s, pcie_gen", [
    # datasheet tables, written out: dense FP16/BF16 Tensor TFLOPS, memory, bandwidth
    ("A100", "PCIe 80GB", 312, 80, 1935, 4),                 # A100 datasheet
    ("L40S", "PCIe 48GB", 362.05, 48, 864, 4),               # L40S datasheet
    ("RTX 4090", "GeForce 24GB", 165.2, 24, 1008, 4),        # Ada whitepaper, FP32 acc.
])
def test_gpu_rows(name, variant, tflops, mem_gb, bw_gb_per_s, pcie_gen):
    from gpulab import specs
    g = specs.gpu(name, variant)
    assert g.fp16_dense_flops == pytest.approx(tflops * 1e12)
    assert g.memory_bytes == pytest.approx(mem_gb * 1e9)
    assert g.memory_bandwidth == pytest.approx(bw_gb_per_s * 1e9)
    assert g.pcie_generation == pcie_gen and g.accessed == ACCESSED
    assert (g.nvlink_links == 0) is (name != "A100")


# --- the pcie.p2p field -----------------------------------------------------------------
_BOX = textwrap.dedent("""\
    systems:
      box:
        description: "two test cards"
        gpu: H100
        n_gpus: 2
        gpus_per_node: 2
        nvlink: {generation: null, links_per_gpu: 0, fabric: none}
        pcie: {generation: 4, lanes: 16, max_payload_bytes: 256%s}
        host_copy:
          source: "made up for a test"
          pinned:
            h2d: {latency_s: 5.0e-6, efficiency: 0.85}
            d2h: {latency_s: 5.0e-6, efficiency: 0.86}
          pageable:
            h2d: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 25.0}
            d2h: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 20.0}
        p2p: {via: %s, latency_s: 1.0e-5, efficiency: 0.5, source: "made up"}
        source: "a test"
        accessed: "2026-12-02"
    """)


def test_pcie_p2p_defaults_to_true_and_reads_false():
    assert systems.parse(_BOX % ("", "pcie"))["box"].pcie.p2p is True
    assert systems.parse(_BOX % (", p2p: false", "host"))["box"].pcie.p2p is False


@pytest.mark.parametrize("extra, via, needle", [
    (", p2p: false", "pcie", "p2p.via: is 'pcie' but pcie.p2p is false"),
    (", p2p: 'no'", "host", "pcie.p2p: must be true or false"),
    (", p2p: 1", "host", "pcie.p2p: must be true or false"),
])
def test_pcie_p2p_bad_input(extra, via, needle):
    with pytest.raises(ValueError) as info:
        systems.parse(_BOX % (extra, via))
    assert needle in str(info.value) and "line " in str(info.value)


# --- cluster presets ----------------------------------------------------------------------
@pytest.mark.parametrize("name, node, count, gbit, fabric, fixed", [
    ("dgx-b200-spod", "hgx-b200", 8, 400, "infiniband", False),   # SuperPOD B200 RA
    ("gcp-a3-high", "dgx-h100", 4, 200, "tcpx", True),            # 1,000 Gbps w/ host
    ("gcp-a3-ultra", "hgx-h200", 8, 400, "roce", True),           # 8 CX-7, 3,200 Gbps
    ("gcp-a4", "hgx-b200", 8, 400, "roce", True),                 # 8 CX-7, 3,200 Gbps
    ("aws-p4de", "dgx-a100", 4, 100, "efa", True),                # 400 Gbps EFA
    ("aws-p5e", "hgx-h200", 32, 100, "efa", True),                # 3,200 Gbps EFA
    ("aws-p5en", "hgx-h200", 16, 200, "efa", True),               # 3,200 Gbps EFAv3
])
def test_cluster_presets_match_their_documents(name, node, count, gbit, fabric, fixed):
    rec = N.cluster_preset(name)
    assert rec["node"] == node and rec["source"].strip()
    assert str(rec["accessed"]) == ACCESSED
    assert bool(rec.get("fabric_fixed", False)) is fixed
    c = N.scale_out(name, 2)
    assert (c.network.nics_per_node, c.network.fabric) == (count, fabric)
    assert c.network.nic_rate.gb_per_s == pytest.approx(gbit / 8)
    assert c.n_gpus == 16 and c.name == f"{name} x2 nodes"


def test_every_cluster_preset_fits_its_nodes_pcie():
    for name in N.CLUSTER_PRESETS:
        rec = N.cluster_preset(name)
        N.scale_out(name, 2, nics=rec["nics"])          # refuses if over the limit


# --- GB200 racks ----------------------------------------------------------------------------
def test_gb200_scale_out_counts_racks():
    """A GB200 NVL72 rack is one NVLink domain of 72 GPUs in 18 trays of 4 with one
    400G NIC per GPU: k racks = 72 k GPUs, 72 NICs per rack on the network."""
    two = N.scale_out("gb200-nvl72", 2)
    assert (two.name, two.n_gpus, two.nvlink_domain, two.gpus_per_node) == \
        ("gb200-nvl72 x2 racks", 144, 72, 4)
    p = N.network_path(two, 144)
    assert (p.nodes, p.nics) == (2, 72.0)
    assert N.scale_out("gb200-nvl72", 1).n_gpus == 72
    # nics given per rack, spread over its 18 trays
    per_rack = N.scale_out("gb200-nvl72", 3, nics="72x400G")
    assert per_rack.network.nics_per_node == 4 and per_rack.n_gpus == 216
    assert N.network_path(per_rack, 216).nics == 72.0


def test_nodes_of_an_ordinary_node_are_nodes():
    c = N.scale_out("hgx-b200", 2)
    assert (c.name, c.n_gpus, c.nvlink_domain) == ("hgx-b200 x2 nodes", 16, 8)


# --- leaf groups ----------------------------------------------------------------------------
def test_leaf_sizes():
    """DGX A100 SuperPOD: scalable unit of 20 nodes; a fat-tree leaf of a 64-port
    switch, half down: 32 ports // NICs per node (8 NICs: 4; AWS p5's 32: 1)."""
    assert N.scale_out("dgx-a100-spod", 2).network.leaf_nodes == 20
    assert N.scale_out("dgx-h100-spod", 2).network.leaf_nodes == 32
    assert N.scale_out("dgx-b200-spod", 2).network.leaf_nodes == 32
    assert N.scale_out("gcp-a3-mega", 2).network.leaf_nodes == 4
    assert N.scale_out("aws-p5", 2).network.leaf_nodes == 1
    assert N.scale_out("aws-p4de", 2).network.leaf_nodes == 8          # 32 // 4
    assert N.scale_out("aws-p5en", 2).network.leaf_nodes == 2          # 32 // 16
    assert netdata.leaf_nodes("fat_tree", 8) == 4 == N.topology("fat_tree")["leaf_nodes"]
    assert N.record("topologies/fat_tree/leaf_ports")["value"] == 32
    # rail-optimised groups do not depend on the NIC count; the preset's stays
    assert N.scale_out("dgx-a100-spod", 2, nics="4x200G").network.leaf_nodes == 20
    # beyond the leaf: 3 hops; AWS p5 crosses the spine from 2 nodes
    assert N.network_path(N.scale_out("aws-p5", 2), 16).hops == 3
    assert N.network_path(N.scale_out("dgx-a100-spod", 20), 160).hops == 1
    assert N.network_path(N.scale_out("dgx-a100-spod", 21), 168).hops == 3


@pytest.mark.parametrize("bad", [0, True, "x", None])
def test_leaf_nodes_bad_nics(bad):
    with pytest.raises(ValueError, match="nics_per_node must be a number > 0"):
        netdata.leaf_nodes("fat_tree", bad)


# --- refusals --------------------------------------------------------------------------------
def test_nics_beyond_the_pcie_links_are_refused():
    """8 GPUs x PCIe Gen5 x16 (32 GT/s x 16 x 128/130 = 504 Gb/s per direction) =
    4032 Gb/s; 64 x 400G = 25600 Gb/s is refused, naming the parameter and limit."""
    with pytest.raises(ValueError) as info:
        N.scale_out("hgx-b200", 2, nics="64x400G")
    msg = str(info.value)
    assert msg.startswith("nics '64x400G' is 25600 Gb/s per node")
    assert "8 x 504 Gb/s = 4032 Gb/s" in msg and "at most 4032 Gb/s" in msg
    N.scale_out("hgx-b200", 2, nics="8x400G")           # 3200 Gb/s: fine
    with pytest.raises(ValueError, match="per NVLink domain"):
        N.scale_out("gb200-nvl72", 2, nics="72x800G")  # 57600 > 72 x 504


def test_fixed_cloud_fabric_is_refused():
    with pytest.raises(ValueError) as info:
        N.scale_out("aws-p5", 2, fabric="tcpx")
    assert "aws-p5's network is EFA" in str(info.value)
    assert "fabric cannot be 'tcpx'" in str(info.value)
    assert str(info.value).startswith("fabric")
    with pytest.raises(ValueError, match="gcp-a4's network is RoCE"):
        N.scale_out("gcp-a4", 2, fabric="ib")
    # the provider's own fabric (or an alias of it) is accepted
    assert N.scale_out("aws-p5", 2, fabric="efa").network.fabric == "efa"
    assert N.scale_out("azure-nd-h100-v5", 2, fabric="ib").network.fabric == "infiniband"
    # an on-premises preset's fabric may change
    assert N.scale_out("dgx-b200-spod", 2, fabric="roce").network.fabric == "roce"


@pytest.mark.parametrize("key, value, needle", [
    ("leaf_nodes", 0, "leaf_nodes: must be an integer in [1, 1000000]"),
    ("leaf_nodes", True, "leaf_nodes: must be an integer"),
    ("fabric_fixed", "yes", "fabric_fixed: must be true or false"),
    ("oversubscription", 0.5, "oversubscription: must be a number in [1, 1000]"),
    ("nics", "8 NICs", "nics must be COUNTxRATE"),
    ("colour", "blue", "unknown key 'colour'"),
    ("fabric_efficiency", 0.75, "fabric_efficiency: must be a mapping"),
    ("fabric_efficiency", {"value": 1.2, "kind": "spec", "source": "x"},
     "fabric_efficiency: must be a mapping"),
    ("fabric_efficiency", {"value": 0.7, "kind": "guess", "source": "x"},
     "fabric_efficiency: must be a mapping"),
    ("fabric_efficiency", {"value": 0.7, "kind": "spec"},
     "fabric_efficiency: must be a mapping"),
    ("host_cpu", "amd", "host_cpu: must be a mapping of vendor"),
    ("host_cpu", {"vendor": "via", "source": "x"}, "host_cpu: must be a mapping of vendor"),
    ("host_cpu", {"vendor": "amd"}, "host_cpu: must be a mapping of vendor"),
    ("host_cpu", {"vendor": "amd", "source": " "}, "host_cpu: must be a mapping of vendor"),
])
def test_cluster_record_validation(key, value, needle):
    rec = dict(N.cluster_preset("aws-p5"), **{key: value})
    with pytest.raises(ValueError) as info:
        netdata._check_cluster("x", rec)
    assert needle in str(info.value) and "clusters.x" in str(info.value)


def test_cluster_record_missing_key():
    rec = N.cluster_preset("aws-p5")
    del rec["node"]
    with pytest.raises(ValueError, match="missing key 'node'"):
        netdata._check_cluster("x", rec)


def test_without_pcie_p2p_nccl_goes_through_host_memory():
    """8x RTX 4090 (no NVLink, the driver refuses P2P): NCCL's SHM transport, the
    same as asking for it; 8x L40S keeps P2P over PCIe and is faster."""
    from gpulab import collectives as C
    s = [8.0, 2.0**30]
    p2p = C.predict("all_reduce", s, 8, "rtx-4090-x8")
    shm = C.predict("all_reduce", s, 8, "rtx-4090-x8", transport="shm")
    assert (p2p.time == shm.time).all()
    l40s = C.predict("all_reduce", s, 8, "l40s-x8")
    assert l40s.busbw[1] > p2p.busbw[1]


def test_a3_high_gets_the_per_nic_rate_google_states():
    """A3 High's GPUDirect-TCPX: Google states about 150 of each NIC's 200 Gb/s, so
    the preset's network carries that share and a node gets 4 x 25 GB/s x 0.75; A3
    Mega's TCPXO keeps the tcpx fabric's own (assumed) share, and a preset without
    the field has none."""
    rec = N.cluster_preset("gcp-a3-high")["fabric_efficiency"]
    assert rec["kind"] == "spec" and "150 Gbps" in rec["source"]
    assert rec["value"] == pytest.approx(150 / 200)
    high = N.scale_out("gcp-a3-high", 2)
    assert high.network.efficiency == pytest.approx(0.75)
    assert N.network_path(high, 16).net_bw == pytest.approx(4 * 25e9 * 0.75)
    mega = N.scale_out("gcp-a3-mega", 2)
    assert mega.network.efficiency is None
    assert N.network_path(mega, 16).net_bw == pytest.approx(
        8 * 25e9 * N.fabric("tcpx").efficiency)
    assert all(N.scale_out(c, 2).network.efficiency is None
               for c in N.CLUSTER_PRESETS if c != "gcp-a3-high")


def test_nccl_post_overhead_follows_the_host_cpu():
    """NCCL charges each step of a ring across nodes at least its network post
    overhead, 2 us on AMD x86 hosts and 1 us otherwise (tuning.cc getNetOverhead).
    DGX A100 (dual AMD Rome) and p5 (AMD in AWS's topology file) are AMD; p4de
    (Intel) overrides its DGX A100 node; a preset that names no CPU gets NCCL's
    default. A forced LL ring all_reduce on 2x8 GPUs then differs by exactly the
    26 steps inside the nodes (of 30) x (2.0 - 1.1) us: our measured LL hop (1.1 us)
    is above the 1 us floor, below the 2 us one."""
    import dataclasses
    from gpulab.network import collective_times
    assert [N.scale_out(c, 2).network.host_cpu
            for c in ("dgx-a100-spod", "aws-p5", "aws-p4de", "gcp-a3-ultra")] == \
        ["amd", "amd", "intel", "unknown"]
    assert N.network_path(N.scale_out("aws-p5", 2), 16).net_overhead_s == 2e-6
    assert N.network_path(N.scale_out("aws-p4de", 2), 16).net_overhead_s == 1e-6
    amd = N.scale_out("dgx-a100-spod", 2)
    intel = dataclasses.replace(amd, network=dataclasses.replace(amd.network,
                                                                 host_cpu="intel"))
    t = [float(collective_times("all_reduce", [8.0], 16, c, algorithm="ring")["time"][0])
         for c in (amd, intel)]
    assert t[0] - t[1] == pytest.approx(26 * (2.0e-6 - 1.1e-6), rel=1e-6)
    e = [float(collective_times("all_reduce", [8.0], 16, c, algorithm="ring")["estimate"][0])
         for c in (amd, intel)]
    assert e[0] - e[1] == pytest.approx(28 * 1.0e-6, rel=1e-6)   # NCCL: nsteps - 2 inter


def test_a_system_file_refuses_an_unknown_host_cpu():
    from gpulab import systems
    text = open(systems.loader.__file__.replace("systems/loader.py", "data/systems.yaml")).read()
    bad = text.replace("fabric: infiniband, host_cpu: amd}", "fabric: infiniband, host_cpu: via}", 1)
    assert bad != text
    with pytest.raises(ValueError, match="host_cpu"):
        systems.parse(bad)
