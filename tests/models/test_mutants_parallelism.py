"""Oracles for gpulab.parallelism's memory model, written to kill surviving mutants.

The expected numbers are the published tables, written out here:

* bytes per parameter of mixed-precision Adam (Megatron-LM docs, "Distributed Optimizer"):
  fp16 weights and gradients 20 (4 + 16/d sharded), bf16 weights with fp32 gradients 18
  (6 + 12/d), fp32 everything 16 (8 + 8/d); the ZeRO paper's accounting (Rajbhandari et
  al. 2020, K = 12, no fp32 gradient copy) 16, 4 + 12/d, 2 + 14/d, 16/d for stages 0-3;
* activations per layer (Korthikanti et al. 2022, Table 2): sbh(34 + 5as/h) without
  parallelism, sbh(10 + 24/t + 5as/(ht)) with TP, sbh(34/t + 5as/(ht)) with TP and sequence
  parallelism, the 5as/h term dropped by selective recompute, 2sbh (/t with SP) kept by full
  recompute.
"""
from __future__ import annotations

import pytest

from gpulab import parallelism as par

ZERO_PAPER = dict(param_dtype="fp16", grad_dtype="fp16", fp32_grad_copy=False)


@pytest.mark.parametrize("kw, whole, sharded", [
    (dict(param_dtype="fp16"), 20, lambda d: 4 + 16 / d),
    ({}, 18, lambda d: 6 + 12 / d),
    (dict(param_dtype="fp32"), 16, lambda d: 8 + 8 / d),
])
def test_megatron_table(kw, whole, sharded):
    assert par.model_state_bytes(**kw)["total"] == whole
    assert par.model_state_bytes(8, 0, **kw)["total"] == whole         # dp alone shards nothing
    for d in (2, 8, 64):
        assert par.model_state_bytes(d, 1, **kw)["total"] == pytest.approx(sharded(d))


@pytest.mark.parametrize("z, bytes_at", [(0, lambda d: 16), (1, lambda d: 4 + 12 / d),
                                         (2, lambda d: 2 + 14 / d), (3, lambda d: 16 / d)])
def test_zero_paper_stages(z, bytes_at):
    for d in (2, 64):
        assert par.model_state_bytes(d, z, **ZERO_PAPER)["total"] == pytest.approx(bytes_at(d))


def test_default_parts_and_their_sharding():
    # bf16 weights 2, fp32 gradients 4, fp32 master 4, no gradient copy, Adam m + v 8
    assert par.model_state_bytes() == {"weights": 2.0, "gradients": 4.0, "master": 4.0,
                                       "grad_copy": 0.0, "adam": 8.0, "total": 18.0}
    assert par.model_state_bytes(8, 2) == {"weights": 2.0, "gradients": 0.5, "master": 0.5,
                                           "grad_copy": 0.0, "adam": 1.0, "total": 4.0}
    assert par.model_state_bytes(8, 3) == {"weights": 0.25, "gradients": 0.5, "master": 0.5,
                                           "grad_copy": 0.0, "adam": 1.0, "total": 2.25}
    fp16 = par.model_state_bytes(4, 1, param_dtype="fp16")
    assert (fp16["master"], fp16["grad_copy"], fp16["adam"]) == (1.0, 1.0, 2.0)


def test_overrides_of_element_sizes():
    assert par.model_state_bytes(weight_bytes=1, grad_bytes=2)["total"] == 1 + 2 + 4 + 4 + 8
    assert par.model_state_bytes(grad_bytes=4)["grad_copy"] == 0.0      # fp32: no copy
    assert par.model_state_bytes(grad_bytes=2)["grad_copy"] == 4.0      # 16-bit: a copy
    assert par.model_state_bytes(grad_dtype="bf16", fp32_grad_copy=False)["total"] == 16
    assert par.model_state_bytes(weight_bytes=16)["weights"] == 16      # the upper bound
    for name in ("weight_bytes", "grad_bytes"):
        for bad in (0, 16.5):
            with pytest.raises(ValueError, match=rf"^{name} must be"):
                par.model_state_bytes(**{name: bad})
    with pytest.raises(ValueError, match=r"^dp must be an integer in \[1, 1e\+06\]"):
        par.model_state_bytes(0)
    with pytest.raises(ValueError, match=r"^fp32_grad_copy must be"):
        par.model_state_bytes(fp32_grad_copy="yes")


M = par.model("13b")          # GPT 13B shape: h = 5120, a = 40 heads
S, B = 2048, 2


def _sbh(s=S, b=B):
    return s * b * M.hidden


@pytest.mark.parametrize("t", [1, 2, 8])
def test_activation_memory_korthikanti_table(t):
    h, a, s = M.hidden, M.heads, S
    score = 5 * a * s / (h * t)
    got = par.activation_memory_per_layer(M, t, micro_batch=B, seq_len=S)
    want = _sbh() * (34 + score) if t == 1 else _sbh() * (10 + 24 / t + score)
    assert got == pytest.approx(want, rel=1e-12)
    sel = par.activation_memory_per_layer(M, t, micro_batch=B, seq_len=S,
                                          recompute="selective")
    assert sel == pytest.approx(_sbh() * (34 if t == 1 else 10 + 24 / t), rel=1e-12)
    sp = par.activation_memory_per_layer(M, t, micro_batch=B, seq_len=S,
                                         sequence_parallel=True)
    assert sp == pytest.approx(_sbh() * (34 / t + score), rel=1e-12)
    full = par.activation_memory_per_layer(M, t, micro_batch=B, seq_len=S, recompute="full")
    assert full == pytest.approx(2 * _sbh(), rel=1e-12)
    full_sp = par.activation_memory_per_layer(M, t, micro_batch=B, seq_len=S,
                                              recompute="full", sequence_parallel=True)
    assert full_sp == pytest.approx(2 * _sbh() / t, rel=1e-12)


def test_activation_defaults():
    # micro-batch 1 and the model's own sequence length (2048 for this shape)
    assert par.activation_memory_per_layer("13b") == pytest.approx(
        2048 * 5120 * (34 + 5 * 40 * 2048 / 5120), rel=1e-12)
    with pytest.raises(ValueError, match=r"^recompute must be one of"):
        par.activation_memory_per_layer(M, recompute="some")


def test_a_gradient_of_whole_buckets_makes_no_extra_call():
    from gpulab.parallelism import comm
    b = 2**24
    (t4,), (calls4,) = comm.bucket_allreduce_time(4 * b, b, 8, "hgx-h200")
    (t1,), (calls1,) = comm.bucket_allreduce_time(b, b, 8, "hgx-h200")
    assert (calls4, calls1) == (4, 1)
    assert t4 == pytest.approx(4 * t1, rel=1e-12)      # four equal calls, no empty fifth


def test_layers_that_do_not_split_over_the_pipeline():
    from gpulab import systems
    from gpulab.parallelism import layout
    m, hgx = par.model("70b"), systems.get("hgx-h200")          # 80 layers
    assert layout.structural_reasons(m, hgx, layout.Layout(1, 3, 1, 1), 3, 3, 1, 4096,
                                     False) == ["80 layers do not split over PP3"]
    assert layout.structural_reasons(m, hgx, layout.Layout(1, 3, 1, 2), 3, 3, 1, 4096,
                                     False) == ["80 layers do not split over PP3 x 2 "
                                                "virtual stages"]
