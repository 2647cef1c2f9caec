"""The step-time model beside published FP8 training throughput (other teams' tables).

No accuracy target is asserted: the published rows are a check of the model, never a fit.
What is checked: the parser reads every row as published; every row gets either an error
or a reason; the model's tokens/s per GPU is the step's tokens over its time and GPUs;
compiled is never slower than eager, in FP8 and in BF16 (the compiled BF16 kernels run back to back); the summary
counts what the check returns; bad inputs are refused by name.
"""
from __future__ import annotations

import csv
import io
import math

import pytest

from gpulab import parallelism as par
from gpulab import specs
from gpulab.parallelism import published as pub

DATA = "measurements/public/fp8_training.csv"
RECIPES = ("compiled", "eager")


def _data_lines():
    text = specs.read_data_text(DATA)
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="module")
def checks():
    return {rec: pub.published_fp8_check(rec) for rec in RECIPES}


# --- the parser ----------------------------------------------------------------------
def test_parser_returns_every_row_as_published():
    rows = pub.published_fp8_rows()
    raw = list(csv.DictReader(io.StringIO("\n".join(_data_lines()))))
    assert len(rows) == len(raw) > 0
    assert {r["kind"] for r in rows} == {"published"}
    assert [r["source_id"] for r in rows] == [r["source_id"] for r in raw]
    for r, s in zip(rows, raw):
        assert isinstance(r["gpus"], int) and r["gpus"] == int(s["gpus"])
        assert isinstance(r["tokens_per_s_per_gpu"], float)
        assert r["tokens_per_s_per_gpu"] == float(s["tokens_per_s_per_gpu"])
        for key in ("seq_len", "global_batch", "micro_batch", "tp", "pp", "cp", "vp",
                    "ep", "grad_accum"):
            assert (r[key] is None) == (s[key] == "")
            assert r[key] is None or isinstance(r[key], int)
        assert r["fsdp"] in (None, True, False)
        assert (r["fsdp"] is None) == (s["fsdp"] == "")


def test_parser_returns_copies():
    rows = pub.published_fp8_rows()
    rows[0]["gpus"] = -1
    assert pub.published_fp8_rows()[0]["gpus"] != -1


HEADER = _data_lines()[0]


def _row(**over):
    base = dict.fromkeys(HEADER.split(","), "")
    base.update(source_id="t", model="llama3-8b", gpu="H100 SXM5 80GB",
                system="DGX H100", gpus="8", precision="fp8", recipe="x",
                seq_len="8192", global_batch="16", micro_batch="1", tp="1", pp="1",
                cp="1", tokens_per_s_per_gpu="1000", kind="published")
    base.update(over)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(base[k] for k in HEADER.split(","))
    return buf.getvalue().strip()


def _with_table(monkeypatch, *rows):
    text = "# a comment\n" + HEADER + "\n" + "\n".join(rows) + "\n"
    real = specs.read_data_text
    monkeypatch.setattr(specs, "read_data_text",
                        lambda name: text if name == DATA else real(name))


@pytest.mark.parametrize("over, match", [
    ({"kind": "measured"}, "kind"),
    ({"gpus": "eight"}, "gpus"),
    ({"tp": "0"}, "tp"),
    ({"tokens_per_s_per_gpu": "nan"}, "tokens_per_s_per_gpu"),
    ({"tokens_per_s_per_gpu": ""}, "tokens_per_s_per_gpu"),
    ({"fsdp": "yes"}, "fsdp"),
    ({"precision": "fp4"}, "precision"),
])
def test_parser_refuses_bad_rows(monkeypatch, over, match):
    _with_table(monkeypatch, _row(**over))
    with pytest.raises(ValueError, match=match):
        pub.published_fp8_rows()


def test_parser_refuses_a_missing_column(monkeypatch):
    text = HEADER.replace(",fsdp", "") + "\n"
    monkeypatch.setattr(specs, "read_data_text", lambda name: text)
    with pytest.raises(ValueError, match="fsdp"):
        pub.published_fp8_rows()


# --- the check ------------------------------------------------------------------------
@pytest.mark.parametrize("recipe", RECIPES)
def test_every_row_has_an_error_or_a_reason(checks, recipe):
    out = checks[recipe]
    assert len(out) == len(pub.published_fp8_rows())
    for r in out:
        assert (r["error"] is None) != (r["reason"] is None), r
        if r["reason"] is None:
            assert r["model_tokens_per_s_per_gpu"] > 0 and r["fits"] in (True, False)
        else:
            assert isinstance(r["reason"], str) and r["reason"]
            assert r["model_tokens_per_s_per_gpu"] is None and r["fits"] is None


@pytest.mark.parametrize("recipe", RECIPES)
def test_errors_are_finite_and_model_over_published(checks, recipe):
    predicted = [r for r in checks[recipe] if r["error"] is not None]
    assert predicted
    for r in predicted:
        assert math.isfinite(r["error"]) and r["error"] > -1
        assert r["error"] == pytest.approx(
            r["model_tokens_per_s_per_gpu"] / r["published_tokens_per_s_per_gpu"] - 1,
            rel=1e-12, abs=1e-12)


def test_model_throughput_is_tokens_over_step_time(checks):
    """Analytic: tokens/s/GPU = global_batch * seq_len / step time / GPUs, with the step
    time recomputed here from the row's own layout."""
    rows = pub.published_fp8_rows()
    i = next(k for k, r in enumerate(checks["compiled"])
             if r["reason"] is None and rows[k]["pp"] > 1 and rows[k]["vp"] > 1)
    row, got = rows[i], checks["compiled"][i]
    tp, pp, vp = row["tp"], row["pp"], row["vp"]
    dp = row["gpus"] // (tp * pp)
    st = par.step_time(row["model"], par.cluster("dgx-h100", row["gpus"] // 8),
                       (tp, pp, dp, vp), global_batch=row["global_batch"],
                       micro_batch=row["micro_batch"], seq_len=row["seq_len"], zero=1,
                       sequence_parallel=tp > 1, recompute="none", precision="fp8",
                       recipe="compiled", attention_backend="cudnn",
                       fp8_tp_gather=tp > 1)
    assert row["source_id"].startswith("nemo") and row["tp_comm_overlap"] == "off"
    assert any("fp8_tp_gather" in n for n in got["notes"]) == (tp > 1)
    assert any("cuDNN's fused" in n for n in got["notes"])
    expect = row["global_batch"] * row["seq_len"] / st.total / row["gpus"]
    assert got["step_s"] == pytest.approx(st.total, rel=1e-12)
    assert got["model_tokens_per_s_per_gpu"] == pytest.approx(expect, rel=1e-12)
    assert got["layout"] == f"TP{tp} PP{pp} DP{dp} v{vp}"
    # and for every predicted row, against its own step time
    for r in checks["compiled"]:
        if r["reason"] is None:
            assert r["model_tokens_per_s_per_gpu"] == pytest.approx(
                r["global_batch"] * r["seq_len"] / r["step_s"] / r["gpus"], rel=1e-12)


def test_compiled_is_at_least_as_fast_as_eager(checks):
    pairs = list(zip(checks["eager"], checks["compiled"]))
    # within the fitted range of sequence lengths; beyond it (the 32K-256K context-
    # parallel rows) attention dominates, both recipes run the same flash kernel and
    # the two eager fits' attention efficiencies differ by 6%
    fp8 = [(b, a) for b, a in pairs if a["precision"] == "fp8" and a["reason"] is None
           and a["seq_len"] <= 16384]
    assert len(fp8) >= 30
    for before, after in fp8:
        assert after["model_tokens_per_s_per_gpu"] >= \
            before["model_tokens_per_s_per_gpu"] * (1 - 1e-12), after
    eager_runs = 0
    for before, after in pairs:
        if after["precision"] == "bf16" and after["reason"] is None:
            if "no torch.compile" in after["source_recipe"]:
                # the source ran eager: the row keeps the eager recipe either way
                eager_runs += 1
                assert after["model_tokens_per_s_per_gpu"] == pytest.approx(
                    before["model_tokens_per_s_per_gpu"], rel=1e-12), after
                assert any("without torch.compile" in n for n in after["notes"])
            else:
                assert after["model_tokens_per_s_per_gpu"] > \
                    before["model_tokens_per_s_per_gpu"], after
    assert eager_runs == 2


def test_context_parallel_and_derived_batches(checks):
    rows = pub.published_fp8_rows()
    cp_rows = derived = 0
    for row, r in zip(rows, checks["compiled"]):
        cp = row["cp"] or 1
        if cp > 1:
            cp_rows += 1
            assert r["reason"] is None and f"CP{cp}" in r["layout"], r
            assert any(n.startswith(f"CP{cp}:") for n in r["notes"]), r["notes"]
        if row["global_batch"] is None:
            if row["local_batch"] is None:
                assert "global batch" in r["reason"]
            else:
                derived += 1
                gpus, group = row["gpus"], (row["tp"] or 1) * (row["pp"] or 1) * cp
                assert r["global_batch"] == row["local_batch"] * gpus // group
                assert any("local batch x DP" in n for n in r["notes"])
        if row["fsdp"]:
            assert r["zero"] == 3
        else:
            assert r["zero"] == 1
    assert cp_rows == 12 and derived == 8
    # every row of the table is predicted now
    assert all(r["reason"] is None for r in checks["compiled"])


def test_uneven_pipeline_rows_pace_on_the_busiest_stage(checks):
    rows = [r for r in checks["compiled"] if r["model"] == "llama3-405b"]
    assert len(rows) == 10
    for r in rows:
        assert any("126 layers over PP8: uneven stages, the busiest with 16" in n
                   for n in r["notes"]), r["notes"]
    # the torchtitan 1F1B rows: one micro-batch per stage from the local batch of 32
    titan = [r for r in rows if r["source_id"].startswith("torchtitan")
             and r["seq_len"] == 8192]
    assert [r["micro_batch"] for r in titan] == [4, 4]


def test_rows_without_a_preset_get_reasons(monkeypatch):
    _with_table(monkeypatch,
                _row(gpu="A100 SXM4 80GB"),
                _row(gpus="4", global_batch="8"),
                _row(gpus="12", global_batch="12"),
                _row(model="no-such-model"),
                _row(tp="3", gpus="8"),
                _row(fsdp="true", seq_len="", global_batch="16", micro_batch="2"),
                _row(tp="2", pp="2", vp="3", gpus="8", global_batch="6"),
                _row(cp="2", gpus="8"),
                _row(cp="2", gpus="8", seq_len="8190"))
    out = pub.published_fp8_check()
    assert "no system preset" in out[0]["reason"]
    assert "8-GPU" in out[1]["reason"] and "8-GPU" in out[2]["reason"]
    assert "no model preset" in out[3]["reason"]
    assert "does not divide" in out[4]["reason"]
    ok = out[5]
    assert ok["reason"] is None and ok["zero"] == 3 and ok["layout"] == "TP1 PP1 DP8 FSDP"
    assert ok["seq_len"] == par.model("llama3-8b").seq_len
    assert any("sequence length not published" in n for n in ok["notes"])
    assert "cannot run" in out[6]["reason"]       # step_time's own ValueError
    assert out[7]["reason"] is None and out[7]["layout"] == "TP1 PP1 CP2 DP4"
    assert "2 x CP2" in out[8]["reason"]         # 8190 tokens: no 4 balanced chunks


def test_check_returns_copies(checks):
    out = pub.published_fp8_check()
    out[0]["notes"].append("x")
    out[0]["error"] = 99.0
    again = pub.published_fp8_check()
    assert "x" not in again[0]["notes"] and again[0]["error"] != 99.0


# --- the summary ------------------------------------------------------------------------
@pytest.mark.parametrize("recipe", RECIPES)
def test_summary_counts_what_the_check_returns(checks, recipe):
    s = pub.published_fp8_summary(recipe)
    out = checks[recipe]
    errs = [r["error"] for r in out if r["error"] is not None]
    assert s["overall"]["rows"] == len(out)
    assert s["overall"]["predicted"] == len(errs)
    assert set(s["by_source"]) == {r["source_id"] for r in out}
    assert sum(v["predicted"] for v in s["by_source"].values()) == len(errs)
    assert s["overall"]["mean_abs_error"] == pytest.approx(
        sum(abs(e) for e in errs) / len(errs))
    assert s["overall"]["within_25"] == pytest.approx(
        sum(abs(e) <= 0.25 for e in errs) / len(errs))
    for v in s["by_source"].values():
        if v["predicted"]:
            assert 0 <= v["within_25"] <= 1 and v["mean_abs_error"] >= 0
            assert math.isfinite(v["median_error"])
        else:
            assert v["median_error"] is None and v["within_25"] is None


# --- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["fast", "", None, 1, "Compiled"])
@pytest.mark.parametrize("func", [pub.published_fp8_check, pub.published_fp8_summary])
def test_bad_recipe_is_refused_by_name(func, bad):
    with pytest.raises(ValueError, match="recipe"):
        func(bad)


def test_public_names():
    assert set(pub.__all__) == {"PUBLISHED_FP8", "published_fp8_rows",
                                "published_fp8_check", "published_fp8_summary"}


def test_te_rows_run_the_tp_overlap_of_their_configuration(checks):
    rows = pub.published_fp8_rows()
    got = {}
    for row, r in zip(rows, checks["compiled"]):
        if r["reason"] is None and (row["tp"] or 1) > 1 and \
                row["source_id"].startswith(("nemo", "mbridge")):
            got[(row["source_id"], row["model"], row["gpus"])] = r["tp_overlap_method"]
            if row["tp_comm_overlap"] not in (None, "off"):
                assert row["tp_comm_overlap"] in row["notes"] or \
                    "tp_comm_overlap:" in row["notes"]
                assert any("TP communication overlap" in n for n in r["notes"])
    assert got == {
        ("nemo-24.07-h100", "gpt3-20b", 64): "userbuffers",
        ("nemo-24.07-h100", "gpt3-175b", 128): "none",
        ("nemo-24.07-h100", "gpt3-175b", 512): {"proj_fprop": "pipeline",
                                                 "fc2_fprop": "ring_exchange"},
        ("nemo-24.07-h100", "llama2-70b", 64): "userbuffers",
        ("nemo-24.07-h100", "llama3-70b", 64): "userbuffers",
        ("mbridge-25.11", "llama3-70b", 64): "userbuffers-p2p",
        ("mbridge-25.11", "llama3-405b", 1024): "userbuffers-p2p",
        ("mbridge-25.11", "llama3-405b", 128): "userbuffers-p2p",
        ("mbridge-26.04.01", "llama3-70b", 64): "userbuffers-p2p",
        ("mbridge-26.04.01", "llama3-405b", 1024): "userbuffers-p2p"}
    # every Transformer Engine FP8 row is predicted, within +-25%
    te = [r["error"] for r in checks["compiled"] if r["error"] is not None
          and r["source_id"].startswith(("nemo", "mbridge"))]
    assert len(te) == 18 and max(abs(e) for e in te) <= 0.25, te


def test_torchtitan_selective_rows_use_per_op_recompute(checks):
    for r in checks["compiled"]:
        if r["reason"] is None and r["source_id"].startswith("torchtitan"):
            assert r["recompute"] in ("per-op", "full"), r
    assert sum(r["recompute"] == "per-op" for r in checks["compiled"]) >= 10


def test_without_tp_overlap_only_the_overlap_rows_change(checks):
    off = pub.published_fp8_check(tp_overlap=False)
    changed = 0
    for on, o in zip(checks["compiled"], off):
        assert o["tp_overlap_method"] == "none"
        if on["tp_overlap_method"] != "none":
            changed += 1
            assert o["error"] < on["error"]          # the overlap hides TP traffic
        else:
            assert o["error"] == on["error"]
    assert changed == 10


def test_torchtitan_interleaved_rows_run_two_stages_per_gpu():
    """torchtitan 9dec370 gives a multi-stage schedule two stages per rank when no split
    points are set (pipelining_utils.py lines 24-27)."""
    rows = [r for r in par.published_fp8_check()
            if r["source_id"].startswith("torchtitan") and "PP8" in r["layout"]]
    inter = [r for r in rows if any("two stages per rank" in n for n in r["notes"])]
    assert len(inter) == 1 and " v2 " in inter[0]["layout"]
    assert all(" v" not in r["layout"] for r in rows if r not in inter)
    # the interleaved schedule is the faster of the two published ones, and so is the model
    one = next(r for r in rows if r["seq_len"] == 8192 and r not in inter
               and r["model"] == inter[0]["model"])
    assert inter[0]["model_tokens_per_s_per_gpu"] > one["model_tokens_per_s_per_gpu"]
