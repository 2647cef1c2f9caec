"""TP communication overlap (gpulab.parallelism.overlap), its measured constants, and
torchtitan's per-op recomputation."""
from __future__ import annotations

import csv
import dataclasses
import io
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from gpulab import measurements, specs
from gpulab import parallelism as par
from gpulab.parallelism.model import assumption

RUN = "measurements/raw/h200-x1-2026-12-02-overlap"


def _rows(name):
    return list(csv.DictReader(io.StringIO(specs.read_data_text(f"{RUN}/{name}"))))


def _median(rows, traffic, chunks):
    return statistics.median(float(r["slowdown"]) for r in rows
                             if r["traffic"] in traffic and r["chunks"] in chunks)


def test_constants_are_the_medians_of_our_runs():
    held, free = _rows("overlap_held.csv"), _rows("overlap_unthrottled.csv")
    assert assumption("tp_overlap_slowdown_p2p") == pytest.approx(
        _median(held, {"ce-rate-450", "ce-rate-900"}, {"4", "8"}), abs=1e-6)
    assert assumption("tp_overlap_slowdown_pipeline") == pytest.approx(
        _median(held, {"carve-16", "carve-24"}, {"4"}), abs=1e-6)
    assert assumption("tp_overlap_slowdown_bulk") == pytest.approx(
        _median(free, {"sm-2", "sm-8", "sm-16", "sm-24"}, {"1"}), abs=1e-6)
    alone = {}
    for r in held:
        if r["traffic"] == "none":
            alone.setdefault((r["shape"], r["dtype"]), {})[r["chunks"]] = float(r["gemm_ms"])
    for n in ("4", "8"):
        assert assumption(f"tp_overlap_split_cost_{n}") == pytest.approx(
            statistics.median(v[n] / v["1"] - 1 for v in alone.values()), abs=1e-6)
    # every row of the held run has the cuBLAS carve-out (no skipped carve rows)
    assert {r["traffic"] for r in held} >= {"carve-8", "carve-16", "carve-24"}


def test_sites_follow_transformer_engine_defaults():
    rows = par.tp_overlap_sites("llama3-70b", 4, "userbuffers")
    methods = {r["site"]: r["method"] for r in rows}
    assert methods == {"qkv_fprop": "ring_exchange", "fc1_fprop": "ring_exchange",
                       "proj_dgrad": "ring_exchange", "fc2_dgrad": "ring_exchange",
                       "proj_fprop": "pipeline", "fc2_fprop": "pipeline",
                       "qkv_wgrad": "bulk", "fc1_wgrad": "bulk"}
    p2p = {r["site"]: r["method"] for r in par.tp_overlap_sites("llama3-70b", 4,
                                                                 "userbuffers-p2p")}
    assert p2p["proj_fprop"] == p2p["fc2_fprop"] == "ring_exchange"
    # a dict naming two sites equals the named configuration
    assert par.tp_overlap_effect("llama3-70b", 4, {"proj_fprop": "ring_exchange",
                                                    "fc2_fprop": "ring_exchange"}) \
        == par.tp_overlap_effect("llama3-70b", 4, "userbuffers-p2p")


def test_effect_oracle():
    m = par.model("llama3-70b")
    h, kv, f = m.hidden, m.kv_heads * (m.hidden // m.heads), m.ffn_hidden
    w = {"qkv": h * (h + 2 * kv), "proj": h * h, "fc1": 2 * h * f, "fc2": f * h}
    total = 3 * sum(w.values())
    s4 = assumption("tp_overlap_split_cost_4")
    rx = (1 + s4) * (1 + assumption("tp_overlap_slowdown_p2p")) - 1
    pipe = (1 + s4) * (1 + assumption("tp_overlap_slowdown_pipeline")) - 1
    bulk = assumption("tp_overlap_slowdown_bulk")
    want = (rx * (w["qkv"] + w["fc1"] + w["proj"] + w["fc2"])
            + pipe * (w["proj"] + w["fc2"]) + bulk * (w["qkv"] + w["fc1"])) / total
    exposed, slow = par.tp_overlap_effect(m, 4, "userbuffers")
    assert exposed == pytest.approx(2 * 0.25 / 8)
    assert slow == pytest.approx(want, rel=1e-12)
    exposed, _ = par.tp_overlap_effect(m, 4, "userbuffers-p2p")
    assert exposed == 0.0
    assert par.tp_overlap_effect(m, 1, "userbuffers") == (1.0, 0.0)
    assert par.tp_overlap_effect(m, 8, "none") == (1.0, 0.0)
    # 8 ring-exchange chunks cost more than 4
    assert par.tp_overlap_effect(m, 8, "userbuffers-p2p")[1] > \
        par.tp_overlap_effect(m, 4, "userbuffers-p2p")[1]


def _step(method, **kw):
    args = dict(global_batch=128, micro_batch=1, seq_len=8192, zero=1,
                sequence_parallel=True, precision="fp8")
    args.update(kw)
    return par.step_time("llama3-70b", par.cluster("dgx-h100", 8), (4, 8, 2, 5),
                         tp_overlap_method=method, **args)


def test_step_charges_exposed_share_plus_gemm_slowdown():
    base, ub = _step("none"), _step("userbuffers")
    assert ub.compute == base.compute and ub.comm.tp == base.comm.tp
    exposed, slow = par.tp_overlap_effect("llama3-70b", 4, "userbuffers")
    m = par.model("llama3-70b")
    tokens = 128 * 8192
    f = par.flops_per_step(m, tokens, seq_len=8192) - 6 * m.hidden * m.vocab * tokens
    attn = 12 * 8192 * m.hidden * m.layers * tokens
    from gpulab.parallelism.efficiency import peak_flops
    peak = peak_flops(par.cluster("dgx-h100", 8).gpu_spec, "fp8")
    logits_s = 6 * m.hidden * m.vocab * tokens / ub.logits_efficiency / (4 * 2 * peak)
    layer_s = ub.compute - logits_s
    want = base.comm.tp * exposed + slow * layer_s * (1 - attn / f)
    assert ub.tp_comm == pytest.approx(want, rel=1e-9)
    assert base.tp_comm > ub.tp_comm > 0
    assert any("overlapped with GEMMs" in n for n in ub.notes)
    assert not any("overlapped with GEMMs" in n for n in base.notes)


def test_step_refuses_overlap_without_sp_or_with_tp_overlap():
    with pytest.raises(ValueError, match="sequence_parallel"):
        _step("userbuffers", sequence_parallel=False)
    with pytest.raises(ValueError, match="tp_overlap"):
        _step("userbuffers", tp_overlap=0.5)
    # TP1: nothing to overlap, no error, nothing changes
    a = par.step_time("llama3-8b", "hgx-h200", (1, 1, 8), global_batch=64,
                      tp_overlap_method="userbuffers", sequence_parallel=False)
    b = par.step_time("llama3-8b", "hgx-h200", (1, 1, 8), global_batch=64)
    assert a.total == b.total


@settings(max_examples=30, deadline=None)
@given(tp=st.sampled_from([2, 4, 8]), model=st.sampled_from(["llama3-70b", "gpt3-175b",
                                                            "13b", "llama3-8b"]),
       method=st.sampled_from(["userbuffers", "userbuffers-p2p"]))
def test_effect_bounds(tp, model, method):
    """Property: the exposed share is in [0, 1/4] and the GEMM slowdown share is below
    the worst site slowdown times the 2/3 of the GEMMs that host a site."""
    exposed, slow = par.tp_overlap_effect(model, tp, method)
    assert 0.0 <= exposed <= 0.25
    worst = max(r["slowdown"] for r in par.tp_overlap_sites(model, tp, method))
    assert 0.0 < slow <= worst * 2 / 3 + 1e-12
    assert sum(r["gemm_share"] for r in par.tp_overlap_sites(model, tp, method)) \
        == pytest.approx(2 / 3)


# --- torchtitan's per-op selective checkpointing ------------------------------------
def test_per_op_recomputes_wk_wo_w3():
    m = par.model("llama3-8b")
    kv = m.kv_heads * (m.hidden // m.heads)
    assert par.per_op_recomputed_matrices(m) == m.hidden * kv + m.hidden ** 2 \
        + m.hidden * m.ffn_hidden
    tokens = 8192.0
    extra = par.flops_per_step(m, tokens, seq_len=8192, recompute="per-op") \
        - par.flops_per_step(m, tokens, seq_len=8192)
    assert extra == pytest.approx(2 * par.per_op_recomputed_matrices(m) * m.layers * tokens)
    # GELU models recompute wk, wo and the second MLP matrix (the 6th matmul is w2 there;
    # the model keeps h x f, the same size)
    g = par.model("13b")
    assert par.per_op_recomputed_matrices(g) == g.hidden ** 2 * 2 + g.hidden * g.ffn_hidden
    for name in ("llama3-8b", "llama3-70b", "13b"):
        f = {r: par.flops_per_step(name, 4096.0, recompute=r) for r in par.RECOMPUTE}
        assert f["none"] < f["per-op"] < f["full"]


def test_per_op_memory_oracle():
    m = par.model("llama3-8b")
    s, b, h = 8192, 2, m.hidden
    kv = m.kv_heads * (h // m.heads)
    a = par.activation_memory_per_layer(m, 1, micro_batch=b, seq_len=s, recompute="per-op")
    assert a == pytest.approx(2 * s * b * (h + (2 * h + kv + m.ffn_hidden) + h))
    sp = par.activation_memory_per_layer(m, 8, micro_batch=b, seq_len=s,
                                         sequence_parallel=True, recompute="per-op")
    assert sp == pytest.approx(2 * s * b * (h / 8 + (2 * h + kv + m.ffn_hidden) / 8 + h / 8))
    for t in (1, 2, 8):
        mem = {r: par.activation_memory_per_layer(m, t, micro_batch=b, seq_len=s,
                                                  recompute=r) for r in par.RECOMPUTE}
        assert mem["full"] < mem["per-op"] < mem["none"]


def test_per_op_tp_collectives():
    from gpulab.parallelism.comm import tp_allreduce_count
    assert tp_allreduce_count(True, "per-op") == 5
    assert tp_allreduce_count(False, "per-op") == 6


# --- the power limit -----------------------------------------------------------------
def test_power_trace_shows_the_700_w_limit():
    for f in ("power_run1.csv", "power_run2.csv"):
        t = measurements.gemm_power_trace(f)
        for d in ("bf16", "fp8"):
            assert t[d]["power_capped"] and 680 < t[d]["power_w"] <= 700
            assert t[d]["sm_clock_mhz"] < 0.8 * t[d]["sm_clock_max_mhz"]
            assert t[d]["samples"] >= 30
        assert 600 < t["bf16"]["tflops"] < 700 and 1100 < t["fp8"]["tflops"] < 1300
        assert t["power_limit_w"] == 700.0
    with pytest.raises(ValueError, match="filename"):
        measurements.gemm_power_trace("overlap_held.csv")


# --- the whole-model runs -----------------------------------------------------------
def test_whole_model_check_is_the_step_model_beside_our_runs():
    runs = measurements.full_step_runs() + measurements.full_step_runs(
        measurements.RECOMPUTE_FILES, measurements.RECOMPUTE_RUN)
    rows = par.whole_model_check()
    assert len(rows) == len(runs) == 23
    for run, row in zip(runs, rows):
        spec = par.model(run["model"])
        if run["layers"] is not None:
            spec = dataclasses.replace(spec, layers=run["layers"])
        assert row["layers"] == spec.layers
        kw = dict(global_batch=run["batch"], micro_batch=run["batch"],
                  seq_len=run["seq_len"], recompute=row["recompute"],
                  precision=run["precision"],
                  recipe="compiled" if run["compiled"] else "eager")
        st = par.step_time(spec, par.WHOLE_MODEL_SYSTEM, (1, 1, 1),
                           recompute_cost="compiled" if run["compiled"] else "flops", **kw)
        plain = par.step_time(spec, par.WHOLE_MODEL_SYSTEM, (1, 1, 1), **kw)
        assert row["recipe"] == ("compiled" if run["compiled"] else "eager")
        assert row["model_tokens_per_s"] == pytest.approx(st.tokens_per_s, rel=1e-12)
        assert row["measured_tokens_per_s"] == run["tokens_per_s"]
        assert row["error"] == pytest.approx(st.tokens_per_s / run["tokens_per_s"] - 1)
        assert row["flops_recompute_error"] == pytest.approx(
            plain.tokens_per_s / run["tokens_per_s"] - 1)
        assert run["batch"] * run["seq_len"] / run["step_s"] == pytest.approx(
            run["tokens_per_s"], rel=1e-3)
        # within +-12% on every run (fitted or held out)
        assert -0.12 <= row["error"] <= 0.12, row
    held = [r for r in rows if not r["fitted"] and r["recompute"] in ("per-op", "full")
            and r["recipe"] == "compiled"]
    assert len(held) == 8
    # on the held-out runs with recomputation the measured cost beats the FLOP charge
    assert max(abs(r["error"]) for r in held) < \
        max(abs(r["flops_recompute_error"]) for r in held)
    by = {(r["precision"], r["recompute"]): r for r in rows
          if r["recipe"] == "compiled" and r["batch"] == 2 and r["model"] == "llama3-8b"}
    assert len(by) == 4
    # what the runs show: FP8 pays on this wide shard, full recompute costs time
    for rc in ("per-op", "full"):
        assert by[("fp8", rc)]["measured_tokens_per_s"] > \
            1.2 * by[("bf16", rc)]["measured_tokens_per_s"]
    for p in ("bf16", "fp8"):
        assert by[(p, "full")]["measured_tokens_per_s"] < \
            by[(p, "per-op")]["measured_tokens_per_s"]


def test_compiled_recompute_scale_is_the_fit_of_our_runs():
    fit = par.recompute_scale_fit()
    for p in ("bf16", "fp8"):
        for rc in ("per-op", "full"):
            assert par.compiled_recompute_scale(p, rc) == pytest.approx(
                fit[p][rc]["scale"], abs=0.006), (p, rc)
        assert par.compiled_recompute_scale(p, "none") == 1.0
        assert par.compiled_recompute_scale(p, "selective") == 1.0
    # the fit uses the 8B runs at one sequence only; the 70B-shape runs are held out
    assert {len(v["runs"]) for d in fit.values() for v in d.values()} <= {1, 2}
    flagged = {(r["model"], r["batch"]) for r in par.whole_model_check() if r["fitted"]}
    assert flagged == {("llama3-8b", 1)}


def test_compiled_recompute_changes_only_recomputed_work():
    kw = dict(global_batch=2, micro_batch=2, seq_len=8192, precision="fp8")
    for rc, cheaper in (("none", False), ("selective", False), ("full", True)):
        a = par.step_time("llama3-8b", "hgx-h200", (1, 1, 1), recompute=rc, **kw)
        b = par.step_time("llama3-8b", "hgx-h200", (1, 1, 1), recompute=rc,
                          recompute_cost="compiled", **kw)
        assert (b.total < a.total) == cheaper and b.total <= a.total
        assert b.memory.total == a.memory.total      # memory is not a cost of time


def test_preset_hardware_rows_and_summary():
    s = par.published_fp8_summary()
    pre, other = s["by_hardware"]["preset"], s["by_hardware"]["other"]
    assert pre["predicted"] + other["predicted"] == s["overall"]["predicted"]
    assert pre["within_25"] == 1.0
    for r in par.published_fp8_check():
        if r["source_id"].startswith("torchtitan-2024") or "asynctp" in r["source_id"]:
            assert not r["preset_hardware"]
        if r["gpu"].startswith("H100 SXM5") and r["system"] == "dgx-h100 x8 nodes":
            assert r["preset_hardware"]
