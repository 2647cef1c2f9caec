"""Buying for inference (gpulab.inference.roi): the best layout per server at a TPOT
target, tokens per USD, and the published TPOT check."""
from __future__ import annotations

import pytest

from gpulab import inference
from gpulab.inference import roi


def test_tokens_per_dollar_analytic():
    assert roi.tokens_per_dollar(1000.0, 2.0) == pytest.approx(1.8e6)
    assert roi.tokens_per_dollar(0.0, 2.0) == 0.0


@pytest.mark.parametrize("target", [0.02, 0.05, 0.1])
def test_best_layout_meets_target_and_beats_the_others(target):
    opts = roi.layout_options("llama3-70b", "dgx-h100", tpot_target=target, context=4096)
    best = roi.best_layout("llama3-70b", "dgx-h100", tpot_target=target, context=4096)
    assert best.meets_target and best.tpot <= target and best.fits_memory
    assert all(best.tokens_per_s_per_gpu >= o.tokens_per_s_per_gpu
               for o in opts if o.meets_target)
    # every layout fills the 8-GPU server
    assert all(o.tp * o.pp * o.replicas == 8 for o in opts)


def test_option_equals_decode_step():
    o = roi.best_layout("llama3-8b", "h100-pcie", tpot_target=0.05, context=2048)
    d = inference.decode_step("llama3-8b", "h100-pcie", tp=o.tp, pp=o.pp, batch=o.batch,
                              context=2048, precision="fp8", allreduce=o.allreduce)
    assert o.tpot == pytest.approx(d.tpot, rel=1e-12)
    assert o.tokens_per_s_server == pytest.approx(d.tokens_per_s * o.replicas, rel=1e-12)


def test_looser_target_never_lowers_throughput():
    a = roi.best_layout("llama3-70b", "hgx-h200", tpot_target=0.03, context=4096)
    b = roi.best_layout("llama3-70b", "hgx-h200", tpot_target=0.08, context=4096)
    assert b.tokens_per_s_per_gpu >= a.tokens_per_s_per_gpu


def test_impossible_target_is_reported_not_raised():
    o = roi.best_layout("llama3-70b", "l40s-x8", tpot_target=1e-4, context=4096)
    assert not o.meets_target
    rows = roi.buying_table("llama3-70b", {"l40s-x8": 2.0}, tpot_target=1e-4,
                            context=4096)
    assert rows[0]["tokens_per_usd"] == 0.0


def test_buying_table_scales_inversely_with_price():
    a = roi.buying_table("llama3-70b", {"hgx-h200": 2.0}, tpot_target=0.05, context=4096)
    b = roi.buying_table("llama3-70b", {"hgx-h200": 4.0}, tpot_target=0.05, context=4096)
    assert a[0]["tokens_per_usd"] == pytest.approx(2 * b[0]["tokens_per_usd"])


def test_example_prices_are_the_roi_chapter_examples():
    from gpulab import parallelism
    assert roi.EXAMPLE_PRICES["hgx-h200"] == parallelism.ROI_EXAMPLE_PRICES["fast"]
    assert roi.EXAMPLE_PRICES["h100-pcie"] == parallelism.ROI_EXAMPLE_PRICES["slow"]
    assert set(roi.EXAMPLE_PRICES) == set(roi.SYSTEMS)


def test_published_tpot_checks_rows():
    rows = roi.published_tpot_checks()
    assert len(rows) > 20
    for r in rows:
        assert r["error"] == pytest.approx(r["model"] / r["published"] - 1)
    fit = [abs(r["error"]) for r in rows if r["fits_memory"]]
    fit.sort()
    assert fit[len(fit) // 2] < 0.35         # median error of rows that fit


@pytest.mark.parametrize("kw, name", [
    (dict(tpot_target=0.0), "tpot_target"),
    (dict(tpot_target=0.05, context=0), "context"),
    (dict(tpot_target=0.05, precision="int4"), "precision"),
    (dict(tpot_target=0.05, system="no-such"), "system"),
])
def test_bad_input_names_the_parameter(kw, name):
    args = dict(tpot_target=0.05, context=4096)
    args.update(kw)
    system = args.pop("system", "hgx-h200")
    with pytest.raises(ValueError, match=name):
        roi.layout_options("llama3-70b", system, **args)


@pytest.mark.parametrize("price", [0, -1, 1e5])
def test_bad_price(price):
    with pytest.raises(ValueError, match="price_per_gpu_hour"):
        roi.tokens_per_dollar(100.0, price)
