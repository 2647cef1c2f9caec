"""Tests of gpulab.parallelism against analytic oracles (papers' formulas)."""
from __future__ import annotations

import dataclasses

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from tests import strategies  # noqa: F401  (registers the "ci" profile)
from gpulab import specs, parallelism as par
from gpulab import systems

PRESETS = par.model_names()
pow2 = st.sampled_from([1, 2, 4, 8])
recomputes = st.sampled_from(par.RECOMPUTE)
zeros = st.sampled_from(par.ZERO_STAGES)


# --- model presets and parameter counts ------------------------------------------
def test_presets_exist_with_sources():
    assert set(PRESETS) == {"13b", "70b", "llama3-8b", "llama3-70b", "mixtral-8x7b",
                            "gpt3-5b", "gpt3-20b", "gpt3-175b", "llama2-7b",
                            "llama2-13b", "llama2-70b", "llama3-405b"}
    for name in PRESETS:
        assert par.model(name).source


def test_llama_parameter_counts_match_published_totals():
    # Hugging Face model cards / safetensors totals: 8,030,261,248 and 70,553,706,496
    assert par.parameter_count("llama3-8b") == 8_030_261_248
    assert par.parameter_count("llama3-70b") == 70_553_706_496
    # Llama 2 model cards' safetensors totals
    assert par.parameter_count("llama2-7b") == 6_738_415_616
    assert par.parameter_count("llama2-70b") == 68_976_648_192


@pytest.mark.parametrize("name", ["13b", "70b"])
def test_gpt_parameter_count_is_12Lh2_plus_extras(name):
    m = par.model(name)
    h, L, V, s = m.hidden, m.layers, m.vocab, m.seq_len
    per_layer = 12 * h * h + 13 * h          # matrices + biases (9h) + 2 LayerNorms
    expected = L * per_layer + V * h + s * h + 2 * h
    assert m.params == expected


def test_article_70b_shape_is_about_65b():
    assert 64e9 < par.parameter_count("70b") < 66e9


def test_modelspec_validates():
    with pytest.raises(ValueError, match="heads"):
        par.ModelSpec("x", hidden=100, layers=2, heads=3, kv_heads=3, ffn_hidden=400,
                      vocab=10, seq_len=8)
    with pytest.raises(ValueError, match="kv_heads"):
        par.ModelSpec("x", hidden=96, layers=2, heads=4, kv_heads=3, ffn_hidden=400,
                      vocab=10, seq_len=8)
    with pytest.raises(ValueError, match="mlp"):
        par.ModelSpec("x", hidden=96, layers=2, heads=4, kv_heads=4, ffn_hidden=400,
                      vocab=10, seq_len=8, mlp="relu")


# --- memory ----------------------------------------------------------------------
@pytest.mark.parametrize("name", PRESETS)
def test_model_states_are_18_bytes_per_param_without_sharding(name):
    # Megatron-LM's defaults: bf16 weights, fp32 gradients, fp32 master + Adam
    m = par.training_memory(name)
    states = m.weights + m.gradients + m.optimizer
    assert states == pytest.approx(18 * par.parameter_count(name), rel=1e-12)
    assert m.weights == pytest.approx(2 * par.parameter_count(name), rel=1e-12)


def test_70b_states_are_about_1_tb():
    m = par.training_memory("llama3-70b")
    assert (m.weights + m.gradients + m.optimizer) / 1e12 == pytest.approx(1.270,
                                                                          abs=1e-3)


@given(dp=st.integers(1, 64), tp=pow2, pp=st.sampled_from([1, 2, 4, 5]))
def test_zero_stage_oracles(dp, tp, pp):
    base = par.training_memory("13b", tp, pp, dp, zero=0)
    z1 = par.training_memory("13b", tp, pp, dp, zero=1)
    z2 = par.training_memory("13b", tp, pp, dp, zero=2)
    z3 = par.training_memory("13b", tp, pp, dp, zero=3)
    assert z1.optimizer == pytest.approx(base.optimizer / dp)
    assert (z1.weights, z1.gradients) == (base.weights, base.gradients)
    assert z2.gradients == pytest.approx(base.gradients / dp)
    assert z2.weights == base.weights
    for part in ("weights", "gradients", "optimizer"):
        assert getattr(z3, part) == pytest.approx(getattr(base, part) / dp)
    assert z3.activations == base.activations


def test_model_states_split_over_tp_and_pp():
    one = par.training_memory("llama3-70b")
    eight = par.training_memory("llama3-70b", tp=8)
    assert eight.weights == pytest.approx(one.weights / 8)


@given(b=st.integers(1, 8), s=st.sampled_from([512, 2048, 4096]))
def test_activation_formula_at_t1(b, s):
    m = par.model("70b")
    h, a = m.hidden, m.heads
    sbh = s * b * h
    act = par.activation_memory_per_layer(m, 1, micro_batch=b, seq_len=s)
    assert act == pytest.approx(sbh * (34 + 5 * a * s / h))
    sel = par.activation_memory_per_layer(m, 1, micro_batch=b, seq_len=s,
                                          recompute="selective")
    assert sel == pytest.approx(34 * sbh)
    full = par.activation_memory_per_layer(m, 1, micro_batch=b, seq_len=s,
                                           recompute="full")
    assert full == pytest.approx(2 * sbh)
    # sequence parallelism changes nothing at t = 1
    assert par.activation_memory_per_layer(m, 1, micro_batch=b, seq_len=s,
                                           sequence_parallel=True) == act


@given(t=st.sampled_from([2, 4, 8]))
def test_activation_formula_with_tp_and_sp(t):
    m = par.model("13b")
    s, b, h, a = 2048, 1, m.hidden, m.heads
    sbh = s * b * h
    tp = par.activation_memory_per_layer(m, t, seq_len=s)
    assert tp == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    sp = par.activation_memory_per_layer(m, t, seq_len=s, sequence_parallel=True)
    assert sp == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    assert sp < tp


@given(pp=st.sampled_from([1, 2, 4, 8]), m=st.integers(1, 32))
def test_1f1b_first_stage_holds_min_p_m_microbatches(pp, m):
    per = par.activation_memory_per_layer("13b")
    mem = par.training_memory("13b", pp=pp, micro_batches=m)
    assert mem.activations == pytest.approx(40 / pp * per * min(pp, m))
    assert mem.in_flight == min(pp, m)


def test_memory_parts_sum_to_total():
    mem = par.training_memory("llama3-70b", 8, 4, 2, zero=1, recompute="selective")
    d = mem.as_dict()
    assert d["total"] == pytest.approx(d["weights"] + d["gradients"] + d["optimizer"]
                                       + d["activations"])


def test_inference_kv_cache_oracle():
    m = par.model("llama3-70b")
    inf = par.inference_memory(m, tp=1, batch=2, seq_len=4096)
    assert inf.kv_cache == 2 * 80 * 8 * 128 * 4096 * 2 * 2
    eight = par.inference_memory(m, tp=8, batch=2, seq_len=4096)
    assert eight.kv_cache == inf.kv_cache / 8
    sixteen = par.inference_memory(m, tp=16, batch=2, seq_len=4096)
    assert sixteen.kv_cache == eight.kv_cache          # replicated KV heads
    assert inf.total == inf.weights + inf.kv_cache


# --- counts, bubble, flops --------------------------------------------------------
def test_tp_allreduce_count_is_four_per_layer_per_microbatch():
    assert par.tp_allreduce_count() == 4
    assert par.tp_allreduce_count(sequence_parallel=True) == 4
    assert par.tp_allreduce_count(recompute="full") == 6


@given(tp=st.sampled_from([2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       m=st.integers(1, 16))
def test_tp_calls_per_step(tp, pp, m):
    assume(tp * pp <= 8)
    c = par.step_communication("13b", "hgx-h200", (tp, pp, 1), micro_batches=m)
    assert c.tp_calls == 4 * (40 // pp) * m
    assert c.tp > 0


@given(p=st.integers(1, 64), m=st.integers(1, 512), v=st.integers(1, 8))
def test_bubble_oracles(p, m, v):
    assert par.bubble_fraction(p, m) == pytest.approx((p - 1) / m)
    assert par.bubble_fraction(p, m, v) == pytest.approx((p - 1) / (v * m))


@pytest.mark.parametrize("name", ["13b", "70b"])
def test_narayanan_flops_formula(name):
    m = par.model(name)
    B, s, L, h, V = 8, m.seq_len, m.layers, m.hidden, m.vocab
    f = par.flops_per_step(m, B * s)
    assert f == pytest.approx(72 * B * s * L * h**2 * (1 + s / (6 * h)
                                                      + V / (12 * h * L)))
    full = par.flops_per_step(m, B * s, recompute="full")
    assert full == pytest.approx(96 * B * s * L * h**2 * (1 + s / (6 * h)
                                                         + V / (16 * h * L)))


def test_six_n_rule_close_to_detail_for_short_sequences():
    m = par.model("llama3-70b")
    detail = par.flops_per_step(m, 1e6, seq_len=512)
    rule = par.flops_per_step(m, 1e6, seq_len=512, method="6n")
    assert rule == pytest.approx(6 * m.params * 1e6)
    assert detail == pytest.approx(rule, rel=0.05)


# --- validation -------------------------------------------------------------------
def test_divisibility_reasons_are_clear():
    why = par.validate_layout("13b", "hgx-h200", (3, 1, 1), global_batch=64,
                              n_gpus=3)
    assert any("40 attention heads" in w and "TP3" in w for w in why)
    why = par.validate_layout("llama3-70b", "hgx-h200", (1, 3, 1), global_batch=64,
                              n_gpus=3)
    assert any("80 layers" in w and "PP3" in w for w in why)
    why = par.validate_layout("13b", "hgx-h200", (1, 1, 8), global_batch=60)
    assert any("global_batch 60" in w for w in why)
    why = par.validate_layout("13b", "hgx-h200", (2, 2, 2), global_batch=64,
                              n_gpus=4)
    assert any("not the 4 GPUs" in w for w in why)


def test_gqa_kv_heads_limit_tp_in_training():
    spec = par.model("llama3-8b")
    big = par.cluster("hgx-h200", 2)
    why = par.validate_layout(spec, big, (16, 1, 1), global_batch=16)
    assert any("8 KV heads" in w for w in why)


def test_memory_reason_names_sizes():
    why = par.validate_layout("70b", "h100-pcie", (8, 1, 1), global_batch=64)
    assert len(why) == 1 and "GB per GPU" in why[0] and "usable" in why[0]


def test_step_time_refuses_broken_layouts_but_not_oversized_ones():
    with pytest.raises(ValueError, match="heads"):
        par.step_time("13b", "hgx-h200", (3, 1, 1), global_batch=63)
    st_ = par.step_time("70b", "h100-pcie", (8, 1, 1), global_batch=64)
    assert not st_.fits and any("GB per GPU" in n for n in st_.notes)


# --- step time --------------------------------------------------------------------
@given(tp=pow2, pp=st.sampled_from([1, 2, 4, 8]), rec=recomputes, zero=zeros,
       sp=st.booleans(), system=st.sampled_from(["hgx-h200", "h100-pcie"]))
def test_step_components_sum_to_total(tp, pp, rec, zero, sp, system):
    dp = max(1, 8 // (tp * pp))
    assume(tp * pp * dp == 8)
    st_ = par.step_time("13b", system, (tp, pp, dp), global_batch=64,
                        recompute=rec, zero=zero, sequence_parallel=sp)
    parts = st_.components()
    assert sum(parts.values()) == pytest.approx(st_.total, rel=1e-12)
    assert all(v >= 0 for v in parts.values())
    assert st_.tokens_per_s == pytest.approx(64 * 2048 / st_.total)
    # end-to-end MFU cannot beat the compute efficiency (recompute, comm, bubble add)
    assert 0 < st_.mfu <= max(st_.efficiency, st_.logits_efficiency) + 1e-12


def test_nvlink_beats_pcie_for_tensor_parallelism():
    fast = par.step_time("13b", "hgx-h200", (8, 1, 1), global_batch=64)
    slow = par.step_time("13b", "h100-pcie", (8, 1, 1), global_batch=64)
    assert slow.tp_comm > 5 * fast.tp_comm
    # per-shape efficiency: the H100's lower HBM bandwidth (and, for a PCIe card,
    # lower peak) can only make the compute slower
    assert slow.compute >= fast.compute
    # a flat MFU: compute time scales with 1 / dense peak only
    flat = [par.step_time("13b", s, (8, 1, 1), global_batch=64, mfu=0.4)
            for s in ("hgx-h200", "h100-pcie")]
    peaks = [systems.get(s).gpu_spec.fp16_dense_flops for s in ("hgx-h200", "h100-pcie")]
    assert flat[0].compute * peaks[0] == pytest.approx(flat[1].compute * peaks[1])


def test_dp_group_across_nodes_is_slower_than_inside_one():
    big = par.cluster("hgx-h200", 8)
    inside = par.step_communication("13b", big, (1, 1, 8), zero=0)
    across = par.step_communication("13b", big, (8, 1, 8), zero=0)
    # per byte of gradient buffer, the DP group of one GPU per node is slower
    assert across.dp / across.dp_bytes > 3 * inside.dp / inside.dp_bytes
    assert any("cross nodes" in n for n in across.notes)


def test_tp_wider_than_nvlink_domain_is_noted():
    big = par.cluster("hgx-h200", 8)
    st_ = par.step_time("70b", big, (16, 1, 4), global_batch=64)
    assert any("TP spans NVLink domains" in n for n in st_.notes)
    inside = par.step_time("70b", big, (8, 2, 4), global_batch=64)
    # per call: never faster than inside one node. On two nodes NCCL's NVLSTree is
    # bound by the in-switch reduction (the eight NICs carry the buffer once), so it
    # costs about what NVLS costs on one node; without NVLS the NICs bind
    per_call = st_.tp_comm / st_.comm.tp_calls
    assert per_call >= inside.tp_comm / inside.comm.tp_calls
    off = par.step_time("70b", big, (16, 1, 4), global_batch=64, nvls=False)
    off_in = par.step_time("70b", big, (8, 2, 4), global_batch=64, nvls=False)
    assert off.tp_comm / off.comm.tp_calls > 1.05 * off_in.tp_comm / off_in.comm.tp_calls


def test_full_dp_overlap_hides_no_more_than_last_backward():
    st_ = par.step_time("13b", "h100-pcie", (1, 1, 8), global_batch=64, zero=0,
                        reserve=0.0)
    hidden = st_.comm.dp - st_.dp_comm
    assert hidden <= st_.compute / st_.micro_batches * 2 / 3 + 1e-12
    none = par.step_time("13b", "h100-pcie", (1, 1, 8), global_batch=64, zero=0,
                         dp_overlap=0.0, reserve=0.0)
    assert none.dp_comm == pytest.approx(none.comm.dp)


# --- chooser ----------------------------------------------------------------------
def _ranking(reserve=0.1, system="hgx-h200", spec="13b"):
    return par.rank_layouts(spec, system, global_batch=64,
                            recompute=("none", "selective"),
                            sequence_parallel=(False, True), reserve=reserve)


def test_chooser_never_returns_a_layout_that_does_not_fit():
    for system in ("hgx-h200", "h100-pcie"):
        r = _ranking(system=system)
        cap = systems.get(system).gpu_spec.memory_bytes * 0.9
        assert r.valid
        for x in r.valid:
            assert x.step.fits and x.step.memory.total <= cap and not x.reasons
        times = [x.step.total for x in r.valid]
        assert times == sorted(times)
        assert [x.rank for x in r.valid] == list(range(1, len(r.valid) + 1))
        assert r.best.why.startswith("fastest")
        for x in r.invalid:
            assert x.reasons and x.rank is None


def test_chooser_reports_invalid_layouts_without_raising():
    r = par.rank_layouts("70b", "h100-pcie", global_batch=64, micro_batch=2,
                         seq_len=4096, zero=3, recompute=par.RECOMPUTE)
    assert r.best is None and not r.valid
    assert len(r.invalid) >= 10
    assert all(x.reasons for x in r.invalid)
    r = par.rank_layouts("13b", "hgx-h200", 6, global_batch=64)
    assert any("attention heads" in x.why for x in r.invalid)


def _keys(r):
    return {(x.layout, tuple(sorted(x.options.items()))) for x in r.valid}


@given(a=st.floats(0.0, 0.9), b=st.floats(0.0, 0.9))
def test_more_memory_never_makes_fewer_layouts_fit(a, b):
    lo, hi = sorted((a, b))
    assert _keys(_ranking(reserve=hi)) <= _keys(_ranking(reserve=lo))


def test_bigger_gpu_memory_fits_a_superset():
    h100 = _keys(_ranking(system="dgx-h100"))
    h200 = _keys(_ranking(system="hgx-h200"))
    assert h100 < h200


def test_chooser_64_gpus_covers_every_layout():
    # its speed is measured in benchmarks/chooser.py, not here
    big = par.cluster("hgx-h200", 8)
    r = par.rank_layouts("llama3-70b", big, global_batch=512,
                         recompute=("selective", "full"))
    assert len(r.valid) + len(r.invalid) == 2 * 28
    assert r.best.layout.tp <= 8


def test_ranking_table_rows():
    rows = _ranking().table()
    assert rows[0]["rank"] == 1 and rows[0]["step_s"] > 0


# --- cluster, speedup, ROI ------------------------------------------------------
def test_cluster_scales_nodes():
    big = par.cluster("hgx-h200", 8)
    assert (big.n_gpus, big.nodes, big.nvlink_domain) == (64, 8, 8)
    assert par.cluster("hgx-h200", 1) is systems.get("hgx-h200")
    assert par.cluster("hgx-h200-2node", 4).n_gpus == 32
    with pytest.raises(ValueError, match="nodes"):
        par.cluster("h100-pcie", 2)


def test_article_speedup_is_not_its_slowdown():
    fast, slow = 1 / 3.2, 1 / 2.1
    assert par.speedup(fast, slow) == pytest.approx(3.2 / 2.1 - 1)
    assert par.slowdown(fast, slow) == pytest.approx(1 - 2.1 / 3.2)
    assert par.speedup(fast, slow) > 0.5 > 0.35 > par.slowdown(fast, slow)


@given(f=st.floats(1e-3, 1e3), s=st.floats(1e-3, 1e3))
def test_speedup_slowdown_identity(f, s):
    g, d = par.speedup(f, s), par.slowdown(f, s)
    assert (1 + g) * (1 - d) == pytest.approx(1.0)


def test_roi_breakeven_price():
    r = par.nvlink_roi(1.0, 1.5, tokens_per_step=1e6, price_fast=1.5, price_slow=1.0,
                       n_gpus=8, project_tokens=1e12)
    assert r.breakeven_price_ratio == pytest.approx(1.5)
    assert r.cost_fast == pytest.approx(r.cost_slow)        # exactly at break-even
    assert r.project_s_slow == pytest.approx(1.5 * r.project_s_fast)
    assert r.time_saved_s == pytest.approx(r.project_s_slow - r.project_s_fast)
    assert r.cost_per_mtoken_fast == pytest.approx(r.cost_fast / 1e6)


def test_assumptions_have_sources():
    table = yaml.safe_load(specs.read_data_text(specs.ASSUMPTION_TABLES["parallelism"]))
    for key, rec in table.items():
        assert rec["source"] and rec["accessed"], key
    assert par.assumption("weight_bytes") + par.assumption("grad_bytes") \
        + par.assumption("master_weight_bytes") + par.assumption("adam_state_bytes") \
        == 18


def test_layout_dataclass():
    lay = par.Layout(2, 4, 1, virtual=2)
    assert lay.n_gpus == 8 and str(lay) == "TP2 PP4 DP1 v2"
    with pytest.raises(ValueError, match="tp"):
        par.Layout(0, 1, 1)
    assert dataclasses.replace(lay, dp=2).n_gpus == 16


def test_cluster_can_borrow_a_network_for_pcie_servers():
    with pytest.raises(ValueError, match="nodes"):
        par.cluster("h100-pcie", 2)
    big = par.cluster("h100-pcie", 2, network_from="dgx-h100")
    assert big.n_gpus == 16 and big.nvlink.fabric == "none"
    assert big.network == par.cluster("dgx-h100", 2).network
    # a system with its own network keeps it
    assert par.cluster("hgx-h200-2node", 4, network_from="dgx-h100").network == \
        par.cluster("hgx-h200-2node", 4).network
