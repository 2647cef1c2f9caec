"""Readers of nccl-tests output (gpulab.nccltests) on real and malformed input.

Real public samples (tests/data/nccltests, sources in its README.md) parse with
their exact printed values; our own recorded 2x H200 outputs parse; malformed input
raises NcclTestsParseError naming the line; fuzzing never raises anything else.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import strategies  # noqa: F401  (loads the "ci" hypothesis profile)
from gpulab import collectives, nccltests as nt

DATA = Path(__file__).parents[1] / "data" / "nccltests"
RAW = Path(nt.__file__).parents[1] / "data" / "measurements" / "raw"


# --- real public samples -----------------------------------------------------------------
def test_h100_two_nodes_current_format():
    s = nt.read(DATA / "h100_2x8_all_reduce.txt")
    assert (s.collective, s.n_ranks, len(s)) == ("all_reduce", 16, 31)
    assert s.devices[0] == nt.Device(0, "ztan-mig-235z", 0, "NVIDIA H100 80GB HBM3")
    assert s.devices[15] == nt.Device(15, "ztan-mig-gq73", 7, "NVIDIA H100 80GB HBM3")
    assert s.config["nThread"] == 1 and s.config["nGpus"] == 1
    assert s.size_bytes[0] == 8 and s.size_bytes[-1] == 8589934592
    assert s.count[-1] == 2147483648
    assert set(s.type) == {"float"} and set(s.redop) == {"sum"} and set(s.root) == {-1}
    assert s.time_s[0] == pytest.approx(135.8e-6)
    assert s.time_s[-1] == pytest.approx(47535e-6)
    assert s.algbw[-1] == pytest.approx(180.71e9)
    assert s.busbw[-1] == pytest.approx(338.82e9)
    assert s.time_s_inplace[-1] == pytest.approx(47743e-6)
    assert s.busbw_inplace[-1] == pytest.approx(337.35e9)
    assert np.all(s.wrong == 0) and np.all(s.wrong_inplace == 0)
    assert s.avg_busbw == pytest.approx(70.742e9) and s.out_of_bounds == 0
    assert s.lineno[0] == 31
    assert nt.consistency(s) == []
    # 16 ranks on two 8-GPU nodes: the ring crosses the 400G network (50 GB/s)
    # and 338.82 GB/s of busbw cannot pass through it
    kinds = {f.kind for f in nt.audit(s, "hgx-h200-2node")}
    assert kinds == {"above_line_rate"}


def test_old_format_without_group_redop_root():
    sweeps = nt.read_all(DATA / "v100_dgx2_old_format.txt")
    assert [s.collective for s in sweeps] == ["all_gather", "broadcast"]
    ag, bc = sweeps
    assert ag.n_ranks == 12 and bc.n_ranks == 12
    assert ag.devices[11] == nt.Device(11, "seville", 11, "Tesla V100-SXM3-32GB")
    assert ag.size_bytes[0] == 0 and ag.size_bytes[-1] == 8589934560
    assert set(ag.redop) == {"none"} and set(ag.root) == {-1}
    assert ag.wrong[-1] == 1 and ag.wrong_inplace[-1] == 1
    assert ag.out_of_bounds == 4 and ag.avg_busbw == pytest.approx(30.2993e9)
    assert set(bc.root) == {0}
    assert bc.time_s[-1] == pytest.approx(70321e-6)
    assert bc.busbw_inplace[-1] == pytest.approx(122.07e9)
    assert nt.consistency(bc) == []
    # That old version printed all_gather's algbw already times (n-1)/n (= busbw):
    # against today's definition (algbw = size / time) every row > 0 B mismatches.
    found = nt.consistency(ag)
    mism = {f.row for f in found if f.kind == "algbw_mismatch"}
    assert mism == set(np.flatnonzero(ag.size_bytes >= 4080))   # above rounding
    assert {f.size_bytes for f in found if f.kind == "wrong_results"} == {
        4294967280, 8589934560}
    assert not [f for f in found if f.kind == "busbw_factor"]


def test_excerpt_without_name_and_nvl72_audit():
    s = nt.read(DATA / "gb200_nvl72_all_reduce_excerpt.txt", collective="all_reduce")
    # only Rank 71 is shown: the count is unknown (at least 72), not 1
    assert s.collective == "all_reduce" and s.n_ranks is None
    assert "at least 72" in s.rank_note and "not rank(s) 0, 1" in s.rank_note
    with pytest.raises(ValueError, match=r"^n_ranks: .*at least 72"):
        s.resolve_ranks()
    with pytest.raises(ValueError, match=r"^n_ranks: 71 disagrees .*rank 71"):
        s.resolve_ranks(71)
    assert s.resolve_ranks(72) == 72 and s.failed_checks() == []
    assert s.busbw[3] == pytest.approx(839.16e9)
    s.n_ranks = 72
    assert nt.consistency(s) == []
    # NVLink5: 900 GB/s per direction; nothing above it -> no finding
    assert nt.audit(s, "gb200-nvl72") == []
    # on 8 ranks the busbw column would be algbw x 1.75, not x 1.97
    s.n_ranks = 8
    assert {f.kind for f in nt.audit(s, "dgx-h100")} == {"busbw_factor"}
    # on a 2-GPU PCIe box the same busbw is far above the line rate
    s.n_ranks = 2
    assert "above_line_rate" in {f.kind for f in nt.audit(s, "h100-pcie")}


def test_json_report_constructed_from_util_cu():
    s = nt.read(DATA / "json_report_v2_constructed.json")
    assert (s.collective, s.n_ranks, s.nccl_version, s.format) == (
        "all_reduce", 2, "2.28.3", "json")
    assert s.devices[1] == nt.Device(1, "node0", 1, "NVIDIA H100 80GB HBM3")
    assert s.time_s[0] == pytest.approx(12.9e-6)
    assert math.isnan(s.time_s_inplace[1]) and math.isnan(s.wrong[1])
    assert math.isnan(s.time_s[2]) and s.time_s_inplace[2] == pytest.approx(13.34e-6)
    assert s.avg_busbw == pytest.approx(0.001476e9) and s.out_of_bounds == 0
    assert s.config["iterations"] == 20
    assert nt.consistency(s) == []


def test_no_check_prints_na():
    text = ("# nThread 1 nGpus 1 minBytes 104857600 maxBytes 115343360\n"
            "#   Rank  0 Pid  30938 on      gpu01 device  0 [0x00] Tesla T4\n"
            "#   Rank  1 Pid  24859 on      gpu02 device  0 [0x00] Tesla T4\n"
            "#       size         count      type   redop     time   algbw   busbw"
            "  error     time   algbw   busbw  error\n"
            "   104857600      26214400     float     sum   202872    0.52    0.52"
            "    N/A   224616    0.47    0.47    N/A\n")
    s = nt.parse(text, collective="all_reduce")
    assert s.n_ranks == 2 and math.isnan(s.wrong[0]) and math.isnan(s.wrong_inplace[0])
    assert nt.consistency(s) == []


def test_noise_lines_and_mpirun_tags_are_skipped():
    text = ("[1,0]<stdout>:# Collective test starting: all_gather_perf\n"
            "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] G\n"
            "[1,0]<stdout>:#  Rank  1 Group  0 Pid 2 on h device  1 [0x2] G\n"
            "h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            "[1,0]<stdout>:#  size count type redop root time algbw busbw #wrong\n"
            "h:1:1 [0] NCCL INFO Launch mode Parallel\n"
            "[1,0]<stdout>:   1024  128 float none -1  10.24  0.10  0.05  0\n")
    s = nt.parse(text)
    assert (s.collective, s.n_ranks, s.nccl_version, len(s)) == (
        "all_gather", 2, "2.21.5", 1)


# --- our own recorded outputs ------------------------------------------------------------
def test_our_c_sweep_text_and_csv_agree():
    txt = nt.read_all(RAW / "h200-x2-2026-11-30-nccl-c" / "c_default.txt")
    csv_ = nt.read_all(RAW / "h200-x2-2026-11-30-nccl-c" / "c_default.csv")
    assert [s.collective for s in txt] == [s.collective for s in csv_]
    assert "all_reduce" in [s.collective for s in txt]
    for a, b in zip(txt, csv_):
        assert a.n_ranks == b.n_ranks == 2 and a.nccl_version == "2.28.3"
        assert np.array_equal(a.size_bytes, b.size_bytes)
        np.testing.assert_allclose(a.time_s, b.time_s, rtol=0, atol=0.006e-6)
        assert nt.consistency(a) == [] and nt.consistency(b) == []
    ar = txt[0]
    assert ar.time_s[0] == pytest.approx(15.26e-6)
    assert ar.busbw[-1] == pytest.approx(329.13e9)
    assert nt.audit(ar, "h200-x2-measured") == []


def test_our_torch_sweep_with_launcher_warnings():
    sweeps = nt.read_all(RAW / "h200-x2-2026-11-30-run2" / "nccl_default.txt")
    assert [s.collective for s in sweeps] == ["all_reduce", "all_gather",
                                              "reduce_scatter", "alltoall",
                                              "sendrecv"]
    ar = nt.read(RAW / "h200-x2-2026-11-30-run2" / "nccl_default.txt",
                 collective="all_reduce")
    assert ar.n_ranks == 2 and len(ar) == 28
    assert ar.time_s[0] == pytest.approx(47.25e-6)
    assert ar.busbw[-1] == pytest.approx(326.21e9)
    for s in sweeps:
        assert nt.audit(s, "h200-x2-measured") == []


def test_predict_csv_reads_back(tmp_path):
    from gpulab import cli
    import io
    buf = io.StringIO()
    cli.main(["predict", "--collective", "all_gather", "--system", "hgx-h200",
              "--ranks", "8", "-b", "1K", "-e", "1G", "-f", "8", "--format", "csv"],
             out=buf)
    s = nt.parse(buf.getvalue(), collective="all_gather")
    assert s.format == "csv" and len(s) == 7
    pred = collectives.predict("all_gather", s.size_bytes.astype(float), 8,
                               "hgx-h200", gpus_per_process=1)   # the CLI's default
    np.testing.assert_allclose(s.time_s, pred.time, rtol=1e-3)


def test_read_selects_and_refuses_ambiguity():
    path = RAW / "h200-x2-2026-11-30-nccl-c" / "c_default.txt"
    with pytest.raises(ValueError, match="collective"):
        nt.read(path)
    with pytest.raises(ValueError, match="no gather sweep"):
        nt.read(path, collective="gather")
    assert nt.read(path, collective="alltoall_perf").collective == "alltoall"


def test_article_table_is_flagged():
    # two rows of the source article's 8x H100 table (paraphrased numbers)
    text = ("# Collective test starting: all_reduce_perf\n"
            "#  size count type redop root time algbw busbw #wrong\n"
            "    8    2 float sum -1  0.40  0.02  0.035  0\n"
            " 2147483648 536870912 float sum -1 4303.9 498.96 873.18 0\n")
    s = nt.parse(text)
    s.n_ranks = 8
    kinds = [(f.kind, f.size_bytes) for f in nt.audit(s, "dgx-h100")]
    assert ("below_latency_floor", 8) in kinds
    assert ("above_line_rate", 2147483648) in kinds


def test_to_rows_is_json_safe():
    import json
    s = nt.read(DATA / "json_report_v2_constructed.json")
    rows = s.to_rows()
    json.dumps(rows, allow_nan=False)
    assert rows[1]["time_us_inplace"] is None and rows[0]["time_us"] == 12.9


# --- malformed input ---------------------------------------------------------------------
GOOD = (DATA / "h100_2x8_all_reduce.txt").read_text()
HDR = "#  size count type redop root time algbw busbw #wrong\n"


@pytest.mark.parametrize("text, lineno, reason", [
    ("", 1, "empty"),
    ("   \n\n", 1, "empty"),
    (HDR + "  1024 256 float sum -1 10.0 0.1\n", 2, "expected 9 columns"),
    (HDR + "  1024 256 float sum -1 abc 0.1 0.1 0\n", 2, "not a number"),
    (HDR + "  1024 2x6 float sum -1 10 0.1 0.1 0\n", 2, "not an integer"),
    (HDR + "  1024 256 float sum -1 10 0.1 0.1 0 7 8\n", 2, "expected 9 columns"),
    (HDR + "  1024 256 float sum -1 -10 0.1 0.1 0\n", 2, ">= 0"),
    (HDR + "  1024 256 float sum -1 inf 0.1 0.1 0\n", 2, "finite"),
    (HDR, 1, "without data rows"),
    ("  1024 256 float sum -1 10 0.1 0.1 0\n", 1, "before any column header"),
    ("hello world\nnot a table\n", 1, "no column header"),
    ("# x\n\x00\x01\x02binary\xff\n", 2, "binary"),
    ('{"results": [{"size": 8}', 1, "invalid JSON"),
    ("size_bytes,time_us\n8,abc\n", 2, "not a number"),
    ("size_bytes,time_us\n8,1.0,3\n", 2, "expected 2 fields"),
    ("size_bytes,busbw_GBps\n8,1.0\n", 1, "lacks column 'time_us'"),
])
def test_malformed_input_names_the_line(text, lineno, reason):
    with pytest.raises(nt.NcclTestsParseError) as info:
        nt.parse(text)
    assert info.value.lineno == lineno
    assert reason in str(info.value)
    assert f"line {lineno}" in str(info.value)


def test_truncated_real_file_row():
    lines = GOOD.splitlines()
    bad = "\n".join(lines[:40] + [lines[40][:50]])
    with pytest.raises(nt.NcclTestsParseError) as info:
        nt.parse(bad)
    assert info.value.lineno == 41 and info.value.line == lines[40][:50]


def test_binary_file(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"# ok\n\xff\xfe\x00garbage\n")
    with pytest.raises(nt.NcclTestsParseError) as info:
        nt.read(p)
    assert info.value.lineno == 2


def test_missing_file():
    with pytest.raises(ValueError, match="text_or_path: cannot read"):
        nt.read("/no/such/file.txt")


def test_json_errors_name_the_field():
    with pytest.raises(nt.NcclTestsParseError, match=r"results\[0\].size"):
        nt.parse_json('{"results": [{"size": -8}]}')
    with pytest.raises(nt.NcclTestsParseError, match="no 'results'"):
        nt.parse_json('{"version": 2}')


# --- fuzzing --------------------------------------------------------------------------
_COLLS = st.sampled_from(collectives.BUSBW_OPS)


@st.composite
def sweeps(draw):
    coll = draw(_COLLS)
    n = draw(st.integers(2, 64))
    k = draw(st.integers(1, 12))
    sizes = sorted(draw(st.lists(st.integers(1, 2**36), min_size=k, max_size=k)))
    times_us = draw(st.lists(st.floats(1.0, 1e6), min_size=k, max_size=k))
    factor = collectives.busbw_factor(coll, n)
    text = [f"# Collective test starting: {coll}_perf"]
    text += [f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on node{r // 8} device "
             f"{r % 8:2d} [0x{r:02x}] NVIDIA H200" for r in range(n)]
    text.append(HDR.strip() + " time algbw busbw #wrong")
    for s, t in zip(sizes, times_us):
        a = s / t / 1e3
        text.append(f"{s} {s // 4} float sum -1 {t:.2f} {a:.2f} {a * factor:.2f} 0 "
                    f"{t:.2f} {a:.2f} {a * factor:.2f} 0")
    return coll, n, sizes, times_us, "\n".join(text) + "\n"


@given(sweeps())
def test_roundtrip_rendered_tables(case):
    coll, n, sizes, times_us, text = case
    s = nt.parse(text)
    assert (s.collective, s.n_ranks) == (coll, n)
    assert list(s.size_bytes) == sizes
    np.testing.assert_allclose(s.time_s, np.round(times_us, 2) / 1e6)
    again = nt.parse(nt.render(s))
    assert list(again.size_bytes) == sizes and again.collective == coll
    assert again.n_ranks == n
    assert len(again) == len(s)


@given(sweeps(), st.data())
def test_mutated_tables_parse_or_raise_parse_error(case, data):
    text = case[-1]
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(("delete", "substitute", "truncate")))
        if op == "delete":
            del lines[i]
        elif op == "truncate":
            lines[i] = lines[i][:data.draw(st.integers(0, len(lines[i])))]
        elif lines[i]:
            j = data.draw(st.integers(0, len(lines[i]) - 1))
            ch = data.draw(st.characters(blacklist_categories=("Cs",)))
            lines[i] = lines[i][:j] + ch + lines[i][j + 1:]
    try:
        sweeps_ = nt.parse_all("\n".join(lines))
    except nt.NcclTestsParseError:
        return
    for s in sweeps_:
        nt.consistency(s)
        s.to_rows()


@given(st.binary(max_size=300))
def test_random_bytes(blob):
    try:
        nt.parse_all(blob.decode("latin-1"))
    except nt.NcclTestsParseError:
        pass


def test_audit_latency_floor_comes_from_the_data_file():
    from gpulab import collectives
    assert collectives.model_constant("audit/latency_floor_s") == 2e-6


def _ranked(ranks, tail=""):
    lines = [f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on node device {r % 8:2d} "
             f"[0x{r:02x}] NVIDIA H200" for r in ranks]
    return "\n".join(lines + ["#  size count type redop root time algbw busbw #wrong",
                               " 1024 256 float sum -1 10.0 0.10 0.10 0", tail]) + "\n"


@pytest.mark.parametrize("ranks, n", [([0], 1), ([0, 1, 2], 3), ([1, 0], 2),
                                      ([0, 0, 1], 2), ([1], None), ([0, 2], None),
                                      ([5, 6, 7], None)])
def test_rank_count_is_the_rank_lines_numbered_from_0(ranks, n):
    """nccl-tests prints one Rank line per rank (rank 0 prints every MPI rank's);
    a numbering with a gap is an incomplete header, whose count is unknown."""
    s = nt.parse(_ranked(ranks), collective="all_reduce")
    assert s.n_ranks == n
    assert (s.rank_note is None) == (n is not None)
    if n is None:
        assert f"at least {max(ranks) + 1}" in s.rank_note


def test_resolve_ranks_refuses_disagreement_and_bad_values():
    s = nt.read(DATA / "h100_2x8_all_reduce.txt")
    assert s.resolve_ranks() == s.resolve_ranks(16) == 16
    with pytest.raises(ValueError, match=r"^n_ranks: 8 disagrees .*16 ranks"):
        s.resolve_ranks(8)
    for bad in (0, -1, 2.5, "16", True):
        with pytest.raises(ValueError, match=r"^n_ranks"):
            s.resolve_ranks(bad)
    bare = nt.parse("#  size count type time algbw busbw #wrong\n"
                    " 64 16 float 10.0 0.01 0.01 0\n", collective="broadcast")
    with pytest.raises(ValueError, match="no Rank lines"):
        bare.resolve_ranks()
    assert bare.resolve_ranks(4) == 4


def test_failed_result_checks_are_kept_and_rendered():
    ag = nt.read_all(DATA / "v100_dgx2_old_format.txt")[0]
    assert ag.failed_checks() == [
        "4294967280 B out of place: #wrong = 1", "8589934560 B out of place: #wrong = 1",
        "4294967280 B in place: #wrong = 1", "8589934560 B in place: #wrong = 1",
        "Out of bounds values : 4 FAILED"]
    again = nt.parse(nt.render(ag))
    assert again.out_of_bounds == 4 and again.failed_checks() == ag.failed_checks()
    assert "Out of bounds values : 4 FAILED" in nt.render(ag)
    # the trailer alone (a #wrong of N/A) still counts
    s = nt.parse(_ranked([0, 1], "# Out of bounds values : 7 FAILED"),
                 collective="all_reduce")
    assert s.failed_checks() == ["Out of bounds values : 7 FAILED"]
    ok = nt.parse(_ranked([0, 1], "# Out of bounds values : 0 OK"),
                  collective="all_reduce")
    assert ok.failed_checks() == [] and "0 OK" in nt.render(ok)


def test_huge_integers_are_parse_errors_not_overflow():
    """A size beyond int64 (nccl-tests prints size_t) is a parse error naming the
    line, in the text and the JSON reader (it was an OverflowError)."""
    text = ("#  size count type time algbw busbw #wrong\n 1" + "0" * 400 +
            " 16 float 10.0 0.01 0.01 0\n")
    with pytest.raises(nt.NcclTestsParseError, match=r"line 2: size .* 2\*\*63"):
        nt.parse(text, collective="broadcast")
    doc = json.loads((DATA / "json_report_v2_constructed.json").read_text())
    doc["results"][0]["size"] = 10**400
    with pytest.raises(nt.NcclTestsParseError, match=r"results\[0\]\.size"):
        nt.parse_json(json.dumps(doc))
