"""Server topology model: path classes, bandwidths, contention, P2P and NCCL verdicts.

Oracles are derived from the spec data (PCIe GT/s x lanes x encoding / 8; NVLink
links x per-link rate) and from the nvidia-smi legend, never from the code.
"""
from __future__ import annotations

import itertools
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import yaml  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

import strategies  # noqa: E402,F401  (loads the "ci" hypothesis profile)
from gpulab import plotting as P  # noqa: E402
from gpulab import specs, topology as T, units  # noqa: E402
from gpulab.topology import paths as topo_paths  # noqa: E402

GB = 1e9


def pcie_oracle(gen, lanes):
    """Per-direction PCIe rate from the spec table: GT/s x lanes x enc / 8."""
    g = specs.pcie(gen)
    return g.transfer_rate_gt_per_s * 1e9 * lanes * g.encoding_efficiency / 8


def nvlink_link_oracle(gen):
    """One NVLink link per direction: baud x bits x lanes x coding / 8."""
    g = specs.nvlink(gen)
    return g.symbol_rate * g.bits_per_symbol * g.lanes_per_direction \
        * g.coding_efficiency / 8


def classes(topo):
    return {(a, b): T.path_class(topo, a, b)
            for a, b in itertools.permutations(topo.devices, 2)}


# --- structure ------------------------------------------------------------------------
def test_builders_structure():
    a = T.layout_a()
    assert a.cpus == ["cpu0", "cpu1"] and a.switches == ["sw0", "sw1"]
    assert a.gpus == [f"gpu{i}" for i in range(8)] and a.nics == ["nic0", "nic1"]
    assert a.nvswitches == [] and a.devices == a.gpus + a.nics
    assert set(a.graph.neighbors("sw0")) == {"cpu0", "gpu0", "gpu1", "gpu2", "gpu3",
                                             "nic0"}
    b = T.layout_b()
    assert len(b.cpus) == 1 and len(b.switches) == 5
    assert set(b.graph.neighbors("sw4")) == {"cpu0", "sw0", "sw1", "sw2", "sw3"}
    n = T.nvswitch_node()
    assert len(n.nvswitches) == 4 and len(n.nics) == 8 and len(n.switches) == 4
    for g in n.gpus:
        assert [n.graph.edges[g, s]["links"] for s in n.nvswitches] == [5, 4, 4, 5]
        assert sum(n.graph.edges[g, s]["links"] for s in n.nvswitches) \
            == specs.gpu("H100").nvlink_links
    box = T.pcie_box()
    assert not any(d["kind"] in ("nvlink", "nvswitch")
                   for _, _, d in box.graph.edges(data=True))
    for t in (a, b, n, box):
        assert nx.is_connected(t.graph)
        for _, _, d in t.graph.edges(data=True):
            assert d["kind"] in T.EDGE_KINDS
            assert d["bandwidth"].direction == "per_direction"
        for _, d in t.graph.nodes(data=True):
            assert d["kind"] in T.NODE_KINDS
        assert "Topology(" in repr(t)


def test_topology_refuses_non_graphs():
    with pytest.raises(ValueError, match="graph"):
        T.Topology({"a": 1})
    with pytest.raises(ValueError, match="graph"):
        T.Topology(nx.DiGraph())


@pytest.mark.parametrize("n, per, cpus", [(1, 1, 1), (3, 2, 1), (8, 2, 2), (16, 4, 2),
                                          (12, 4, 3), (5, 8, 2)])
def test_pcie_box_sizes(n, per, cpus):
    t = T.pcie_box(n, gpus_per_switch=per, n_cpus=cpus)
    assert len(t.gpus) == n
    assert len(t.switches) == -(-n // per)
    assert len(t.cpus) == cpus


# --- path classes ---------------------------------------------------------------------
def test_layout_a_classes():
    t = T.layout_a()
    c = classes(t)
    assert c[("gpu0", "gpu1")] == "PIX"                   # brief oracle
    assert c[("gpu0", "gpu4")] == "SYS"                   # brief oracle
    for a, b in itertools.permutations(t.devices, 2):
        same = (int(t.graph.nodes[a]["index"]) < (4 if a.startswith("gpu") else 1)) \
            == (int(t.graph.nodes[b]["index"]) < (4 if b.startswith("gpu") else 1))
        assert c[(a, b)] == ("PIX" if same else "SYS"), (a, b)


def test_layout_b_classes():
    # cascaded: leaf switches below one upstream switch, whose uplink all share.
    # GPUs under different leaf switches cross two or more bridges but not the
    # host bridge: PXB by the nvidia-smi legend.
    t = T.layout_b()
    for i, j in itertools.permutations(range(8), 2):
        want = "PIX" if i // 2 == j // 2 else "PXB"
        assert T.path_class(t, f"gpu{i}", f"gpu{j}") == want
    t2 = T.layout_b(cascaded=False)           # each switch on a root port: PHB
    assert T.path_class(t2, "gpu0", "gpu2") == "PHB"
    assert T.path_class(t2, "gpu6", "gpu7") == "PIX"


def test_nvswitch_node_classes():
    t = T.nvswitch_node()
    for a, b in itertools.permutations(t.gpus, 2):
        assert T.path_class(t, a, b) == "NV18"
    nic = {(g, n): T.path_class(t, g, n) for g in t.gpus for n in t.nics}
    assert nic[("gpu0", "nic0")] == nic[("gpu1", "nic1")] == "PIX"
    assert nic[("gpu0", "nic2")] == "NODE"               # other switch, same socket
    assert nic[("gpu0", "nic4")] == nic[("gpu7", "nic0")] == "SYS"
    assert T.path_class(T.nvswitch_node("A100"), "gpu0", "gpu1") == "NV12"
    assert T.path_class(T.nvswitch_node("B200"), "gpu3", "gpu6") == "NV18"


def test_pcie_box_classes():
    t = T.pcie_box()
    assert [T.path_class(t, "gpu0", f"gpu{i}") for i in range(8)] == \
        ["X", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]


def test_classes_are_symmetric_and_self_is_x():
    for t in (T.layout_a(), T.layout_b(), T.nvswitch_node(), T.pcie_box()):
        c = classes(t)
        for (a, b), v in c.items():
            assert c[(b, a)] == v
        assert all(T.path_class(t, d, d) == "X" for d in t.devices)


def test_path_prefers_nvlink_and_follows_the_tree():
    n = T.nvswitch_node()
    p = T.path(n, "gpu0", "gpu4")
    assert len(p) == 3 and p[1] in n.nvswitches            # one NVSwitch hop
    assert T.path(n, "gpu0", "nic4") == ["gpu0", "sw0", "cpu0", "cpu1", "sw2", "nic4"]
    assert T.path(T.layout_b(), "gpu0", "gpu2") == ["gpu0", "sw0", "sw4", "sw1", "gpu2"]
    assert T.path(T.layout_a(), "gpu3", "gpu3") == ["gpu3"]
    assert T.path(T.layout_a(), "gpu0", "cpu0") == ["gpu0", "sw0", "cpu0"]


# --- bandwidth ------------------------------------------------------------------------
@pytest.mark.parametrize("gen, lanes", [(5, 16), (4, 16), (4, 8), (3, 16), (6, 16),
                                        (1, 1)])
def test_pcie_edges_are_spec_derived(gen, lanes):
    t = T.layout_a(pcie_generation=gen, lanes=lanes)
    for _, _, d in t.graph.edges(data=True):
        if d["kind"] == "pcie":
            assert d["bandwidth"].bytes_per_s == pytest.approx(pcie_oracle(gen, lanes),
                                                               rel=1e-12)
    bw = T.bottleneck_bandwidth(t, "gpu0", "gpu1")
    assert bw.direction == "per_direction"
    assert bw.bytes_per_s == pytest.approx(pcie_oracle(gen, lanes), rel=1e-12)


def test_gen5_x16_oracle():
    # issue 3: Gen5 x16 = 32 GT/s x 16 x 128/130 / 8 per direction
    bw = T.bottleneck_bandwidth(T.layout_a(), "gpu0", "gpu1")
    assert bw.bytes_per_s == pytest.approx(32e9 * 16 * 128 / 130 / 8, rel=1e-12)


@pytest.mark.parametrize("gpu", ["A100", "H100", "H200", "B200"])
def test_nvswitch_bandwidth_is_links_times_per_link(gpu):
    t = T.nvswitch_node(gpu)
    g = specs.gpu(gpu)
    want = g.nvlink_links * nvlink_link_oracle(g.nvlink_generation)
    for a, b in [("gpu0", "gpu1"), ("gpu2", "gpu7")]:
        assert T.bottleneck_bandwidth(t, a, b).bytes_per_s == pytest.approx(want,
                                                                            rel=1e-12)
    assert T.bottleneck_bandwidth(T.nvswitch_node("H100"), "gpu0", "gpu1").gb_per_s \
        == pytest.approx(450.0)


def test_cross_socket_bottleneck_is_the_smaller_link():
    fast = T.layout_a()                         # UPI 2.0: 4 x 32 GB/s > PCIe
    assert T.bottleneck_bandwidth(fast, "gpu0", "gpu4").bytes_per_s == \
        pytest.approx(pcie_oracle(5, 16))
    link = T.cpu_link("UPI 1.0")               # 3 x 20.8 = 62.4 GB/s < PCIe Gen5 x16
    assert link.bandwidth.bytes_per_s == pytest.approx(3 * 10.4e9 * 16 / 8)
    slow = T.layout_a(cpu_link="UPI 1.0")
    assert T.bottleneck_bandwidth(slow, "gpu0", "gpu4").bytes_per_s == \
        pytest.approx(link.bandwidth.bytes_per_s)
    assert T.bottleneck_bandwidth(slow, "gpu0", "gpu1").bytes_per_s == \
        pytest.approx(pcie_oracle(5, 16))


def test_cpu_links_data():
    recs = T.cpu_links()
    assert {r.name for r in recs} >= {"UPI 1.0", "UPI 2.0", "xGMI (EPYC 9004)"}
    for r in recs:
        assert r.source and r.accessed
        assert r.link_bandwidth.bytes_per_s == pytest.approx(
            r.transfer_rate_gt_per_s * 1e9 * r.data_bits_per_transfer / 8)
    assert T.cpu_link().link_bandwidth.gb_per_s == pytest.approx(32.0)
    assert T.cpu_link("xGMI (EPYC 9004)").link_bandwidth.gb_per_s == pytest.approx(64.0)


# --- contention -----------------------------------------------------------------------
@given(st.integers(min_value=1, max_value=8))
def test_k_transfers_on_one_uplink_get_one_kth(k):
    t = T.layout_b()                 # all 8 GPUs share the sw4 -> cpu0 uplink
    rates = T.concurrent_bandwidth(t, [(f"gpu{i}", "cpu0") for i in range(k)])
    for r in rates:
        assert r.bytes_per_s == pytest.approx(pcie_oracle(5, 16) / k, rel=1e-9)


def test_layout_a_four_gpus_to_host_share_the_switch_uplink():
    t = T.layout_a()
    four = T.concurrent_bandwidth(t, [(f"gpu{i}", "cpu0") for i in range(4)])
    quarter = pcie_oracle(5, 16) / 4 / GB
    assert [r.gb_per_s for r in four] == pytest.approx([quarter] * 4)
    # the other socket's GPUs use their own uplink: no sharing
    mixed = T.concurrent_bandwidth(t, [("gpu0", "cpu0"), ("gpu4", "cpu1")])
    assert [r.bytes_per_s for r in mixed] == pytest.approx([pcie_oracle(5, 16)] * 2)


def test_directions_do_not_share():
    t = T.layout_b()
    r = T.concurrent_bandwidth(t, [("gpu0", "cpu0"), ("cpu0", "gpu2")])
    assert [x.bytes_per_s for x in r] == pytest.approx([pcie_oracle(5, 16)] * 2)


def test_max_min_is_not_equal_share():
    # x -10-> s -10-> z and y -2-> s: y->z is held at 2 by its own link, and x->z
    # takes what is left of s->z (8), not an equal 5/5 split.
    g = nx.Graph()
    for n, k in [("x", "gpu"), ("y", "gpu"), ("s", "switch"), ("z", "cpu")]:
        g.add_node(n, kind=k, index=0, label=n, latency=0.0)
    for u, v, c in [("x", "s", 10e9), ("y", "s", 2e9), ("s", "z", 10e9)]:
        g.add_edge(u, v, kind="pcie", bandwidth=units.Bandwidth(c, "per_direction"))
    t = T.Topology(g, "toy")
    r = T.concurrent_bandwidth(t, [("x", "z"), ("y", "z")])
    assert [x.bytes_per_s for x in r] == pytest.approx([8e9, 2e9])
    assert T.concurrent_bandwidth(t, []) == []


def test_nvswitch_contention():
    t = T.nvswitch_node()
    per_gpu = 18 * nvlink_link_oracle(4)
    # one GPU sending to two peers at once splits its 18 links
    r = T.concurrent_bandwidth(t, [("gpu0", "gpu1"), ("gpu0", "gpu2")])
    assert [x.bytes_per_s for x in r] == pytest.approx([per_gpu / 2] * 2)
    # disjoint pairs do not interfere (non-blocking switches)
    r = T.concurrent_bandwidth(t, [(f"gpu{i}", f"gpu{i + 4}") for i in range(4)])
    assert [x.bytes_per_s for x in r] == pytest.approx([per_gpu] * 4)


_NODES = T.nvswitch_node()
_ALL = sorted(_NODES.graph.nodes)


@given(st.lists(st.tuples(st.sampled_from(_ALL), st.sampled_from(_ALL))
                .filter(lambda p: p[0] != p[1]), min_size=1, max_size=8))
def test_max_min_properties(transfers):
    t = _NODES
    rates = [r.bytes_per_s for r in T.concurrent_bandwidth(t, transfers)]
    load = {}
    for (a, b), r in zip(transfers, rates):
        assert 0 < r <= T.bottleneck_bandwidth(t, a, b).bytes_per_s * (1 + 1e-9)
        for nodes, w in topo_paths._routes(t, a, b):
            for e in zip(nodes, nodes[1:]):
                load[e] = load.get(e, 0.0) + r * w
    cap = {e: t.graph.edges[e]["bandwidth"].bytes_per_s for e in load}
    for e in load:
        assert load[e] <= cap[e] * (1 + 1e-9)            # feasible
    for (a, b), r in zip(transfers, rates):              # each flow is blocked
        used = {e for nodes, _ in topo_paths._routes(t, a, b) for e in zip(nodes, nodes[1:])}
        assert any(load[e] >= cap[e] * (1 - 1e-9) for e in used)


# --- latency --------------------------------------------------------------------------
def test_path_latency_sums_documented_hops():
    sw, rc, smp, nvs = (T.assumption(k) for k in (
        "pcie_switch_latency_s", "root_complex_latency_s", "smp_link_latency_s",
        "nvswitch_latency_s"))
    assert 100e-9 <= sw <= 150e-9
    a = T.layout_a()
    assert T.path_latency(a, "gpu0", "gpu1") == pytest.approx(sw)
    assert T.path_latency(a, "gpu0", "gpu4") == pytest.approx(2 * sw + 2 * rc + smp)
    assert T.path_latency(a, "gpu0", "gpu0") == 0.0
    assert T.path_latency(T.layout_b(), "gpu0", "gpu2") == pytest.approx(3 * sw)
    assert T.path_latency(T.nvswitch_node(), "gpu0", "gpu1") == pytest.approx(nvs)
    assert T.path_latency(T.pcie_box(), "gpu0", "gpu2") == pytest.approx(2 * sw + rc)


def test_assumptions_have_sources():
    raw = yaml.safe_load(specs.read_data_text(specs.ASSUMPTION_TABLES["topology"]))
    for name, rec in raw.items():
        assert {"value", "meaning", "source", "accessed"} <= set(rec), name
    assert T.assumption("nvswitch_planes")[4] == [5, 4, 4, 5]     # source-facts #50
    assert sum(T.assumption("nvswitch_planes")[3]) == specs.gpu("A100").nvlink_links
    planes = T.assumption("nvswitch_planes")
    planes[4].append(99)                                        # a copy
    assert T.assumption("nvswitch_planes")[4] == [5, 4, 4, 5]


# --- P2P and NCCL ---------------------------------------------------------------------
A, B, N, BOX = T.layout_a(), T.layout_b(), T.nvswitch_node(), T.pcie_box()
P2P_TABLE = [
    # topo, a, b, acs, iommu, expected
    (A, "gpu0", "gpu1", False, "off", True),             # PIX, clean
    (A, "gpu0", "gpu1", False, "passthrough", True),
    (A, "gpu0", "gpu1", True, "off", False),             # ACS redirect -> RC
    (A, "gpu0", "gpu1", False, "on", False),             # IOMMU translation -> RC
    (A, "gpu0", "nic0", False, "off", True),             # GPUDirect RDMA under a switch
    (A, "gpu0", "gpu4", False, "off", False),            # SYS
    (B, "gpu0", "gpu2", False, "off", True),             # PXB
    (B, "gpu0", "gpu2", True, "off", False),
    (BOX, "gpu0", "gpu2", False, "off", True),           # NODE, through the RC
    (BOX, "gpu0", "gpu2", True, "off", True),            # ACS does not change RC path
    (BOX, "gpu0", "gpu2", False, "on", False),
    (N, "gpu0", "gpu7", True, "on", True),               # NVLink: ACS/IOMMU n/a
]


@pytest.mark.parametrize("topo, a, b, acs, iommu, expected", P2P_TABLE)
def test_p2p_verdicts(topo, a, b, acs, iommu, expected):
    ok, why = T.p2p_possible(topo, a, b, acs_enabled=acs, iommu=iommu)
    assert ok is expected
    assert why.startswith(T.path_class(topo, a, b))
    if acs and not ok:
        assert "ACS" in why and "disable" in why.lower()
    if iommu == "on" and not ok:
        assert "IOMMU" in why


NCCL_TABLE = [
    (A, "gpu0", "gpu1", {}, "P2P/PCIe"),
    (A, "gpu0", "gpu4", {}, "SHM"),                        # SYS > PXB
    (A, "gpu0", "gpu4", {"p2p_level": "SYS"}, "SHM"),      # no peer access
    (B, "gpu0", "gpu2", {}, "P2P/PCIe"),                   # PXB == default
    (B, "gpu0", "gpu2", {"p2p_level": "PIX"}, "SHM"),
    (T.layout_b(cascaded=False), "gpu0", "gpu2", {}, "SHM"),          # PHB > PXB
    (T.layout_b(cascaded=False), "gpu0", "gpu2", {"p2p_level": "PHB"}, "P2P/PCIe"),
    (BOX, "gpu0", "gpu2", {}, "SHM"),                      # NODE counts as PHB
    (BOX, "gpu0", "gpu2", {"p2p_level": "PHB"}, "P2P/PCIe"),
    (A, "gpu0", "gpu1", {"acs_enabled": True}, "P2P/PCIe"),  # NCCL cannot see ACS
    (A, "gpu0", "gpu1", {"p2p_level": "LOC"}, "SHM"),
    (N, "gpu0", "gpu5", {}, "P2P/NVLink"),
    (N, "gpu0", "gpu5", {"p2p_level": "PIX"}, "P2P/NVLink"),
    (N, "gpu0", "gpu5", {"p2p_level": "LOC"}, "SHM"),
]


@pytest.mark.parametrize("topo, a, b, kw, expected", NCCL_TABLE)
def test_nccl_transport(topo, a, b, kw, expected):
    transport, why = T.nccl_transport(topo, a, b, **kw)
    assert transport == expected
    assert why
    if kw.get("acs_enabled"):
        assert "ACS" in why


def test_p2p_levels_are_ordered_like_nccl():
    assert T.P2P_LEVELS == ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")


# --- render / parse round trip --------------------------------------------------------
BUILDERS = {
    "layout_a": T.layout_a, "layout_b": T.layout_b,
    "layout_b_flat": lambda: T.layout_b(cascaded=False),
    "nvswitch_h100": T.nvswitch_node, "nvswitch_a100": lambda: T.nvswitch_node("A100"),
    "pcie_box": T.pcie_box, "pcie_box_3s": lambda: T.pcie_box(12, n_cpus=3),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_render_parse_round_trip(name):
    t = BUILDERS[name]()
    text = T.render_topo_matrix(t)
    back = T.parse_topo_matrix(text)
    assert back.devices == t.devices
    assert classes(back) == classes(t)
    gen = 3 if name == "nvswitch_a100" else 4
    back = T.read_topo_matrix(text).to_topology(nvlink_generation=gen)
    for a, b in itertools.combinations(t.gpus, 2):
        assert T.bottleneck_bandwidth(back, a, b).bytes_per_s == pytest.approx(
            T.bottleneck_bandwidth(t, a, b).bytes_per_s)
    assert T.render_topo_matrix(back) == text


@given(st.integers(1, 16), st.integers(1, 8), st.integers(1, 4))
def test_round_trip_pcie_boxes(n, per, cpus):
    t = T.pcie_box(n, gpus_per_switch=per, n_cpus=cpus)
    assert classes(T.parse_topo_matrix(T.render_topo_matrix(t))) == classes(t)


def test_render_format():
    text = T.render_topo_matrix(T.layout_a())
    lines = text.splitlines()
    assert lines[0].split("\t")[1:] == [f"GPU{i}" for i in range(8)] + [
        "NIC0", "NIC1", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert lines[1].split("\t")[:4] == ["GPU0", " X ", "PIX", "PIX"]
    assert lines[5].split("\t")[-3:] == ["1", "", "N/A"]        # GPU4 on socket 1
    assert "Legend:" in lines and "NIC Legend:" in lines
    assert "  NIC1: mlx5_1" in lines


# --- plotting -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_plot_topology_one_line_per_edge(name):
    t = BUILDERS[name]()
    ax = P.plot_topology(t)
    assert isinstance(ax, Axes)
    assert len(ax.lines) == t.graph.number_of_edges()
    gids = {ln.get_gid() for ln in ax.lines}
    assert gids == {f"{a}-{b}" for a, b in t.graph.edges}
    colors = {ln.get_gid(): ln.get_color() for ln in ax.lines}
    kind_color = {"pcie": P.COLORS["pcie"], "nvlink": P.COLORS["nvlink"],
                  "nvswitch": P.COLORS["nvlink"], "upi": P.COLORS["compute"]}
    for a, b, d in t.graph.edges(data=True):
        assert colors[f"{a}-{b}"] == kind_color[d["kind"]]
    texts = {tx.get_gid() for tx in ax.texts if tx.get_gid()}
    assert texts == set(t.graph.nodes)                      # one box per node
    assert [ax.get_title(loc=loc) for loc in ("left", "center", "right")] == [""] * 3


def test_plot_topology_labels_per_direction_bandwidth():
    ax = P.plot_topology(T.layout_a())
    labels = [tx.get_text() for tx in ax.texts if not tx.get_gid()]
    assert labels.count(f"{pcie_oracle(5, 16) / GB:.0f}") == 12      # PCIe edges
    assert f"{T.cpu_link().bandwidth.gb_per_s:.0f}" in labels         # UPI
    assert "per direction" in ax.get_legend().get_title().get_text()


def test_plot_topology_layers():
    t = T.nvswitch_node()
    ax = P.plot_topology(t)
    y = {tx.get_gid(): tx.get_position()[1] for tx in ax.texts if tx.get_gid()}
    assert all(y[c] > y[s] for c in t.cpus for s in t.switches)       # CPUs on top
    assert all(y[s] > y[d] for s in t.switches for d in t.devices)
    assert all(y[d] > y[n] for d in t.devices for n in t.nvswitches)
    assert len({y[d] for d in t.devices}) == 1                          # one row


def test_plot_topology_ax_and_highlight():
    fig, given_ax = plt.subplots()
    n = len(plt.get_fignums())
    t = T.layout_a()
    out = P.plot_topology(t, ax=given_ax, highlight=("gpu0", "gpu4"))
    assert out is given_ax and len(plt.get_fignums()) == n
    hops = len(T.path(t, "gpu0", "gpu4")) - 1
    assert len(out.lines) == t.graph.number_of_edges() + hops
    ax = P.plot_topology(t, highlight=["gpu0", "sw0", "nic0"])
    assert len(ax.lines) == t.graph.number_of_edges() + 2
    for bad in ["gpu0", ["gpu0", "gpu99"], ["gpu0", "gpu1", "gpu2"], 3, ["gpu0"]]:
        with pytest.raises(ValueError, match="highlight"):
            P.plot_topology(t, highlight=bad)
    with pytest.raises(ValueError, match="topo"):
        P.plot_topology("layout A")
