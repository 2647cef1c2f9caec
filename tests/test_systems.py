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

PRESETS = ("dgx-h100", "h100-pcie", "h200-x2-measured", "hgx-h200")

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
        assert s.p2p.params.efficiency == pytest.approx(cal["p2p"]["efficiency"],
                                                        rel=2e-3)


def test_preset_shapes():
    assert systems.get("hgx-h200").nvlink.fabric == "nvswitch"
    assert systems.get("dgx-h100").gpu == "H100"
    pc = systems.get("h100-pcie")
    assert pc.nvlink.fabric == "none" and pc.nvlink.generation is None
    assert pc.p2p.via == "pcie" and pc.nvlink_links_to_peer == 0
    m = systems.get("h200-x2-measured")
    assert (m.n_gpus, m.nvlink_links_to_peer) == (2, 18)


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
