"""Chapter 9 (is NVLink worth it): the ROI explorer, driven headless, and the
chapter's plot functions.

Every control must reach ``gpulab.parallelism.nvlink_roi`` in SI units (seconds,
tokens, prices per GPU-hour), change the image, and a model that fits nowhere
must show a message instead of a traceback. The initial state must equal the
chapter's static figure (built here as ``book/nvlink_roi.md`` builds it).
"""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402

from gpulab import parallelism, plotting, widgets  # noqa: E402
from tests.recorder import Recorder  # noqa: E402


@pytest.fixture(scope="module")
def w():
    return widgets.roi_explorer()


@pytest.fixture
def roi(monkeypatch):
    return Recorder(monkeypatch, parallelism, "nvlink_roi", direct=False)


def _chapter_roi(model="70b", nodes=8, fast="dgx-h100", slow="h100-pcie",
                 pf=3.0, ps=2.25, tokens=200e9):
    picks = []
    for s in (fast, slow):
        r = parallelism.rank_layouts(model, parallelism.roi_cluster(s, nodes),
                                     global_batch=parallelism.ROI_GLOBAL_BATCH,
                                     **parallelism.ROI_SEARCH)
        picks.append(r.best.step)
    seq = parallelism.model(model).seq_len
    return parallelism.nvlink_roi(
        picks[0].total, picks[1].total,
        tokens_per_step=parallelism.ROI_GLOBAL_BATCH * seq, price_fast=pf,
        price_slow=ps, n_gpus=8 * nodes, project_tokens=tokens)


def test_registered_factory_and_frame(w):
    assert widgets.explorers()["roi"] is widgets.roi_explorer
    assert isinstance(w, W.VBox) and w.view.image.format == "png"
    assert bytes(w.view.image.value).startswith(b"\x89PNG")
    assert w.message.value == "" and "Break-even" in w.summary.value
    assert "illustrative" in w.summary.value


def test_initial_state_equals_chapter_figure(w):
    want = _chapter_roi()
    assert w.roi.cost_fast == pytest.approx(want.cost_fast, rel=1e-12)
    assert w.roi.breakeven_price_ratio == pytest.approx(
        want.breakeven_price_ratio, rel=1e-12)
    widths = [p.get_width() for p in w.view.ax.patches]
    ref = plotting.plot_roi(want, labels=("dgx-h100", "h100-pcie"))
    assert widths == pytest.approx([p.get_width() for p in ref.patches])


@pytest.mark.parametrize("control, value, key, expected", [
    ("price_fast", 4.0, "price_fast", 4.0),
    ("price_slow", 1.5, "price_slow", 1.5),
    ("project_tokens", 50.0, "project_tokens", 50e9),
    ("nodes", 4, "n_gpus", 32),
])
def test_controls_reach_model_in_si(w, roi, control, value, key, expected):
    before = bytes(w.view.image.value)
    w.controls[control].value = value
    assert w.message.value == ""
    assert roi.last[key] == pytest.approx(expected)
    assert bytes(w.view.image.value) != before


def test_model_and_system_controls(w, roi):
    w.controls["nodes"].value = 8
    for model in widgets.parallelism.ROI_MODELS:
        w.controls["model"].value = model
        assert w.message.value == ""
        seq = parallelism.model(model).seq_len
        assert roi.last["tokens_per_step"] == parallelism.ROI_GLOBAL_BATCH * seq
    w.controls["model"].value = "70b"       # H200's memory changes the layout
    t_before = roi.last["t_fast"]
    w.controls["fast"].value = "hgx-h200"
    assert roi.last["t_fast"] != t_before
    w.controls["fast"].value = "dgx-h100"


def test_no_fit_shows_message_not_traceback(w):
    w.controls["model"].value = "70b"
    w.controls["nodes"].value = 1
    assert "does not fit" in w.message.value and "Traceback" not in w.message.value
    w.controls["nodes"].value = 8
    assert w.message.value == ""


def test_breakeven_matches_step_times(w):
    sf, ss = w.steps
    assert w.roi.breakeven_price_ratio == pytest.approx(ss.total / sf.total)
    assert w.roi.speedup == pytest.approx(parallelism.speedup(sf.total, ss.total))




@pytest.mark.parametrize("kw", [
    {"model": "175b"}, {"model": "gpt3-175b"}, {"model": "llama3-405b"}, {"model": 70},
    {"nodes": 3}, {"nodes": True}, {"fast": "h100-pcie"},
    {"slow": "dgx-h100"}, {"price_fast": -1.0}, {"price_slow": "2"},
    {"project_tokens": 1.0}, {"project_tokens": True},
])
def test_bad_arguments(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        widgets.roi_explorer(**kw)


def test_only_the_course_models_are_offered_and_precomputed(monkeypatch):
    assert widgets.parallelism.ROI_MODELS == ("13b", "70b", "llama3-8b",
                                              "llama3-70b", "mixtral-8x7b")
    assert set(widgets.parallelism.ROI_MODELS) <= set(parallelism.model_names())
    rec = Recorder(monkeypatch, parallelism, "roi_best_step")
    w = widgets.roi_explorer("13b")
    assert list(w.controls["model"].options) == list(widgets.parallelism.ROI_MODELS)
    assert {c["model"] for c in rec.calls} == set(widgets.parallelism.ROI_MODELS)
    with pytest.raises(ValueError, match="model must be one of the course models"):
        widgets.roi_explorer("gpt3-5b")


def test_roi_cluster_borrows_network_only_when_needed():
    one = parallelism.roi_cluster("h100-pcie", 1)
    assert one.network is None and one.n_gpus == 8
    four = parallelism.roi_cluster("h100-pcie", 4)
    assert four.n_gpus == 32 and four.nvlink_domain == 1
    assert four.network == parallelism.roi_cluster(parallelism.ROI_NETWORK_FROM, 4).network


# --- plot functions -------------------------------------------------------------------
def test_plot_roi_bars_and_in_place_update():
    r = _chapter_roi()
    ax = plotting.plot_roi(r)
    k = 1e3 if max(r.cost_fast, r.cost_slow) < 1e7 else 1e6
    assert [p.get_width() for p in ax.patches] == pytest.approx(
        [r.cost_fast / k, r.cost_slow / k])
    n = len(ax.patches)
    plotting.plot_roi(_chapter_roi(pf=4.0), ax=ax)
    assert len(ax.patches) == n
    with pytest.raises(ValueError, match="roi"):
        plotting.plot_roi(1.0)


def test_plot_speedup_slowdown_marks_the_article():
    ax = plotting.plot_speedup_slowdown([("article", 1 / 3.2, 1 / 2.1)])
    x, y = ax.lines[2].get_data()
    assert x[0] == pytest.approx(100 * parallelism.slowdown(1 / 3.2, 1 / 2.1))
    assert y[0] == pytest.approx(100 * parallelism.speedup(1 / 3.2, 1 / 2.1))
    with pytest.raises(ValueError, match="points"):
        plotting.plot_speedup_slowdown([(1, 2)])


def test_plot_step_comparison_stacks_components():
    st = parallelism.step_time("13b", "hgx-h200", (2, 1, 4), global_batch=64)
    ax = plotting.plot_step_comparison([("a", st)])
    total = sum(p.get_width() for p in ax.patches)
    assert total == pytest.approx(st.total)
    with pytest.raises(ValueError, match="rows"):
        plotting.plot_step_comparison([])


# --- prices and project size as a learner types them -------------------------------
@pytest.mark.parametrize("control, value", [("price_fast", 0.0), ("price_slow", 0.0),
                                            ("price_slow", -1.0), ("price_fast", -2.5)])
def test_a_price_that_is_not_positive_is_refused_by_name(control, value):
    w = widgets.roi_explorer()
    w.controls[control].value = value
    assert w.controls[control].value == value                # not clamped silently
    label = "NVLink" if control == "price_fast" else "PCIe"
    assert f"{label} price must be more than 0" in w.message.value
    assert "inf" not in w.summary.value and "nan" not in w.summary.value
    w.controls[control].value = 2.0                          # and it recovers
    assert w.message.value == "" and "Break-even" in w.summary.value


def test_project_tokens_are_exact_options():
    """200 billion stays 200 (a log slider came back from the browser as 199.526)."""
    w = widgets.roi_explorer()
    c = w.controls["project_tokens"]
    assert isinstance(c, W.SelectionSlider) and c.value == 200.0
    assert all(isinstance(v, float) for _, v in c.options)
    custom = widgets.roi_explorer(project_tokens=300e9).controls["project_tokens"]
    assert custom.value == 300.0 and 300.0 in [v for _, v in custom.options]
