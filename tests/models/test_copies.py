"""Copies: the hardware model (one-copy latency + size / bandwidth) apart from the
caller's issue cost, fitted on four CUDA C++ copy sweeps on 1x H200 SXM and checked on
four others it never saw, per size band.

Acceptance: +-15 % from 64 KiB, +-30 % below, against independent copy measurements.
Errors are |model / held-out sweep - 1| over every held-out single-size point (sizes x
four sweeps); the run-to-run spread ("noise") is the same error for the fit sweeps'
own median taken as the prediction, which no fit to those sweeps can beat.

Fit: median per size of 2026-12-01 run 1 and 2026-12-02 r1, r3, r5
(measurements.COPY_FIT_SWEEPS); held out: 2026-12-01 run 2 and 2026-12-02 r2, r4, r6
(COPY_HOLDOUT_SWEEPS). The split was fixed before the model was compared with the
held-out sweeps.

Where the model stands (asserted below, so an improvement or a regression shows here):

* pinned h2d and d2h (one direction) and d2d, hardware model: the median error meets
  the acceptance in every band. Single points miss where single sweeps do (small
  copies vary 20-30 % between sweeps; d2d 64 KiB-1 MiB; d2d 8-16 MiB in the 50 MB L2);
* the CUDA back-to-back loop misses one band: d2d 1-64 MiB (L2, and 1-8 MiB copies
  whose rate differs by up to 40 % between sweeps);
* both directions at once: every median within the acceptance (d2h 64 KiB-1 MiB just:
  the sweeps' own spread there reaches 32 %);
* pageable: outside the acceptance. h2d has a knee (32 MiB on all eight sweeps: the
  whole copy runs at about half the rate above it), modelled and fitted on this host;
  d2h has none, and its sweeps differ by more than +-15 % in every band from 64 KiB.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpulab
from gpulab import measurements, pcie, systems, units
from gpulab.units import GB, KiB, MiB

#: Size bands of the acceptance: [low, high) bytes, and the allowed error.
BANDS = {"< 64 KiB": (0, 64 * KiB, 0.30), "64 KiB-1 MiB": (64 * KiB, MiB, 0.15),
         "1-64 MiB": (MiB, 64 * MiB, 0.15), ">= 64 MiB": (64 * MiB, np.inf, 0.15)}
PINNED = ("h2d_pinned", "d2h_pinned", "h2d_pinned_both", "d2h_pinned_both", "d2d")
PAGEABLE = ("h2d_pageable", "d2h_pageable")
#: The keys held to the acceptance.
ACCEPTED = ("h2d_pinned", "d2h_pinned", "d2d")
#: (key, model, band) whose median error on the held-out sweeps misses the acceptance.
MISSED = [("d2d", "CUDA back-to-back", "1-64 MiB")]
SYSTEMS = ("h200-x2-measured", "hgx-h200", "hgx-h200-2node")


def _kind(key):
    kind = key.split("_")[0]
    memory = "pageable" if "pageable" in key else "pinned"
    direction = "both" if key.endswith("_both") else "one"
    return kind, memory, direction


@pytest.fixture(scope="module")
def held():
    return measurements.copy_latency_sweeps(measurements.COPY_HOLDOUT_SWEEPS)


@pytest.fixture(scope="module")
def rows():
    return pcie.copy_holdout_errors()


def band_errors(sizes, model, measured):
    """{band: array of |err|} of model against measured."""
    err = np.abs(model / measured - 1.0)
    return {name: err[(sizes >= lo) & (sizes < hi)] for name, (lo, hi, _) in BANDS.items()}


def predictions(key, sizes, system="h200-x2-measured"):
    kind, memory, direction = _kind(key)
    hw = pcie.copy_time(sizes, kind, memory=memory, direction=direction,
                        system=system, caller=None)
    b2b = pcie.copy_time(sizes, kind, memory=memory, direction=direction,
                         system=system, caller="cuda")
    return hw, b2b


# --- which sweeps are fitted, which held out ----------------------------------------
def test_fit_and_held_out_sweeps_are_disjoint_and_cover_every_recorded_sweep():
    fit, hold = set(measurements.COPY_FIT_SWEEPS), set(measurements.COPY_HOLDOUT_SWEEPS)
    assert not fit & hold and len(fit) == len(hold) == 4
    raw = Path(gpulab.__file__).parent / "data" / "measurements" / "raw"
    recorded = {(d, f.name) for d in (measurements.COPY_LATENCY_RUN,
                                      measurements.COPY_REPEAT_RUN)
                for f in (raw / d).glob("copies_*.csv")}
    assert fit | hold == recorded       # a new sweep must be declared one or the other


def test_stored_constants_are_the_fit_of_the_fit_sweeps():
    cal = pcie.calibrate_copy_hardware()
    assert cal == pcie.calibrate_copy_hardware(
        measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS))
    for name in SYSTEMS:
        hwsec = systems.get(name).copy_hardware
        assert hwsec.kind == "measured"
        for run, f in measurements.COPY_FIT_SWEEPS + measurements.COPY_HOLDOUT_SWEEPS:
            assert f"{run}/{f}" in hwsec.source
        for key, v in cal.items():
            p = hwsec.params(key)
            assert p.kind == "measured"
            assert p.latency_s == pytest.approx(v["latency_s"], rel=2e-3)
            assert p.pipelined_s == pytest.approx(v["pipelined_s"], rel=2e-3)
            assert p.cuda_issue_s == pytest.approx(v["cuda_issue_s"], rel=2e-3)
            assert p.bandwidth.gb_per_s == pytest.approx(v["bandwidth_gb_per_s"],
                                                         rel=2e-3)
            assert p.knee_bytes == v.get("knee_bytes")
            if p.knee_bytes is not None:
                assert p.bandwidth_above_knee.gb_per_s == pytest.approx(
                    v["bandwidth_above_knee_gb_per_s"], rel=2e-3)


@pytest.mark.parametrize("swap", range(4))
def test_a_fit_that_used_a_held_out_sweep_would_not_match_the_stored_constants(swap):
    """The check above can fail: swapping any fit sweep for a held-out one changes
    the stored constants by more than its tolerance."""
    sweeps = list(measurements.COPY_FIT_SWEEPS)
    sweeps[swap] = measurements.COPY_HOLDOUT_SWEEPS[swap]
    cal = pcie.calibrate_copy_hardware(measurements.pooled_copy_latency_run(sweeps))
    stored = systems.get("hgx-h200").copy_hardware
    off = [k for k, v in cal.items()
           if abs(stored.params(k).latency_s / v["latency_s"] - 1) > 2e-3]
    assert off, sweeps


def test_holdout_errors_refuse_a_sweep_the_fit_used(held):
    fit_sweep = measurements.copy_latency_run(*measurements.COPY_FIT_SWEEPS[0][::-1])
    for run in (fit_sweep, list(held) + [fit_sweep],
                measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS)):
        with pytest.raises(ValueError, match="used by the fit"):
            pcie.copy_holdout_errors(run)


def test_pooled_run_is_the_median_of_its_sweeps():
    runs = measurements.copy_latency_sweeps(measurements.COPY_FIT_SWEEPS)
    pooled = measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS)
    assert pooled.sweeps == measurements.COPY_FIT_SWEEPS
    x = [r.series["d2d"]["b2b_per_copy"][5] for r in runs]
    # four sweeps: the mean of the middle two
    assert pooled.series["d2d"]["b2b_per_copy"][5] == pytest.approx(
        (sorted(x)[1] + sorted(x)[2]) / 2)


# --- the model: analytic oracle ------------------------------------------------------
def _system_with(hw):
    sys = systems.get("hgx-h200")
    sec = dataclasses.replace(sys.copy_hardware, copies=(("h2d_pageable", hw),))
    return dataclasses.replace(sys, copy_hardware=sec)


def test_hardware_time_is_latency_plus_size_over_bandwidth():
    bw = units.Bandwidth.from_gb_per_s(50, "per_direction")
    slow = units.Bandwidth.from_gb_per_s(10, "per_direction")
    hw = systems.HardwareCopy(latency_s=5e-6, pipelined_s=2e-6, bandwidth=bw,
                              cuda_issue_s=4e-6, kind="assumed",
                              knee_bytes=32 * MiB, bandwidth_above_knee=slow)
    sys = _system_with(hw)
    kw = dict(memory="pageable", system=sys)
    # 1e6 B at 50 GB/s = 20 us, + 5 us
    assert pcie.copy_latency(1e6, "h2d", **kw) == pytest.approx(25e-6, rel=1e-12)
    # at the knee still 50 GB/s; above it the whole copy at 10 GB/s
    assert pcie.copy_latency(32 * MiB, "h2d", **kw) == pytest.approx(
        5e-6 + 33554432 / 50e9, rel=1e-12)
    assert pcie.copy_latency(64 * MiB, "h2d", **kw) == pytest.approx(
        5e-6 + 67108864 / 10e9, rel=1e-12)
    # CUDA loop: max(issue 4 us, gap 2 us + S / B)
    assert pcie.copy_time(8, "h2d", caller="cuda", **kw) == pytest.approx(4e-6)
    assert pcie.copy_time(1e6, "h2d", caller="cuda", **kw) == pytest.approx(22e-6)
    assert pcie.issue_cost("h2d", **kw) == 4e-6
    sizes = np.array([1e6, 64 * MiB])
    assert np.allclose(pcie.copy_latency(sizes, "h2d", **kw),
                       [25e-6, 5e-6 + 67108864 / 10e9], rtol=1e-12)
    with pytest.raises(ValueError, match="knee_bytes and bandwidth_above_knee"):
        systems.HardwareCopy(latency_s=5e-6, pipelined_s=2e-6, bandwidth=bw,
                             cuda_issue_s=4e-6, kind="assumed", knee_bytes=MiB)


# --- held-out errors per band ---------------------------------------------------------
@pytest.mark.parametrize("key", ACCEPTED)
def test_held_out_bands_meet_the_acceptance(rows, key):
    """Pinned h2d/d2h and d2d, hardware model: the median error over the held-out
    points is within the limit in every band; the largest is within the sweeps' own
    largest spread + 15 points; at least half the points are within the limit."""
    mine = [r for r in rows if r["key"] == key]
    assert [r["band"] for r in mine] == list(BANDS)
    for r in mine:
        assert r["points"] == 4 * r["sizes"]
        assert r["hw_median_pct"] <= r["limit_pct"], r
        assert r["hw_max_pct"] <= r["noise_max_pct"] + 15, r
        assert r["hw_within_pct"] >= 50, r


def test_the_missed_bands_are_exactly_the_documented_ones(rows):
    missed = []
    for r in rows:
        if r["key"] in PAGEABLE:
            continue
        for what, col in (("hardware latency", "hw"), ("CUDA back-to-back", "cuda")):
            if r[f"{col}_median_pct"] > r["limit_pct"]:
                missed.append((r["key"], what, r["band"]))
    assert missed == MISSED


def test_the_fit_on_pooled_sweeps_beats_the_old_single_sweep_fit(held):
    """The constants stored before (fit on 2026-12-01 run 1 alone) missed d2d
    64 KiB-1 MiB on these sweeps (median 22 %) and were further off for h2d pinned."""
    old = {"h2d_pinned": (3.926e-6, 55.45), "d2d": (5.752e-6, 2142.93)}
    med = {}
    for key, (alpha, gbps) in old.items():
        s = np.concatenate([r.series[key]["size_bytes"] for r in held])
        t = np.concatenate([r.series[key]["latency_event"] for r in held])
        before = band_errors(s, alpha + s / (gbps * GB), t)["64 KiB-1 MiB"]
        after = band_errors(s, predictions(key, s)[0], t)["64 KiB-1 MiB"]
        med[key] = (np.median(before), np.median(after))
        assert med[key][1] < med[key][0], key
    assert med["d2d"][0] > 0.15 >= med["d2d"][1]


def test_holdout_table_agrees_with_this_files_oracle(held, rows):
    assert len(rows) == 7 * 4
    pooled = measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS)
    for r in rows:
        s = np.concatenate([h.series[r["key"]]["size_bytes"] for h in held])
        ev = np.concatenate([h.series[r["key"]]["latency_event"] for h in held])
        b2b = np.concatenate([h.series[r["key"]]["b2b_per_copy"] for h in held])
        ref = np.concatenate([pooled.series[r["key"]]["latency_event"]] * len(held))
        hw, cu = predictions(r["key"], s)
        e = band_errors(s, hw, ev)[r["band"]]
        assert r["hw_median_pct"] == pytest.approx(100 * np.median(e))
        assert r["hw_max_pct"] == pytest.approx(100 * np.max(e))
        assert r["hw_within_pct"] == pytest.approx(
            100 * np.mean(e <= BANDS[r["band"]][2]))
        assert r["cuda_median_pct"] == pytest.approx(
            100 * np.median(band_errors(s, cu, b2b)[r["band"]]))
        assert r["noise_max_pct"] == pytest.approx(
            100 * np.max(band_errors(s, ref, ev)[r["band"]]))
        assert r["limit_pct"] == pytest.approx(100 * BANDS[r["band"]][2])


# --- pageable ------------------------------------------------------------------------
def test_pageable_h2d_knee_holds_on_every_sweep_and_d2h_has_none():
    sweeps = measurements.copy_latency_sweeps(
        measurements.COPY_FIT_SWEEPS + measurements.COPY_HOLDOUT_SWEEPS)
    for run in sweeps:
        cal = pcie.calibrate_copy_hardware(run)
        assert cal["h2d_pageable"]["knee_bytes"] == 32 * MiB, run.sweeps
        assert 0.4 < cal["h2d_pageable"]["bandwidth_above_knee_gb_per_s"] \
            / cal["h2d_pageable"]["bandwidth_gb_per_s"] < 0.75, run.sweeps
        assert "knee_bytes" not in cal["d2h_pageable"], run.sweeps
    # pinned copies have no knee in the model (the rule is applied to pageable only)
    assert "knee_bytes" not in pcie.calibrate_copy_hardware()["h2d_pinned"]


@pytest.mark.parametrize("key", PAGEABLE)
def test_pageable_is_outside_the_acceptance_because_the_sweeps_differ(rows, key):
    """From 64 KiB the sweeps themselves differ by more than +-15 % somewhere: no model
    of this host can promise the acceptance."""
    mine = [r for r in rows if r["key"] == key and r["limit_pct"] == 15.0]
    assert any(r["noise_max_pct"] > r["limit_pct"] for r in mine)
    # and the model is no further from a held-out sweep than 50 % anywhere
    assert all(r["hw_max_pct"] < 50 for r in rows if r["key"] == key)


# --- hardware vs caller -------------------------------------------------------------
def test_hardware_is_not_the_pytorch_issue_cost():
    # 1 KiB P2P: PyTorch's loop takes 82.5 us per copy; the hardware (assumed) ~6 us
    assert pcie.copy_time(KiB, "p2p") == pytest.approx(82.5e-6, rel=0.01)
    assert pcie.copy_time(KiB, "p2p", caller=None) < 10e-6
    assert pcie.issue_cost("p2p", caller="pytorch") == pytest.approx(82.5e-6, rel=0.01)
    # 16 MiB over NVLink is bandwidth-bound in hardware, not the same as 1 KiB
    assert pcie.copy_time(16 * MiB, "p2p", caller=None) > 5 * pcie.copy_time(
        KiB, "p2p", caller=None)
    # pinned h2d: no 28 us floor in hardware
    assert pcie.copy_time(4 * KiB, "h2d", caller=None) < 6e-6
    assert pcie.copy_time(4 * KiB, "h2d") == pytest.approx(28e-6, rel=0.02)


def test_p2p_hardware_is_marked_assumed_and_awaits_a_two_gpu_run():
    for name in SYSTEMS:
        p = pcie.hardware_copy("p2p", system=name)
        assert p.kind == "assumed" and "2-GPU" in p.source and "ASSUMED" in p.source
        assert p.latency_s == pcie.hardware_copy("d2d", system=name).latency_s


def test_systems_without_calibration_refuse_hardware_times():
    with pytest.raises(ValueError, match="system 'dgx-a100'.*caller='pytorch'"):
        pcie.copy_latency(1e6, "h2d", system="dgx-a100")
    assert pcie.copy_time(1e6, "h2d", system="dgx-a100") > 0     # PyTorch model


@given(st.sampled_from(PINNED + PAGEABLE + ("p2p",)),
       st.floats(1, 2**32), st.floats(1, 2**32))
def test_hardware_and_cuda_loop_are_monotonic_and_ordered(key, s1, s2):
    kind, memory, direction = ("p2p", "pinned", "one") if key == "p2p" else _kind(key)
    lo, hi = sorted((s1, s2))
    kw = dict(memory=memory, direction=direction, system="hgx-h200")
    assert pcie.copy_latency(lo, kind, **kw) <= pcie.copy_latency(hi, kind, **kw)
    hw = pcie.hardware_copy(kind, **kw)
    rate = hw.bandwidth.bytes_per_s
    if hw.knee_bytes is not None and hi > hw.knee_bytes:
        rate = hw.bandwidth_above_knee.bytes_per_s
    t = pcie.copy_time(hi, kind, caller="cuda", **kw)
    # oracle: max(issue, gap + S / B(S))
    assert t == pytest.approx(max(hw.cuda_issue_s, hw.pipelined_s + hi / rate))
    assert pcie.copy_latency(hi, kind, **kw) == pytest.approx(hw.latency_s + hi / rate)


@pytest.mark.parametrize("bad, match", [
    (dict(kind="p2p", memory="pageable"), "memory and direction"),
    (dict(kind="h2d", memory="pageable", direction="both"), "direction='both'"),
    (dict(kind="h2d", direction="sideways"), "direction must be one of"),
    (dict(kind="d2d", caller="pytorch"), "kind must be one of"),
    (dict(kind="h2d", caller="python"), "caller must be one of"),
    (dict(kind="h2d", direction="both", caller="pytorch"), "direction must be one of"),
    (dict(kind="d2d", system="dgx-h100"), "no hardware copy calibration"),
])
def test_bad_combinations(bad, match):
    bad = {"caller": None, **bad}
    with pytest.raises(ValueError, match=match):
        pcie.copy_time(1e6, **{"system": "hgx-h200", **bad})
