"""PCIe chapter explorers, driven headless: every control reaches the model in SI.

``pcie_explorer`` (link budget), ``pipeline_explorer`` (pipeline-stage placement)
and ``topology_explorer`` (read an ``nvidia-smi topo -m`` output), plus the plot
functions they draw with.
"""
from __future__ import annotations

import inspect
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import (links, measurements, parallelism, pcie, plotting, scaling, specs,  # noqa: E402
                    topology, units, widgets)

NEW = ("pcie", "pipeline", "topology")


from tests.recorder import Recorder, shown_ids  # noqa: E402


def _png(w):
    return bytes(w.view.image.value)


def _msg(w):
    return w.message.value


_shown = shown_ids


# --- factories --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NEW)
def test_new_explorers_are_registered_factories(name):
    factory = widgets.explorers()[name]
    assert not [p for p in inspect.signature(factory).parameters.values()
                if p.default is inspect.Parameter.empty]
    w = factory()
    assert isinstance(w, W.VBox)
    assert isinstance(w.view.image, W.Image) and w.view.image.format == "png"
    assert _png(w).startswith(b"\x89PNG")
    assert _msg(w) == "" and w.summary.value
    assert all(isinstance(c, W.ValueWidget) for c in w.controls.values())
    shown = _shown(w)
    assert all(id(c) in shown for c in w.controls.values())
    assert id(w.view.image) in shown and id(w.message) in shown
    if name == "topology":
        assert isinstance(w.table, W.HTML) and id(w.table) in shown


@pytest.mark.parametrize("call, param", [
    (lambda: widgets.pcie_explorer(generation=7), "generation"),
    (lambda: widgets.pcie_explorer(lanes=3), "lanes"),
    (lambda: widgets.pcie_explorer(lanes=32), "lanes"),
    (lambda: widgets.pcie_explorer(max_payload_bytes=100), "max_payload_bytes"),
    (lambda: widgets.pcie_explorer(header_bytes=8), "header_bytes"),
    (lambda: widgets.pipeline_explorer(layout="C"), "layout"),
    (lambda: widgets.topology_explorer(sample="nope"), "sample"),
    (lambda: widgets.topology_explorer(iommu="maybe"), "iommu"),
    (lambda: widgets.topology_explorer(acs_enabled="yes"), "acs_enabled"),
    (lambda: widgets.topology_explorer(text=3), "text"),
])
def test_factories_refuse_bad_arguments(call, param):
    with pytest.raises(ValueError, match=param):
        call()


# === pcie_explorer ======================================================================
@pytest.fixture
def eff(monkeypatch):
    return Recorder(monkeypatch, pcie, "effective_bandwidth")


@pytest.fixture
def raw(monkeypatch):
    return Recorder(monkeypatch, pcie, "raw_bandwidth")


def _widths(ax):
    return [p.get_width() for p in ax.patches]


def test_pcie_default_state_is_the_static_figure(eff, raw):
    w = widgets.pcie_explorer()
    c = w.controls
    assert (c["generation"].value, c["lanes"].value, c["max_payload_bytes"].value,
            c["header_bytes"].value, c["ecrc"].value) == (5, 16, 256, 16, False)
    assert eff.last == {"generation": 5, "lanes": 16, "max_payload_bytes": 256,
                        "header_bytes": 16, "ecrc": False, "dllp_overhead": None,
                        "read_completion": False}
    assert raw.last == {"generation": 5, "lanes": 16}
    # the chapter's static figure: plot_pcie_budget() with the measured line
    measured = measurements.copy_bandwidth().peak("h2d_pinned")
    ref = plotting.plot_pcie_budget(measured=measured)
    np.testing.assert_allclose(_widths(w.view.ax), _widths(ref), rtol=1e-12)
    np.testing.assert_allclose(
        _widths(w.view.ax),
        [64.0, pcie.encoded_bandwidth(5).gb_per_s,
         pcie.encoded_bandwidth(5).gb_per_s * pcie.tlp_efficiency(256, dllp_overhead=0),
         pcie.effective_bandwidth(5).gb_per_s], rtol=1e-12)
    line = w.view.ax.lines[0]
    assert line.get_visible() and line.get_xdata()[0] == pytest.approx(
        measured.gb_per_s)
    s = w.summary.value
    assert "55.9 GB/s effective, per direction" in s
    assert "128.0 GB/s raw bidirectional" in s and "per direction" in s


PCIE_CASES = [
    ("generation", 4, "generation", 4),
    ("generation", 6, "generation", 6),
    ("lanes", 8, "lanes", 8),
    ("max_payload_bytes", 512, "max_payload_bytes", 512),
    ("max_payload_bytes", 4096, "max_payload_bytes", 4096),
    ("header_bytes", 12, "header_bytes", 12),
    ("ecrc", True, "ecrc", True),
]


@pytest.mark.parametrize("control, value, param, expected", PCIE_CASES,
                         ids=[f"{c}={v}" for c, v, *_ in PCIE_CASES])
def test_pcie_control_reaches_model(eff, control, value, param, expected):
    w = widgets.pcie_explorer()
    png, n = _png(w), w.n_updates
    eff.calls.clear()
    w.controls[control].value = value
    assert len(eff.calls) == 1 and w.n_updates == n + 1
    assert eff.last[param] == expected
    assert type(eff.last[param]) is type(expected)
    assert _png(w) != png
    assert _msg(w) == ""
    got = eff.real(**eff.last)
    assert w.view.ax.patches[3].get_width() == pytest.approx(got.gb_per_s,
                                                             rel=1e-12)


def test_pcie_measured_line_only_for_gen5_x16():
    w = widgets.pcie_explorer()
    line = w.view.ax.lines[0]
    assert line.get_visible()
    w.controls["lanes"].value = 8
    assert not line.get_visible() and "Gen5 x16 only" in w.summary.value
    w.controls["lanes"].value = 16
    w.controls["generation"].value = 4
    assert not line.get_visible()
    w.controls["generation"].value = 5
    assert line.get_visible() and "Measured pinned H2D" in w.summary.value


def test_pcie_gen1_x1_values():
    w = widgets.pcie_explorer(generation=1, lanes=1)
    assert _widths(w.view.ax)[:2] == pytest.approx([0.25 / 0.8, 0.25])
    assert "0.312 GB/s raw" in w.summary.value


def test_pcie_model_error_becomes_message(monkeypatch):
    w = widgets.pcie_explorer()
    png = _png(w)

    def bad(*a, **k):
        raise ValueError("max_payload_bytes must be one of 128, ...")

    monkeypatch.setattr(pcie, "effective_bandwidth", bad)
    w.controls["max_payload_bytes"].value = 128           # must not raise
    assert "max_payload_bytes must be" in _msg(w)
    assert _png(w) == png
    monkeypatch.undo()
    w.controls["max_payload_bytes"].value = 256
    assert _msg(w) == ""


# === pipeline_explorer ==================================================================
@pytest.fixture
def tt(monkeypatch):
    return Recorder(monkeypatch, links, "transfer_time")


@pytest.fixture
def bb(monkeypatch):
    return Recorder(monkeypatch, topology, "bottleneck_bandwidth")


def _expected_row(layout, a, b, message_bytes):
    """The pipeline model, from the gpulab functions (as the chapter computes it)."""
    topo = {"A": topology.layout_a(), "B": topology.layout_b(),
            "nvswitch": topology.nvswitch_node("H200")}[layout]
    transport = topology.nccl_transport(topo, a, b)[0]
    enc = pcie.encoded_bandwidth(5)
    eta = {"P2P/NVLink": pcie.copy_bandwidth("p2p", system="hgx-h200")
           / links.nvlink_gpu_bandwidth(4),
           "P2P/PCIe": pcie.copy_bandwidth("p2p", system="h100-pcie") / enc,
           "SHM": measurements.copy_bandwidth().peak("p2p_via_host") / enc}
    bw = topology.bottleneck_bandwidth(topo, a, b) * eta[transport]
    return 2 * links.transfer_time(message_bytes, topology.path_latency(topo, a, b),
                                   bw)


def _bar_ms(w):
    return [p.get_width() for p in w.view.ax.patches]


def test_pipeline_default_state(tt):
    w = widgets.pipeline_explorer()
    c = w.controls
    assert (c["hidden"].value, c["seq_len"].value, c["micro_batch"].value,
            c["dtype_bytes"].value, c["layout"].value, c["pair"].value,
            c["n_micro_batches"].value) == (4096, 4096, 1, 2, "A",
                                            ("gpu3", "gpu4"), 8)
    # 8 layers of h = 4096 (32 heads) at the layer shape's efficiency on H100, not a flat
    # MFU: FLOPs of Narayanan et al. eq. 3 over peak x layer_efficiency
    eff = parallelism.layer_efficiency(4096, 32, 1, 4096, 1, gpu="H100")
    flops = 8 * 72 * 4096 * 4096**2 * (1 + 4096 / (6 * 4096))
    stage = flops / (specs.gpu("H100").fp16_dense_flops * eff)
    # on the slider's 0.1 ms grid (the browser would round any other value)
    assert c["compute_ms"].value == pytest.approx(round(stage * 1e3, 1), abs=1e-9)
    assert abs(c["compute_ms"].value - stage * 1e3) <= 0.05
    flat = scaling.data_parallel_step("H100", 1, 1.75e9, 4096).compute_time
    assert abs(c["compute_ms"].value - flat * 1e3) > 1      # not the flat-MFU value
    message = 4096 * 4096 * 2
    assert all(call["message_bytes"] == message for call in tt.calls)
    expected = [_expected_row(lay, x, y, message)
                for _, lay, (x, y) in widgets.PIPELINE_REFERENCES]
    np.testing.assert_allclose(_bar_ms(w), np.array(expected) * 1e3, rtol=1e-12)
    assert w.highlighted == 2                          # (c) across CPUs
    assert w.view.ax.patches[2].get_linewidth() > 0
    assert "via host" in w.view.ax.get_yticklabels()[2].get_text()
    assert "SHM" in w.summary.value and "per direction" in w.summary.value
    # the chapter's static figure: plot_stage_transfers with the same rows
    rows = [(t.get_text(), ms / 1e3, "pcie")
            for t, ms in zip(w.view.ax.get_yticklabels(), _bar_ms(w))]
    ref = plotting.plot_stage_transfers(rows, stage, highlight=2)
    np.testing.assert_allclose(_widths(ref), _bar_ms(w), rtol=1e-12)


PIPE_CASES = [
    ("hidden", 8192, 1 * 4096 * 8192 * 2),
    ("seq_len", 16384, 1 * 16384 * 4096 * 2),
    ("micro_batch", 4, 4 * 4096 * 4096 * 2),
    ("dtype_bytes", 4, 1 * 4096 * 4096 * 4),
    ("dtype_bytes", 1, 1 * 4096 * 4096 * 1),
]


@pytest.mark.parametrize("control, value, message", PIPE_CASES,
                         ids=[f"{c}={v}" for c, v, _ in PIPE_CASES])
def test_pipeline_size_controls_reach_model(tt, control, value, message):
    w = widgets.pipeline_explorer()
    png, n = _png(w), w.n_updates
    tt.calls.clear()
    w.controls[control].value = value
    assert w.n_updates == n + 1
    assert len(tt.calls) == 5              # yours, then one per reference placement
    for call in tt.calls:
        assert call["message_bytes"] == message and type(call["message_bytes"]) is int
        assert isinstance(call["bandwidth"], units.Bandwidth)
        assert call["bandwidth"].direction == units.PER_DIRECTION
        assert 0 <= call["latency"] < 1e-5            # seconds, hardware hops
    expected = _expected_row("A", "gpu3", "gpu4", message)
    assert _bar_ms(w)[2] == pytest.approx(expected * 1e3, rel=1e-12)
    assert _png(w) != png and _msg(w) == ""


def test_pipeline_layout_and_pair_reach_topology(bb):
    w = widgets.pipeline_explorer()
    pair = w.controls["pair"]
    n = w.n_updates
    bb.calls.clear()
    w.controls["layout"].value = "B"
    assert w.n_updates == n + 1                      # options refresh: one update
    assert pair.value == ("gpu3", "gpu4")             # kept
    assert "PXB" in pair.label
    assert [(c["a"], c["b"]) for c in bb.calls] == [("gpu3", "gpu4")]
    assert bb.calls[0]["topo"].name.startswith("layout B")
    assert w.highlighted == 1                        # like (b): PXB, P2P
    bb.calls.clear()
    w.controls["pair"].value = ("gpu0", "gpu1")
    assert [(c["a"], c["b"]) for c in bb.calls] == [("gpu0", "gpu1")]
    assert w.highlighted == 0                        # PIX, P2P: like (a)
    w.controls["layout"].value = "nvswitch"
    assert "NV18" in pair.label and w.highlighted == 3
    assert "NVLink" in w.summary.value and _msg(w) == ""


def test_pipeline_step_and_compute_controls():
    w = widgets.pipeline_explorer()
    per_mb = _expected_row("A", "gpu3", "gpu4", 4096 * 4096 * 2)
    w.controls["n_micro_batches"].value = 32
    assert units.fmt_time(32 * per_mb) in w.summary.value
    assert "per step (32 micro-batches)" in w.summary.value
    png = _png(w)
    w.controls["compute_ms"].value = 20.0
    assert f"({per_mb / 20e-3:.1%})" in w.view.ax.texts[2].get_text()
    assert f"{per_mb / 20e-3:.1%} of 20 ms compute" in w.summary.value
    assert _png(w) != png


def test_pipeline_model_error_becomes_message(monkeypatch):
    w = widgets.pipeline_explorer()
    monkeypatch.setattr(links, "transfer_time",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("kaput")))
    w.controls["hidden"].value = 8192                # must not raise
    assert "RuntimeError" in _msg(w) and "kaput" in _msg(w)
    monkeypatch.undo()
    w.controls["hidden"].value = 4096
    assert _msg(w) == ""


def test_every_new_control_is_tested():
    tested = {
        "pcie": {c for c, *_ in PCIE_CASES},
        "pipeline": {c for c, *_ in PIPE_CASES} | {"layout", "pair",
                                                  "n_micro_batches", "compute_ms"},
        "topology": {"sample", "text", "acs", "iommu"},
    }
    for name in NEW:
        assert set(widgets.explorers()[name]().controls) == tested[name], name


# === topology_explorer ==================================================================
@pytest.fixture
def p2p(monkeypatch):
    return Recorder(monkeypatch, topology, "p2p_possible")


def test_topology_samples():
    s = widgets.topology_samples()
    assert set(s) == {"dgx-h100", "layout-a", "layout-b", "pcie-box",
                      "h200-x2 (measured)"}
    assert s["layout-a"] == specs.read_data_text("topologies/layout-a.txt")
    assert s["h200-x2 (measured)"] == measurements.raw_capture(
        "h200-x2-2026-11-30", "topo-m.txt")


def test_topology_default_state_is_the_static_figure():
    w = widgets.topology_explorer()
    assert w.controls["sample"].value == "dgx-h100" and w.controls["text"].value == ""
    assert w.controls["acs"].value is False and w.controls["iommu"].value == "off"
    topo = topology.parse_topo_matrix(specs.read_data_text("topologies/dgx-h100.txt"))
    assert sorted(w.topology.graph.edges) == sorted(topo.graph.edges)
    ref = plotting.plot_topology(topo)
    assert [(t.get_text(), t.get_position()) for t in w.view.ax.texts] == \
        [(t.get_text(), t.get_position()) for t in ref.texts]
    assert "NV18" in w.table.value and "450.0" in w.table.value
    assert "28 pairs" in w.table.value and "P2P/NVLink" in w.table.value
    assert "sample dgx-h100" in w.summary.value and "8 GPUs" in w.summary.value


def test_topology_sample_changes_drawing_and_table():
    w = widgets.topology_explorer()
    png, table, n = _png(w), w.table.value, w.n_updates
    w.controls["sample"].value = "layout-a"
    assert w.n_updates == n + 1
    assert _png(w) != png and w.table.value != table
    assert "SYS" in w.table.value and "PIX" in w.table.value and "SHM" in w.table.value
    assert "63.0" in w.table.value
    w.controls["sample"].value = "h200-x2 (measured)"
    assert "NV18" in w.table.value and "GPU0–GPU1" in w.table.value
    assert "2 GPUs" in w.summary.value


def test_topology_pasted_text_wins_and_is_cached(monkeypatch):
    w = widgets.topology_explorer()
    png_dgx = _png(w)
    calls = []
    real = plotting.plot_topology

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(plotting, "plot_topology", counting)
    text = topology.render_topo_matrix(topology.layout_b())
    w.controls["text"].value = text
    assert w.source == "your pasted text" and "your pasted text" in w.summary.value
    assert "PXB" in w.table.value and len(calls) == 1
    png_b = _png(w)
    assert png_b != png_dgx
    w.controls["text"].value = "   \n"                 # blank: back to the sample
    assert w.source == "sample dgx-h100" and _png(w) == png_dgx
    w.controls["text"].value = text                    # cached: no new drawing
    assert len(calls) == 1 and _png(w) == png_b
    w.controls["acs"].value = True                     # only the table changes
    assert len(calls) == 1 and _png(w) == png_b


@pytest.mark.parametrize("control, value, param", [
    ("acs", True, "acs_enabled"), ("iommu", "on", "iommu"),
    ("iommu", "passthrough", "iommu")])
def test_topology_acs_iommu_reach_model(p2p, control, value, param):
    w = widgets.topology_explorer(sample="layout-a")
    table, png = w.table.value, _png(w)
    p2p.calls.clear()
    w.controls[control].value = value
    assert p2p.calls and all(c[param] == value for c in p2p.calls)
    assert len(p2p.calls) == 28                        # every GPU pair
    assert _png(w) == png                              # the drawing is cached
    if value != "passthrough":
        assert w.table.value != table
        assert "<b>no</b>" in w.table.value.split("PIX", 1)[1].split("</tr>")[0]
    else:
        assert "check the kernel left ACS off" in w.table.value


@pytest.mark.parametrize("text, words", [
    ("GPU0 GPU1\nGPU0 X PIX\nGPU1 PXB X\n", "line 3"),
    ("hello world\n", "line 1"),
    ("GPU0 GPU1\nGPU0 X NV4\n", "expected a row for GPU1"),
    ("GPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n", "unknown path class"),
])
def test_topology_parse_error_shows_message(text, words):
    w = widgets.topology_explorer()
    png, table, n = _png(w), w.table.value, w.n_updates
    w.controls["text"].value = text
    assert words in _msg(w) and "Traceback" not in _msg(w)
    assert _msg(w).startswith("<div") and "text: line" in _msg(w)
    assert _png(w) == png and w.table.value == table and w.n_updates == n
    w.controls["text"].value = ""
    assert _msg(w) == ""


def test_topology_message_is_escaped():
    w = widgets.topology_explorer()
    w.controls["text"].value = "<script>alert(1)</script>\n"
    assert "<script>" not in _msg(w) and "&lt;script&gt;" in _msg(w)


# === plot functions of the chapter ======================================================
def test_plot_pcie_budget_updates_in_place():
    fig, ax = plt.subplots()
    plotting.plot_pcie_budget(5, ax=ax)
    first = list(ax.patches)
    plotting.plot_pcie_budget(3, 8, 128, header_bytes=12, ax=ax)
    assert list(ax.patches) == first
    assert _widths(ax)[0] == pytest.approx(pcie.raw_bandwidth(3, 8).gb_per_s)
    assert _widths(ax)[3] == pytest.approx(pcie.effective_bandwidth(
        3, 8, 128, header_bytes=12).gb_per_s)
    assert not ax.lines[0].get_visible()
    with pytest.raises(ValueError, match="measured"):
        plotting.plot_pcie_budget(measured=units.Bandwidth(1e9, "bidirectional"))


def test_plot_tlp_efficiency_curves():
    ax = plotting.plot_tlp_efficiency()
    x, y = ax.lines[2].get_data()
    np.testing.assert_array_equal(x, [128, 256, 512, 1024, 2048, 4096])
    np.testing.assert_allclose(y, [100 * pcie.tlp_efficiency(int(p)) for p in x],
                               rtol=1e-12)
    assert ax.lines[0].get_ydata()[1] == pytest.approx(
        100 * 256 / 276, rel=1e-12)                     # Intel AN 456: 92 %


def test_plot_host_copies_model_lines():
    run = measurements.copy_bandwidth()
    ax = plotting.plot_host_copies(run, kinds=("h2d_pinned",))
    pts, model = ax.lines[:2]
    np.testing.assert_allclose(pts.get_ydata(), run.kinds["h2d_pinned"][1] / 1e9)
    x, y = model.get_data()
    np.testing.assert_allclose(
        y, x / pcie.copy_time(x, "h2d", system="h200-x2-measured") / 1e9, rtol=1e-12)
    assert ax.lines[-1].get_ydata()[0] == pytest.approx(
        pcie.encoded_bandwidth(5).gb_per_s)
    with pytest.raises(ValueError, match="kinds"):
        plotting.plot_host_copies(kinds=("p2p",))


def test_plot_stage_transfers_in_place_and_checks():
    fig, ax = plt.subplots()
    rows = [("a", 1e-3, "pcie"), ("b", 2e-3, "nvlink")]
    plotting.plot_stage_transfers(rows, 0.1, highlight=1, ax=ax)
    first = list(ax.patches)
    assert _widths(ax) == pytest.approx([1.0, 2.0])
    assert "(2.0%)" in ax.texts[1].get_text()
    plotting.plot_stage_transfers([("a", 3e-3, "pcie"), ("c", 1e-3, "comm")], 0.01,
                                  highlight=0, ax=ax)
    assert list(ax.patches) == first and _widths(ax) == pytest.approx([3.0, 1.0])
    assert ax.patches[0].get_linewidth() > 0 and ax.patches[1].get_linewidth() == 0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "c"]
    for bad, param in [([], "transfers"), ([("a", -1, "pcie")], "transfers"),
                       ([("a", 1, "purple")], "kind"), ([("a", 1)], "transfers")]:
        with pytest.raises(ValueError, match=param):
            plotting.plot_stage_transfers(bad, 1.0)
    with pytest.raises(ValueError, match="compute_time"):
        plotting.plot_stage_transfers(rows, 0)
    with pytest.raises(ValueError, match="highlight"):
        plotting.plot_stage_transfers(rows, 1.0, highlight=5)
