"""Figures of the expert parallelism and disaggregated serving chapter draw exactly the
rows they are given: DeepEP's and Mooncake's published points, the model beside them, and
the errors they state."""
from __future__ import annotations

import statistics

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab import plotting  # noqa: E402
from gpulab.inference import disagg, ep  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return ep.ep_checks()


@pytest.mark.parametrize("kernel", ["normal", "low_latency"])
def test_ep_check_draws_every_published_row_and_its_model(rows, kernel):
    fig, ax = plt.subplots()
    plotting.plot_ep_check(rows, kernel=kernel, ax=ax)
    sel = [r for r in rows if r["kernel"] == kernel]
    pts = sorted(tuple(float(x) for x in p) for c in ax.collections
                 for p in c.get_offsets())
    want = sorted((r["ep"], r["published"]) for r in sel)
    assert [x for p in pts for x in p] == pytest.approx([x for p in want for x in p])
    drawn = sorted(y for line in ax.lines for y in line.get_ydata())
    assert drawn == pytest.approx(sorted(r["model"] for r in sel))
    text = " ".join(t.get_text() for t in ax.texts)
    first = [abs(r["error"]) for r in sel if r["source_id"] == "deepep-v1-2025-02"]
    assert f"median |error| {statistics.median(first):.0%}" in text
    plt.close(fig)


def test_kv_check_draws_the_rows_and_the_error_range():
    rows = disagg.kv_transfer_checks()
    fig, ax = plt.subplots()
    plotting.plot_kv_transfer_check(rows, ax=ax)
    pts = sorted(tuple(float(x) for x in p) for c in ax.collections
                 for p in c.get_offsets())
    want = sorted((r["prompt_tokens"], r["published_ms"]) for r in rows)
    assert [x for p in pts for x in p] == pytest.approx([x for p in want for x in p])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    errs = [r["error"] for r in rows if r["source_id"] == "mooncake-vllm-pd-h800"]
    assert f"model (error {min(errs):+.0%} to {max(errs):+.0%})" in labels
    plt.close(fig)


def test_ttft_share_one_line_per_curve_in_percent():
    curves = [("a", "sequential", [512, 1024], [0.1, 0.2]),
              ("a", "layerwise", [512, 1024], [0.001, 0.002])]
    fig, ax = plt.subplots()
    plotting.plot_ttft_share(curves, ax=ax)
    assert [list(line.get_ydata()) for line in ax.lines] == [[10, 20], [0.1, 0.2]]
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--"]
    plt.close(fig)


def test_ep_times_bars_are_the_legs():
    pair = ep.moe_calls("deepep-h800", 16, 4096, "normal")
    fig, ax = plt.subplots()
    plotting.plot_ep_times(pair, ax=ax)
    lefts = sorted(round(p.get_x(), 9) for p in ax.patches if p.get_x() > 0)
    assert lefts == pytest.approx([d.latency * 1e6 for _, d in pair for _ in (0, 1)])
    assert any(f"{pair[0][1].time * 1e6:,.0f} µs" in t.get_text() for t in ax.texts)
    plt.close(fig)


@pytest.mark.parametrize("call", [
    lambda: plotting.plot_ep_check([], kernel="normal"),
    lambda: plotting.plot_ep_check(ep.ep_checks(), kernel="v2"),
    lambda: plotting.plot_kv_transfer_check([]),
    lambda: plotting.plot_ttft_share([]),
    lambda: plotting.plot_ttft_share([("a", "overlapped", [1, 2], [0.1, 0.2])]),
    lambda: plotting.plot_ep_times([]),
])
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()
