"""System presets (gpulab/data/systems.yaml) and user systems files."""
from __future__ import annotations

import dataclasses
import re
import textwrap

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import strategies  # noqa: F401  (loads the "ci" hypothesis profile)

from gpulab import pcie, specs, systems
from gpulab.units import PER_DIRECTION

PRESETS = ("a100-pcie-x8", "dgx-1-v100", "dgx-a100", "dgx-h100", "gb200-nvl72",
           "h100-pcie", "h200-x2-measured", "hgx-a100-4gpu", "hgx-b200", "hgx-h200",
           "hgx-h200-2node", "l40s-x8", "rtx-4090-x8")

VALID = textwrap.dedent("""\
    systems:
      my-box:
        description: "two test GPUs"
        gpu: H100
        n_gpus: 2
        gpus_per_node: 2
        nvlink: {generation: 4, links_per_gpu: 18, fabric: mesh}
        pcie: {generation: 5, lanes: 16, max_payload_bytes: 256}
        host_copy:
          source: "made up for a test"
          pinned:
            h2d: {latency_s: 5.0e-6, efficiency: 0.85, issue_floor_s: 2.0e-5}
            d2h: {latency_s: 5.0e-6, efficiency: 0.86}
          pageable:
            h2d: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 25.0}
            d2h: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 20.0}
        p2p: {via: nvlink, latency_s: 1.0e-5, efficiency: 0.8, source: "made up"}
        source: "a test"
        accessed: "2026-11-30"
    """)


def test_names_are_the_documented_presets():
    assert systems.names() == sorted(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_is_sourced(name):
    s = systems.get(name)
    assert s.name == name
    assert s.gpu in specs.gpu_names()
    assert s.gpu_spec.name == s.gpu
    assert s.n_gpus % s.gpus_per_node == 0 and s.n_nodes >= 1
    assert s.nodes == s.n_nodes == s.n_gpus // s.gpus_per_node
    assert s.nvlink.fabric in systems.FABRICS and isinstance(s.nvlink.nvls, bool)
    assert s.n_gpus % s.nvlink_domain == 0
    if s.network is not None:
        assert s.network.nic in [n.name for n in specs.nics()]
        assert s.network.fabric in systems.NETWORK_FABRICS
        assert s.network_bandwidth_per_gpu.direction == PER_DIRECTION
    elif s.nodes > 1:
        assert s.nvlink_domain == s.n_gpus
    for text in (s.description, s.source, s.host_copy.source, s.p2p.source):
        assert isinstance(text, str) and len(text.strip()) > 10
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", s.accessed)
    assert s.pcie.lanes in pcie.protocol_constant("link_widths")
    assert s.pcie.max_payload_bytes in pcie.protocol_constant("max_payload_bytes")
    for mem in ("pinned", "pageable"):
        for d in ("h2d", "d2h"):
            prm = s.host_copy.params(mem, d)
            assert 0 <= prm.latency_s < 1e-3 and 0 <= prm.issue_floor_s < 1e-3
            if mem == "pinned":
                assert 0.5 < prm.efficiency <= 1
            else:
                assert prm.host_memcpy_bandwidth.direction == PER_DIRECTION
    assert 0 < s.p2p.params.efficiency <= 1
    if s.p2p.via == "nvlink":
        assert s.nvlink.fabric != "none" and s.nvlink_links_to_peer >= 1
    # every number is either ours (names the calibration) or cites a source
    assert "calibrate_copies" in s.host_copy.source or "issue" in s.host_copy.source
    assert "Ours" in s.p2p.source or "issue" in s.p2p.source


@pytest.mark.parametrize("name", PRESETS)
def test_presets_that_say_ours_hold_our_calibration(name):
    s = systems.get(name)
    cal = pcie.calibrate_copies()
    if "calibrate_copies" in s.host_copy.source:
        for d in ("h2d", "d2h"):
            assert s.host_copy.params("pinned", d).efficiency == pytest.approx(
                cal["pinned"][d]["efficiency"], rel=2e-3)
            assert s.host_copy.params("pageable", d).host_memcpy_bandwidth.gb_per_s == \
                pytest.approx(cal["pageable"][d]["host_memcpy_gb_per_s"], rel=2e-3)
    if "calibrate_copies" in s.p2p.source:
        key = "p2p_via_host" if s.p2p.via == "host" else "p2p"   # staged copies
        assert s.p2p.params.efficiency == pytest.approx(cal[key]["efficiency"],
                                                        rel=2e-3)


def test_preset_shapes():
    assert systems.get("hgx-h200").nvlink.fabric == "nvswitch"
    assert systems.get("dgx-h100").gpu == "H100"
    pc = systems.get("h100-pcie")
    assert pc.nvlink.fabric == "none" and pc.nvlink.generation is None
    assert pc.p2p.via == "pcie" and pc.nvlink_links_to_peer == 0
    m = systems.get("h200-x2-measured")
    assert (m.n_gpus, m.nvlink_links_to_peer) == (2, 18)


# --- collectives-issue presets: fabrics, NVLS, domains, networks ------------------------
@pytest.mark.parametrize("name, nodes, domain, net_gb_per_s", [
    ("hgx-h200-2node", 2, 8, 50.0),       # 400 Gb/s NDR x 8 NICs / 8 GPUs
    ("dgx-a100", 1, 8, 25.0),             # 200 Gb/s HDR x 8 / 8
    ("dgx-1-v100", 1, 8, 6.25),           # 100 Gb/s EDR x 4 / 8
    ("gb200-nvl72", 18, 72, 50.0),        # 400 Gb/s x 4 per 4-GPU tray
    ("dgx-h100", 1, 8, 50.0),
    ("hgx-h200", 1, 8, 50.0),
    ("h200-x2-measured", 1, 2, None),
    ("h100-pcie", 1, 1, None),            # no NVLink: every GPU is its own domain
])
def test_derived_nodes_domain_and_network_bandwidth(name, nodes, domain, net_gb_per_s):
    s = systems.get(name)
    assert (s.nodes, s.nvlink_domain) == (nodes, domain)
    bw = s.network_bandwidth_per_gpu
    if net_gb_per_s is None:
        assert bw is None
    else:
        assert bw.direction == PER_DIRECTION
        assert bw.gb_per_s == pytest.approx(net_gb_per_s, rel=1e-12)


def test_network_bandwidth_is_nic_rate_times_nics_over_gpus():
    for name in systems.names():
        s = systems.get(name)
        if s.network is None:
            continue
        nic = specs.nic(s.network.nic)
        expected = nic.line_rate.bytes_per_s * nic.ports * s.network.nics_per_node \
            / s.gpus_per_node
        assert s.network_bandwidth_per_gpu.bytes_per_s == pytest.approx(expected)


@pytest.mark.parametrize("name, nvls", [
    ("dgx-h100", True), ("hgx-h200", True), ("hgx-h200-2node", True),
    ("h200-x2-measured", True), ("gb200-nvl72", True),
    ("dgx-a100", False), ("dgx-1-v100", False), ("h100-pcie", False),
])
def test_nvls_only_on_third_generation_nvswitch_and_later(name, nvls):
    s = systems.get(name)
    assert s.nvlink.nvls is nvls
    if nvls:
        assert s.nvlink.fabric == "nvswitch" and s.nvlink.generation >= 4


def test_h200_x2_measured_notes_that_our_runs_had_nvls_off():
    assert "NVLS disabled" in systems.get("h200-x2-measured").source


@pytest.mark.parametrize("name, gen, links, fabric, chips, pcie_gen", [
    ("dgx-a100", 3, 12, "nvswitch", 6, 4),
    ("dgx-1-v100", 2, 6, "hybrid_cube_mesh", None, 3),
    ("dgx-h100", 4, 18, "nvswitch", 4, 5),
    ("hgx-h200", 4, 18, "nvswitch", 4, 5),
    ("gb200-nvl72", 5, 18, "nvswitch", 18, 5),
])
def test_hardware_shapes_of_the_new_presets(name, gen, links, fabric, chips, pcie_gen):
    s = systems.get(name)
    assert (s.nvlink.generation, s.nvlink.links_per_gpu, s.nvlink.fabric) == \
        (gen, links, fabric)
    assert s.nvlink.switch_chips == chips and s.pcie.generation == pcie_gen
    assert s.gpu_spec.nvlink_generation == gen and s.gpu_spec.nvlink_links == links


def test_network_nics_of_the_presets():
    got = {n: (systems.get(n).network.nic, systems.get(n).network.nics_per_node,
               systems.get(n).network.fabric)
           for n in systems.names() if systems.get(n).network is not None}
    assert got == {"dgx-a100": ("ConnectX-6", 8, "infiniband"),
                   "hgx-b200": ("ConnectX-7", 8, "infiniband"),
                   "dgx-1-v100": ("ConnectX-4", 4, "infiniband"),
                   "dgx-h100": ("ConnectX-7", 8, "infiniband"),
                   "hgx-h200": ("ConnectX-7", 8, "infiniband"),
                   "hgx-h200-2node": ("ConnectX-7", 8, "infiniband"),
                   "gb200-nvl72": ("ConnectX-7", 4, "infiniband")}


def test_gb200_nvl72_is_one_nvlink_domain_of_72_over_18_trays():
    s = systems.get("gb200-nvl72")
    assert (s.n_gpus, s.gpus_per_node, s.nodes, s.nvlink_domain) == (72, 4, 18, 72)
    assert s.gpu == "B200" and "GB200" in s.gpu_variant
    peers = systems.nvlink_peers(s)
    assert len(peers) == 72 and all(len(p) == 71 for p in peers.values())
    assert set(peers[5].values()) == {18}
    # 72 GPUs x 18 links x 100 GB/s bidirectional per link = 129.6 TB/s ("130 TB/s")
    from gpulab import links
    per_gpu = links.nvlink_gpu_bandwidth(5).to_bidirectional()
    assert 72 * per_gpu.bytes_per_s == pytest.approx(129.6e12)


def test_dgx1_hybrid_cube_mesh_links():
    s = systems.get("dgx-1-v100")
    peers = systems.nvlink_peers(s)
    assert len(peers) == 8
    for g, row in peers.items():
        assert len(row) == 4                              # four neighbours
        assert sum(row.values()) == 6                     # all six links used
        assert sorted(row.values()) == [1, 1, 2, 2]       # two of them doubled
        for p, k in row.items():
            assert peers[p][g] == k                       # symmetric
    assert peers[0] == {1: 1, 2: 1, 3: 2, 4: 2}           # NCCL's DGX-1V topology
    assert 5 not in peers[0]                              # no direct link
    assert s.nvlink_links_to_peer == 1                    # the pair GPU0 -> GPU1
    assert pcie.copy_bandwidth("p2p", system=s).gb_per_s == pytest.approx(
        25 * s.p2p.params.efficiency)
    n_pairs = sum(len(r) for r in peers.values()) // 2
    assert n_pairs == 16                                  # 12 cube edges + 4 diagonals


@pytest.mark.parametrize("name", ["dgx-h100", "hgx-h200", "dgx-a100",
                                  "h200-x2-measured", "hgx-h200-2node"])
def test_nvlink_peers_through_nvswitch_use_every_link(name):
    s = systems.get(name)
    peers = systems.nvlink_peers(name)
    assert sorted(peers) == list(range(s.nvlink_domain))
    for g, row in peers.items():
        assert sorted(row) == [p for p in range(s.nvlink_domain) if p != g]
        assert set(row.values()) == {s.nvlink.links_per_gpu}


def test_nvlink_peers_of_mesh_and_none():
    (s,) = systems.parse(VALID).values()
    assert systems.nvlink_peers(s) == {0: {1: 18}, 1: {0: 18}}
    assert systems.nvlink_peers("h100-pcie") == {0: {}}
    four = VALID.replace("n_gpus: 2", "n_gpus: 4").replace("gpus_per_node: 2",
                                                            "gpus_per_node: 4")
    (s4,) = systems.parse(four).values()
    assert systems.nvlink_peers(s4)[0] == {1: 6, 2: 6, 3: 6}     # 18 links / 3 peers


def test_nvlink_peers_refuses_bad_systems():
    with pytest.raises(ValueError, match="system must be"):
        systems.nvlink_peers("no-such-system")
    with pytest.raises(ValueError, match="system must be"):
        systems.nvlink_peers(None)


def test_optional_keys_default_and_old_files_still_parse():
    (s,) = systems.parse(VALID).values()
    assert s.nvlink.nvls is False and s.nvlink.peer_links is None
    assert s.nvlink.domain_gpus == 2 and s.nvlink_domain == 2
    assert s.nvlink.switch_chips is None
    assert s.network is None and s.network_bandwidth_per_gpu is None
    assert s.nodes == 1


NVSWITCH_NET = VALID.replace(
    "nvlink: {generation: 4, links_per_gpu: 18, fabric: mesh}",
    "nvlink: {generation: 4, links_per_gpu: 18, fabric: nvswitch, nvls: true}\n"
    "    network: {nic: ConnectX-7, nics_per_node: 2, fabric: infiniband}")


def test_parse_nvls_and_network():
    (s,) = systems.parse(NVSWITCH_NET).values()
    assert s.nvlink.nvls is True and s.network.nic == "ConnectX-7"
    assert s.network.nic_spec is specs.nic("ConnectX-7")
    assert s.network_bandwidth_per_gpu.gb_per_s == pytest.approx(50.0)


def test_multi_node_domain_needs_nvswitch_and_multi_node_needs_network():
    text = NVSWITCH_NET.replace("n_gpus: 2", "n_gpus: 4").replace(
        "fabric: nvswitch, nvls: true", "fabric: nvswitch, nvls: true, domain_gpus: 4")
    (s,) = systems.parse(text).values()
    assert (s.nodes, s.nvlink_domain) == (2, 4)
    two_nodes = VALID.replace("n_gpus: 2", "n_gpus: 4")
    with pytest.raises(ValueError, match=r"n_gpus: spans 2 nodes .*'network' section"):
        systems.parse(two_nodes)


HYBRID = VALID.replace(
    "nvlink: {generation: 4, links_per_gpu: 18, fabric: mesh}",
    "nvlink:\n"
    "      generation: 2\n"
    "      links_per_gpu: 6\n"
    "      fabric: hybrid_cube_mesh\n"
    "      peer_links:\n"
    "        - [0, 2]\n"
    "        - [2, 0]")


def test_parse_hybrid_cube_mesh_with_peer_links():
    (s,) = systems.parse(HYBRID).values()
    assert s.nvlink.peer_links == ((0, 2), (2, 0))
    assert s.nvlink_links_to_peer == 2
    assert systems.nvlink_peers(s) == {0: {1: 2}, 1: {0: 2}}


# Each case: (base text, old, new, key path in the message, text on the bad line).
@pytest.mark.parametrize("base, old, new, pattern, bad_line", [
    (NVSWITCH_NET, "nvls: true", "nvls: 1",
     r"systems\.my-box\.nvlink\.nvls: must be true or false", "nvls: 1"),
    (VALID, "fabric: mesh", "fabric: mesh, nvls: true",
     r"systems\.my-box\.nvlink\.nvls: is true but fabric is 'mesh'", "nvls: true"),
    (NVSWITCH_NET, "generation: 4, links_per_gpu: 18",
     "generation: 3, links_per_gpu: 12",
     r"nvlink\.nvls: is true but NVLink 3 predates", "nvls: true"),
    (VALID, "fabric: mesh", "fabric: mesh, domain_gpus: 3",
     r"nvlink\.domain_gpus: must be an integer in \[1, 2\]", "domain_gpus: 3"),
    (VALID, "fabric: mesh", "fabric: mesh, domain_gpus: 0",
     r"nvlink\.domain_gpus: must be an integer", "domain_gpus: 0"),
    (VALID.replace("n_gpus: 2", "n_gpus: 4"), "fabric: mesh",
     "fabric: mesh, domain_gpus: 4",
     r"nvlink\.domain_gpus: spans several nodes .*needs fabric 'nvswitch'",
     "domain_gpus: 4"),
    (VALID, "fabric: mesh", "fabric: hybrid_cube_mesh",
     r"nvlink\.fabric: is 'hybrid_cube_mesh', which needs nvlink\.peer_links",
     "fabric: hybrid_cube_mesh"),
    (NVSWITCH_NET, "fabric: nvswitch, nvls: true",
     "fabric: nvswitch, peer_links: [[0, 1], [1, 0]]",
     r"nvlink\.peer_links: applies to direct fabrics", "peer_links"),
    (VALID, "fabric: mesh", "fabric: mesh, switch_chips: 4",
     r"nvlink\.switch_chips: applies to fabric 'nvswitch' only", "switch_chips"),
    (HYBRID, "        - [2, 0]", "        - [1, 0]",
     r"nvlink\.peer_links\.1: must be symmetric", "- [1, 0]"),
    (HYBRID, "        - [0, 2]", "        - [1, 2]",
     r"nvlink\.peer_links\.0: GPU 0 cannot link to itself", "- [1, 2]"),
    (HYBRID, "        - [0, 2]", "        - [0, 7]",
     r"nvlink\.peer_links\.0: GPU 0 uses 7 links, more than links_per_gpu",
     "- [0, 7]"),
    (HYBRID, "        - [0, 2]", "        - [0, x]",
     r"nvlink\.peer_links\.0: must be a list of 2 integers", "- [0, x]"),
    (HYBRID, "        - [2, 0]\n", "",
     r"nvlink\.peer_links: must be a list of 2 rows", "peer_links:"),
    (HYBRID, "        - [0, 2]\n        - [2, 0]", "        - [0, 0]\n        - [0, 0]",
     r"p2p\.via: is 'nvlink' but nvlink\.peer_links has no link", "via: nvlink"),
    (NVSWITCH_NET, "nic: ConnectX-7", "nic: ConnectX-9",
     r"systems\.my-box\.network\.nic: must be one of", "nic: ConnectX-9"),
    (NVSWITCH_NET, "nics_per_node: 2", "nics_per_node: 0",
     r"network\.nics_per_node: must be an integer in \[1, 1024\]", "nics_per_node: 0"),
    (NVSWITCH_NET, "fabric: infiniband", "fabric: omnipath",
     r"network\.fabric: must be one of 'infiniband', 'roce'", "omnipath"),
    (NVSWITCH_NET, "fabric: infiniband}", "fabric: infiniband, speed: 400}",
     r"systems\.my-box\.network\.speed: unknown key 'speed'", "speed: 400"),
    (NVSWITCH_NET, "nics_per_node: 2, ", "",
     r"systems\.my-box\.network: missing key 'nics_per_node'", "network:"),
    (VALID, "fabric: mesh", "fabric: mesh, colour: blue",
     r"systems\.my-box\.nvlink\.colour: unknown key 'colour'", "colour"),
])
def test_bad_new_keys_name_key_path_and_line(base, old, new, pattern, bad_line):
    assert old in base
    text = base.replace(old, new, 1)
    with pytest.raises(ValueError, match=pattern) as info:
        systems.parse(text, source="box.yaml")
    m = re.match(r"box\.yaml: line (\d+): ", str(info.value))
    assert m, str(info.value)
    assert int(m.group(1)) == _line_of(text, bad_line), str(info.value)


def test_systems_are_frozen():
    s = systems.get("hgx-h200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n_gpus = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.pcie.lanes = 8


def test_get_unknown_names_the_parameter():
    with pytest.raises(ValueError, match=r"name must be one of .*hgx-h200"):
        systems.get("HGX-H200")


# --- user files --------------------------------------------------------------------------
def test_parse_valid_user_system():
    (s,) = systems.parse(VALID).values()
    assert s.name == "my-box" and s.gpu_variant is None
    assert s.nvlink_links_to_peer == 18                     # mesh of 2: all links
    assert s.host_copy.params("pinned", "d2h").issue_floor_s == 0.0   # optional
    assert s.host_copy.params("pageable", "h2d").host_memcpy_bandwidth.gb_per_s == 25
    assert pcie.copy_bandwidth("p2p", system=s).gb_per_s == pytest.approx(450 * 0.8)


def test_load_and_resolve_paths(tmp_path):
    f = tmp_path / "box.yaml"
    f.write_text(VALID)
    assert list(systems.load(f)) == ["my-box"]
    assert systems.resolve(str(f)).name == "my-box"
    assert systems.resolve(f"{f}:my-box").name == "my-box"
    two = tmp_path / "two.yml"
    two.write_text(VALID + VALID.split("\n", 1)[1].replace("my-box", "other"))
    with pytest.raises(ValueError, match=r"defines 2 systems .*:NAME"):
        systems.resolve(str(two))
    assert systems.resolve(f"{two}:other").name == "other"
    with pytest.raises(ValueError, match="has no system 'nope'"):
        systems.resolve(f"{two}:nope")
    assert pcie.copy_time(1e9, "h2d", system=str(f)) > 0


def test_resolve_passes_systems_and_presets():
    s = systems.get("dgx-h100")
    assert systems.resolve(s) is s and systems.resolve("dgx-h100") is s
    with pytest.raises(ValueError, match="system must be"):
        systems.resolve("no-such-system")
    with pytest.raises(ValueError, match=r"system: path: cannot read"):
        systems.resolve("/no/such/dir/file.yaml")


def test_load_missing_file_names_path(tmp_path):
    with pytest.raises(ValueError, match=r"^path: cannot read"):
        systems.load(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match=r"^path: cannot read"):
        systems.load(tmp_path)                              # a directory


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("old, new, pattern", [
    ("gpus_per_node: 2", "gpus_per_node: 2\n    colour: blue",
     r"systems\.my-box\.colour: unknown key 'colour'"),
    ("    n_gpus: 2\n", "", r"systems\.my-box: missing key 'n_gpus'"),
    ("fabric: mesh", "fabric: torus", r"nvlink\.fabric: must be one of"),
    ("lanes: 16", "lanes: 3", r"pcie\.lanes: must be one of 1, 2, 4"),
    ("max_payload_bytes: 256", "max_payload_bytes: 300",
     r"pcie\.max_payload_bytes: must be one of 128"),
    ("efficiency: 0.85", "efficiency: 1.5", r"pinned\.h2d\.efficiency: must be a number"),
    ("latency_s: 5.0e-6, efficiency: 0.85", "latency_s: 5e-6, efficiency: 0.85",
     r"latency_s: must be a number .*decimal point"),
    ("gpu: H100", "gpu: H300", r"systems\.my-box\.gpu: must be one of"),
    ("n_gpus: 2", "n_gpus: 3", r"n_gpus: must be a multiple of gpus_per_node"),
    ("fabric: mesh", "fabric: none", r"nvlink\.generation|links_per_gpu|p2p\.via"),
    ("host_memcpy_gb_per_s: 25.0", "host_memcpy_gb_per_s: -1.0",
     r"pageable\.h2d\.host_memcpy_gb_per_s"),
    ("via: nvlink", "via: carrier-pigeon", r"p2p\.via: must be one of"),
    ('source: "a test"', "source: 7", r"systems\.my-box\.source: must be non-empty text"),
    ('accessed: "2026-11-30"', "accessed: [1]", r"accessed: must be a date"),
])
def test_bad_user_file_names_line_and_key(old, new, pattern):
    assert old in VALID
    text = VALID.replace(old, new, 1)
    with pytest.raises(ValueError, match=pattern) as info:
        systems.parse(text, source="box.yaml")
    msg = str(info.value)
    assert msg.startswith("box.yaml: line ")
    line = int(re.match(r"box\.yaml: line (\d+):", msg).group(1))
    assert 1 <= line <= len(text.splitlines())


def test_error_line_points_at_the_bad_key():
    text = VALID.replace("lanes: 16", "lanes: 3")
    with pytest.raises(ValueError) as info:
        systems.parse(text, source="f.yaml")
    assert str(info.value).startswith(f"f.yaml: line {_line_of(text, 'lanes: 3')}:")


@pytest.mark.parametrize("text, pattern", [
    ("systems: [\n", r"<text>: line 2: not valid YAML"),
    ("", r"\(top level\): must be a mapping with the key 'systems'"),
    ("- a\n- b\n", r"must be a mapping with the key 'systems'"),
    ("systems: {}\n", r"systems: must define at least one system"),
    ("systems:\n  a: 1\n", r"line 2: systems\.a: must be a mapping"),
    ("extra: 1\nsystems: {a: {}}\n", r"line 1: extra: unknown top-level key"),
    ("systems:\n  a: {}\n  a: {}\n", r"line 3: systems\.a: duplicate key"),
    ("systems:\n  ? [1, 2]\n  : {}\n", r"keys must be plain names|system names"),
])
def test_malformed_files(text, pattern):
    with pytest.raises(ValueError, match=pattern):
        systems.parse(text)


@given(st.text(max_size=300))
def test_fuzz_parse_raises_only_value_error(text):
    try:
        systems.parse(text)
    except ValueError:
        pass


@given(st.integers(0, VALID.count("\n") - 1), st.text(max_size=20))
def test_fuzz_mutated_valid_file_raises_only_value_error(line_no, junk):
    lines = VALID.splitlines()
    lines[line_no] = lines[line_no][: len(lines[line_no]) // 2] + junk
    try:
        systems.parse("\n".join(lines))
    except ValueError:
        pass


def test_presets_file_is_plain_yaml_with_one_top_key():
    raw = yaml.safe_load(specs.read_data_text("systems.yaml"))
    assert list(raw) == ["systems"] and set(raw["systems"]) == set(PRESETS)
