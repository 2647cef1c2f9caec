"""Mixture-of-experts models and expert parallelism (EP) in gpulab.parallelism:
parameter counts, memory with EP, the all-to-all per MoE layer, and the chooser."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulab import parallelism as par
from gpulab.parallelism.model import ModelSpec

# A tiny MoE written out by hand: h 64, 2 layers, 4 heads (MHA), GELU experts of 128,
# 4 experts, top-2, RMSNorm, no biases, tied embeddings, RoPE (no position table).
TINY = ModelSpec(name="tiny-moe", hidden=64, layers=2, heads=4, kv_heads=4,
                 ffn_hidden=256, vocab=256, seq_len=32, mlp="gelu",
                 tied_embeddings=True, learned_positions=False, norm="rmsnorm",
                 bias=False, num_experts=4, top_k=2, expert_ffn_hidden=128)


# --- parameter counts ------------------------------------------------------------
def test_tiny_moe_parameter_count_by_hand():
    attn = 4 * 64 * 64                  # Q, K, V, O (MHA)
    expert = 2 * 64 * 128               # fc1 + fc2 of one GELU expert
    router = 64 * 4
    norms = 2 * 64                      # two RMSNorms per layer
    layer = attn + router + 4 * expert + norms
    total = 2 * layer + 256 * 64 + 64   # embedding (tied) + final norm
    assert TINY.params == total == 181_056
    assert TINY.is_moe and not par.model("13b").is_moe


def test_mixtral_expert_and_total_counts():
    m = par.model("mixtral-8x7b")
    h, L, f, V, E, k = 4096, 32, 14336, 32000, 8, 2
    expert = 3 * h * f                  # SwiGLU: gate, up, down
    attn = 2 * h * h + 2 * h * 8 * 128  # Q, O; K, V with 8 KV heads of 128
    layer = attn + h * E + E * expert + 2 * h
    assert m.params == L * layer + 2 * V * h + h
    # Jiang et al. 2024 (arXiv:2401.04088): 47 B parameters, 13 B active per token
    assert round(m.params / 1e9) == 47
    active = m.params - L * (E - k) * expert
    assert round(active / 1e9) == 13


def test_dense_model_flops_unchanged_and_moe_flops_use_active_experts():
    # 6N with N = active parameters for an MoE: top-2 of 8 experts
    m = par.model("mixtral-8x7b")
    active = m.params - 32 * 6 * 3 * 4096 * 14336
    assert par.flops_per_step(m, 1000, method="6n") == 6.0 * active * 1000
    d = par.model("llama3-8b")
    assert par.flops_per_step(d, 1000, method="6n") == 6.0 * d.params * 1000


# --- memory ------------------------------------------------------------------------
def test_tiny_moe_state_memory_with_ep2_by_hand():
    # dp 4, ep 2, ZeRO-1, Megatron bf16 defaults: 2 B weight + 4 B fp32 grad + 12 B of
    # optimizer states (master 4, Adam 8), sharded over dp (dense) or dp/ep (experts)
    mem = par.training_memory(TINY, dp=4, zero=1, ep=2)
    experts_all = 2 * 4 * 2 * 64 * 128            # 131072
    dense = 181_056 - experts_all                 # 49984
    expert_here = experts_all // 2                # 4 experts / ep 2
    states = dense * (2 + 4 + 12 / 4) + expert_here * (2 + 4 + 12 / 2)
    assert mem.weights + mem.gradients + mem.optimizer == pytest.approx(states,
                                                                        rel=1e-12)
    assert states == 1_236_288
    assert mem.params_per_gpu == dense + expert_here


def test_ep1_equals_no_ep_and_dense_memory_unchanged():
    a = par.training_memory("mixtral-8x7b", 2, 1, 8, zero=1)
    b = par.training_memory("mixtral-8x7b", 2, 1, 8, zero=1, ep=1)
    assert a == b
    assert par.training_memory("13b", dp=8, zero=1, ep=1) == \
        par.training_memory("13b", dp=8, zero=1)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2]), pp=st.sampled_from([1, 2]),
       dp=st.sampled_from([8, 16, 32]), zero=st.sampled_from(par.ZERO_STAGES))
def test_more_ep_never_increases_memory(tp, pp, dp, zero):
    totals = [par.training_memory("mixtral-8x7b", tp, pp, dp, zero=zero, ep=e)
              for e in (1, 2, 4, 8)]
    states = [m.weights + m.gradients + m.optimizer for m in totals]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(states, states[1:]))
    assert states[-1] < states[0] or zero == 3


# --- communication -------------------------------------------------------------------
def test_alltoall_bytes_and_calls_per_layer():
    # b 1, s 4096, top-2, h 4096, BF16: each rank sends b s k h 2 bytes per alltoall;
    # dispatch + combine, forward + backward = 4 per MoE layer per micro-batch
    c = par.step_communication("mixtral-8x7b", "hgx-h200", (1, 1, 8), micro_batch=1,
                               micro_batches=3, seq_len=4096, ep=8)
    assert c.ep_bytes == 1 * 4096 * 2 * 4096 * 2
    assert c.ep_calls == 4 * 32 * 3
    one = par.expert_alltoall_time(4096, 4096, 8, "hgx-h200", top_k=2)
    assert one.message_bytes == c.ep_bytes
    assert c.ep == pytest.approx(32 * 3 * one.total, rel=1e-12)
    full = par.step_communication("mixtral-8x7b", "hgx-h200", (1, 1, 8),
                                  micro_batches=3, recompute="full", ep=8)
    assert full.ep_calls == 6 * 32 * 3


def test_tp_shares_the_tokens_and_sets_the_ep_stride():
    c = par.step_communication("mixtral-8x7b", "hgx-h200", (2, 1, 4), ep=4,
                               sequence_parallel=True)
    assert c.ep_bytes == 4096 / 2 * 2 * 4096 * 2
    one = par.expert_alltoall_time(2048, 4096, 4, "hgx-h200", stride=2)
    assert c.ep == pytest.approx(4 * 32 * one.per_call, rel=1e-12)


def test_expert_gradients_leave_the_dense_dp_group():
    # dp 8 = ep 8: every GPU holds one whole expert, with no replica to reduce with;
    # only the dense parameters' gradients (4 B each) go through the DP reduction
    m = par.model("mixtral-8x7b")
    c8 = par.step_communication(m, "hgx-h200", (1, 1, 8), zero=0, ep=8)
    c1 = par.step_communication(m, "hgx-h200", (1, 1, 8), zero=0)
    dense = m.params - 32 * 8 * 3 * 4096 * 14336
    assert c8.dp_bytes == dense * 4.0
    assert c1.dp_bytes == m.params * 4.0
    assert c8.dp < c1.dp / 3


def test_step_time_adds_the_alltoall_on_the_critical_path():
    kw = dict(global_batch=64, mfu=0.4)
    st1 = par.step_time("mixtral-8x7b", "hgx-h200", (1, 1, 8), ep=8, **kw)
    parts = st1.components()
    assert parts["ep_comm"] == st1.comm.ep > 0
    assert sum(parts.values()) == pytest.approx(st1.total, rel=1e-12)
    dense = par.step_time("llama3-8b", "hgx-h200", (1, 1, 8), **kw)
    assert "ep_comm" not in dense.components() and dense.ep_comm == 0.0


# --- the chooser ---------------------------------------------------------------------
def test_dense_picks_are_unchanged():
    # picks of the chooser before EP existed (same options)
    r = par.rank_layouts("13b", "hgx-h200", global_batch=64)
    assert str(r.best.layout) == "TP1 PP2 DP4"
    assert "ep" not in r.best.options
    opts = dict(recompute=("none", "selective"), sequence_parallel=(False, True))
    r70 = par.rank_layouts("70b", par.cluster("dgx-h100", 8), global_batch=256, **opts)
    assert str(r70.best.layout) == "TP4 PP4 DP4"
    assert r70.best.options == {"micro_batch": 1, "sequence_parallel": True,
                                "recompute": "selective"}
    again = par.rank_layouts("70b", par.cluster("dgx-h100", 8), global_batch=256,
                             ep=1, **opts)
    assert [x.step.total for x in again.valid] == [x.step.total for x in r70.valid]


def test_chooser_puts_ep_in_the_nvlink_domain_and_avoids_it_across_nodes():
    # 16 GPUs of Mixtral: on two DGX H100 nodes every EP group that fits in memory
    # crosses the NICs (TP8 x EP2), so the chooser runs without EP; in an NVL72 rack
    # the same 16 GPUs share one NVLink domain and EP8 wins.
    dgx = par.cluster("dgx-h100", 2)
    nvl = par.cluster("gb200-nvl72", 4)
    r_dgx = par.rank_layouts("mixtral-8x7b", dgx, global_batch=256)
    r_nvl = par.rank_layouts("mixtral-8x7b", nvl, global_batch=256)
    assert r_dgx.best.options["ep"] == 1
    best = r_nvl.best
    assert best.options["ep"] > 1
    assert best.layout.tp * best.options["ep"] <= nvl.nvlink_domain
    # the same EP layout: across nodes the alltoall costs several times more
    kw = dict(global_batch=256, ep=2, sequence_parallel=True)
    a = par.step_time("mixtral-8x7b", dgx, (8, 1, 2), **kw)
    b = par.step_time("mixtral-8x7b", nvl, (8, 1, 2), **kw)
    assert a.ep_comm > 3 * b.ep_comm


def test_chooser_explicit_ep_must_divide_dp():
    r = par.rank_layouts("mixtral-8x7b", "hgx-h200", global_batch=64, ep=8)
    assert all(x.options["ep"] == 8 for x in r.valid + r.invalid)
    assert all(x.layout.dp % 8 == 0 for x in r.valid)
    assert any("EP8 does not divide" in x.why for x in r.invalid)


# --- MoE with TP needs sequence parallelism (Megatron Core's rule) ------------------
def test_moe_with_tp_needs_sequence_parallel_everywhere():
    # Megatron Core's MoE layer refuses to train with TP > 1 and SP off (core_v0.19.0,
    # megatron/core/transformer/moe/moe_layer.py 629-633); the EP bytes assume SP
    kw = dict(global_batch=64)
    for ep in (1, 4):
        with pytest.raises(ValueError, match="sequence parallelism"):
            par.step_time("mixtral-8x7b", "hgx-h200", (2, 1, 4), ep=ep, **kw)
        with pytest.raises(ValueError, match="^sequence_parallel"):
            par.step_communication("mixtral-8x7b", "hgx-h200", (2, 1, 4), ep=ep)
        st = par.step_time("mixtral-8x7b", "hgx-h200", (2, 1, 4), ep=ep,
                           sequence_parallel=True, **kw)
        assert st.total > 0
    # TP1 needs nothing, and dense models keep the choice
    assert par.step_time("mixtral-8x7b", "hgx-h200", (1, 1, 8), ep=8, **kw).total > 0
    assert par.step_time("13b", "hgx-h200", (2, 1, 4), **kw).total > 0
    why = par.validate_layout("mixtral-8x7b", "hgx-h200", (2, 1, 4), global_batch=64)
    assert any("needs sequence parallelism" in w for w in why)


@pytest.mark.parametrize("sp", [False, (False, True), True])
def test_chooser_never_evaluates_moe_tp_without_sequence_parallel(sp):
    r = par.rank_layouts("mixtral-8x7b", par.cluster("dgx-h100", 2), global_batch=256,
                         sequence_parallel=sp)
    every = r.valid + r.invalid
    assert any(x.layout.tp > 1 for x in r.valid)        # forced on, not dropped
    for x in every:
        if x.layout.tp > 1:
            assert x.options["sequence_parallel"] is True, (x.layout, x.options)
        else:
            assert x.options["sequence_parallel"] is False
    # a dense model still tries both where asked
    d = par.rank_layouts("13b", "hgx-h200", global_batch=64, sequence_parallel=sp)
    tried = {x.options["sequence_parallel"] for x in d.valid + d.invalid
             if x.layout.tp > 1}
    assert tried == ({sp} if isinstance(sp, bool) else set(sp))


def test_nvl72_mixtral_pick_runs_with_sequence_parallelism():
    # the scale-out chapter's pick on 512 GB200 NVL72 GPUs (its CHOOSER options)
    nvl = par.cluster("gb200-nvl72", 128)
    assert nvl.n_gpus == 512 and nvl.nvlink_domain == 72
    r = par.rank_layouts("mixtral-8x7b", nvl, global_batch=1024, micro_batch=(1, 2, 4),
                         recompute=("none", "selective"),
                         sequence_parallel=(False, True))
    best = r.best
    assert f"{best.layout} EP{best.options['ep']}" == "TP2 PP1 DP256 EP8"
    assert best.options["sequence_parallel"] is True
    assert best.step.total == pytest.approx(par.step_time(
        "mixtral-8x7b", nvl, (2, 1, 256), global_batch=1024, micro_batch=4,
        recompute="selective", sequence_parallel=True, ep=8, zero=1).total,
        rel=1e-12)


# --- bad input -------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, param", [
    (dict(num_experts=4, top_k=5), "top_k"),
    (dict(num_experts=4, top_k=0), "top_k"),
    (dict(num_experts=0, top_k=2), "top_k"),
    (dict(num_experts=-1), "num_experts"),
    (dict(num_experts=4, top_k=1, expert_ffn_hidden=-3), "expert_ffn_hidden"),
])
def test_bad_moe_fields_name_the_parameter(kwargs, param):
    base = dict(name="x", hidden=64, layers=2, heads=4, kv_heads=4, ffn_hidden=128,
                vocab=256, seq_len=32)
    with pytest.raises(ValueError, match=param):
        ModelSpec(**base, **kwargs)


@pytest.mark.parametrize("call", [
    lambda: par.training_memory("mixtral-8x7b", dp=8, ep=3),      # not a divisor of 8
    lambda: par.training_memory("mixtral-8x7b", dp=2, ep=4),      # ep > dp
    lambda: par.training_memory("13b", dp=8, ep=2),               # dense
    lambda: par.step_time("mixtral-8x7b", "hgx-h200", (1, 1, 8), global_batch=64,
                          ep=16),
    lambda: par.rank_layouts("13b", "hgx-h200", global_batch=64, ep=2),
    lambda: par.rank_layouts("mixtral-8x7b", "hgx-h200", global_batch=64, ep=3),
])
def test_bad_ep_names_the_parameter(call):
    with pytest.raises(ValueError, match=r"^ep "):
        call()
