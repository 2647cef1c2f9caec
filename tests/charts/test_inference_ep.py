"""The EP chart (expert parallelism and disaggregated serving chapter): its points equal
the model, refused points say why, and it starts where the explorer starts."""
from __future__ import annotations

import pytest

from gpulab import charts
from gpulab.inference import ep


@pytest.fixture(scope="module")
def chart():
    return charts.ep_chart()


def test_grid_and_rows_equal_the_model(chart):
    n = 1
    for c in chart.controls:
        n *= len(c.values)
    assert len(chart.summary) == n
    (_, d), (_, c) = ep.moe_calls("deepep-h800", 16, 4096, "normal")
    got = {(r["bar"], r["part"]): r["us"] for r in chart.rows
           if (r["system"], r["kernel"], r["ep"], r["tokens"])
           == ("deepep-h800", "normal", 16, 4096)}
    assert got["dispatch, NVLink", "NVLink leg"] == pytest.approx(d.nvlink_time * 1e6,
                                                                  rel=1e-3)
    assert got["combine, RDMA", "RDMA leg"] == pytest.approx(c.rdma_time * 1e6, rel=1e-3)
    assert got["dispatch, RDMA", "fixed cost"] == pytest.approx(d.latency * 1e6, rel=1e-3)


def test_refused_points_have_no_bars_and_say_why(chart):
    bad = [s for s in chart.summary if s["system"] == "gb200-nvl72" and s["ep"] == 128]
    assert bad and all(s["text"].startswith("Not possible") for s in bad)
    assert not [r for r in chart.rows if r["system"] == "gb200-nvl72" and r["ep"] == 128]


def test_initial_point_is_the_explorer_default(chart):
    from gpulab import widgets
    w = widgets.ep_explorer()
    start = {c.name: c.value for c in chart.controls}
    assert start == {name: w.controls[name].value for name in start}
    assert "Dispatch" in chart.to_html()
