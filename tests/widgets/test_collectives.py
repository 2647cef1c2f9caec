"""Chapter 4 (in-network reduction): collective_explorer driven headless, and its plots.

Every control must reach :func:`gpulab.collectives.predict` in SI units (bytes,
ranks, preset names), change the image, and combinations the model refuses must
show its message. The explorer's initial state must equal the chapter's static
figure (same model call, same plot function).
"""
from __future__ import annotations

import inspect
import math
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from gpulab import collectives, plotting, systems, units, widgets  # noqa: E402


from tests.recorder import Recorder, shown_ids  # noqa: E402


@pytest.fixture
def pred(monkeypatch):
    return Recorder(monkeypatch, collectives, "predict")


def _png(w):
    return bytes(w.view.image.value)


_shown = shown_ids


# --- factory ------------------------------------------------------------------------------
def test_registered_factory_without_required_arguments():
    factory = widgets.explorers()["collective"]
    assert factory is widgets.collective_explorer
    assert not [p for p in inspect.signature(factory).parameters.values()
                if p.default is inspect.Parameter.empty]
    w = factory()
    assert isinstance(w, W.VBox)
    assert isinstance(w.view.image, W.Image) and w.view.image.format == "png"
    assert _png(w).startswith(b"\x89PNG")
    assert w.message.value == "" and w.summary.value
    assert all(isinstance(c, W.ValueWidget) for c in w.controls.values())
    shown = _shown(w)
    assert all(id(c) in shown for c in w.controls.values())
    assert id(w.view.image) in shown and id(w.message) in shown


@pytest.mark.parametrize("kw, param", [
    ({"message_bytes": 100}, "message_bytes"),
    ({"message_bytes": 2 ** 40}, "message_bytes"),
    ({"n_ranks": 1}, "n_ranks"),
    ({"n_ranks": 9}, "n_ranks"),
    ({"n_ranks": 3, "system": "h200-x2-measured"}, "n_ranks"),
    ({"n_ranks": 4.0}, "n_ranks"),
    ({"system": "dgx-h300"}, "system"),
    ({"collective": "allreduce"}, "collective"),
    ({"algorithm": "butterfly"}, "algorithm"),
    ({"transport": "tcp"}, "transport"),
    ({"metric": "algbw"}, "metric"),
    ({"launch": "mpi"}, "launch"),
])
def test_factory_refuses_bad_arguments(kw, param):
    with pytest.raises(ValueError, match=param):
        widgets.collective_explorer(**kw)


def test_sizes_are_powers_of_two_from_8_bytes_to_16_gib():
    sizes = widgets.COLLECTIVE_SIZES
    assert sizes[0] == 8 and sizes[-1] == 16 * units.GiB
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    slider = widgets.collective_explorer().controls["message_bytes"]
    assert isinstance(slider, W.SelectionSlider)
    assert [v for _label, v in slider.options] == list(sizes)
    assert slider.options[0][0] == "8 B" and slider.options[-1][0] == "16 GiB"


# --- every control reaches the model in SI units --------------------------------------------
def test_initial_call_is_in_si(pred):
    w = widgets.collective_explorer()
    call = pred.last
    assert call["collective"] == "all_reduce" and call["n_ranks"] == 8
    assert call["system"] == "hgx-h200" and call["transport"] == "p2p"
    assert call["algorithm"] == "auto" and call["protocol"] == "auto"
    np.testing.assert_array_equal(call["message_bytes"],
                                  np.array(widgets.COLLECTIVE_SIZES, float))
    assert w.controls["message_bytes"].value == 64 * units.MiB


@pytest.mark.parametrize("name, value, key, expected", [
    ("n_ranks", 4, "n_ranks", 4),
    ("system", "dgx-a100", "system", "dgx-a100"),
    ("collective", "all_gather", "collective", "all_gather"),
    ("algorithm", "ring", "algorithm", "ring"),
    ("transport", "shm", "transport", "shm"),
])
def test_each_control_reaches_the_model(pred, name, value, key, expected):
    w = widgets.collective_explorer()
    before, n_calls = _png(w), len(pred.calls)
    w.controls[name].value = value
    assert len(pred.calls) == n_calls + 1
    assert pred.last[key] == expected
    assert w.message.value == ""
    assert _png(w) != before


def test_message_size_moves_the_marker_and_summary(pred):
    w = widgets.collective_explorer()
    before = _png(w)
    w.controls["message_bytes"].value = units.MiB
    # the whole sweep is predicted in bytes; the marker sits at the chosen size
    np.testing.assert_array_equal(pred.last["message_bytes"],
                                  np.array(widgets.COLLECTIVE_SIZES, float))
    marker = [ln for ln in w.view.ax.lines if ln.get_markersize() > 8][0]
    assert list(marker.get_xdata()) == [units.MiB]
    i = widgets.COLLECTIVE_SIZES.index(units.MiB)
    assert marker.get_ydata()[0] == pytest.approx(
        w.prediction.busbw[i] / units.GB, rel=1e-12)
    assert "1 MiB" in w.summary.value
    assert _png(w) != before


def test_summary_numbers_come_from_the_prediction():
    w = widgets.collective_explorer()
    p = collectives.predict("all_reduce", 64 * units.MiB, 8, "hgx-h200")
    s = w.summary.value
    assert units.fmt_time(p.time[0]) in s
    assert f"{p.algbw[0] / units.GB:.1f} GB/s" in s
    assert f"{p.busbw[0] / units.GB:.1f} GB/s" in s
    assert p.algorithm[0] in s and p.protocol[0] in s
    assert "per direction" in s


def test_metric_switches_to_time_on_a_log_axis(pred):
    w = widgets.collective_explorer()
    before = _png(w)
    w.controls["metric"].value = "time"
    assert w.view.ax.get_yscale() == "log"
    assert "[µs]" in w.view.ax.get_ylabel()
    ys = w.view.ax.lines[0].get_ydata()
    np.testing.assert_allclose(ys, w.prediction.time / units.US, rtol=1e-12)
    assert _png(w) != before
    w.controls["metric"].value = "busbw"
    assert w.view.ax.get_yscale() == "linear"


def test_system_sets_the_gpu_range(pred):
    w = widgets.collective_explorer()
    n = w.controls["n_ranks"]
    w.controls["system"].value = "h200-x2-measured"
    assert n.max == 2 and n.value == 2
    assert pred.last["system"] == "h200-x2-measured" and pred.last["n_ranks"] == 2
    w.controls["system"].value = "gb200-nvl72"
    assert n.max == systems.get("gb200-nvl72").n_gpus
    w.controls["n_ranks"].value = 72
    assert pred.last["n_ranks"] == 72 and pred.last["system"] == "gb200-nvl72"
    assert w.message.value == ""


# --- invalid combinations show the model's message ---------------------------------------
@pytest.mark.parametrize("settings, fragment", [
    ([("system", "dgx-a100"), ("algorithm", "nvls")], "nvls"),
    ([("algorithm", "tree"), ("collective", "all_gather")], "all_reduce only"),
    ([("collective", "broadcast"), ("algorithm", "direct")], "modelled for all_reduce, alltoall"),
])
def test_invalid_combination_shows_the_model_message(settings, fragment):
    w = widgets.collective_explorer()
    for name, value in settings:
        w.controls[name].value = value
    assert fragment in w.message.value
    assert w.summary.value == ""
    # the model raised: the message is its ValueError text, not a traceback
    with pytest.raises(ValueError) as info:
        c = w.controls
        collectives.predict(c["collective"].value, 1.0, c["n_ranks"].value,
                            c["system"].value, transport=c["transport"].value,
                            algorithm=c["algorithm"].value)
    import html

    assert html.escape(str(info.value)) in w.message.value
    w.controls["algorithm"].value = "auto"              # valid again
    assert w.message.value == "" and w.summary.value


# --- the static figure of the chapter is the initial state ---------------------------------
def test_initial_state_equals_the_chapter_figure():
    w = widgets.collective_explorer()
    sizes = 2.0 ** np.arange(3, 35)                 # SIZES of the chapter
    p = collectives.predict("all_reduce", sizes, 8, "hgx-h200")
    _fig, ax = plt.subplots(figsize=(6.4, 3.4))
    plotting.plot_collective_prediction(
        p, message_bytes=64 * units.MiB,
        line_rate=collectives.fabric_bandwidth("hgx-h200"), ax=ax)
    got = [ln.get_xydata() for ln in w.view.ax.lines]
    want = [ln.get_xydata() for ln in ax.lines]
    assert len(got) == len(want)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert [t.get_text() for t in w.view.ax.get_legend().texts] == \
        [t.get_text() for t in ax.get_legend().texts]


# The blitted image against a full redraw: tests/widgets/test_blit.py (every explorer).


# --- plot functions -------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", plotting.STEP_ALGORITHMS)
def test_steps_return_axes_and_draw_on_the_given_one(algorithm):
    ax = plotting.plot_collective_steps(algorithm, 4)
    assert isinstance(ax, Axes) and ax.patches
    fig, given = plt.subplots()
    assert plotting.plot_collective_steps(algorithm, 4, ax=given) is given
    assert fig.axes == [given] and given.patches


@pytest.mark.parametrize("algorithm", plotting.STEP_ALGORITHMS)
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_step_schedules_reduce_everything(algorithm, n):
    sched = plotting.collectives._collective_schedule(algorithm, n)
    full = frozenset(range(n))
    assert all(c == frozenset([g]) for g, row in enumerate(sched[0][2])
               for c in row)
    assert all(c == full for row in sched[-1][2] for c in row)
    steps = len(sched) - 1
    if algorithm == "ring":
        assert steps == collectives.ring_steps("all_reduce", n, "ring")
        # every GPU sends exactly one chunk per step
        assert all(sorted(t[0] for t in tr) == list(range(n))
                   for _p, tr, _s in sched[1:])
    elif algorithm == "tree":
        assert steps == 2 * max(1, math.ceil(math.log2(n)))
    elif algorithm == "nvls":
        assert steps == 2
    else:
        assert steps == collectives.ring_steps("all_reduce", n, "direct")


def test_single_step_draws_one_panel():
    all_steps = plotting.plot_collective_steps("ring", 4)
    one = plotting.plot_collective_steps("ring", 4, step=1)
    assert 0 < len(one.patches) < len(all_steps.patches) / 4
    texts = [t.get_text() for t in one.texts]
    assert any(t.startswith("step 1 of 6") for t in texts)


@pytest.mark.parametrize("kw, param", [
    ({"algorithm": "butterfly"}, "algorithm"),
    ({"algorithm": "ring", "n_ranks": 1}, "n_ranks"),
    ({"algorithm": "ring", "n_ranks": 9}, "n_ranks"),
    ({"algorithm": "ring", "step": 7}, "step"),
    ({"algorithm": "nvls", "step": -1}, "step"),
])
def test_steps_refuse_bad_input(kw, param):
    with pytest.raises(ValueError, match=param):
        plotting.plot_collective_steps(**kw)


def _pred(n=8, system="hgx-h200", **kw):
    return collectives.predict("all_reduce", 2.0 ** np.arange(3, 35), n, system,
                               **kw)


def test_prediction_plot_data_equal_the_model():
    p = _pred()
    ax = plotting.plot_collective_prediction(p, message_bytes=units.GiB)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), p.busbw / units.GB,
                               rtol=1e-12)
    drawn = {ln.get_label().split(" ")[0]: ln for ln in ax.lines
             if len(ln.get_xdata()) and ln.get_markersize() < 8
             and ln.get_linestyle() == "None"}
    assert set(drawn) == set(p.algorithm)
    for a, ln in drawn.items():
        np.testing.assert_array_equal(ln.get_xdata(),
                                      p.message_bytes[p.algorithm == a])
    assert ax.get_ylabel() == "busbw [GB/s]"


def test_prediction_plot_updates_in_place():
    _fig, ax = plt.subplots()
    plotting.plot_collective_prediction(_pred(), message_bytes=units.MiB, ax=ax)
    lines = list(ax.lines)
    p4 = _pred(4)
    plotting.plot_collective_prediction(p4, message_bytes=units.GiB, ax=ax)
    assert list(ax.lines) == lines                      # same artists
    np.testing.assert_allclose(lines[0].get_ydata(), p4.busbw / units.GB)
    plotting.plot_collective_prediction(p4, metric="time", ax=ax)
    assert ax.get_yscale() == "log"
    np.testing.assert_allclose(lines[0].get_ydata(), p4.time / units.US)


def test_prediction_plot_refuses_bad_input():
    p = _pred()
    with pytest.raises(ValueError, match="prediction"):
        plotting.plot_collective_prediction(p.busbw)
    with pytest.raises(ValueError, match="message_bytes"):
        plotting.plot_collective_prediction(p, message_bytes=1000)
    with pytest.raises(ValueError, match="metric"):
        plotting.plot_collective_prediction(p, metric="algbw")
    with pytest.raises(ValueError, match="line_rate"):
        plotting.plot_collective_prediction(
            p, line_rate=units.Bandwidth(9e11, "bidirectional"))


def test_comparison_draws_points_and_lines_in_one_colour():
    p = _pred(2, "h200-x2-measured")
    s = np.array([2.0 ** 20, 2.0 ** 30])
    ax = plotting.plot_collective_comparison(
        {"ours": (s, np.array([6e10, 3.2e11]))}, {"ours": p})
    line, points = ax.lines[0], ax.lines[1]
    np.testing.assert_allclose(line.get_ydata(), p.busbw / units.GB)
    np.testing.assert_allclose(points.get_ydata(), [60.0, 320.0])
    assert line.get_color() == points.get_color()
    _fig, given = plt.subplots()
    assert plotting.plot_collective_comparison(
        predicted={"x": p}, metric="time", ax=given) is given
    assert given.get_yscale() == "log"


@pytest.mark.parametrize("kw, param", [
    ({}, "measured or predicted"),
    ({"predicted": {"x": 3.0}}, "predicted"),
    ({"measured": {"x": ([1.0, 2.0], [1.0])}}, "measured"),
    ({"measured": {"x": ([1.0], [1.0])}, "metric": "algbw"}, "metric"),
])
def test_comparison_refuses_bad_input(kw, param):
    with pytest.raises(ValueError, match=param):
        plotting.plot_collective_comparison(**kw)


def test_launch_changes_small_messages_only():
    """One process for all 8 GPUs pays eight launches per call: small messages get
    slower, large ones do not, and the figure and summary follow."""
    w = widgets.collective_explorer(message_bytes=8, metric="time", launch="node")
    node = w.prediction.time.copy()
    png = _png(w)
    w.controls["launch"].value = "gpu"
    gpu = w.prediction.time
    assert node[0] > 2 * gpu[0]
    assert node[-1] == pytest.approx(gpu[-1], rel=1e-3)
    assert _png(w) != png and "one process per GPU" in w.summary.value
    want = collectives.predict("all_reduce", w.sizes, 8, "hgx-h200", gpus_per_process=1)
    np.testing.assert_allclose(gpu, want.time)
