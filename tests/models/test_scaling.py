"""Growth ratios, scaling efficiency, the data-parallel step model, breakeven."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from strategies import (durations, fractions01, fractions_open, nvlink_gpu_names, params,
                        tokens)

from gpulab import links, scaling, specs, units
from gpulab.units import Bandwidth



# --- growth ---------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, metric, ratio", [
    ("V100", "H100", "fp16_dense_flops", 989.4 / 125),
    ("V100", "B200", "fp16_dense_flops", 2250 / 125),
    ("V100", "H100", "nvlink_bandwidth", 900 / 300),
    ("V100", "B200", "nvlink_bandwidth", 1800 / 300),
    ("A100", "H100", "nvlink_bandwidth", 1.5),
    ("V100", "H100", "memory_bandwidth", 3350 / 900),
    ("H100", "H200", "memory_bytes", 141 / 80),
    ("H100", "B200", "fp8_dense_flops", 4500 / 1978.9),
])
def test_growth_oracles(a, b, metric, ratio):
    assert scaling.growth(a, b, metric) == pytest.approx(ratio, rel=1e-12)


def test_growth_rounded_examples():
    assert round(scaling.growth("V100", "H100", "fp16_dense_flops"), 2) == 7.92
    assert scaling.growth("V100", "H100", "nvlink_bandwidth") == pytest.approx(3.0)


@given(nvlink_gpu_names(), nvlink_gpu_names(), st.sampled_from(
    ["fp16_dense_flops", "nvlink_bandwidth", "memory_bandwidth", "memory_bytes"]))
def test_growth_is_antisymmetric(a, b, metric):
    product = scaling.growth(a, b, metric) * scaling.growth(b, a, metric)
    assert product == pytest.approx(1)
    assert scaling.growth(a, a, metric) == 1.0


def test_growth_fp8_on_v100_refused():
    with pytest.raises(ValueError, match="metric"):
        scaling.growth("V100", "H100", "fp8_dense_flops")


def test_growth_table():
    rows = scaling.growth_table()
    assert [r["gpu"] for r in rows] == scaling.gpu_names()
    assert "L40S" in specs.gpu_names() and "L40S" not in scaling.gpu_names()
    assert rows[0] == {"gpu": "V100", "fp16_dense_flops": 1.0, "nvlink_bandwidth": 1.0,
                       "memory_bandwidth": 1.0}
    h100 = next(r for r in rows if r["gpu"] == "H100")
    assert h100["fp16_dense_flops"] == pytest.approx(7.9152)
    assert "fp8_dense_flops" not in h100
    sub = scaling.growth_table(["H100"], baseline="A100")
    assert sub == [{"gpu": "H100", **{m: scaling.growth("A100", "H100", m) for m in
                                      ("fp16_dense_flops", "nvlink_bandwidth",
                                       "memory_bandwidth")}}]


def test_assumptions():
    assert scaling.assumption("mfu") == 0.4
    assert scaling.assumption("nvlink_allreduce_efficiency") == 0.82
    assert scaling.assumption("gradient_bytes_per_param") == 2.0
    assert scaling.assumption("ring_step_latency_s") == 1.22e-6


def test_chapter1_alpha_agrees_with_the_collective_model():
    """Chapter 1's alpha-beta ring and gpulab.collectives tell one story on 8 GPUs."""
    from gpulab import collectives
    n = 8
    alpha_total = 2 * (n - 1) * scaling.assumption("ring_step_latency_s")
    t_small = collectives.collective_time("all_reduce", 32 * 1024, n, "hgx-h200",
                                          nvls=False, gpus_per_process=1)
    assert alpha_total == pytest.approx(t_small, rel=0.15)
    eff = scaling.assumption("nvlink_allreduce_efficiency")
    ring = collectives.predict("all_reduce", 2**34, n, "hgx-h200", nvls=False)
    assert ring.busbw[0] / 450e9 == pytest.approx(eff, abs=0.02)
    assert set(scaling.METRICS) >= {"fp16_dense_flops", "nvlink_bandwidth"}


# --- efficiency -----------------------------------------------------------------------
@given(durations, fractions01)
def test_no_communication_is_perfect(tc, o):
    assert scaling.scaling_efficiency(tc, 0.0, o) == 1.0


@given(durations, durations)
def test_full_overlap_is_perfect(tc, tm):
    assert scaling.scaling_efficiency(tc, tm, overlap=1.0) == 1.0


@given(durations)
def test_equal_compute_and_comm_is_half(t):
    assert scaling.scaling_efficiency(t, t) == pytest.approx(0.5, rel=1e-15)


@given(durations, durations, fractions01)
def test_efficiency_formula_and_range(tc, tm, o):
    eta = scaling.scaling_efficiency(tc, tm, o)
    assert eta == pytest.approx(tc / (tc + (1 - o) * tm), rel=1e-12)
    assert 0 < eta <= 1
    assert scaling.exposed_comm_share(tc, tm, o) == pytest.approx(1 - eta, abs=1e-15)


@given(durations, durations, durations, fractions01)
def test_efficiency_falls_with_comm(tc, tm1, tm2, o):
    assume(tm1 < tm2 and o < 1)
    assert scaling.scaling_efficiency(tc, tm1, o) >= scaling.scaling_efficiency(
        tc, tm2, o)


def test_effective_gpus_oracle():
    assert scaling.effective_gpus(8, 1, 1) == 4.0
    assert scaling.effective_gpus(8, 3.0, 1.0) == 6.0
    assert scaling.effective_gpus(8, 1, 1, overlap=0.5) == pytest.approx(8 / 1.5)
    assert scaling.scaling_efficiency(3.0, 1.0) == 0.75


# --- data-parallel step ---------------------------------------------------------------
@given(nvlink_gpu_names(), st.integers(1, 1024), params, tokens, fractions01,
       fractions_open)
def test_step_consistency(gpu, n, p, d, o, mfu):
    s = scaling.data_parallel_step(gpu, n, p, d, mfu=mfu, overlap=o)
    assert (s.gpu, s.n_gpus, s.params, s.tokens_per_gpu) == (gpu, n, p, d)
    assert s.exposed_comm_time == pytest.approx((1 - o) * s.comm_time, rel=1e-12)
    assert s.step_time == pytest.approx(s.compute_time + s.exposed_comm_time, rel=1e-12)
    assert s.efficiency == pytest.approx(s.compute_time / s.step_time, rel=1e-12)
    assert s.effective_gpus == pytest.approx(n * s.efficiency, rel=1e-12)
    # compute: 6 P D / (F * MFU)
    f = specs.gpu(gpu).fp16_dense_flops
    assert s.compute_time == pytest.approx(6 * p * d / (f * mfu), rel=1e-12)


def test_step_comm_oracle_h100():
    s = scaling.data_parallel_step("H100", 8, 7e9, 16384)
    bw = 450e9 * 0.82
    expected_tm = 14 * 1.22e-6 + 1.75 * 14e9 / bw
    assert s.bandwidth.direction == "per_direction"
    assert s.bandwidth.bytes_per_s == pytest.approx(bw, rel=1e-12)
    assert s.comm_time == pytest.approx(expected_tm, rel=1e-12)
    assert s.compute_time == pytest.approx(6 * 7e9 * 16384 / (989.4e12 * 0.4),
                                           rel=1e-12)
    assert round(s.efficiency, 3) == 0.963


@given(nvlink_gpu_names(), st.integers(2, 512), params, params, tokens)
def test_larger_model_longer_comm(gpu, n, p1, p2, d):
    assume(p1 < p2 * (1 - 1e-9))
    a = scaling.data_parallel_step(gpu, n, p1, d)
    b = scaling.data_parallel_step(gpu, n, p2, d)
    assert a.comm_time < b.comm_time
    assert a.compute_time < b.compute_time


@given(nvlink_gpu_names(), st.integers(2, 512), params, tokens, fractions01, fractions01)
def test_overlap_reduces_exposed(gpu, n, p, d, o1, o2):
    assume(o2 - o1 > 1e-9)
    a = scaling.data_parallel_step(gpu, n, p, d, overlap=o1)
    b = scaling.data_parallel_step(gpu, n, p, d, overlap=o2)
    assert b.exposed_comm_time < a.exposed_comm_time
    assert b.comm_time == a.comm_time
    assert b.efficiency >= a.efficiency


def test_single_gpu_has_no_comm():
    s = scaling.data_parallel_step("H100", 1, 7e9, 4096)
    assert s.comm_time == 0 and s.efficiency == 1.0


def test_explicit_bandwidth_and_overrides():
    pcie = Bandwidth(32e9 * 16 * 128 / 130 / 8, "per_direction")
    s = scaling.data_parallel_step("H100", 8, 7e9, 4096, bandwidth=pcie, latency=0)
    assert s.bandwidth is pcie
    assert s.comm_time == pytest.approx(1.75 * 14e9 / pcie.bytes_per_s, rel=1e-12)
    full = scaling.data_parallel_step("H100", 8, 7e9, 4096, link_efficiency=1.0)
    assert full.bandwidth.isclose(links.nvlink_gpu_bandwidth(4))
    with pytest.raises(units.DirectionError):
        scaling.data_parallel_step("H100", 8, 7e9, 4096,
                                   bandwidth=pcie.to_bidirectional())


def test_steps_are_frozen():
    s = scaling.data_parallel_step()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.step_time = 0


# --- breakeven ------------------------------------------------------------------------
@pytest.mark.parametrize("gpu", scaling.gpu_names())
@pytest.mark.parametrize("n", [2, 8, 64])
def test_breakeven_gives_half_efficiency(gpu, n):
    d = scaling.breakeven_tokens_per_gpu(gpu, n)
    for p in (1e8, 7e9, 1e12):        # independent of model size without latency
        s = scaling.data_parallel_step(gpu, n, p, d, latency=0, overlap=0)
        assert s.efficiency == pytest.approx(0.5, rel=1e-12)
        assert s.compute_time == pytest.approx(s.comm_time, rel=1e-12)


@given(nvlink_gpu_names(), st.integers(2, 256), fractions_open, fractions_open)
def test_breakeven_with_overrides(gpu, n, mfu, e):
    d = scaling.breakeven_tokens_per_gpu(gpu, n, mfu=mfu, link_efficiency=e)
    s = scaling.data_parallel_step(gpu, n, 7e9, d, mfu=mfu, link_efficiency=e,
                                   latency=0)
    assert s.efficiency == pytest.approx(0.5, rel=1e-9)
    # more tokens than breakeven: compute dominates
    s2 = scaling.data_parallel_step(gpu, n, 7e9, 2 * d, mfu=mfu, link_efficiency=e,
                                    latency=0)
    assert s2.efficiency > 0.5


def test_breakeven_ratio_h100_v100():
    b = scaling.breakeven_tokens_per_gpu
    r = b("H100") / b("V100")
    assert r == pytest.approx((989.4 / 125) / 3.0, rel=1e-12)
