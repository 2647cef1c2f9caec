"""NCCL's network path on one GPU: the recorded loopback run and its per-step fit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpulab import network
from gpulab.network import loopback


@settings(max_examples=50, deadline=None)
@given(t0=st.floats(0, 1e-3), lam=st.floats(1e-7, 1e-3),
       steps=st.lists(st.integers(0, 64), min_size=2, max_size=8, unique=True))
def test_fit_recovers_a_line(t0, lam, steps):
    got = network.fit_step_latency(steps, [t0 + s * lam for s in steps])
    assert got == pytest.approx((t0, lam), rel=1e-6, abs=1e-12)


def test_fit_is_least_squares():
    # three points off a line: the slope of the least-squares line, not of two points
    t0, lam = network.fit_step_latency([1, 2, 3], [1.0, 3.0, 4.0])
    assert (t0, lam) == pytest.approx((-1.0 / 3, 1.5))


def test_ring_steps():
    assert [loopback.ring_steps("all_gather", n) for n in (2, 4, 8)] == [1, 3, 7]
    assert [loopback.ring_steps("all_reduce", n) for n in (2, 4, 8)] == [2, 6, 14]


def test_sweeps_hold_every_repeat():
    sw = network.loopback_sweeps()
    assert len(sw) == 3 * 3 * 2
    for (p, n, coll), (sizes, times) in sw.items():
        assert np.all(np.diff(sizes) > 0) and sizes[-1] == 32 * 2**20
        assert times.shape == (2, sizes.size) and np.all(times > 0)
    # an 8-rank all_gather cannot be smaller than one element per rank
    assert sw["LL", 8, "all_gather"][0][0] == 32


def test_check_marks_fitted_held_out_and_crowded():
    c = network.loopback_check()
    fitted = [r for r in c.rows if r["fitted"]]
    # all_gather of 2 and 4 ranks below 8 KiB (6 sizes each), plus the 2-rank 32 MiB
    assert len(fitted) == 3 * (2 * 6 + 1)
    assert {r["collective"] for r in fitted} == {"all_gather"}
    assert {r["n_ranks"] for r in c.rows if r["crowded"]} == {8}
    assert all(r["band"] == ("mid" if r["size_bytes"] >= 65536 else "small")
               for r in c.rows)
    # one network step costs more than a tuner's per-step network latency (tens of us on
    # a loopback socket, not a few), and LL is the cheapest protocol per step
    assert 10e-6 < c.step_s["LL"] < c.step_s["LL128"] <= c.step_s["Simple"] * 1.01
    assert all(0.1e9 < c.rate[p] < 10e9 for p in c.rate)


def test_fitted_points_sit_on_the_fit():
    # the fit's two medians are reproduced by the prediction where bytes cost little
    c = network.loopback_check()
    small = [r for r in c.rows if r["fitted"] and r["size_bytes"] <= 512]
    assert np.median([abs(r["error"]) for r in small]) < 0.15


def test_held_out_errors_by_band():
    c = network.loopback_check()
    g = {(x["protocol"], x["collective"], x["n_ranks"], x["band"]): x
         for x in c.groups()}
    # held out, uncrowded: the all_reduce rings (twice the steps) below 64 KiB
    for p in ("LL", "LL128", "Simple"):
        for n in (2, 4):
            assert abs(g[p, "all_reduce", n, "small"]["median_error"]) <= 0.35
    # the middle band: LL and LL128 within 20%, Simple optimistic by more than 20%
    for n in (2, 4):
        for coll in ("all_gather", "all_reduce"):
            for p in ("LL", "LL128"):
                assert abs(g[p, coll, n, "mid"]["median_error"]) <= 0.2
            assert g["Simple", coll, n, "mid"]["median_error"] > 0.2
    # every held-out group is counted, fitted points never
    assert sum(x["points"] for x in c.groups()) == \
        sum(not r["fitted"] for r in c.rows)
    assert sum(x["points"] for x in c.groups(held_out_only=False)) == len(c.rows)


def test_other_fit_ranks_change_the_fit():
    a = network.loopback_check()
    b = network.loopback_check(fit_ranks=(2, 8))
    assert b.step_s["LL"] > 1.5 * a.step_s["LL"]          # the crowded host shows


def test_step_points_carry_the_line():
    c = network.loopback_check()
    pts = c.step_points()
    assert len(pts) == 3 * 2 * 3
    for q in pts:
        assert q["line_s"] == pytest.approx(c.base_s[q["protocol"]]
                                            + q["steps"] * c.step_s[q["protocol"]])
        assert q["line_error"] == pytest.approx(q["line_s"] / q["time_s"] - 1)
    # a line through two points passes through both: the fitted medians sit on it
    assert all(abs(q["line_error"]) < 1e-9 for q in pts if q["fitted"])
    assert {q["n_ranks"] for q in pts if q["crowded"]} == {8}
