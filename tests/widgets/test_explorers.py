"""Explorers, driven headless: every control reaches the model in SI units."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402

from gpulab import links, scaling, specs, units, widgets  # noqa: E402

GPUS4 = ["V100", "A100", "H100", "B200"]


from tests.recorder import Recorder  # noqa: E402


@pytest.fixture
def dp(monkeypatch):
    return Recorder(monkeypatch, scaling, "data_parallel_step")


@pytest.fixture
def lb(monkeypatch):
    return Recorder(monkeypatch, links, "link_bandwidth")


@pytest.fixture
def gb(monkeypatch):
    return Recorder(monkeypatch, links, "gpu_bandwidth")


def _png(w):
    return bytes(w.view.image.value)


def _msg(w):
    return w.message.value


# --- factories ------------------------------------------------------------------------
def test_explorers_are_factories_returning_widgets():
    ex = widgets.explorers()
    # the other explorers are tested in tests/widgets/test_<topic>.py
    assert set(ex) == {"scaling", "link", "pcie", "pipeline", "topology", "collective",
                       "fabric", "network", "bucket", "layout", "tp", "roi", "decode",
                       "serving", "ep"}
    assert list(ex) == list(widgets.EXPLORER_NAMES)       # book order
    for name, factory in ex.items():
        w = factory()
        assert isinstance(w, W.Widget) and isinstance(w, W.VBox), name
        assert isinstance(w.view.image, W.Image) and w.view.image.format == "png"
        assert _png(w).startswith(b"\x89PNG"), name
        assert _msg(w) == "" and w.summary.value
        assert all(isinstance(c, W.ValueWidget) for c in w.controls.values())
        # every control and the image are in the layout
        shown = set()
        stack = list(w.children)
        while stack:
            c = stack.pop()
            shown.add(id(c))
            stack.extend(getattr(c, "children", ()))
        assert all(id(c) in shown for c in w.controls.values())
        assert id(w.view.image) in shown and id(w.message) in shown


# --- initial state == the chapters' static figures ------------------------------------
def test_scaling_default_state(dp):
    w = widgets.scaling_explorer()
    expected = [scaling.data_parallel_step(g, 8, 7e9, 4096) for g in GPUS4]
    got = [dp.real(**c) for c in dp.calls]
    assert got == expected
    assert [c["gpu"] for c in dp.calls] == GPUS4
    bars = w.view.ax.patches[:4]
    assert [p.get_width() for p in bars] == pytest.approx(
        [s.compute_time * 1e3 for s in expected], rel=1e-12)
    worst = min(expected, key=lambda s: s.efficiency)
    assert f"<b>{worst.gpu}</b>" in w.summary.value
    assert "14 GB" in w.summary.value                 # 7B params x 2 B of gradients


def test_link_default_state(lb, gb):
    w = widgets.link_explorer()
    c = w.controls
    assert c["preset"].value == 4
    assert c["modulation"].value == 2                  # PAM4
    assert c["symbol_rate_gbaud"].value == 53.125
    assert c["lanes"].value == 2
    assert c["links"].value == 18
    assert c["coding"].value == pytest.approx(16 / 17, rel=1e-12)
    assert lb.last["symbol_rate"] == 53.125e9
    assert gb.last["n_links"] == 18
    nv4 = links.nvlink_gpu_bandwidth(4)
    result = gb.real(lb.real(**lb.last), 18)
    assert result.bytes_per_s == pytest.approx(nv4.bytes_per_s, rel=1e-12)
    heights = [p.get_height() for p in w.view.ax.patches]
    assert heights[:5] == pytest.approx(
        [links.nvlink_gpu_bandwidth(g).gb_per_s for g in range(1, 6)], rel=1e-12)
    assert heights[5] == pytest.approx(450, rel=1e-12)
    assert "450 GB/s per direction" in w.summary.value
    assert "900 GB/s bidirectional" in w.summary.value
    assert "1.00×" in w.summary.value


# --- every control reaches the model in SI units --------------------------------------
SCALING_CASES = [
    ("n_gpus", 16, "n_gpus", 16),
    ("params", "13B", "params", 13e9),
    ("params", "0.5T", "params", 5e11),
    ("params", "350m", "params", 3.5e8),
    ("params", "70e9", "params", 7e10),
    ("tokens_per_gpu", 16384, "tokens_per_gpu", 16384),
    ("overlap", 0.5, "overlap", 0.5),
    ("mfu", 0.55, "mfu", 0.55),
]


@pytest.mark.parametrize("control, value, param, expected", SCALING_CASES,
                         ids=[f"{c}={v}" for c, v, _, _ in SCALING_CASES])
def test_scaling_control_reaches_model(dp, control, value, param, expected):
    w = widgets.scaling_explorer()
    png = _png(w)
    dp.calls.clear()
    w.controls[control].value = value
    assert [c["gpu"] for c in dp.calls] == GPUS4         # one call per GPU
    for call in dp.calls:
        assert call[param] == pytest.approx(expected, rel=1e-12)
        assert type(call[param]) is type(expected)
    assert _png(w) != png                     # the figure was redrawn
    assert _msg(w) == ""


LINK_CASES = [
    ("symbol_rate_gbaud", 106.25, "lb", "symbol_rate", 106.25e9),
    ("symbol_rate_gbaud", 25.78125, "lb", "symbol_rate", 25.78125e9),
    ("modulation", 1, "lb", "bits_per_symbol", 1),
    ("lanes", 4, "lb", "lanes_per_direction", 4),
    ("coding", 0.8, "lb", "coding_efficiency", 0.8),
    ("links", 12, "gb", "n_links", 12),
]


@pytest.mark.parametrize("control, value, rec, param, expected", LINK_CASES,
                         ids=[f"{c}={v}" for c, v, *_ in LINK_CASES])
def test_link_control_reaches_model(lb, gb, control, value, rec, param, expected):
    w = widgets.link_explorer()
    png = _png(w)
    lb.calls.clear()
    gb.calls.clear()
    w.controls[control].value = value
    recorder = {"lb": lb, "gb": gb}[rec]
    assert recorder.calls
    assert recorder.last[param] == pytest.approx(expected, rel=1e-12)
    # the GPU total is built from the link just computed
    link = lb.real(**lb.last)
    assert gb.last["link"].isclose(link)
    assert _png(w) != png
    assert w.controls["preset"].value == 0                # edited by hand: custom
    assert [t.get_text() for t in w.view.ax.get_xticklabels()][-1] == "custom"
    assert _msg(w) == ""


@pytest.mark.parametrize("gen", [1, 2, 3, 5])
def test_link_preset_sets_all_raw_controls(lb, gb, gen):
    w = widgets.link_explorer()
    png = _png(w)
    w.controls["preset"].value = gen
    g = specs.nvlink(gen)
    assert lb.last["symbol_rate"] == pytest.approx(g.symbol_rate, rel=1e-12)
    assert lb.last["bits_per_symbol"] == g.bits_per_symbol
    assert lb.last["lanes_per_direction"] == g.lanes_per_direction
    assert lb.last["coding_efficiency"] == pytest.approx(g.coding_efficiency,
                                                         rel=1e-12)
    assert gb.last["n_links"] == g.links_per_gpu
    assert w.controls["preset"].value == gen             # a preset is not "custom"
    assert _png(w) != png
    assert w.view.ax.patches[-1].get_height() == pytest.approx(
        links.nvlink_gpu_bandwidth(gen).gb_per_s, rel=1e-12)
    assert [t.get_text() for t in w.view.ax.get_xticklabels()][-1] == "preset"


def test_link_compare_control():
    w = widgets.link_explorer()
    w.controls["compare"].value = "1.8 TB/s bidirectional"
    assert "900 GB/s per direction" in w.summary.value
    assert "2.00×" in w.summary.value
    assert w.controls["preset"].value == 4               # not a raw control
    w.controls["compare"].value = "400 Gb/s per direction"
    assert "50 GB/s per direction" in w.summary.value
    w.controls["compare"].value = ""
    assert "Spec figure" not in w.summary.value and _msg(w) == ""


def test_every_control_is_tested():
    tested = {
        "scaling": {c for c, *_ in SCALING_CASES},
        "link": {c for c, *_ in LINK_CASES} | {"preset", "compare"},
    }
    for name in tested:                 # pcie, pipeline, topology: test_pcie.py
        assert set(widgets.explorers()[name]().controls) == tested[name], name


# --- invalid input: a message, not a traceback ----------------------------------------
@pytest.mark.parametrize("text, words", [
    ("abc", "must look like"), ("0", "between"), ("1e20", "between"), ("", "must look"),
    ("-7B", "must look like"),
])
def test_scaling_bad_params_show_message(dp, text, words):
    w = widgets.scaling_explorer()
    png, n = _png(w), w.n_updates
    dp.calls.clear()
    w.controls["params"].value = text
    assert words in _msg(w) and "model size" in _msg(w)
    assert not dp.calls                                  # the model was not called
    assert _png(w) == png and w.n_updates == n
    w.controls["params"].value = "7B"
    assert _msg(w) == ""


@pytest.mark.parametrize("text, words", [
    ("900 GB/s", "no direction"), ("fast", "must look like"),
    ("900 MB/s bidirectional", "must look like"),
])
def test_link_bad_compare_shows_message(text, words):
    w = widgets.link_explorer()
    w.controls["compare"].value = text
    assert words in _msg(w)
    w.controls["compare"].value = "900 GB/s bidirectional"
    assert _msg(w) == ""


def test_model_error_becomes_message(monkeypatch):
    w = widgets.scaling_explorer()
    real = scaling.data_parallel_step

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(scaling, "data_parallel_step", boom)
    w.controls["n_gpus"].value = 4                       # must not raise
    assert "Unexpected error (RuntimeError): boom" in _msg(w)
    monkeypatch.setattr(scaling, "data_parallel_step", real)
    w.controls["n_gpus"].value = 8
    assert _msg(w) == ""


def test_link_model_error_becomes_message(monkeypatch):
    w = widgets.link_explorer()
    monkeypatch.setattr(links, "gpu_bandwidth",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("kaput")))
    w.controls["links"].value = 3
    assert "RuntimeError" in _msg(w) and "kaput" in _msg(w)


def test_message_is_escaped():
    w = widgets.scaling_explorer()
    w.controls["params"].value = "<script>"
    assert "<script>" not in _msg(w) and "&lt;script&gt;" in _msg(w)


# --- parsers at the UI edge -----------------------------------------------------------
@pytest.mark.parametrize("text, value", [("7B", 7e9), ("175b", 175e9), ("70e9", 70e9),
                                         (" 1.5 T ", 1.5e12), ("1M", 1e6)])
def test_parse_params(text, value):
    assert widgets.parse_params(text) == pytest.approx(value)


@pytest.mark.parametrize("text, bw", [
    ("900 GB/s bidirectional", units.Bandwidth(900e9, "bidirectional")),
    ("400 Gb/s per direction", units.Bandwidth(50e9, "per_direction")),
    ("1 GiB/s per_direction", units.Bandwidth(2**30, "per_direction")),
    ("1.8 TB/s bidir", units.Bandwidth(1.8e12, "bidirectional")),
])
def test_parse_bandwidth(text, bw):
    assert widgets.parse_bandwidth(text).isclose(bw)


# --- one change, one redraw -----------------------------------------------------------
@pytest.mark.parametrize("control, value", [(c, v) for c, v, *_ in SCALING_CASES[::2]])
def test_scaling_one_update_per_change(control, value):
    w = widgets.scaling_explorer()
    n = w.n_updates
    w.controls[control].value = value
    assert w.n_updates == n + 1


@pytest.mark.parametrize("control, value", [
    ("symbol_rate_gbaud", 53.125), ("modulation", 2), ("lanes", 2), ("coding", 0.8),
    ("links", 18), ("compare", "1.8 TB/s bidirectional")])
def test_link_one_update_per_change_when_custom(control, value):
    w = widgets.link_explorer(0)
    n = w.n_updates
    w.controls[control].value = value
    assert w.n_updates == n + 1


@pytest.mark.parametrize("control, value", [("preset", 3), ("lanes", 4)])
def test_link_one_update_per_change_from_preset(control, value):
    w = widgets.link_explorer(4)
    n = w.n_updates
    w.controls[control].value = value
    assert w.n_updates == n + 1


# --- the state a learner sees after the first render equals the preset ----------------
def test_link_presets_keep_exact_coding_and_stay_presets():
    """The coding control offers each preset's exact ratio as an option (the browser
    sends back an option index, never a rounded float), so a preset stays a preset."""
    w = widgets.link_explorer(4)
    c = w.controls
    for g in specs.nvlink_generations():
        c["preset"].value = g.generation
        assert c["preset"].value == g.generation
        assert c["coding"].value == g.coding_efficiency          # exactly
        assert isinstance(c["coding"], W.Dropdown)
    c["coding"].value = c["coding"].value                      # an echo is no edit
    assert c["preset"].value == specs.nvlink_generations()[-1].generation


def test_link_summary_follows_the_sliders_when_the_spec_text_is_bad():
    w = widgets.link_explorer(4)
    c = w.controls
    c["compare"].value = "nine hundred"
    assert "spec figure" in _msg(w)
    c["links"].value = 9
    assert "GPU (9 links)" in w.summary.value        # not stale
    assert "spec figure" in _msg(w)                  # the bad text is still named
