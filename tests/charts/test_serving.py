"""The serving chart (serving-layout chapter): its points equal the buying model at the
example prices, and bad input names the parameter."""
from __future__ import annotations

import pytest

from gpulab import charts
from gpulab.inference import roi


@pytest.fixture(scope="module")
def chart():
    return charts.serving_chart()


@pytest.mark.parametrize("model, tpot_ms", [("llama3-70b", 50), ("llama3-70b", 20),
                                            ("llama3-70b", 10),
                                            ("llama3-8b", 100)])
def test_rows_equal_the_model_at_grid_points(chart, model, tpot_ms):
    table = roi.buying_table(model, roi.EXAMPLE_PRICES, tpot_target=tpot_ms * 1e-3,
                             context=4096)
    got = {r["system"]: r["mtok_per_usd"] for r in chart.rows
           if (r["model"], r["tpot_ms"]) == (model, tpot_ms)}
    want = {r["system"]: r["tokens_per_usd"] / 1e6 for r in table if r["meets_target"]}
    assert want and set(got) == set(want)
    for s, v in want.items():
        assert got[s] == pytest.approx(v, rel=1e-3), s
    text = chart.point(model=model, tpot_ms=tpot_ms)["text"]
    assert f"{tpot_ms} ms" in text
    for r in table:
        assert r["system"] in text


def test_a_server_missing_the_target_has_no_bar_and_says_so(chart):
    missed = [(m, t, r["system"]) for m in charts.SERVING_CHART_MODELS
              for t in charts.SERVING_CHART_TPOTS_MS
              for r in roi.buying_table(m, roi.EXAMPLE_PRICES, tpot_target=t * 1e-3,
                                        context=4096) if not r["meets_target"]]
    assert ("llama3-70b", 10, "l40s-x8") in missed       # the grid shows a miss
    for m, t, s in missed:
        assert not [r for r in chart.rows
                    if (r["model"], r["tpot_ms"], r["system"]) == (m, t, s)]
        text = chart.point(model=m, tpot_ms=t)["text"]
        assert f"{s}: no layout meets the target" in text


def test_initial_point_is_the_explorer_default_and_prices_are_named(chart):
    start = {c.name: c.value for c in chart.controls}
    assert start == {"model": "llama3-70b", "tpot_ms": 50}
    assert "example prices" in chart.spec["title"]["text"]
    for s, p in roi.EXAMPLE_PRICES.items():
        assert f"{s} {p:.2f}" in chart.note
    assert "not quotes" in chart.note


@pytest.mark.parametrize("kwargs, name", [
    ({"model": "gpt-9"}, "model"), ({"tpot_ms": 55}, "tpot_ms"),
    ({"context": 5000}, "context")])
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        charts.serving_chart(**kwargs)
