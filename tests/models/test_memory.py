"""Model-state memory of mixed-precision Adam: Megatron-LM's and ZeRO's accounting.

Oracles: the Megatron-LM documentation's table ("Distributed Optimizer": bytes per
parameter without and with the distributed optimizer) and the ZeRO paper
(Rajbhandari et al. 2020, sections 3.1 and 5, Figure 1).
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import strategies  # noqa: F401  (registers the "ci" profile)
from gpulab import specs, parallelism as par

dps = st.integers(1, 4096)
zeros = st.sampled_from(par.ZERO_STAGES)
dtypes = st.sampled_from(par.DTYPES)
copies = st.sampled_from([None, True, False])

#: Megatron-LM docs table: (param dtype, grad dtype) -> (non-distributed, a, b) with
#: a + b/d bytes per parameter under the distributed optimizer.
MEGATRON = {("fp16", "fp16"): (20, 4, 16), ("bf16", "fp32"): (18, 6, 12),
            ("fp32", "fp32"): (16, 8, 8)}
#: ZeRO's mixed-precision Adam: fp16 weights and gradients, K = 12, no fp32 grad copy.
ZERO_PAPER = dict(param_dtype="fp16", grad_dtype="fp16", fp32_grad_copy=False)


# --- per-parameter oracles ---------------------------------------------------------
@given(d=dps)
def test_megatron_docs_table(d):
    for (p, g), (plain, a, b) in MEGATRON.items():
        assert par.model_state_bytes(d, 0, param_dtype=p, grad_dtype=g)["total"] \
            == pytest.approx(plain)
        assert par.model_state_bytes(d, 1, param_dtype=p, grad_dtype=g)["total"] \
            == pytest.approx(a + b / d)


@given(d=dps)
def test_megatron_defaults_are_bf16_params_fp32_grads(d):
    got = par.model_state_bytes(d, 1)
    assert got["total"] == pytest.approx(6 + 12 / d)
    assert (got["weights"], got["gradients"], got["grad_copy"]) == (2, 4, 0)
    assert got["master"] == pytest.approx(4 / d) and got["adam"] == pytest.approx(8 / d)
    # fp16 weights keep fp16 gradients and an fp32 copy in the optimizer
    assert par.model_state_bytes(d, 1, param_dtype="fp16")["total"] \
        == pytest.approx(4 + 16 / d)


@given(d=dps)
def test_zero_paper_stages(d):
    # Rajbhandari et al. 2020, sec. 5: P_os 4 + K/d, P_os+g 2 + (2 + K)/d, all 16/d
    expect = [16, 4 + 12 / d, 2 + 14 / d, 16 / d]
    for z, e in enumerate(expect):
        assert par.model_state_bytes(d, z, **ZERO_PAPER)["total"] == pytest.approx(e)


def test_zero_paper_figure_1():
    # Figure 1: 7.5B parameters, N_d = 64, K = 12: 120, 31.4, 16.6 and 1.9 GB per GPU
    psi = 7.5e9
    got = [psi * par.model_state_bytes(64, z, **ZERO_PAPER)["total"] / 1e9
           for z in range(4)]
    assert [round(g, 1) for g in got] == [120.0, 31.4, 16.6, 1.9]


@given(d=dps, z=zeros, p=dtypes, g=dtypes, c=copies)
def test_parts_sum_and_shard_by_stage(d, z, p, g, c):
    got = par.model_state_bytes(d, z, param_dtype=p, grad_dtype=g, fp32_grad_copy=c)
    one = par.model_state_bytes(1, z, param_dtype=p, grad_dtype=g, fp32_grad_copy=c)
    assert got["total"] == pytest.approx(sum(got[k] for k in par.STATE_PARTS))
    sharded = {"weights": z >= 3, "gradients": z >= 2, "master": z >= 1,
               "grad_copy": z >= 1, "adam": z >= 1}
    for k, is_sharded in sharded.items():
        assert got[k] == pytest.approx(one[k] / d if is_sharded else one[k])
    assert one["weights"] == par.DTYPE_BYTES[p]
    assert one["gradients"] == par.DTYPE_BYTES[g]
    assert one["master"] == (0 if p == "fp32" else 4)
    want_copy = (par.DTYPE_BYTES[g] < 4) if c is None else c
    assert one["grad_copy"] == (4 if want_copy else 0)


@given(d=dps, z=zeros, p=dtypes, g=dtypes)
def test_sharded_states_never_grow_with_dp(d, z, p, g):
    a = par.model_state_bytes(d, z, param_dtype=p, grad_dtype=g)["total"]
    b = par.model_state_bytes(d + 1, z, param_dtype=p, grad_dtype=g)["total"]
    assert b <= a
    if z == 0:
        assert b == a
    else:
        assert b < a


@given(d=st.integers(2, 4096), p=dtypes, g=dtypes)
def test_each_stage_shards_more(d, p, g):
    tot = [par.model_state_bytes(d, z, param_dtype=p, grad_dtype=g)["total"]
           for z in par.ZERO_STAGES]
    assert tot == sorted(tot, reverse=True) and len(set(tot)) == 4


def test_byte_overrides_replace_the_formats():
    # bf16 gradients (Megatron --grad-reduce-in-bf16) need the fp32 copy: 4 + 16/d
    got = par.model_state_bytes(8, 1, grad_bytes=2)
    assert got["total"] == pytest.approx(4 + 16 / 8) and got["grad_copy"] == 0.5
    assert par.model_state_bytes(8, 1, grad_dtype="bf16")["total"] == got["total"]
    # ZeRO's accounting as overrides: 2 + 2 + 12
    assert par.model_state_bytes(1, 0, grad_bytes=2, fp32_grad_copy=False)["total"] \
        == 16


def test_defaults_come_from_the_assumption_table():
    pdt = specs.assumption("parallelism", "param_dtype")
    gdt = specs.assumption("parallelism", "bf16_grad_dtype")
    assert (pdt, gdt) == ("bf16", "fp32")
    assert par.assumption("param_dtype") == pdt
    # the byte sizes the step model reads agree with the formats
    assert par.assumption("weight_bytes") == par.DTYPE_BYTES[pdt]
    assert par.assumption("grad_bytes") == par.DTYPE_BYTES[gdt]
    for key in ("param_dtype", "bf16_grad_dtype", "master_weight_bytes",
                "adam_state_bytes", "weight_bytes", "grad_bytes"):
        rec = specs.assumption_record("parallelism", key)
        assert rec["kind"] in ("spec", "derived", "assumed"), key
        assert rec["source"] and rec["accessed"], key


# --- training_memory ---------------------------------------------------------------
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]),
       d=st.integers(1, 64), z=zeros, p=dtypes)
def test_training_memory_uses_the_per_parameter_bytes(tp, pp, d, z, p):
    m = par.training_memory("13b", tp, pp, d, zero=z, param_dtype=p)
    per = par.model_state_bytes(d, z, param_dtype=p)
    assert m.bytes_per_param == per
    psi = m.params_per_gpu
    for k in par.STATE_PARTS:
        assert m.breakdown()[k] == pytest.approx(psi * per[k])
    assert m.optimizer == pytest.approx(m.master + m.grad_copy + m.adam)
    # Adam's m and v: one fp32 value each per parameter, sharded like the rest
    d_o = d if z >= 1 else 1
    assert m.adam_m == m.adam_v == pytest.approx(psi * 4 / d_o)
    assert m.total == pytest.approx(psi * per["total"] + m.activations)
    assert sum(v for k, v in m.breakdown().items() if k != "total") \
        == pytest.approx(m.total)
    hash(m)                                     # usable as a cache key


def test_step_model_memory_is_training_memory():
    # step_time passes the byte sizes of the assumption table; same answer
    st_ = par.step_time("13b", "dgx-h100", (2, 1, 4), global_batch=64, zero=1)
    mem = par.training_memory("13b", 2, 1, 4, zero=1, micro_batches=16)
    assert st_.memory.total == pytest.approx(mem.total)


# --- the numbers: 13B "winners" on 8 GPUs, global batch 64, seq 2048 ---------
def test_13b_tp2_dp4_does_not_fit_an_80_gb_gpu():
    # TP2 PP1 DP4, distributed optimizer: 6.5e9 params x (6 + 12/4) + activations
    mem = par.training_memory("13b", 2, 1, 4, zero=1, micro_batches=16)
    assert mem.total / 1e9 == pytest.approx(83.9, abs=0.05)
    usable = 80e9 * (1 - par.assumption("memory_reserve_fraction"))
    assert mem.total > usable
    why = par.validate_layout("13b", "dgx-h100", (2, 1, 4), global_batch=64, zero=1)
    assert len(why) == 1 and "83.9 GB" in why[0] and "72.0 GB usable" in why[0]
    # ZeRO's 2 + 2 + 12/d (bf16 gradients, no copy) fitted: 71.0 GB
    old = par.training_memory("13b", 2, 1, 4, zero=1, micro_batches=16,
                              grad_bytes=2, fp32_grad_copy=False)
    assert old.total / 1e9 == pytest.approx(71.0, abs=0.05)


def test_13b_dp8_does_not_fit_an_h200():
    mem = par.training_memory("13b", 1, 1, 8, zero=1, micro_batches=8)
    assert mem.total / 1e9 == pytest.approx(144.3, abs=0.05)
    assert par.validate_layout("13b", "hgx-h200", (1, 1, 8), global_batch=64, zero=1)
    r = par.rank_layouts("13b", "hgx-h200", global_batch=64)
    assert all(str(x.layout) != "TP1 PP1 DP8" for x in r.valid)
    assert any(str(x.layout) == "TP1 PP1 DP8" and "144.3 GB" in x.reasons[0]
               for x in r.invalid)
    assert all(x.step.memory.total <= 141e9 * 0.9 for x in r.valid)


def test_fp8_saved_inputs_by_hand():
    """Transformer Engine keeps the FP8 casts of the four linear inputs: 7 of
    Korthikanti's 34 bytes per sbh (QKV 2, attention output 2, fc1 2, fc2 8, halved)."""
    s, b, h = 4096, 1, 8192
    sbh = s * b * h
    kw = dict(micro_batch=b, seq_len=s, recompute="selective")
    for t, sp, expect in ((1, False, 27), (4, True, 27 / 4), (4, False, 10 + 24 / 4 - 2 - 5 / 4)):
        got = par.activation_memory_per_layer("70b", t, sequence_parallel=sp,
                                              fp8_inputs=True, **kw)
        assert got == pytest.approx(sbh * expect, rel=1e-12)
    full = par.activation_memory_per_layer("70b", 4, sequence_parallel=True,
                                           recompute="full", fp8_inputs=True,
                                           micro_batch=b, seq_len=s)
    assert full == 2 * sbh / 4                     # only the layer input, in BF16
    with pytest.raises(ValueError, match="fp8_saved_inputs"):
        par.step_time("13b", "hgx-h200", (8, 1, 1), global_batch=8,
                      fp8_saved_inputs=True)
    a = par.step_time("13b", "hgx-h200", (8, 1, 1), global_batch=8, precision="fp8")
    c = par.step_time("13b", "hgx-h200", (8, 1, 1), global_batch=8, precision="fp8",
                      fp8_saved_inputs=True)
    assert c.total == a.total and c.memory.activations < a.memory.activations
