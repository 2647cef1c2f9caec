"""Copies: the hardware model (one-copy latency + size / bandwidth) apart from the
caller's issue cost, fitted to run 1 of our CUDA C++ copy runs on 1x H200 SXM and
checked against run 2 (held out) per size band.

Acceptance (issue 12): +-15 % from 64 KiB, +-30 % below, against independent copy
measurements. Errors are |model / run 2 - 1|, per band, median and maximum.

Where the model stands against run 2 (hardware model = one isolated copy vs
latency_event; CUDA loop = max(issue, gap + S/B) vs b2b_per_copy):

* pinned h2d and d2h, one direction: the median meets the acceptance in every band
  (hardware: <= 21 % below 64 KiB, <= 14 % 64 KiB-1 MiB, <= 1 % above); the maximum
  does not everywhere (24-26 % below 64 KiB, 23 % at 64 KiB for h2d), where run 2 is
  as far from run 1 as from the model (run-to-run spread, which no fit can beat);
* both directions at once: median within the acceptance except d2h 64 KiB-1 MiB
  (16 %);
* d2d: misses 64 KiB-1 MiB (25 % hardware, 21 % loop; run 1 itself is 18-20 % off
  run 2 there) and the loop's 1-64 MiB band (17 %: 4-16 MiB copies repeated back to back
  stay in the 60 MB L2, not modelled);
* pageable: run 1 and run 2 differ by up to 40 %; the model is only bounded by that
  spread (median up to 42 % for h2d >= 64 MiB), not held to the acceptance.

The tests assert exactly this: every median within the acceptance or the runs' own
spread + 10 points, and the list of missed bands (ACCEPTANCE_MISSED) as it is, so an
improvement or a regression both show up here.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpulab import measurements, pcie, systems
from gpulab.units import GB, KiB, MiB

#: Size bands of the acceptance: [low, high) bytes, and the allowed error.
BANDS = {"< 64 KiB": (0, 64 * KiB, 0.30), "64 KiB-1 MiB": (64 * KiB, MiB, 0.15),
         "1-64 MiB": (MiB, 64 * MiB, 0.15), ">= 64 MiB": (64 * MiB, np.inf, 0.15)}
PINNED = ("h2d_pinned", "d2h_pinned", "h2d_pinned_both", "d2h_pinned_both", "d2d")
PAGEABLE = ("h2d_pageable", "d2h_pageable")
#: Bands whose median error on run 2 misses the acceptance, and why: run 2 is slower
#: than run 1 at these sizes (d2h both directions: 16 % vs 15 %; d2d 64 KiB-1 MiB:
#: run 1 itself is 18-20 % off run 2) and d2d copies of 4-16 MiB are served from the
#: 60 MB L2 when repeated back to back, which the model does not represent.
ACCEPTANCE_MISSED = {
    "d2h_pinned_both": [("hardware latency", "64 KiB-1 MiB")],
    "d2d": [("hardware latency", "64 KiB-1 MiB"), ("CUDA back-to-back", "64 KiB-1 MiB"),
            ("CUDA back-to-back", "1-64 MiB")],
}


def _kind(key):
    kind = key.split("_")[0]
    memory = "pageable" if "pageable" in key else "pinned"
    direction = "both" if key.endswith("_both") else "one"
    return kind, memory, direction


@pytest.fixture(scope="module")
def runs():
    return (measurements.copy_latency_run("copies_run1.csv"),
            measurements.copy_latency_run("copies_run2.csv"))


def band_errors(sizes, model, measured):
    """{band: (median |err|, max |err|)} of model against measured."""
    err = np.abs(model / measured - 1.0)
    out = {}
    for name, (lo, hi, _) in BANDS.items():
        sel = (sizes >= lo) & (sizes < hi)
        out[name] = (float(np.median(err[sel])), float(np.max(err[sel])))
    return out


def predictions(key, sizes, system="h200-x2-measured"):
    kind, memory, direction = _kind(key)
    hw = pcie.copy_time(sizes, kind, memory=memory, direction=direction,
                        system=system, caller=None)
    b2b = pcie.copy_time(sizes, kind, memory=memory, direction=direction,
                         system=system, caller="cuda")
    return hw, b2b


def test_stored_constants_are_the_fit_of_run1(runs):
    cal = pcie.calibrate_copy_hardware(runs[0])
    for name in ("h200-x2-measured", "hgx-h200", "hgx-h200-2node"):
        hwsec = systems.get(name).copy_hardware
        assert "copies_run1.csv" in hwsec.source and hwsec.kind == "measured"
        for key, v in cal.items():
            p = hwsec.params(key)
            assert p.kind == "measured"
            assert p.latency_s == pytest.approx(v["latency_s"], rel=2e-3)
            assert p.pipelined_s == pytest.approx(v["pipelined_s"], rel=2e-3)
            assert p.cuda_issue_s == pytest.approx(v["cuda_issue_s"], rel=2e-3)
            assert p.bandwidth.gb_per_s == pytest.approx(v["bandwidth_gb_per_s"],
                                                         rel=2e-3)


@pytest.mark.parametrize("key", PINNED)
def test_held_out_run2_meets_the_acceptance_per_band(runs, key):
    run1, ser = runs[0].series[key], runs[1].series[key]
    s = ser["size_bytes"]
    hw, b2b = predictions(key, s)
    missed = []
    for what, model, meas, again in (
            ("hardware latency", hw, ser["latency_event"], run1["latency_event"]),
            ("CUDA back-to-back", b2b, ser["b2b_per_copy"], run1["b2b_per_copy"])):
        errs = band_errors(s, model, meas)
        spread = band_errors(s, again, meas)        # run 1 itself against run 2
        for band, (med, mx) in errs.items():
            if med > BANDS[band][2]:
                missed.append((what, band))
            # never worse than the runs' own disagreement plus 10 points, nor than
            # 30 % where the model is known to miss (d2d in L2)
            known = 0.30 if (what, band) in ACCEPTANCE_MISSED.get(key, []) else 0.0
            assert med <= max(BANDS[band][2], spread[band][0] + 0.10, known), \
                (key, what, band)
            assert mx <= max(0.30, spread[band][1] + 0.45), (key, what, band, mx)
    # where the median misses the acceptance (documented in the module docstring)
    assert missed == ACCEPTANCE_MISSED.get(key, []), missed


@pytest.mark.parametrize("key", PAGEABLE)
def test_pageable_is_bounded_by_its_run_to_run_spread(runs, key):
    a, b = runs[0].series[key], runs[1].series[key]
    s = b["size_bytes"]
    hw, _ = predictions(key, s)
    model_err = band_errors(s, hw, b["latency_event"])
    spread = band_errors(s, a["latency_event"], b["latency_event"])
    for band in BANDS:
        # the model is no further from run 2 than run 1 is, plus 40 points
        assert model_err[band][0] <= spread[band][1] + 0.40, (key, band)


def test_error_table_of_the_held_out_run(runs):
    """The table the docs report: median / max error per band, run 2."""
    rows = []
    for key in PINNED + PAGEABLE:
        ser = runs[1].series[key]
        hw, _ = predictions(key, ser["size_bytes"])
        errs = band_errors(ser["size_bytes"], hw, ser["latency_event"])
        rows.append((key, errs))
    assert len(rows) == 7
    med_h2d = dict(rows)["h2d_pinned"]
    assert med_h2d[">= 64 MiB"][0] < 0.02           # bandwidth-bound: within 2 %


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
    p = pcie.hardware_copy("p2p", system="hgx-h200")
    assert p.kind == "assumed" and "2-GPU" in p.source
    assert p.latency_s == pcie.hardware_copy("d2d", system="hgx-h200").latency_s


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
    t = pcie.copy_time(hi, kind, caller="cuda", **kw)
    # oracle: max(issue, gap + S / B)
    assert t == pytest.approx(max(hw.cuda_issue_s,
                                  hw.pipelined_s + hi / hw.bandwidth.bytes_per_s))
    assert pcie.copy_latency(hi, kind, **kw) == pytest.approx(
        hw.latency_s + hi / (hw.bandwidth.gb_per_s * GB))


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


def test_holdout_table_agrees_with_this_files_oracle(runs):
    rows = pcie.copy_holdout_errors(runs[1])
    assert len(rows) == 7 * 4
    for r in rows:
        ser = runs[1].series[r["key"]]
        s = ser["size_bytes"]
        hw, b2b = predictions(r["key"], s)
        med, mx = band_errors(s, hw, ser["latency_event"])[r["band"]]
        assert r["hw_median_pct"] == pytest.approx(100 * med)
        assert r["hw_max_pct"] == pytest.approx(100 * mx)
        med, _ = band_errors(s, b2b, ser["b2b_per_copy"])[r["band"]]
        assert r["cuda_median_pct"] == pytest.approx(100 * med)
        assert r["limit_pct"] == pytest.approx(100 * BANDS[r["band"]][2])
