"""The decode chart (serving chapter): its points equal the model and the explorer."""
from __future__ import annotations

import pytest

from gpulab import charts, inference


@pytest.fixture(scope="module")
def chart():
    return charts.decode_chart()


def test_grid_and_rows_equal_the_model(chart):
    n = 1
    for c in chart.controls:
        n *= len(c.values)
    assert len(chart.summary) == n
    d = inference.decode_step("llama3-70b", "hgx-h200", tp=8, batch=32, context=8192,
                              allreduce="twoshot")
    got = {r["part"]: r["ms"] for r in chart.rows
           if (r["system"], r["tp"], r["batch"], r["allreduce"])
           == ("hgx-h200", 8, 32, "twoshot")}
    assert got["compute + memory"] == pytest.approx(d.compute_time * 1e3, rel=1e-3)
    assert got["communication"] == pytest.approx(d.comm_time * 1e3, rel=1e-3)


def test_refused_points_have_no_bar_and_say_why(chart):
    bad = [s for s in chart.summary if s["system"] == "l40s-x8" and s["tp"] == 8
           and s["allreduce"] == "oneshot"]
    assert bad and all(s["text"].startswith("Not possible at batch") for s in bad)
    assert not [r for r in chart.rows if r["system"] == "l40s-x8" and r["tp"] == 8
                and r["allreduce"] == "oneshot"]


def test_initial_point_is_the_explorer_default(chart):
    start = {c.name: c.value for c in chart.controls}
    assert start == {"system": "hgx-h200", "tp": 8, "batch": 32, "allreduce": "twoshot"}
    assert "TPOT" in chart.to_html()
