"""Figures of the serving-layout chapter draw exactly the rows they are given."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab import plotting  # noqa: E402
from gpulab.inference import roi  # noqa: E402


@pytest.fixture(scope="module")
def options():
    return {s: roi.layout_options("llama3-70b", s, tpot_target=0.05, context=4096)
            for s in ("hgx-h200", "h100-pcie")}


def test_layouts_one_point_per_layout(options):
    fig, ax = plt.subplots()
    plotting.plot_serving_layouts(options, tpot_target=0.05, ax=ax)
    xs = sorted(x for c in ax.collections for x, _ in c.get_offsets()
                if c.get_sizes()[0] == 30)
    want = sorted(o.tpot * 1e3 for opts in options.values() for o in opts)
    assert xs == pytest.approx(want)
    labels = {t.get_text() for t in ax.texts}
    for s in options:
        assert roi.best_layout("llama3-70b", s, tpot_target=0.05,
                               context=4096).label in labels
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(50.0)
    plt.close(fig)


def test_tpot_check_points():
    rows = [{"published": 0.01, "model": 0.012, "tp": 2, "fits_memory": True},
            {"published": 0.02, "model": 0.015, "tp": 8, "fits_memory": False}]
    fig, ax = plt.subplots()
    plotting.plot_tpot_check(rows, ax=ax)
    from matplotlib.collections import PathCollection
    pts = sorted(tuple(p) for c in ax.collections if isinstance(c, PathCollection)
                 for p in c.get_offsets())
    assert [v for p in pts for v in p] == pytest.approx([10.0, 12.0, 20.0, 15.0])
    plt.close(fig)


def test_tokens_per_dollar_bar_lengths():
    rows = roi.buying_table("llama3-70b", {"hgx-h200": 3.0, "l40s-x8": 2.0},
                            tpot_target=0.05, context=4096)
    fig, ax = plt.subplots()
    plotting.plot_tokens_per_dollar(rows, ax=ax)
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx([r["tokens_per_usd"] / 1e6 for r in rows])
    plt.close(fig)


def test_kv_transfer_shares():
    fig, ax = plt.subplots()
    plotting.plot_kv_transfer([("a", 0.1), ("b", 0.3)], 0.3, ax=ax)
    assert [t.get_text().strip() for t in ax.texts] == ["25%", "50%"]
    plt.close(fig)


@pytest.mark.parametrize("call", [
    lambda: plotting.plot_serving_layouts({}),
    lambda: plotting.plot_tpot_check([]),
    lambda: plotting.plot_tokens_per_dollar([]),
    lambda: plotting.plot_kv_transfer([], 0.1),
])
def test_empty_input_refused(call):
    with pytest.raises(ValueError):
        call()
