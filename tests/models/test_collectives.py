"""Ring AllReduce time and the nccl-tests algbw / busbw metrics."""
from __future__ import annotations

import pytest
from hypothesis import assume, given

from strategies import (latencies, latencies0, message_sizes, n_ranks, n_ranks2,
                        per_direction_bandwidths, sizes)

from gpulab import collectives as C
from gpulab import units
from gpulab.units import Bandwidth, DirectionError


@given(sizes, per_direction_bandwidths(), latencies0)
def test_one_rank_costs_nothing(s, bw, alpha):
    assert C.ring_allreduce_time(s, 1, bw, alpha) == 0


def test_two_ranks_oracle():
    # 2 ranks: reduce-scatter + all-gather, each one step moving S/2: t = 2a + S/B
    assert C.ring_allreduce_time(8e9, 2, 400e9) == pytest.approx(0.02, rel=1e-12)
    assert C.ring_allreduce_time(8e9, 2, 400e9, 1e-6) == pytest.approx(0.020002,
                                                                       rel=1e-12)


def test_eight_ranks_oracle():
    bw = Bandwidth.from_gb_per_s(370, "per_direction")
    t = C.ring_allreduce_time(units.GiB, 8, bw, 5e-6)
    assert t == pytest.approx(14 * 5e-6 + 1.75 * 2**30 / 370e9, rel=1e-12)


@given(sizes, n_ranks, per_direction_bandwidths(), latencies0)
def test_formula(s, n, bw, alpha):
    expected = 2 * (n - 1) * alpha + 2 * (n - 1) / n * s / bw.bytes_per_s
    assert C.ring_allreduce_time(s, n, bw, alpha) == pytest.approx(expected, rel=1e-12)


@given(message_sizes, n_ranks2, per_direction_bandwidths())
def test_busbw_equals_bandwidth_without_latency(s, n, bw):
    t = C.ring_allreduce_time(s, n, bw, 0)
    assert C.busbw(s, t, "all_reduce", n) == pytest.approx(bw.bytes_per_s, rel=1e-12)


@given(n_ranks2, per_direction_bandwidths(), latencies)
def test_busbw_large_message_limit(n, bw, alpha):
    s = 1e9 * alpha * bw.bytes_per_s * n
    t = C.ring_allreduce_time(s, n, bw, alpha)
    busbw = C.busbw(s, t, "all_reduce", n)
    assert busbw < bw.bytes_per_s
    assert busbw == pytest.approx(bw.bytes_per_s, rel=1e-7)


@given(n_ranks)
def test_busbw_factors(n):
    assert C.busbw_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "alltoall"):
        assert C.busbw_factor(op, n) == pytest.approx((n - 1) / n)
    for op in ("broadcast", "reduce", "sendrecv"):
        assert C.busbw_factor(op, n) == 1.0


def test_busbw_factor_examples():
    assert C.busbw_factor("all_reduce", 8) == 1.75
    assert C.busbw_factor("all_gather", 8) == 0.875
    assert C.busbw_factor("all_reduce", 1) == 0
    assert set(C.BUSBW_OPS) == {"all_reduce", "all_gather", "reduce_scatter",
                                "broadcast", "reduce", "alltoall", "sendrecv"}


@given(sizes, sizes)
def test_algbw_and_busbw(s, t):
    t = t * 1e-9
    assert C.algbw(s, t) == pytest.approx(s / t, rel=1e-12)
    assert C.busbw(s, t, "all_reduce", 4) == pytest.approx(1.5 * s / t, rel=1e-12)


@given(sizes, sizes, n_ranks2, per_direction_bandwidths(), latencies0)
def test_monotonic_in_size(s1, s2, n, bw, alpha):
    assume(s1 < s2 * (1 - 1e-9))
    assert C.ring_allreduce_time(s1, n, bw, alpha) < C.ring_allreduce_time(
        s2, n, bw, alpha)


@given(sizes, n_ranks, per_direction_bandwidths(), latencies0)
def test_monotonic_in_ranks(s, n, bw, alpha):
    t1 = C.ring_allreduce_time(s, n, bw, alpha)
    t2 = C.ring_allreduce_time(s, n + 1, bw, alpha)
    assert t1 < t2


@given(message_sizes, n_ranks2, per_direction_bandwidths())
def test_time_bounded_by_twice_the_buffer(s, n, bw):
    # each rank sends less than 2 S in total, and at least S (n >= 2)
    t = C.ring_allreduce_time(s, n, bw, 0)
    assert s / bw.bytes_per_s <= t * (1 + 1e-12)
    assert t < 2 * s / bw.bytes_per_s


def test_bidirectional_bandwidth_refused():
    with pytest.raises(DirectionError, match="bandwidth"):
        C.ring_allreduce_time(1e9, 8, Bandwidth.from_gb_per_s(900, "bidirectional"))
