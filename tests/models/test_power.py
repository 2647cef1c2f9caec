"""The power-limited clock model (gpulab.parallelism.power) against its own equation, the
recorded sweep, and the step model that uses it."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpulab import measurements, specs
from gpulab import parallelism as par
from gpulab.parallelism.efficiency import spec_attention_time

H200 = specs.gpu("H200")
H100_500 = specs.gpu("H100", "SXM5 96GB HBM2e")


def _with_limit(watts):
    return dataclasses.replace(H200, power_limit=watts)


def test_fit_reproduces_the_points_under_the_limit():
    f = par.power_clock_fit()
    for k, p, clock in f["free"]:
        assert clock == f["top_mhz"]
        assert abs(f["static_w"] + k * f["sm_top_w"] - p) / p < 0.03, (k, p)


def test_held_out_clocks_within_five_percent():
    f = par.power_clock_fit()
    assert len(f["held_out"]) >= 3
    assert max(abs(e) for e in f["held_out_error"]) < 0.05
    # the held-out points are not among the fitted ones
    assert not set(f["held_out"]) & set(f["fit"])


def test_fit_uses_the_sweep_it_names():
    rows = measurements.power_clock_sweep()
    bf16 = [r for r in rows if r["kernel"] == "triton-spin" and r["dtype"] == "bf16"]
    f = par.power_clock_fit()
    assert len(f["free"]) + len(f["capped"]) <= len(bf16)
    assert f["limit_w"] == 700.0 and f["top_mhz"] == max(r["sm_mhz"] for r in bf16)


def test_sustained_clock_equation_by_hand():
    f = par.power_clock_fit()
    ref = f["reference"]["bf16"]
    want = ref["sm_mhz"] * ((500 - f["static_w"]) / (f["limit_w"] - f["static_w"])) \
        ** (1 / f["alpha"])
    assert par.sustained_clock(H100_500, "bf16") == pytest.approx(want, rel=1e-12)


def test_factor_is_one_where_the_model_does_not_apply():
    for g in (specs.gpu("H100"), H200, specs.gpu("B200"), specs.gpu("A100"),
              specs.gpu("H100", "PCIe 80GB")):
        assert par.clock_factor(g) == 1.0 and par.clock_factor(g, "fp8") == 1.0
    assert par.sustained_clock(specs.gpu("A100")) is None


@settings(max_examples=40, deadline=None)
@given(a=st.floats(150, 1500), b=st.floats(150, 1500))
def test_property_factor_grows_with_the_limit_up_to_the_top_clock(a, b):
    lo, hi = sorted((a, b))
    fa, fb = par.clock_factor(_with_limit(lo)), par.clock_factor(_with_limit(hi))
    assert fa <= fb + 1e-12
    f = par.power_clock_fit()
    cap = f["top_mhz"] / f["reference"]["bf16"]["sm_mhz"]
    assert 0 < fa <= cap + 1e-12 and fb <= cap + 1e-12


@settings(max_examples=40, deadline=None)
@given(k=st.floats(1, 132), limit=st.floats(200, 1200))
def test_property_curve_power_never_above_the_limit(k, limit):
    p, f = par.power_clock_curve(k, limit)
    fit = par.power_clock_fit()
    assert p[0] <= limit * (1 + 1e-9) and 0 < f[0] <= fit["top_mhz"]
    if f[0] < fit["top_mhz"]:                 # clocked down: pinned at the limit
        assert p[0] == pytest.approx(limit, rel=1e-9)


def test_curve_clock_falls_with_busy_sms():
    _, f = par.power_clock_curve(np.arange(1, 133))
    assert np.all(np.diff(f) <= 1e-9) and f[-1] < f[0]


def test_limit_below_static_power_is_refused():
    with pytest.raises(ValueError, match="gpu_spec"):
        par.sustained_clock(_with_limit(50.0))


def test_ignoring_limits_restores_the_model_even_on_error():
    with pytest.raises(RuntimeError):
        with par.ignoring_limits():
            assert par.clock_factor(H100_500) == 1.0
            raise RuntimeError
    assert par.clock_factor(H100_500) < 0.9


def test_attention_time_scales_by_the_factor_exactly():
    m = par.model("llama3-8b")
    slow = spec_attention_time(m, 1, 8192, 1, H100_500)
    same = spec_attention_time(m, 1, 8192, 1, dataclasses.replace(H100_500,
                                                                  power_limit=700.0))
    assert slow / same == pytest.approx(1 / par.clock_factor(H100_500, "bf16"), rel=1e-12)


def test_published_check_changes_only_the_power_limited_rows():
    on = par.published_fp8_check()
    off = par.published_fp8_check(power_limits=False)
    changed = 0
    for a, b in zip(on, off):
        if a["error"] is None:
            continue
        if "500 W" in a["gpu"]:
            assert a["model_tokens_per_s_per_gpu"] < b["model_tokens_per_s_per_gpu"]
            changed += 1
        else:
            assert a["model_tokens_per_s_per_gpu"] == b["model_tokens_per_s_per_gpu"]
    assert changed >= 20
