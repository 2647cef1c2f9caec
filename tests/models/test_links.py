"""SerDes arithmetic and the alpha-beta transfer model."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from strategies import (bits_per_symbol, coding_efficiencies, lanes, latencies,
                        latencies0, n_links, per_direction_bandwidths, rates, sizes,
                        symbol_rates)

from gpulab import links
from gpulab.units import Bandwidth, DirectionError

PD, BD = "per_direction", "bidirectional"


# --- SerDes oracles -------------------------------------------------------------------
@pytest.mark.parametrize("baud, bits, expected", [
    (53.125e9, 2, 106.25e9),    # NVLink4 / 100G-class PAM4 lane
    (25.78125e9, 1, 25.78125e9),
    (106.25e9, 2, 212.5e9),
    (32e9, 3, 96e9),
])
def test_lane_rate_oracle(baud, bits, expected):
    assert links.lane_rate(baud, bits) == pytest.approx(expected, rel=1e-15)


def test_lane_rate_broadcasts():
    np.testing.assert_allclose(links.lane_rate([1e9, 2e9], 2), [2e9, 4e9])


@pytest.mark.parametrize("args, gb", [
    ((53.125e9, 2, 2), 26.5625),            # NVLink4 raw, what nvidia-smi shows
    ((53.125e9, 2, 2, 16 / 17), 25.0),      # NVLink4 data rate
    ((20e9, 1, 8), 20.0),                   # NVLink1
    ((50e9, 1, 4), 25.0),                   # NVLink3
    ((32e9, 1, 16, 128 / 130), 32 * 16 * 128 / 130 / 8),   # PCIe Gen5 x16
])
def test_link_bandwidth_oracle(args, gb):
    bw = links.link_bandwidth(*args)
    assert isinstance(bw, Bandwidth) and bw.direction == PD
    assert bw.gb_per_s == pytest.approx(gb, rel=1e-12)


@given(symbol_rates, bits_per_symbol, lanes, coding_efficiencies)
def test_link_bandwidth_formula(f, b, n, eta):
    assert links.link_bandwidth(f, b, n, eta).bytes_per_s == pytest.approx(
        f * b * n * eta / 8, rel=1e-12)


@given(symbol_rates, symbol_rates, bits_per_symbol, lanes, coding_efficiencies)
def test_monotonic_in_symbol_rate(f1, f2, b, n, eta):
    assume(f1 < f2 * (1 - 1e-9))
    assert links.link_bandwidth(f1, b, n, eta) < links.link_bandwidth(f2, b, n, eta)


@given(symbol_rates, st.integers(1, 7), lanes, coding_efficiencies)
def test_monotonic_in_bits_per_symbol(f, b, n, eta):
    assert links.link_bandwidth(f, b, n, eta) < links.link_bandwidth(f, b + 1, n, eta)


@given(symbol_rates, bits_per_symbol, st.integers(1, 63), coding_efficiencies)
def test_monotonic_in_lanes(f, b, n, eta):
    assert links.link_bandwidth(f, b, n, eta) < links.link_bandwidth(f, b, n + 1, eta)


@given(symbol_rates, bits_per_symbol, lanes, coding_efficiencies, coding_efficiencies)
def test_monotonic_in_coding_efficiency(f, b, n, e1, e2):
    assume(e1 < e2 * (1 - 1e-9))
    assert links.link_bandwidth(f, b, n, e1) < links.link_bandwidth(f, b, n, e2)
    assert links.link_bandwidth(f, b, n, e2) <= links.link_bandwidth(f, b, n)


@given(per_direction_bandwidths(), st.integers(1, 1023))
def test_gpu_bandwidth_monotonic_and_linear(link, k):
    one, more = links.gpu_bandwidth(link, k), links.gpu_bandwidth(link, k + 1)
    assert one < more
    assert one.bytes_per_s == pytest.approx(k * link.bytes_per_s, rel=1e-12)


@given(n_links)
def test_gpu_bandwidth_keeps_direction(k):
    link = Bandwidth.from_gb_per_s(50, BD)
    assert links.gpu_bandwidth(link, k).direction == BD


def test_nvlink_gpu_bandwidth_n_links_and_raw():
    assert links.nvlink_gpu_bandwidth(4, 2).gb_per_s == pytest.approx(50.0)
    assert links.nvlink_gpu_bandwidth(4, raw=True).gb_per_s == pytest.approx(
        18 * 26.5625)
    assert links.nvlink_gpu_bandwidth(3, raw=True) == links.nvlink_gpu_bandwidth(3)


# --- alpha-beta -----------------------------------------------------------------------
def test_transfer_time_oracle():
    bw = Bandwidth.from_gb_per_s(25, PD)
    assert links.transfer_time(1e9, 2e-6, bw) == pytest.approx(0.040002, rel=1e-12)
    assert links.transfer_time(1e9, 2e-6, 25e9) == pytest.approx(0.040002, rel=1e-12)
    assert links.transfer_time(0, 2e-6, bw) == 2e-6


@given(latencies, per_direction_bandwidths())
def test_transfer_time_small_message_limit(alpha, bw):
    t = links.transfer_time(1e-9 * alpha * bw.bytes_per_s, alpha, bw)
    assert t == pytest.approx(alpha, rel=1e-8)


@given(latencies, per_direction_bandwidths())
def test_transfer_time_large_message_limit(alpha, bw):
    s = 1e9 * alpha * bw.bytes_per_s
    assert links.transfer_time(s, alpha, bw) == pytest.approx(s / bw.bytes_per_s,
                                                              rel=1e-8)


@given(sizes, latencies, per_direction_bandwidths())
def test_effective_bandwidth_below_bandwidth(s, alpha, bw):
    eff = links.effective_bandwidth(s, alpha, bw)
    assert 0 < eff <= bw.bytes_per_s
    if alpha * bw.bytes_per_s > 1e-9 * s:      # latency visible in double precision
        assert eff < bw.bytes_per_s
    assert eff == pytest.approx(s / (alpha + s / bw.bytes_per_s), rel=1e-12)


@given(latencies, per_direction_bandwidths())
def test_effective_bandwidth_approaches_bandwidth(alpha, bw):
    s = 1e8 * alpha * bw.bytes_per_s
    assert links.effective_bandwidth(s, alpha, bw) == pytest.approx(bw.bytes_per_s,
                                                                    rel=1e-7)


@given(sizes, sizes, latencies, per_direction_bandwidths())
def test_effective_bandwidth_monotonic_in_size(s1, s2, alpha, bw):
    assume(s1 < s2 * (1 - 1e-9))
    e1, e2 = (links.effective_bandwidth(s, alpha, bw) for s in (s1, s2))
    assert e1 <= e2 * (1 + 1e-12)              # equal up to rounding when alpha ~ 0
    if alpha * bw.bytes_per_s > 1e-6 * s2:      # latency visible in double precision
        assert e1 < e2


def test_half_bandwidth_size_oracle():
    bw = Bandwidth.from_gb_per_s(450, PD)
    assert links.half_bandwidth_size(10e-6, bw) == pytest.approx(4.5e6, rel=1e-12)


@given(latencies, per_direction_bandwidths())
def test_half_bandwidth_size_gives_half_rate(alpha, bw):
    n_half = links.half_bandwidth_size(alpha, bw)
    assert n_half == pytest.approx(alpha * bw.bytes_per_s, rel=1e-12)
    assert links.effective_bandwidth(n_half, alpha, bw) == pytest.approx(
        bw.bytes_per_s / 2, rel=1e-9)


@pytest.mark.parametrize("fn", [
    lambda bw: links.transfer_time(1e6, 1e-6, bw),
    lambda bw: links.effective_bandwidth(1e6, 1e-6, bw),
    lambda bw: links.half_bandwidth_size(1e-6, bw),
])
def test_bidirectional_bandwidth_refused(fn):
    with pytest.raises(DirectionError, match="per direction"):
        fn(Bandwidth.from_gb_per_s(900, BD))
    assert fn(Bandwidth.from_gb_per_s(900, BD).to_per_direction()) > 0


def test_transfer_time_broadcasts():
    t = links.transfer_time(np.array([0.0, 1e9]), 1e-6, 1e9)
    np.testing.assert_allclose(t, [1e-6, 1.000001])


# --- fitting --------------------------------------------------------------------------
def test_fit_alpha_beta_example():
    s = [1e3, 1e6, 1e9]
    a, b = links.fit_alpha_beta(s, [2e-6 + x / 25e9 for x in s])
    assert a == pytest.approx(2e-6, rel=1e-9)
    assert b.direction == PD and b.gb_per_s == pytest.approx(25, rel=1e-9)


@given(latencies0, rates, st.sampled_from(["relative", "absolute"]),
       st.integers(2, 40))
def test_fit_alpha_beta_recovers_exact_model(alpha, beta, weighting, n):
    s = np.geomspace(1e3, 1e10, n)
    t = alpha + s / beta
    a, b = links.fit_alpha_beta(s, t, weighting=weighting)
    assert b.bytes_per_s == pytest.approx(beta, rel=1e-6)
    # alpha is identifiable to the precision the shortest time allows
    assert a == pytest.approx(alpha, abs=1e-9 * t.min() + 1e-6 * alpha)


@given(latencies, rates, st.integers(0, 2**32 - 1))
def test_fit_alpha_beta_with_noise(alpha, beta, seed):
    rng = np.random.default_rng(seed)
    s = np.geomspace(alpha * beta / 100, alpha * beta * 100, 30)
    t = (alpha + s / beta) * (1 + rng.uniform(-1e-3, 1e-3, s.size))
    a, b = links.fit_alpha_beta(s, t)
    assert b.bytes_per_s == pytest.approx(beta, rel=2e-2)
    assert a == pytest.approx(alpha, rel=2e-2)


def test_fit_weightings_differ_on_noisy_data():
    # an outlier at the smallest size pulls the relative fit much more
    s = np.array([1e3, 1e6, 1e9])
    t = 2e-6 + s / 25e9
    t[0] *= 3
    a_rel, _ = links.fit_alpha_beta(s, t, weighting="relative")
    a_abs, _ = links.fit_alpha_beta(s, t, weighting="absolute")
    assert a_rel != pytest.approx(a_abs, rel=1e-3)


@pytest.mark.parametrize("s, t, match", [
    ([1e3, 1e6], [1e-6, 2e-6, 3e-6], "equal length"),
    ([[1e3, 1e6]], [[1e-6, 2e-6]], "1-D"),
    ([1e3, 1e3], [1e-6, 2e-6], "distinct"),
    ([1e3], [1e-6], "distinct"),
    ([1e3, 1e6], [2e-6, 1e-6], "grow"),
    ([1e3, -1e6], [1e-6, 2e-6], "message_bytes"),
    ([1e3, 1e6], [0, 2e-6], "times"),
])
def test_fit_alpha_beta_bad_input(s, t, match):
    with pytest.raises(ValueError, match=match):
        links.fit_alpha_beta(s, t)


def test_fit_alpha_beta_bad_weighting():
    with pytest.raises(ValueError, match="weighting"):
        links.fit_alpha_beta([1e3, 1e6], [1e-6, 2e-6], weighting="log")


def test_link_bandwidth_array_symbol_rate_raises_value_error():
    with pytest.raises(ValueError, match="symbol_rate"):
        links.link_bandwidth([50e9, 53.125e9], 2, 2)
