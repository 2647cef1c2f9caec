"""Recorded H200 measurements and the nvidia-smi nvlink --status parser."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import strategies  # noqa: F401  (loads the "ci" hypothesis profile)

from gpulab import links, measurements as M, specs, units
from gpulab.measurements import NVLinkStatusParseError

RUN = "h200-x2-2026-11-30"
PCIE5_X16_PER_DIRECTION = 32e9 * 16 * 128 / 130 / 8     # [B/s]
NVLINK4_GPU_PER_DIRECTION = 450e9                       # 900 GB/s bidirectional


@pytest.fixture(scope="module")
def run():
    return M.copy_bandwidth()


def test_copy_run_provenance(run):
    assert run.machine.startswith("2x H200 SXM")
    assert run.driver == "580.159.04"
    assert run.date == "2026-11-30"
    assert sorted(run.kinds) == ["d2h_pageable", "d2h_pinned", "h2d_pageable",
                                 "h2d_pinned", "p2p", "p2p_bidir", "p2p_via_host"]
    assert run is not M.copy_bandwidth()                 # a fresh object per load
    assert M.copy_bandwidth("h200_copy_bandwidth").kinds.keys() == run.kinds.keys()


def test_copy_run_arrays(run):
    for kind, (s, bw) in run.kinds.items():
        assert s.shape == bw.shape and s.size >= 5, kind
        assert np.all(np.diff(s) > 0), kind              # sorted by size
        assert np.all(bw > 0) and np.all(np.isfinite(bw))
        assert s[0] == 4096 and s[-1] == 2**30


def test_times_agree_with_bandwidth(run):
    assert sorted(run.times) == sorted(run.kinds)
    for kind, (s, bw) in run.kinds.items():
        t = run.times[kind]
        assert t.shape == s.shape and np.all(t > 0)
        assert 1e-6 < t.min() < 1e-3                    # a 4 KiB copy: microseconds
        # both CSV columns are rounded to 3 decimals; *_bidir counts both ways
        both = 2 if kind.endswith("_bidir") else 1
        np.testing.assert_allclose(both * s / t, bw, rtol=2e-3, atol=1e6)


def test_csv_columns_agree_with_each_other():
    rows = list(csv.DictReader(io.StringIO(
        specs.read_data_text("measurements/h200_copy_bandwidth.csv"))))
    for r in rows:
        both = 2 if r["kind"].endswith("_bidir") else 1
        gbps = both * float(r["size_bytes"]) / (float(r["time_us"]) * 1e-6) / 1e9
        # both columns are rounded to 3 decimals
        assert gbps == pytest.approx(float(r["bandwidth_GBps"]), rel=2e-3, abs=1e-3), r


def test_p2p_peak_is_plausible(run):
    peak = run.peak("p2p")
    assert peak.direction == "per_direction"
    assert 300e9 <= peak.bytes_per_s <= 450e9
    assert peak.gb_per_s == pytest.approx(394.776, abs=1e-6)
    nominal = links.nvlink_gpu_bandwidth(4)
    assert nominal.bytes_per_s == pytest.approx(NVLINK4_GPU_PER_DIRECTION)
    assert peak < nominal


def test_p2p_grows_with_size(run):
    s, bw = run.kinds["p2p"]
    assert bw[-1] > 0.9 * bw.max() and bw[0] < 0.01 * bw.max()


def test_pinned_below_pcie_gen5(run):
    pcie = units.Bandwidth(PCIE5_X16_PER_DIRECTION, "per_direction")
    for kind in ("h2d_pinned", "d2h_pinned"):
        peak = run.peak(kind)
        assert peak < pcie
        assert peak.gb_per_s == pytest.approx(55.5, abs=0.5)
    assert run.peak("h2d_pageable") < run.peak("h2d_pinned")


def test_peak_unknown_kind(run):
    with pytest.raises(ValueError, match="kind"):
        run.peak("p2p_tridir")


def test_bidirectional_and_host_staged_copies(run):
    both = run.peak("p2p_bidir")
    one = run.peak("p2p")
    assert both.direction == "bidirectional"
    # both directions at once: close to twice one direction, below the spec total
    assert 1.8 < both / one.to_bidirectional() * 2 <= 2.0
    assert both < links.nvlink_gpu_bandwidth(4).to_bidirectional()
    # staging through host memory is bounded by the PCIe copies it is made of
    via_host = run.peak("p2p_via_host")
    assert via_host < run.peak("h2d_pinned") and via_host < run.peak("d2h_pinned")


def test_alpha_beta_fit_of_real_p2p(run):
    s, bw = run.kinds["p2p"]
    alpha, beta = links.fit_alpha_beta(s, s / bw, weighting="absolute")
    assert 1e-6 < alpha < 1e-4                     # launch overhead: microseconds
    assert beta < links.nvlink_gpu_bandwidth(4)
    assert beta.gb_per_s == pytest.approx(395, rel=0.05)


# --- raw captures and the nvlink --status parser --------------------------------------
def test_parse_real_capture():
    status = M.parse_nvlink_status(M.raw_capture(RUN, "nvlink-status.txt"))
    assert sorted(status) == [0, 1]
    for rates in status.values():
        assert len(rates) == 18
        assert rates == [26.562e9] * 18
    # nvidia-smi prints the raw NVLink4 line rate per direction, rounded
    raw = links.nvlink_link_bandwidth(4, raw=True).bytes_per_s
    assert status[0][0] == pytest.approx(raw, abs=1e6)


def test_topology_capture_shows_nv18():
    assert "NV18" in M.raw_capture(RUN, "topo-m.txt")


def test_parse_inactive_links_and_blank_lines():
    text = ("GPU 0: NVIDIA H200 (UUID: x)\n\t Link 0: 26.562 GB/s\n\n"
            "\t Link 1: <inactive>\nGPU 3: other\n  Link 0: 25 GB/s\n")
    assert M.parse_nvlink_status(text) == {0: [26.562e9, 0.0], 3: [25e9]}


@pytest.mark.parametrize("text, lineno", [
    ("", 1),
    ("\n\n", 1),
    ("Link 0: 26.562 GB/s", 1),                          # link before any GPU
    ("GPU 0: x\n Link 1: 26.562 GB/s", 2),                # link numbers skip
    ("GPU 0: x\n Link 0: 26.562 GB/s\n Link 0: 26.562 GB/s", 3),
    ("GPU 0: x\n Link 0: 26.562 Gb/s", 2),                 # wrong unit
    ("GPU 0: x\n Link 0: fast", 2),
    ("GPU 0: x\n Link 0: 26.562 GB/s\nNVIDIA-SMI has failed", 3),
    ("GPU zero: x", 1),
])
def test_malformed_input_names_the_line(text, lineno):
    with pytest.raises(NVLinkStatusParseError, match=f"line {lineno}"):
        M.parse_nvlink_status(text)


@pytest.mark.parametrize("value", [None, 3, b"GPU 0: x", ["GPU 0: x"]])
def test_non_text_refused(value):
    with pytest.raises(NVLinkStatusParseError, match="text"):
        M.parse_nvlink_status(value)


def test_parse_error_is_a_value_error():
    assert issubclass(NVLinkStatusParseError, ValueError)


@given(st.text())
def test_fuzz_arbitrary_text(text):
    try:
        out = M.parse_nvlink_status(text)
    except NVLinkStatusParseError as exc:
        assert "line" in str(exc)
    else:
        assert isinstance(out, dict) and out
        assert all(isinstance(k, int) and isinstance(v, list) for k, v in out.items())


# Lines built from the grammar's own pieces, so that the fuzz reaches the number
# conversion, not only the "not a GPU header" branch.
_NUM = st.from_regex(r"[0-9.]{1,6}", fullmatch=True)
_LINE = st.one_of(
    st.builds("GPU {}: {}".format, st.integers(0, 9), st.text(max_size=5)),
    st.builds("\t Link {}: {} GB/s".format, st.integers(0, 3), _NUM),
    st.builds("\t Link {}: <inactive>".format, st.integers(0, 3)),
    st.text(max_size=8),
)


@given(st.lists(_LINE, max_size=8).map("\n".join))
@example("GPU 0: x\n\t Link 0: 1.2.3 GB/s")
def test_fuzz_structured_text(text):
    try:
        out = M.parse_nvlink_status(text)
    except NVLinkStatusParseError as exc:
        assert "line" in str(exc)
    else:
        assert all(r >= 0 for rates in out.values() for r in rates)


@pytest.mark.parametrize("run_, filename, param", [
    ("../..", "gpus.csv", "run"),
    (RUN, "../nvlink.csv", "filename"),
    (RUN, ".hidden", "filename"),
    (None, "topo-m.txt", "run"),
    (RUN, 3, "filename"),
])
def test_raw_capture_refuses_paths(run_, filename, param):
    with pytest.raises(ValueError, match=param):
        M.raw_capture(run_, filename)


@pytest.mark.parametrize("run_, filename, param", [
    (RUN, "no-such-file.txt", "filename"),
    ("h100-x8-1999-01-01", "topo-m.txt", "run"),
])
def test_raw_capture_unknown_names_name_the_parameter(run_, filename, param):
    with pytest.raises(ValueError, match=rf"\b{param}\b"):
        M.raw_capture(run_, filename)


@pytest.mark.parametrize("name", ["../gpus", "no_such_run", "", None, 3, "a/b"])
def test_copy_bandwidth_refuses_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        M.copy_bandwidth(name)


def test_pooled_center_is_the_minimax_value():
    """center = 2 lo hi / (lo + hi): the same relative error against lo and hi."""
    p = M.pool_runs(M.HOLDOUT_RUNS["p2p"])["all_reduce"]
    np.testing.assert_allclose(p.center / p.lo - 1, 1 - p.center / p.hi, atol=1e-12)
    assert np.all(p.lo <= p.center) and np.all(p.center <= p.hi)
    assert p.times.shape == (len(M.HOLDOUT_RUNS["p2p"]), p.size_bytes.size)
    # full sweeps reach 1 GiB, short ones stop at 8 MiB: NaN where a run lacks a size
    assert p.size_bytes[-1] == 2**30 and np.isnan(p.times[0, -1])


def test_pooling_one_run_gives_that_run():
    run = ("h200-x2-2026-11-30-floors", "full_default_r1.csv")
    one = M.collective_run(*run)["sendrecv"]
    p = M.pool_runs([run])["sendrecv"]
    want = np.array([one[int(s)] for s in p.size_bytes])
    for arr in (p.lo, p.hi, p.center, p.median):
        np.testing.assert_allclose(arr, want)


def test_fit_and_holdout_runs_are_disjoint_and_recorded():
    for tr in ("p2p", "shm"):
        fit, hold = set(M.FIT_RUNS[tr]), set(M.HOLDOUT_RUNS[tr])
        assert fit and hold and not fit & hold
        assert {r for r, _ in hold} == {"h200-x2-2026-11-30-floors"}
        for run in fit | hold:
            assert M.collective_run(*run)["all_reduce"][8] > 0


# --- check_nvlink_status: what a capture is missing -----------------------------------
def test_check_real_capture_has_no_problems():
    st_ = M.check_nvlink_status(M.raw_capture(RUN, "nvlink-status.txt"), n_gpus=2)
    assert st_.problems == []
    assert [g["links_expected"] for g in st_.gpus] == [18, 18]
    assert [g["name"] for g in st_.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert st_.gpus[0]["sum_per_direction"] == pytest.approx(18 * 26.562e9)


def test_check_cut_off_capture():
    full = M.raw_capture(RUN, "nvlink-status.txt").splitlines()
    cut = "\n".join(full[:3])                      # GPU 0 with 2 of 18 links
    st_ = M.check_nvlink_status(cut, n_gpus=2)
    assert st_.gpus[0]["links_listed"] == 2
    assert st_.problems == [
        "GPU 0 (NVIDIA H200): 2 of 18 links listed (H200: 18 NVLink links per GPU)",
        "the capture ends inside GPU 0's link list (2 links listed, 18 expected): "
        "cut off?",
        "GPU 1 missing (n_gpus = 2)"]
    # GPU 1 cut after 5 links: fewer than GPU 0 and than the spec; ends inside GPU 1
    cut1 = "\n".join(full[:19 + 1 + 5])
    probs = M.check_nvlink_status(cut1).problems
    assert probs[0].startswith("GPU 1 (NVIDIA H200): 5 of 18 links listed")
    assert "ends inside GPU 1's link list" in probs[1] and len(probs) == 2


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", 18), ("Tesla V100-SXM2-32GB", 6),
    ("NVIDIA A100-SXM4-80GB", 12), ("NVIDIA B200", 18), ("NVIDIA H200", 18),
    ("NVIDIA H100 PCIe", None), ("NVIDIA Graphics Device", None),
    ("NVIDIA H1000", None)])
def test_expected_links_from_the_gpu_name(name, expected):
    st_ = M.check_nvlink_status(f"GPU 0: {name} (UUID: GPU-1)\n Link 0: 25 GB/s\n")
    assert st_.gpus[0]["links_expected"] == expected
    assert bool(st_.problems) == (expected is not None and expected > 1)
    if expected is not None:
        assert expected == specs.gpu(name.split()[1].split("-")[0]).nvlink_links


def test_check_duplicate_gpu_and_bad_n_gpus():
    with pytest.raises(NVLinkStatusParseError, match="line 3: GPU 0 listed twice"):
        M.check_nvlink_status("GPU 0: x\n Link 0: 25 GB/s\nGPU 0: x\n")
    for bad in (0, -1, 2.5, "2", True):
        with pytest.raises(ValueError, match="n_gpus"):
            M.check_nvlink_status("GPU 0: x\n Link 0: 25 GB/s\n", n_gpus=bad)
