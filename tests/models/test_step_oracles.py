"""Independent oracles for the step model (gpulab.parallelism: step, memory, comm, model).

Every expected number here is written out by hand from the formula the model cites, for
a tiny transformer whose sizes keep the arithmetic short: 2 pipeline stages x 2
micro-batches with v = 2 virtual stages, ZeRO-3 on 2 GPUs, sequence parallelism with
TP = 2, the DP-overlap budget's forward share, and the tree's 0.9 derating. Where a
term needs one collective's time, it is asked of ``collectives.collective_time`` (the
model's building block) and combined here, so a mistake in how the step model counts,
sizes or hides those calls changes the answer.

The tiny model (no biases, RMSNorm, RoPE, tied embedding):
h = 64, L = 4, a = 4 heads (4 KV heads, head size 16), f = 256, V = 128, s = 32.

* per layer: Q, O, K, V = 4 h^2 = 16384; MLP (GELU) 2 h f = 32768; two RMSNorms 2 h
  = 128: 49280 parameters, of which 49152 in matrices;
* embedding V h = 8192; final norm h = 64; whole model 4 x 49280 + 8192 + 64 = 205376;
* PP = 2: first stage 2 x 49280 + 8192 = 106752, last stage 2 x 49280 + 8192 (the tied
  embedding's copy) + 64 = 106816, the larger one sets the memory: 106816.
"""
from __future__ import annotations

import pytest

from gpulab import collectives, systems
from gpulab.parallelism import (ModelSpec, bubble_fraction, parameter_count,
                                step_communication, step_time, training_memory)

SYSTEM = "hgx-h200"
TINY = ModelSpec(name="tiny", hidden=64, layers=4, heads=4, kv_heads=4, ffn_hidden=256,
                 vocab=128, seq_len=32, mlp="gelu", tied_embeddings=True,
                 learned_positions=False, norm="rmsnorm", bias=False)
PARAMS = 205376               # whole model (module docstring)
STAGE_PARAMS_PP2 = 106816     # last stage of two (module docstring)
ACT = 1 * 32 * 64 * 2         # one BF16 activation tensor b s h x 2 bytes = 4096 B
WEIGHT_B, GRAD_B = 2, 4       # Megatron defaults: bf16 weights, fp32 gradient buffer
REL = 1e-12


def ctime(collective, nbytes, n):
    """One collective call of ``n`` adjacent ranks, one process per GPU (torchrun)."""
    return collectives.collective_time(collective, nbytes, n, SYSTEM, gpus_per_process=1)


def peak():
    return systems.resolve(SYSTEM).gpu_spec.fp16_dense_flops


def test_tiny_model_parameters_by_hand():
    assert parameter_count(TINY) == PARAMS
    mem = training_memory(TINY, pp=2)
    assert mem.params_per_gpu == STAGE_PARAMS_PP2


# --- 2 stages x 2 micro-batches, v = 2 ----------------------------------------------
def test_bubble_with_virtual_stages():
    # (p - 1) / (v m) = 1 / (2 x 2)
    assert bubble_fraction(2, 2, virtual=2) == 0.25
    assert bubble_fraction(2, 2, virtual=1) == 0.5
    # 4 stages, 8 micro-batches, 4 virtual stages: 3 / 32
    assert bubble_fraction(4, 8, virtual=4) == 3 / 32


def test_step_time_bubble_and_compute_with_virtual_stages():
    st = step_time(TINY, SYSTEM, (1, 2, 1, 2), global_batch=2, mfu=0.5)
    assert st.micro_batches == 2
    # F for N = 2 x 32 = 64 tokens: layers 3 (2 x 49152 x 4 x 64 + 4 x 32 x 64 x 4 x 64)
    # = 3 x (25165824 + 2097152) = 81788928; logits 6 h V N = 3145728. The last stage
    # computes half the layers and the logits, on one GPU at 0.5 of the peak.
    compute = (81788928 / 2 + 3145728) / (0.5 * peak())
    assert st.compute == pytest.approx(compute, rel=REL)
    assert st.tp_comm == 0.0
    # bubble = (p - 1) / (v m) x compute = compute / 4
    assert st.bubble == pytest.approx(compute / 4, rel=REL)


def test_interleaved_activation_memory_with_virtual_stages():
    # Korthikanti Table 2, no TP: s b h (34 + 5 a s / h) = 2048 x (34 + 10) = 90112 B
    per_layer = 2048 * 44
    # L / p layers x min(p, m) in flight x (1 + (p - 1) / (p v)) = 2 x 2 x 1.25
    mem = training_memory(TINY, pp=2, micro_batches=2, virtual=2)
    assert mem.activations == pytest.approx(per_layer * 2 * 2 * 1.25, rel=REL)
    plain = training_memory(TINY, pp=2, micro_batches=2, virtual=1)
    assert plain.activations == pytest.approx(per_layer * 2 * 2, rel=REL)


def test_pp_send_recv_with_virtual_stages():
    # 2 m v = 8 sends/receives of one activation tensor (4096 B) between 2 GPUs
    c = step_communication(TINY, SYSTEM, (1, 2, 1, 2), micro_batches=2)
    assert c.pp_calls == 8
    assert c.pp_bytes == 4096
    assert c.pp == pytest.approx(8 * ctime("sendrecv", 4096, 2), rel=REL)
    st = step_time(TINY, SYSTEM, (1, 2, 1, 2), global_batch=2, mfu=0.5)
    assert st.pp_comm == pytest.approx(8 * ctime("sendrecv", 4096, 2), rel=REL)


# --- ZeRO-3 on 2 GPUs ---------------------------------------------------------------
def test_zero3_gathers_weights_twice_per_micro_batch():
    # DP = 2, 2 micro-batches (global batch 4). One bucket each (< 25 MiB):
    # reduce-scatter the fp32 gradients once per micro-batch (2 calls), all-gather the
    # bf16 weights before the forward and again before the backward (4 calls).
    c = step_communication(TINY, SYSTEM, (1, 1, 2), micro_batches=2, zero=3)
    rs = ctime("reduce_scatter", PARAMS * GRAD_B, 2)
    ag = ctime("all_gather", PARAMS * WEIGHT_B, 2)
    assert c.dp_parts["reduce_scatter"] == pytest.approx(2 * rs, rel=REL)
    assert c.dp_parts["all_gather"] == pytest.approx(4 * ag, rel=REL)
    assert c.dp == pytest.approx(2 * rs + 4 * ag, rel=REL)
    # the step hides it behind all the compute (prefetch throughout), no more
    st = step_time(TINY, SYSTEM, (1, 1, 2), global_batch=4, zero=3, mfu=0.5,
                   dp_overlap=1.0)
    total = 2 * rs + 4 * ag
    assert st.dp_comm == pytest.approx(total - min(total, st.compute), rel=REL)


def test_zero3_memory_on_two_gpus():
    # every state halves: bf16 weights 2 / 2, fp32 gradients 4 / 2, optimizer 4 (fp32
    # master) + 8 (Adam m, v) = 12 over 2 (fp32 gradients need no fp32 copy)
    mem = training_memory(TINY, dp=2, zero=3)
    assert mem.weights == pytest.approx(PARAMS * 2 / 2, rel=REL)
    assert mem.gradients == pytest.approx(PARAMS * 4 / 2, rel=REL)
    assert mem.optimizer == pytest.approx(PARAMS * 12 / 2, rel=REL)


# --- sequence parallelism with TP = 2 -----------------------------------------------
def test_sequence_parallel_divides_pp_bytes_by_tp():
    # with SP the activation that crosses the stage boundary is sharded over TP: 4096 / 2
    sp = step_communication(TINY, SYSTEM, (2, 2, 1), micro_batches=2,
                            sequence_parallel=True)
    assert sp.pp_bytes == 2048
    assert sp.pp_calls == 4
    plain = step_communication(TINY, SYSTEM, (2, 2, 1), micro_batches=2)
    assert plain.pp_bytes == 4096
    # second path: without SP, a sequence of 16 tokens sends the same 2048 B per call
    half = step_communication(TINY, SYSTEM, (2, 2, 1), micro_batches=2, seq_len=16)
    assert half.pp_bytes == 2048
    assert sp.pp == pytest.approx(half.pp, rel=REL)
    assert sp.pp < plain.pp


def test_sequence_parallel_activation_memory_tp2():
    # Korthikanti Table 2, TP + SP: s b h (34 / t + 5 a s / (h t)) = 2048 x (17 + 5)
    mem = training_memory(TINY, tp=2, pp=2, micro_batches=2, sequence_parallel=True)
    assert mem.activations == pytest.approx(2048 * 22 * 2 * 2, rel=REL)
    # TP without SP: s b h (10 + 24 / t + 5 a s / (h t)) = 2048 x (10 + 12 + 5)
    mem = training_memory(TINY, tp=2, pp=2, micro_batches=2)
    assert mem.activations == pytest.approx(2048 * 27 * 2 * 2, rel=REL)


# --- the DP-overlap budget ----------------------------------------------------------
@pytest.mark.parametrize("recompute, fwd_share", [("none", 1 / 3), ("full", 1 / 4)])
def test_dp_allreduce_hides_behind_one_backward(recompute, fwd_share):
    # plain DP: the all-reduce hides behind the last micro-batch's backward pass,
    # (1 - forward share) x compute / m; here the all-reduce is much longer
    st = step_time(TINY, SYSTEM, (1, 1, 2), global_batch=4, mfu=0.5, dp_overlap=1.0,
                   recompute=recompute)
    ar = ctime("all_reduce", PARAMS * GRAD_B, 2)
    bwd = (1 - fwd_share) * st.compute / 2
    assert ar > bwd                              # the budget binds
    assert st.dp_comm == pytest.approx(ar - bwd, rel=REL)


@pytest.mark.parametrize("recompute, fwd_share", [("none", 1 / 3), ("full", 1 / 4)])
def test_dp_gather_hides_behind_one_forward(recompute, fwd_share):
    # ZeRO-1: the reduce-scatter hides behind one backward, the weight all-gather
    # behind one forward, fwd_share x compute / m. Choose the overlap o so that the
    # gather is capped by its forward budget and the reduce-scatter is not.
    first = step_time(TINY, SYSTEM, (1, 1, 2), global_batch=4, zero=1, mfu=0.5,
                      recompute=recompute)
    rs = ctime("reduce_scatter", PARAMS * GRAD_B, 2)
    ag = ctime("all_gather", PARAMS * WEIGHT_B, 2)
    assert first.comm.dp_parts == pytest.approx({"reduce_scatter": rs,
                                                 "all_gather": ag}, rel=REL)
    fwd = fwd_share * first.compute / 2
    bwd = first.compute / 2 - fwd
    low, high = fwd / ag, bwd / rs               # o x ag > fwd and o x rs < bwd
    assert low < min(high, 1.0)                  # such an o exists
    o = (low + min(high, 1.0)) / 2
    st = step_time(TINY, SYSTEM, (1, 1, 2), global_batch=4, zero=1, mfu=0.5,
                   recompute=recompute, dp_overlap=o)
    assert st.dp_comm == pytest.approx(rs * (1 - o) + ag - fwd, rel=1e-9)


# --- the tree's derating ------------------------------------------------------------
def test_tree_all_reduce_runs_at_nine_tenths_of_the_ring_rate():
    # per extra byte: ring sends 2 (n - 1) / n, tree 2 at 0.9 of the rate (NCCL's tree
    # busbw x 0.9). Same protocol, large messages (pipeline full, host time hidden):
    # slope ratio tree / ring = (2 / 0.9) / (2 x 7 / 8) for 8 ranks.
    s1, s2 = 4 * 2**30, 8 * 2**30

    def slope(algorithm):
        t = [collectives.collective_time("all_reduce", s, 8, SYSTEM,
                                         algorithm=algorithm, protocol="Simple")
             for s in (s1, s2)]
        return (t[1] - t[0]) / (s2 - s1)

    assert slope("tree") / slope("ring") == pytest.approx((2 / 0.9) / (2 * 7 / 8),
                                                          rel=1e-9)


def test_zero2_reduce_scatters_and_hides_every_micro_batch():
    # ZeRO-2 on 2 GPUs, 2 micro-batches: one reduce-scatter per micro-batch, each
    # hidden behind its own backward pass (2/3 of compute / m); the weights are
    # gathered once, behind one forward pass (1/3 of compute / m)
    st = step_time(TINY, SYSTEM, (1, 1, 2), global_batch=4, zero=2, mfu=0.5,
                   dp_overlap=1.0)
    rs = ctime("reduce_scatter", PARAMS * GRAD_B, 2)
    ag = ctime("all_gather", PARAMS * WEIGHT_B, 2)
    assert st.comm.dp_parts == pytest.approx({"reduce_scatter": 2 * rs,
                                              "all_gather": ag}, rel=REL)
    fwd, bwd = st.compute / 2 / 3, st.compute / 2 * 2 / 3
    assert rs > bwd and ag > fwd                 # both budgets bind
    assert st.dp_comm == pytest.approx(2 * rs - 2 * bwd + ag - fwd, rel=1e-9)
