"""Step-time bars of an expert-parallel step show the EP all-to-all; dense steps keep
their five parts."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab import parallelism as par  # noqa: E402
from gpulab import plotting  # noqa: E402


@pytest.fixture(scope="module")
def steps():
    kw = dict(global_batch=64, mfu=0.4)
    moe = par.step_time("mixtral-8x7b", "hgx-h200", (1, 1, 8), ep=8, **kw)
    dense = par.step_time("llama3-8b", "hgx-h200", (1, 1, 8), **kw)
    return moe, dense


def _bar_ends(ax):
    ends = {}
    for rect in ax.patches:
        y = round(rect.get_y() + rect.get_height() / 2, 6)
        ends[y] = max(ends.get(y, 0.0), rect.get_x() + rect.get_width())
    return sorted(ends.values())


@pytest.mark.parametrize("plot", ["breakdown", "comparison"])
def test_bars_end_at_the_step_time_with_ep(steps, plot):
    moe, dense = steps
    fig, ax = plt.subplots()
    if plot == "breakdown":
        plotting.plot_step_breakdown([("moe", moe), ("dense", dense)], ax=ax)
    else:
        plotting.plot_step_comparison([("moe", moe), ("dense", dense)], ax=ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "EP all-to-all" in labels
    assert _bar_ends(ax) == pytest.approx(sorted([moe.total, dense.total]), rel=1e-9)
    plt.close(fig)


def test_dense_bars_have_no_ep_part(steps):
    _moe, dense = steps
    fig, ax = plt.subplots()
    plotting.plot_step_comparison([("dense", dense)], ax=ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "EP all-to-all" not in labels and len(labels) == 5
    plt.close(fig)
