"""Context parallelism and uneven pipeline splits in the step model: oracles by hand."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from gpulab import measurements, parallelism as par, specs
from gpulab.parallelism import efficiency as eff_mod

SYSTEM = "hgx-h200"


def test_layout_with_cp():
    lay = par.Layout(2, 1, 2, cp=2)
    assert lay.n_gpus == 8 and str(lay) == "TP2 PP1 CP2 DP2"
    assert par.Layout(1, 1, 8).cp == 1 and str(par.Layout(1, 2, 4, 2)) == "TP1 PP2 DP4 v2"
    st_ = par.step_time("llama3-8b", SYSTEM, (1, 1, 4, 1, 2), global_batch=8,
                        seq_len=8192, mfu=0.4)
    assert st_.layout == par.Layout(1, 1, 4, 1, 2)


def test_same_flops_per_gpu_at_a_flat_efficiency():
    kw = dict(global_batch=16, seq_len=8192, mfu=0.4, zero=1)
    dp8 = par.step_time("llama3-8b", SYSTEM, (1, 1, 8), **kw)
    cp2 = par.step_time("llama3-8b", SYSTEM, (1, 1, 4, 1, 2), **kw)
    # CP splits each sequence, DP the batch: the FLOPs per GPU are the same
    assert cp2.compute == pytest.approx(dp8.compute, rel=1e-12)
    # gradients reduce over DP x CP = 8 ranks either way: the same DP collectives
    assert cp2.comm.dp_parts == pytest.approx(dp8.comm.dp_parts, rel=1e-12)
    assert set(cp2.components()) == set(dp8.components()) | {"cp_comm"}
    assert math.fsum(cp2.components().values()) == pytest.approx(cp2.total, rel=1e-12)


def test_cp_halves_tp_and_pp_messages_and_sets_the_kv_chunk():
    m = par.model("llama3-70b")
    a = par.step_communication(m, par.cluster(SYSTEM, 2), (4, 2, 2), seq_len=8192,
                               sequence_parallel=True, micro_batches=4)
    b = par.step_communication(m, par.cluster(SYSTEM, 2), (4, 2, 1, 1, 2), seq_len=8192,
                               sequence_parallel=True, micro_batches=4)
    assert b.tp_bytes == a.tp_bytes / 2 and b.pp_bytes == a.pp_bytes / 2
    # K and V of 8192 / 2 tokens, 8 KV heads over TP4, head dim 128, BF16
    assert b.cp_bytes == 2 * 4096 * (8 // 4) * 128 * 2
    assert a.cp_bytes == 0 and a.cp_kv_s == 0
    assert 0 < b.cp_kv_s < b.cp_kv_dkv_s


def test_cp_exposed_by_hand():
    # nothing to hide behind: forward cp-1 sends, backward 2 + (cp-2) double sends
    assert par.cp_exposed(1.0, 2.0, 0.0, 2) == pytest.approx(1.0 + 2.0)
    assert par.cp_exposed(1.0, 2.0, 0.0, 4) == pytest.approx(3.0 + 2.0 + 2 * 2.0)
    assert par.cp_exposed(1.0, 2.0, 0.0, 4, "full") == pytest.approx(6.0 + 6.0)
    assert par.cp_exposed(1.0, 2.0, 0.0, 1) == 0.0
    # attention of 3 c units: a forward step hides 1, a backward step 2
    assert par.cp_exposed(1.5, 2.5, 3 * 4, 4) == pytest.approx(3 * 0.5 + 0 + 2 * 0.5)
    assert par.cp_exposed(1e-3, 2e-3, 1.0, 8) == 0.0


@settings(max_examples=60, deadline=None)
@given(kv=st.floats(0, 1), extra=st.floats(0, 1), a=st.floats(0, 10), more=st.floats(0, 10),
       cp=st.integers(1, 16))
def test_cp_exposed_falls_with_attention_and_is_bounded(kv, extra, a, more, cp):
    kv2 = kv + extra
    t0 = par.cp_exposed(kv, kv2, a, cp)
    t1 = par.cp_exposed(kv, kv2, a + more, cp)
    assert 0.0 <= t1 <= t0 + 1e-15
    # never more than every send in full
    assert t0 <= (cp - 1) * kv + (2 * kv + max(cp - 2, 0) * kv2 if cp > 1 else 0) + 1e-12


def test_shard_with_cp_does_one_cp_th_of_the_attention():
    m = par.model("llama3-8b")
    g = specs.gpu("H200")
    whole = eff_mod.spec_attention_time(m, 1, 65536, 1, g)
    assert eff_mod.spec_attention_time(m, 1, 65536, 1, g, cp=4) == \
        pytest.approx(whole / 4, rel=1e-12)
    t = eff_mod.shard_terms(4096, 1, 2048, 1, kv_len=8192)
    assert t["attention_flops"] == 12.0 * 2048 * 8192 * 4096
    assert t["gemm_flops"] == eff_mod.shard_terms(4096, 1, 2048, 1)["gemm_flops"]


def test_memory_with_cp():
    kw = dict(micro_batch=1, zero=1, recompute="selective")
    cp = par.training_memory("llama3-8b", dp=4, cp=2, seq_len=8192, **kw)
    dp = par.training_memory("llama3-8b", dp=8, seq_len=8192, **kw)
    half = par.training_memory("llama3-8b", dp=8, seq_len=4096, **kw)
    assert cp.optimizer == pytest.approx(dp.optimizer, rel=1e-12)   # sharded over 8
    assert cp.activations == pytest.approx(half.activations, rel=1e-12)
    with pytest.raises(ValueError, match="cp must divide seq_len"):
        par.training_memory("llama3-8b", cp=3, seq_len=8192)


def test_validate_needs_two_chunks_per_cp_rank():
    why = par.validate_layout("llama3-8b", SYSTEM, (1, 1, 2, 1, 4), global_batch=8,
                              seq_len=8188)
    assert any("2 x CP4" in w for w in why)
    assert par.validate_layout("llama3-8b", SYSTEM, (1, 1, 2, 1, 4), global_batch=8,
                               seq_len=8192, recompute="full", zero=1) == []
    why = par.validate_layout("llama3-8b", SYSTEM, (1, 1, 4, 1, 4), global_batch=8)
    assert any("TP x CP x PP x DP = 1 x 4 x 1 x 4 = 16" in w for w in why)


@settings(max_examples=80, deadline=None)
@given(layers=st.integers(1, 200), pp=st.integers(1, 64))
def test_stage_layers_properties(layers, pp):
    if pp > layers:
        with pytest.raises(ValueError, match="pp"):
            par.stage_layers(layers, pp, "uneven")
        return
    busy, last = par.stage_layers(layers, pp, "uneven")
    assert last <= layers / pp <= busy and busy - last <= 1
    assert (pp - 1) * busy + last >= layers       # the stages can hold every layer
    if layers % pp == 0:
        assert par.stage_layers(layers, pp) == (layers // pp,) * 2


def test_uneven_split_paces_on_sixteen_of_126_layers():
    m = par.model("llama3-405b")
    system = par.cluster("dgx-h100", 8)
    kw = dict(global_batch=64, micro_batch=1, seq_len=8192, sequence_parallel=True,
              mfu=0.4, precision="fp8")
    with pytest.raises(ValueError, match="126 layers do not split over PP8"):
        par.step_time(m, system, (8, 8, 1), **kw)
    st_ = par.step_time(m, system, (8, 8, 1), pipeline_split="uneven", **kw)
    tokens = 64 * 8192.0
    peak = system.gpu_spec.fp8_dense_flops
    flops = par.flops_per_step(m, tokens, seq_len=8192)
    layer_part = par.layer_flops(m, tokens, seq_len=8192) * 126
    logits = flops - layer_part
    expect = max(layer_part * 16 / 126, layer_part * 15 / 126 + logits) / (8 * 0.4 * peak)
    assert st_.compute == pytest.approx(expect, rel=1e-9)


# --- attention backends ---------------------------------------------------------------
def test_attention_backend_ratio_reads_the_fit_shape():
    k = measurements.attention_kernels()
    for s in (2048, 8192, 262144):
        measured = k[("cudnn", "llama3-8b-tp1", "causal", s)]["fwd_bwd_s"] \
            / k[("flash", "llama3-8b-tp1", "causal", s)]["fwd_bwd_s"]
        assert par.attention_backend_ratio(s) == pytest.approx(measured, rel=1e-12)
    # between two measured lengths: between their ratios; outside: the end values
    lo, hi = par.attention_backend_ratio(8192), par.attention_backend_ratio(16384)
    assert min(lo, hi) <= par.attention_backend_ratio(11585) <= max(lo, hi)
    assert par.attention_backend_ratio(512) == par.attention_backend_ratio(2048)
    assert par.attention_backend_ratio(10**6) == par.attention_backend_ratio(262144)
    assert par.attention_backend_ratio(10**6, "flash") == 1.0


def test_attention_backend_held_out_shape():
    rows = par.attention_backend_check()
    assert [r["seq_len"] for r in rows] == [2 ** k for k in range(11, 19)]
    # from 8K tokens on within 3% on the held-out head shape; at 2K the thin 405B shard
    # (16 heads, 1 KV head) gains far less from cuDNN than the 8B one
    assert max(abs(r["error"]) for r in rows if r["seq_len"] >= 8192) < 0.03
    assert rows[0]["error"] < -0.25


def test_cudnn_only_changes_the_attention_term():
    g = specs.gpu("H100")
    terms = eff_mod.shard_terms(4096, 1, 8192, 1, qkv_out=6144, ffn_hidden=14336,
                                swiglu=True)
    attn = terms["attention_flops"] / (eff_mod.coefficients("bf16")["attention_efficiency"]
                                       * eff_mod.peak_flops(g, "bf16"))
    r = par.attention_backend_ratio(8192)
    for precision in ("bf16", "fp8"):
        flash = eff_mod.recipe_shard_time(terms, g, precision, "compiled")
        cudnn = eff_mod.recipe_shard_time(terms, g, precision, "compiled",
                                          attention="cudnn")
        assert flash - cudnn == pytest.approx((1 - r) * attn, rel=1e-9)
    kw = dict(global_batch=8, seq_len=8192, zero=1, precision="fp8")
    a = par.step_time("llama3-8b", "dgx-h100", (1, 1, 8), **kw)
    b = par.step_time("llama3-8b", "dgx-h100", (1, 1, 8), attention_backend="cudnn", **kw)
    assert b.total < a.total and b.efficiency > a.efficiency


def test_a_ring_across_nodes_is_paced_by_the_network():
    m = par.model("llama3-70b")
    two = par.cluster(SYSTEM, 2)
    inside = par.step_communication(m, two, (4, 1, 1, 1, 2), seq_len=8192,
                                    sequence_parallel=True)
    across = par.step_communication(m, two, (4, 1, 1, 1, 4), seq_len=16384,
                                    sequence_parallel=True)
    assert inside.cp_bytes == across.cp_bytes            # same chunk: 4096 tokens
    # TP4 x CP4 = 16 GPUs: the ring spans both nodes, its sends cross the network
    assert across.cp_kv_s > 2 * inside.cp_kv_s
    assert any("CP rings cross nodes" in n for n in across.notes)


def test_chooser_tries_cp_degrees():
    kw = dict(global_batch=16, seq_len=131072, zero=3, sequence_parallel=True,
              recompute="full")
    system = par.cluster(SYSTEM, 4)
    plain = par.rank_layouts("llama3-70b", system, **kw)
    with_cp = par.rank_layouts("llama3-70b", system, cp=(1, 2, 4), **kw)
    assert all(r.layout.cp == 1 for r in plain.valid + plain.invalid)
    cps = {r.layout.cp for r in with_cp.valid}
    assert cps == {1, 2, 4}
    # the CP-1 candidates are the same layouts as without the option
    assert sorted(str(r.layout) for r in with_cp.valid if r.layout.cp == 1) == \
        sorted(str(r.layout) for r in plain.valid)
    # every candidate uses all 32 GPUs
    assert all(r.layout.n_gpus == 32 for r in with_cp.valid)
    assert with_cp.best.step.total <= plain.best.step.total


def test_full_recompute_keeps_one_layer_whole():
    kw = dict(micro_batch=1, seq_len=8192, sequence_parallel=True)
    full = par.training_memory("llama3-70b", tp=4, recompute="full", **kw)
    sel = par.training_memory("llama3-70b", tp=4, recompute="selective", **kw)
    one_in = par.activation_memory_per_layer("llama3-70b", 4, recompute="full", **kw)
    one_sel = par.activation_memory_per_layer("llama3-70b", 4, recompute="selective", **kw)
    assert full.activations == pytest.approx(80 * one_in + one_sel, rel=1e-12)
    assert sel.activations == pytest.approx(80 * one_sel, rel=1e-12)
