"""Chapter 7 (parallel strategies): the layout explorer, driven headless, and the
chapter's plot functions (plot_memory_breakdown, plot_step_breakdown).

Every control must reach ``gpulab.parallelism.step_time`` as plain ints, bools and
preset names, change the image, and invalid layouts must show a message (with the
reasons) instead of a traceback. The initial state must equal the chapter's static
figure (built here exactly as ``book/parallel_strategies.md`` builds it).
"""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import parallelism, plotting, systems, units, widgets  # noqa: E402
from tests.recorder import Recorder, check_explorer_factory, patch_everywhere  # noqa: E402,E501
from tests.widgets.test_blit import stale_share  # noqa: E402

GB = units.GB


@pytest.fixture
def step(monkeypatch):
    return Recorder(monkeypatch, parallelism, "step_time")


def _png(w):
    return bytes(w.view.image.value)


def _msg(w):
    return w.message.value


def _widths(ax):
    return [p.get_width() for p in ax.patches]


def _default_step():
    return parallelism.step_time("13b", "dgx-h100", (2, 2, 2), global_batch=64,
                                 zero=1)


# --- factory ------------------------------------------------------------------------------
def test_layout_explorer_is_a_registered_factory():
    w = check_explorer_factory("layout")
    assert list(w.controls["model"].options) == parallelism.model_names()
    assert list(w.controls["system"].options) == systems.names()
    assert list(w.controls["global_batch"].options) == list(widgets.LAYOUT_BATCHES)


@pytest.mark.parametrize("kwargs, param", [
    ({"model": "13B"}, "model"), ({"system": "nope"}, "system"),
    ({"tp": 0}, "tp"), ({"tp": 17}, "tp"), ({"pp": 2.0}, "pp"),
    ({"dp": True}, "dp"), ({"dp": 65}, "dp"), ({"zero": 4}, "zero"),
    ({"zero": True}, "zero"), ({"recompute": "all"}, "recompute"),
    ({"global_batch": 48}, "global_batch"), ({"micro_batch": 3}, "micro_batch"),
    ({"sequence_parallel": 1}, "sequence_parallel"),
])
def test_factory_refuses_bad_arguments(kwargs, param):
    with pytest.raises(ValueError, match=param):
        widgets.layout_explorer(**kwargs)


# --- initial state == the chapter's static figure ------------------------------------------
def test_default_state_is_the_static_figure(step):
    w = widgets.layout_explorer()
    c = w.controls
    assert (c["model"].value, c["system"].value, c["tp"].value, c["pp"].value,
            c["dp"].value, c["zero"].value, c["recompute"].value,
            c["sequence_parallel"].value, c["global_batch"].value,
            c["micro_batch"].value) == ("13b", "dgx-h100", 2, 2, 2, 1, "none",
                                        False, 64, 1)
    ref = _default_step()
    assert w.step == ref
    cap = systems.get("dgx-h100").gpu_spec.memory_bytes
    usable = cap * (1 - parallelism.assumption("memory_reserve_fraction"))
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7.2, 4.4))
    labels = widgets.LAYOUT_LABELS
    plotting.plot_memory_breakdown([(labels[0], ref)], capacity=cap, usable=usable,
                                   ax=a1)
    plotting.plot_step_breakdown([(labels[1], ref)], ax=a2)
    for mine, theirs in ((a1, w.view.ax_memory), (a2, w.view.ax_step)):
        np.testing.assert_allclose(_widths(theirs), _widths(mine), rtol=1e-12)
        assert theirs.get_xlim() == mine.get_xlim()
        assert [t.get_text() for t in theirs.texts] == \
            [t.get_text() for t in mine.texts]
    s = w.summary.value
    assert "TP2 PP2 DP2" in s and "65.4 GB" in s and "72.0 GB usable" in s


# --- every control reaches the model -------------------------------------------------------
CASES = [
    ("model", "llama3-8b", "spec", "llama3-8b"),
    ("system", "hgx-h200", "system", "hgx-h200"),
    ("system", "h100-pcie", "system", "h100-pcie"),
    ("tp", 1, "layout", parallelism.Layout(1, 2, 2)),
    ("pp", 1, "layout", parallelism.Layout(2, 1, 2)),
    ("dp", 1, "layout", parallelism.Layout(2, 2, 1)),
    ("zero", 3, "zero", 3),
    ("recompute", "selective", "recompute", "selective"),
    ("recompute", "full", "recompute", "full"),
    ("sequence_parallel", True, "sequence_parallel", True),
    ("global_batch", 128, "global_batch", 128),
    ("micro_batch", 2, "micro_batch", 2),
]


@pytest.mark.parametrize("control, value, param, expected", CASES,
                         ids=[f"{c}={v}" for c, v, *_ in CASES])
def test_control_reaches_model(step, control, value, param, expected):
    w = widgets.layout_explorer()
    png, n = _png(w), w.n_updates
    step.calls.clear()
    w.controls[control].value = value
    assert w.n_updates == n + 1
    assert len(step.calls) == 1
    call = step.calls[0]
    assert call[param] == expected and type(call[param]) is type(expected)
    for k in ("global_batch", "micro_batch", "zero"):
        assert type(call[k]) is int
    assert type(call["sequence_parallel"]) is bool
    assert _png(w) != png
    real = step.real(**call)
    assert w.step == real
    # a layout that does not fit is drawn, with the shortfall in the message
    assert _msg(w) == "" if real.fits else "does not fit" in _msg(w)
    mem = [p.get_width() for p in w.view.ax_memory.patches]
    parts = [k for k in ("weights", "gradients", "master", "grad_copy", "adam_m",
                         "adam_v", "activations")
             if k != "grad_copy" or real.memory.grad_copy > 0]
    np.testing.assert_allclose(
        mem, [getattr(real.memory, k) / GB for k in parts], rtol=1e-12)
    np.testing.assert_allclose(_widths(w.view.ax_step),
                               list(real.components().values()), rtol=1e-12)


def test_every_control_is_tested():
    assert set(widgets.layout_explorer().controls) == {c for c, *_ in CASES}


def test_results_are_cached(step):
    w = widgets.layout_explorer()
    w.controls["tp"].value = 1
    step.calls.clear()
    w.controls["tp"].value = 2
    w.controls["tp"].value = 1
    assert not step.calls and w.n_updates == 4


# --- invalid layouts: a message, not a traceback -----------------------------------------
def test_broken_divisibility_shows_reasons():
    w = widgets.layout_explorer()
    png, n = _png(w), w.n_updates
    w.controls["tp"].value = 3
    m = _msg(w)
    assert m.startswith("<div") and "Traceback" not in m
    assert "cannot run" in m and "attention heads do not split over TP3" in m
    assert "needs 12 GPUs" in m
    assert _png(w) != png and w.n_updates == n and w.summary.value == ""
    assert w.step is None
    w.controls["tp"].value = 2
    assert _msg(w) == "" and w.summary.value
    assert _png(w) == png and w.step == _default_step()


def _data_artists(w):
    """The visible bars, lines and value labels of both panels (not the frames)."""
    return [a for ax in (w.view.ax_memory, w.view.ax_step)
            for a in ax.patches + ax.lines + ax.texts if a.get_visible()]


def _note(w):
    return [t.get_text() for t in w.view.fig.texts if t.get_visible()]


def test_a_setting_that_cannot_run_clears_the_figure_and_says_why():
    """TP4 on the TP slider from TP2 PP2 DP2 needs 16 GPUs of an 8-GPU system: the
    figure must not keep showing TP2 PP2 DP2 (its bars, its step time)."""
    w = widgets.layout_explorer()                    # TP2 PP2 DP2 on dgx-h100
    png = _png(w)
    assert _data_artists(w) and not _note(w)
    w.controls["tp"].value = 4
    assert "TP4 PP2 DP2 cannot run: needs 16 GPUs" in _msg(w)
    assert w.step is None and w.summary.value == ""
    assert not _data_artists(w)                      # no bar, no label, no line
    (note,) = _note(w)
    assert note.startswith("Nothing to draw for this setting:")
    assert "needs 16 GPUs" in note.replace("\n", " ")
    assert _png(w) != png
    assert stale_share(w) <= 1e-4                    # the image is what it says
    w.controls["tp"].value = 8                       # still refused: note updated
    assert "TP8 PP2 DP2" in _note(w)[0].replace("\n", " ")
    w.controls["tp"].value = 2                       # back: the same figure again
    assert _msg(w) == "" and not _note(w) and _png(w) == png
    assert stale_share(w) <= 1e-4
    w.controls["tp"].value = 1                       # and a new one is drawn
    assert _data_artists(w) and w.step.layout.tp == 1


def test_layout_that_does_not_fit_is_drawn_with_a_message():
    w = widgets.layout_explorer(tp=1, pp=1, dp=8)
    m = _msg(w)
    assert "TP1 PP1 DP8 does not fit" in m and "144.3 GB" in m
    assert "72.0 GB usable" in m and w.step is not None and not w.step.fits
    assert w.view.ax_memory.patches                     # still drawn
    w.controls["zero"].value = 3
    w.controls["recompute"].value = "selective"
    assert _msg(w) == "" and w.step.fits


def test_model_error_becomes_message(monkeypatch):
    w = widgets.layout_explorer()
    png = _png(w)

    def bad(*a, **k):
        raise RuntimeError("kaput")

    patch_everywhere(monkeypatch, parallelism, "step_time", bad)
    w.controls["global_batch"].value = 256               # must not raise
    assert "RuntimeError" in _msg(w) and "kaput" in _msg(w)
    assert _png(w) != png and w.step is None             # the old figure is gone
    assert "see the message above" in " ".join(_note(w)).replace("\n", " ")




# === plot functions of the chapter ======================================================
def _five():
    return [parallelism.step_time("13b", "dgx-h100", lay, global_batch=64, zero=1)
            for lay in [(1, 1, 8), (8, 1, 1), (4, 1, 2), (1, 4, 2), (2, 2, 2)]]


def test_plot_memory_breakdown_bars_lines_and_in_place():
    sts = _five()
    fig, ax = plt.subplots()
    plotting.plot_memory_breakdown(sts, capacity=80e9, usable=72e9, ax=ax)
    first = list(ax.patches)
    parts = ("weights", "gradients", "master", "adam_m", "adam_v", "activations")
    w = np.array(_widths(ax)).reshape(len(parts), 5)     # bf16/fp32: no grad copy
    for i, k in enumerate(parts):
        np.testing.assert_allclose(w[i], [getattr(s.memory, k) / GB for s in sts],
                                   rtol=1e-12)
    np.testing.assert_allclose(w.sum(axis=0), [s.memory.total / GB for s in sts])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "weights", "gradients", "fp32 master weights", "Adam m (fp32)",
        "Adam v (fp32)", "activations"]
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [str(s.layout) for s in sts]
    assert ax.lines[0].get_xdata()[0] == 80 and ax.lines[1].get_xdata()[0] == 72
    assert ax.get_xlabel() == "Memory per GPU [GB]"
    assert ax.texts[0].get_text() == f"{sts[0].memory.total / GB:.1f} GB"
    plotting.plot_memory_breakdown(sts[::-1], capacity=141e9, ax=ax)
    assert list(ax.patches) == first                      # updated in place
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [str(s.layout) for s in sts][::-1]
    assert ax.lines[0].get_xdata()[0] == 141 and not ax.lines[1].get_visible()
    mem = parallelism.training_memory("13b", 8)
    ax2 = plotting.plot_memory_breakdown(mem)
    assert len(ax2.patches) == 6
    fp16 = parallelism.training_memory("13b", 8, param_dtype="fp16", grad_dtype="fp16")
    ax4 = plotting.plot_memory_breakdown(fp16)              # 16-bit gradients
    assert len(ax4.patches) == 7
    assert ax4.patches[3].get_width() == pytest.approx(fp16.grad_copy / GB)
    assert "fp32 gradient copy" in [t.get_text() for t in ax4.get_legend().get_texts()]
    r = parallelism.rank_layouts("13b", "hgx-h200", global_batch=64)
    ax3 = plotting.plot_memory_breakdown([("best", r.best)])
    assert ax3.get_yticklabels()[0].get_text() == "best"
    for bad, kw in (([], {}), ([1.0], {}), ("TP2", {}),
                    (sts, {"capacity": -1.0}), (sts, {"usable": "72 GB"})):
        with pytest.raises(ValueError):
            plotting.plot_memory_breakdown(bad, **kw)


def test_plot_step_breakdown_bars_and_checks():
    sts = _five()
    ax = plotting.plot_step_breakdown(sts)
    w = np.array(_widths(ax)).reshape(5, 5)
    for i, k in enumerate(("compute", "tp_comm", "pp_comm", "dp_comm", "bubble")):
        np.testing.assert_allclose(w[i], [getattr(s, k) for s in sts], rtol=1e-12)
    np.testing.assert_allclose(w.sum(axis=0), [s.total for s in sts], rtol=1e-12)
    assert ax.get_xlabel() == "Step time [s]"
    assert ax.texts[1].get_text() == f"{sts[1].total:.2f} s, MFU {sts[1].mfu:.0%}"
    assert ax.get_xlim()[1] >= max(s.total for s in sts) * 1.4 - 1e-9
    with pytest.raises(ValueError, match="step_times"):
        plotting.plot_step_breakdown([sts[0].memory])
    bad = parallelism.rank_layouts("13b", "dgx-h100", global_batch=64,
                                   micro_batch=(1, 3))
    no_step = next(r for r in bad.invalid if r.step is None)
    with pytest.raises(ValueError, match="no step time"):
        plotting.plot_step_breakdown(no_step)
