"""The `nvidia-smi topo -m` reader: real and hand-written outputs, errors, fuzzing."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

import strategies  # noqa: F401  (loads the "ci" hypothesis profile)
from gpulab import measurements, specs, topology as T
from gpulab.topology import topo_matrix

REAL = measurements.raw_capture("h200-x2-2026-11-30", "topo-m.txt")
FILES = ("layout-a.txt", "layout-b.txt", "pcie-box.txt", "dgx-h100.txt")


def data(name):
    return specs.read_data_text(f"topologies/{name}")


def classes(topo):
    return {(a, b): T.path_class(topo, a, b)
            for a, b in itertools.permutations(topo.devices, 2)}


# --- the real capture (2x H200 SXM, driver 580) ---------------------------------------
def test_real_capture_has_the_quirks_we_handle():
    assert "\x1b[4m" in REAL and "\x1b[0m" in REAL          # underlined header
    assert "\t\tN/A" in REAL                    # empty cell before GPU NUMA ID


def test_real_capture_matrix():
    m = T.read_topo_matrix(REAL)
    assert m.devices == ("GPU0", "GPU1")
    assert m.classes == {("GPU0", "GPU0"): "X", ("GPU0", "GPU1"): "NV18",
                         ("GPU1", "GPU0"): "NV18", ("GPU1", "GPU1"): "X"}
    assert m.cpu_affinity == {"GPU0": "0-31", "GPU1": "0-31"}
    assert m.numa_affinity == {"GPU0": "0", "GPU1": "0"}
    assert m.gpu_numa_id == {"GPU0": "N/A", "GPU1": "N/A"}
    assert m.nic_names == {} and m.lines == {"GPU0": 2, "GPU1": 3}


def test_real_capture_topology():
    t = T.parse_topo_matrix(REAL)
    assert t.gpus == ["gpu0", "gpu1"] and len(t.cpus) == 1
    assert T.path_class(t, "gpu0", "gpu1") == "NV18"
    # NV18 read as 18 NVLink4 links: 18 x 25 GB/s per direction
    assert T.bottleneck_bandwidth(t, "gpu0", "gpu1").gb_per_s == pytest.approx(450.0)
    assert T.nccl_transport(t, "gpu0", "gpu1")[0] == "P2P/NVLink"
    assert t.graph.nodes["gpu1"]["cpu_affinity"] == "0-31"
    # the recorded copy benchmark stays below the modelled line rate
    peak = measurements.copy_bandwidth().peak("p2p")
    assert peak.gb_per_s < T.bottleneck_bandwidth(t, "gpu0", "gpu1").gb_per_s


def test_transport_matches_nccl_log_of_the_same_machine():
    # second run on the same 2x H200: NCCL 2.28.9 INFO lines of a 2-rank all_reduce,
    # with defaults and with NCCL_P2P_DISABLE=1 (our p2p_level="LOC")
    log = measurements.raw_capture("h200-x2-2026-11-30-run2", "env.txt")
    default, disabled = log.split("## NCCL INFO, P2P disabled")
    default = default.split("## NCCL INFO, all_reduce 64 MiB default")[1]

    def via(text):
        return {ln.split(" via ")[1].split("/")[0] for ln in text.splitlines()
                if " via " in ln}
    assert via(default) == {"P2P"} and via(disabled) == {"SHM"}
    t = T.parse_topo_matrix(REAL)
    assert T.nccl_transport(t, "gpu0", "gpu1")[0] == "P2P/NVLink"
    assert T.nccl_transport(t, "gpu0", "gpu1", p2p_level="LOC")[0] == "SHM"


# --- hand-written 8-GPU outputs -------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_data_files_parse_and_look_real(name):
    text = data(name)
    assert text.startswith("\t\x1b[4mGPU0\t") and "Legend:" in text
    t = T.parse_topo_matrix(text)
    assert len(t.gpus) == 8
    m = T.read_topo_matrix(text)
    assert all(m.cpu_affinity[d] != "N/A" for d in m.devices if d.startswith("GPU"))


def test_layout_files_match_the_builders():
    for name, builder in [("layout-a.txt", T.layout_a), ("layout-b.txt", T.layout_b),
                          ("pcie-box.txt", T.pcie_box)]:
        assert classes(T.parse_topo_matrix(data(name))) == classes(builder()), name


def test_dgx_h100_file():
    t = T.parse_topo_matrix(data("dgx-h100.txt"))
    m = T.read_topo_matrix(data("dgx-h100.txt"))
    assert len(t.nics) == 12 and m.nic_names["NIC11"] == "mlx5_11"
    assert all(T.path_class(t, a, b) == "NV18"
               for a, b in itertools.combinations(t.gpus, 2))
    row = [T.path_class(t, "gpu0", n) for n in t.nics]
    assert row == ["PIX", "PXB", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS",
                   "NODE", "NODE", "SYS", "SYS"]
    assert {T.path_class(t, "gpu0", n) for n in t.nics} == {"PIX", "PXB", "NODE", "SYS"}
    assert T.path_class(t, "nic8", "nic9") == "PIX"          # dual-port storage NIC
    assert m.cpu_affinity["GPU4"] == "56-111,168-223" and m.numa_affinity["GPU4"] == "1"
    assert t.graph.nodes["nic3"]["device"] == "mlx5_3"
    assert T.bottleneck_bandwidth(t, "gpu0", "gpu7").gb_per_s == pytest.approx(450.0)


@pytest.mark.parametrize("name", FILES)
def test_files_round_trip(name):
    t = T.parse_topo_matrix(data(name))
    assert classes(T.parse_topo_matrix(T.render_topo_matrix(t))) == classes(t)


# --- format variants ------------------------------------------------------------------
SMALL = ("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
         "GPU0\t X \tPIX\tPXB\t0-15\t0\t\tN/A\n"
         "GPU1\tPIX\t X \tPXB\t0-15\t0\t\tN/A\n"
         "NIC0\tPXB\tPXB\t X \t\t\t\t\n"
         "\nLegend:\n\n  X    = Self\n  PIX  = Connection traversing at most a single "
         "PCIe bridge\n\nNIC Legend:\n\n  NIC0: mlx5_0\n")


def _check_small(t):
    assert T.path_class(t, "gpu0", "gpu1") == "PIX"
    assert T.path_class(t, "gpu0", "nic0") == "PXB"


@pytest.mark.parametrize("variant", [
    lambda s: s,
    lambda s: s.replace("\t", "    "),                         # copied from a web page
    lambda s: s.replace("\n", "\r\n"),                         # Windows line ends
    lambda s: "$ nvidia-smi topo -m\n" + s,                    # the command pasted too
    lambda s: "\n\n" + s.split("\nLegend:")[0] + "\n",        # no legend
    lambda s: s.replace("GPU0\tGPU1\tNIC0", "\x1b[4mGPU0\tGPU1\tNIC0").replace(
        "GPU NUMA ID\n", "GPU NUMA ID\x1b[0m\n"),
    lambda s: s.replace("\tGPU NUMA ID", "").replace("\t\tN/A", ""),   # older driver
])
def test_format_variants(variant):
    t = T.parse_topo_matrix(variant(SMALL))
    _check_small(t)


def test_old_style_names_and_soc():
    text = ("        GPU0    GPU1    mlx5_0  mlx5_1  CPU Affinity\n"
            "GPU0     X      SOC     PIX     SOC     0-11\n"
            "GPU1    SOC      X      SOC     PIX     12-23\n"
            "mlx5_0  PIX     SOC      X      SOC\n"
            "mlx5_1  SOC     PIX     SOC      X\n")
    m = T.read_topo_matrix(text)
    assert m.classes[("GPU0", "GPU1")] == "SYS"                # old name of SYS
    t = m.to_topology()
    assert t.nics == ["nic0", "nic1"] and t.graph.nodes["nic1"]["device"] == "mlx5_1"
    assert T.path_class(t, "gpu0", "gpu1") == "SYS" and len(t.cpus) == 2
    assert T.path_class(t, "gpu1", "nic1") == "PIX"


def test_nvlink_mesh_without_switch_and_generations():
    text = ("\tGPU0\tGPU1\tGPU2\tGPU3\n"
            "GPU0\t X \tNV2\tNV1\tSYS\n"
            "GPU1\tNV2\t X \tSYS\tNV1\n"
            "GPU2\tNV1\tSYS\t X \tNV2\n"
            "GPU3\tSYS\tNV1\tNV2\t X \n")
    m = T.read_topo_matrix(text)
    t = m.to_topology(nvlink_generation=2)
    assert not t.nvswitches                     # mixed NV#: direct bonds
    assert t.graph.edges["gpu0", "gpu1"]["links"] == 2
    link2 = specs.nvlink(2)
    per_link = link2.symbol_rate * link2.lanes_per_direction \
        * link2.coding_efficiency / 8
    assert T.bottleneck_bandwidth(t, "gpu0", "gpu1").bytes_per_s == \
        pytest.approx(2 * per_link)
    assert T.path_class(t, "gpu0", "gpu3") == "SYS"
    assert classes(T.parse_topo_matrix(T.render_topo_matrix(t))) == classes(t)


def test_to_topology_parameters():
    m = T.read_topo_matrix(SMALL)
    t = m.to_topology(pcie_generation=4, lanes=8)
    g4x8 = specs.pcie(4)
    assert T.bottleneck_bandwidth(t, "gpu0", "gpu1").bytes_per_s == pytest.approx(
        g4x8.transfer_rate_gt_per_s * 1e9 * 8 * g4x8.encoding_efficiency / 8)
    for kw, param in [({"nvlink_generation": 9}, "nvlink_generation"),
                      ({"pcie_generation": 0}, "pcie_generation"),
                      ({"lanes": 3}, "lanes"), ({"cpu_link": "QPI"}, "cpu_link")]:
        with pytest.raises(ValueError, match=param):
            m.to_topology(**kw)


# --- errors name the line -------------------------------------------------------------
HDR = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
ROWS = ["GPU0\t X \tPIX\tPIX\t0-7\t0", "GPU1\tPIX\t X \tPIX\t0-7\t0",
        "GPU2\tPIX\tPIX\t X \t0-7\t0"]


def _text(rows, header=HDR, tail=""):
    return header + "\n".join(rows) + "\n" + tail


BAD = [
    # (text, line number, words in the message)
    ("", 1, "no matrix header"),
    ("\n\n   \n", 4, "no matrix header"),
    ("hello world\n", 1, "expected the header"),
    ("\tCPU Affinity\tGPU0\n", 1, "after the affinity"),
    ("\tNIC0\tNIC1\nNIC0\t X \tPIX\nNIC1\tPIX\t X \n", 1, "no GPU"),
    ("\tGPU0\tGPU0\n", 1, "appears twice"),
    (_text(ROWS[:2]), 4, "expected a row for GPU2"),
    (_text([ROWS[0], ROWS[0], ROWS[2]]), 3, "second row for GPU0"),
    (_text([ROWS[0], ROWS[2], ROWS[1]]), 3, "expected the row of GPU1"),
    (_text([ROWS[0], "GPU1\tPIX\t X ", ROWS[2]]), 3, "has 2 entries"),
    (_text([ROWS[0], ROWS[1].replace("PIX\t X", "PIXX\t X"), ROWS[2]]), 3,
     "unknown path class 'PIXX'"),
    (_text([ROWS[0], ROWS[1].replace(" X ", "PIX"), ROWS[2]]), 3, "diagonal"),
    (_text([ROWS[0], ROWS[1], ROWS[2].replace("PIX\tPIX", "PIX\tPXB")]), 4,
     "symmetric"),
    (_text([ROWS[0], ROWS[1] + "\t\tN/A\textra", ROWS[2]]), 3, "values after"),
    (_text([ROWS[0], ROWS[1].replace("0-7", "zero"), ROWS[2]]), 3,
     "bad CPU Affinity"),
    (_text(ROWS, tail="\nLegend:\n\n  X    = Self\nGPU1\tPIX\n"), 9, "second row"),
    (_text(ROWS, tail="\nLegend:\nrandom words\n"), 7, "unexpected line"),
    (_text(ROWS, tail="\nNIC Legend:\n\n  NIC0: mlx5_0\n"), 8, "NIC0 is not a column"),
    (_text(ROWS, header=HDR.replace("GPU2", "NIC0"), tail="").replace("GPU2", "NIC0")
     .replace("\tPIX\t X \t0-7\t0\n", "\tNV4\t X \t0-7\t0\n")
     .replace("GPU1\tPIX\t X \tPIX", "GPU1\tPIX\t X \tNV4"), 3, "GPUs only"),
    # consistent syntax, but no PCIe tree gives it
    (_text([ROWS[0], ROWS[1].replace("PIX\t0-7", "PXB\t0-7"),
            ROWS[2].replace("\tPIX\tPIX", "\tPIX\tPXB")]), 4, "no PCIe tree"),
    (_text(["GPU0\t X \tSYS\tPIX\t0-7\t0", "GPU1\tSYS\t X \tPIX\t0-7\t0",
            "GPU2\tPIX\tPIX\t X \t0-7\t0"]), 3, "no PCIe tree"),
]


@pytest.mark.parametrize("text, lineno, words", BAD)
def test_malformed_input_names_the_line(text, lineno, words):
    with pytest.raises(T.TopoParseError) as info:
        T.parse_topo_matrix(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.lineno == lineno, str(err)
    assert words in str(err)
    assert f"line {lineno}:" in str(err)
    lines = text.split("\n")
    if lineno <= len(lines):
        assert err.line == topo_matrix._ANSI.sub("", lines[lineno - 1])


def test_non_str_input():
    for bad in (None, b"GPU0", 3, ["GPU0"]):
        with pytest.raises(T.TopoParseError, match="text must be a str"):
            T.read_topo_matrix(bad)


# --- fuzzing: only TopoParseError, never another exception ----------------------------
VALID = [REAL, SMALL] + [data(f) for f in FILES]
TOKENS = ["X", " X ", "NV18", "NV0", "NV99999", "PIX", "PXB", "PHB", "NODE", "SYS",
          "SOC", "GPU0", "GPU1", "GPU9", "NIC0", "NIC12", "mlx5_0", "N/A", "0-31",
          "0", "-", "", "\t", "  ", "Legend:", "NIC Legend:", "CPU Affinity",
          "\x1b[4m", "é", "٣", "GPU٣", "\x00", "NV#  = x", "  NIC0: mlx5_0"]


def _parse_or_parse_error(text):
    try:
        t = T.parse_topo_matrix(text)
    except T.TopoParseError as exc:
        assert exc.lineno >= 1 and isinstance(exc.line, str)
        return None
    assert t.gpus                                   # a success is a real topology
    for a, b in itertools.combinations(t.devices, 2):
        T.path_class(t, a, b)
    return t


@given(st.text(max_size=300))
def test_fuzz_random_text(text):
    _parse_or_parse_error(text)


@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.lists(st.booleans(),
                                                               max_size=40))
def test_fuzz_token_soup(tokens, breaks):
    text = "".join(t + ("\n" if b else "\t") for t, b in zip(tokens, breaks))
    _parse_or_parse_error(text)


@st.composite
def mutated(draw):
    lines = draw(st.sampled_from(VALID)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "token", "char",
                                   "truncate"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "token":
            cells = lines[i].split("\t")
            k = draw(st.integers(0, len(cells) - 1))
            cells[k] = draw(st.sampled_from(TOKENS))
            lines[i] = "\t".join(cells)
        elif op == "char":
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(st.characters()) + lines[i][pos:]
        else:
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines)


@given(mutated())
def test_fuzz_mutations_of_valid_outputs(text):
    _parse_or_parse_error(text)


def test_fuzz_finds_errors_and_successes():
    # guard against a vacuous fuzz: some mutations must fail, unchanged files pass
    for text in VALID:
        assert _parse_or_parse_error(text) is not None
    lines = VALID[2].split("\n")
    assert _parse_or_parse_error("\n".join(lines[:3] + lines[4:])) is None
