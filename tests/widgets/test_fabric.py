"""Chapter 5 (NVSwitch and scaling out): the fabric explorer, driven headless, and
the chapter's plot functions.

Every control must reach ``gpulab.collectives.predict`` in SI units (bytes, whole
ranks, preset names), change the image, and invalid combinations must show a
message instead of a traceback. The initial state must equal the chapter's static
figure (built here exactly as ``book/nvswitch.md`` builds it).
"""
from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import (collectives, links, plotting, systems, topology,  # noqa: E402
                    units, widgets)

MIB = 2 ** 20


from tests.recorder import Recorder, check_explorer_factory  # noqa: E402


@pytest.fixture
def pred(monkeypatch):
    return Recorder(monkeypatch, collectives, "predict")


def _png(w):
    return bytes(w.view.image.value)


def _msg(w):
    return w.message.value


def _widths(ax):
    return [p.get_width() for p in ax.patches]


def _chapter_rows(system="hgx-h200", n=8, size=64 * MIB, coll="all_reduce"):
    """The explorer's rows as the chapter computes them for its static figure."""
    best = collectives.predict(coll, size, n, system)
    rows = []
    for algo in collectives.ALGORITHMS:
        label = widgets.FABRIC_LABELS[algo]
        try:
            p = collectives.predict(coll, size, n, system, algorithm=algo)
        except ValueError:
            rows.append((label, None, None, "needs ranks in several NVLink domains"))
            continue
        rows.append((label, p.time_scalar, float(p.busbw[0]), ""))
    return rows, list(collectives.ALGORITHMS).index(str(best.algorithm[0]))


# --- factory ------------------------------------------------------------------------------
def test_fabric_explorer_is_a_registered_factory():
    w = check_explorer_factory("fabric")
    assert set(w.controls) == {"system", "n_ranks", "message_bytes", "collective"}
    assert list(w.controls["system"].options) == systems.names()
    assert [v for _, v in w.controls["message_bytes"].options] == \
        list(widgets.FABRIC_SIZES)
    assert set(widgets.FABRIC_LABELS) == set(collectives.ALGORITHMS)


@pytest.mark.parametrize("kwargs, param", [
    ({"system": "nope"}, "system"), ({"system": 3}, "system"),
    ({"n_ranks": 1}, "n_ranks"), ({"n_ranks": 9}, "n_ranks"),
    ({"n_ranks": 4.0}, "n_ranks"), ({"n_ranks": True}, "n_ranks"),
    ({"message_bytes": 1000}, "message_bytes"),
    ({"message_bytes": 2 ** 40}, "message_bytes"),
    ({"collective": "allreduce"}, "collective"),
])
def test_factory_refuses_bad_arguments(kwargs, param):
    with pytest.raises(ValueError, match=param):
        widgets.fabric_explorer(**kwargs)


# --- initial state == the chapter's static figure ------------------------------------------
def test_default_state_is_the_static_figure(pred):
    w = widgets.fabric_explorer()
    c = w.controls
    assert (c["system"].value, c["n_ranks"].value, c["message_bytes"].value,
            c["collective"].value) == ("hgx-h200", 8, 64 * MIB, "all_reduce")
    assert c["n_ranks"].max == systems.get("hgx-h200").n_gpus
    rows, high = _chapter_rows()
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    ref = plotting.plot_fabric_algorithms(
        rows, line_rates=[("NVLink per GPU", links.nvlink_gpu_bandwidth(4), "nvlink")],
        highlight=high, ax=ax)
    np.testing.assert_allclose(_widths(w.view.ax), _widths(ref), rtol=1e-12)
    assert [t.get_text() for t in w.view.ax.get_yticklabels()] == \
        [t.get_text() for t in ref.get_yticklabels()]
    assert w.highlighted == high == list(collectives.ALGORITHMS).index("nvls")
    assert [a.get_text() for a in w.view.ax.texts[:6]] == \
        [a.get_text() for a in ref.texts[:6]]
    s = w.summary.value
    assert "per direction" in s and "nvls" in s and "64 MiB" in s
    assert "450 GB/s per-direction NVLink line rate" in s


# --- every control reaches the model in SI units -------------------------------------------
CASES = [
    ("system", "dgx-a100", "system", "dgx-a100"),
    ("system", "h100-pcie", "system", "h100-pcie"),
    ("n_ranks", 4, "n_ranks", 4),
    ("n_ranks", 2, "n_ranks", 2),
    ("message_bytes", 2 ** 30, "message_bytes", 2 ** 30),
    ("message_bytes", 1024, "message_bytes", 1024),
    ("collective", "all_gather", "collective", "all_gather"),
    ("collective", "alltoall", "collective", "alltoall"),
]


@pytest.mark.parametrize("control, value, param, expected", CASES,
                         ids=[f"{c}={v}" for c, v, *_ in CASES])
def test_control_reaches_model(pred, control, value, param, expected):
    w = widgets.fabric_explorer()
    png, n = _png(w), w.n_updates
    pred.calls.clear()
    w.controls[control].value = value
    assert w.n_updates == n + 1 and _msg(w) == ""
    assert pred.calls, "the model was not called"
    first = pred.calls[0]
    assert first["algorithm"] == "auto"                    # NCCL's choice first
    for call in pred.calls:
        assert call[param] == expected and type(call[param]) is type(expected)
        assert type(call["message_bytes"]) is int           # bytes, not MiB
        assert type(call["n_ranks"]) is int
    others = {call["algorithm"] for call in pred.calls[1:]}
    assert others <= set(collectives.ALGORITHMS) and "auto" not in others
    assert _png(w) != png
    # the bars are the model's busbw in GB/s per direction
    best = pred.real(**first)
    i = list(collectives.ALGORITHMS).index(str(best.algorithm[0]))
    assert w.highlighted == i
    assert w.view.ax.patches[i].get_width() == pytest.approx(
        float(best.busbw[0]) / units.GB, rel=1e-12)


def test_every_control_is_tested():
    assert set(widgets.fabric_explorer().controls) == {c for c, *_ in CASES}


def test_system_change_bounds_the_ranks_with_one_update():
    w = widgets.fabric_explorer()
    ranks = w.controls["n_ranks"]
    n = w.n_updates
    w.controls["system"].value = "hgx-h200-2node"
    assert w.n_updates == n + 1 and ranks.max == 16 and ranks.value == 8
    ranks.value = 16
    assert "nvlstree" in w.summary.value and "1/9" in w.summary.value
    assert w.view.ax.lines[1].get_visible()            # the network line
    n = w.n_updates
    w.controls["system"].value = "dgx-a100"
    assert w.n_updates == n + 1
    assert ranks.max == 8 and ranks.value == 8 and _msg(w) == ""
    assert not w.view.ax.lines[1].get_visible()
    w.controls["system"].value = "gb200-nvl72"
    assert ranks.max == 72 and ranks.value == 8
    ranks.value = 72
    assert _msg(w) == "" and "one NVLink domain" in w.summary.value


def test_unavailable_algorithms_are_labelled():
    w = widgets.fabric_explorer(system="dgx-a100")
    texts = [t.get_text() for t in w.view.ax.texts[:6]]
    i_nvls = list(collectives.ALGORITHMS).index("nvls")
    i_hier = list(collectives.ALGORITHMS).index("nvlstree")
    assert texts[i_nvls] == "no in-switch reduction on this system"
    assert texts[i_hier] == "needs ranks in several NVLink domains"
    assert w.view.ax.patches[i_nvls].get_width() == 0
    w.controls["collective"].value = "all_gather"
    texts = [t.get_text() for t in w.view.ax.texts[:6]]
    assert texts[list(collectives.ALGORITHMS).index("tree")] == \
        "modelled for all_reduce only"
    w2 = widgets.fabric_explorer(system="h100-pcie")
    assert "PCIe Gen5 x16" in w2.summary.value
    w3 = widgets.fabric_explorer(system="hgx-h200-2node", n_ranks=16)
    assert [t.get_text() for t in w3.view.ax.texts[:5]][i_nvls] == \
        "in-switch reduction stays inside one NVLink domain"


# --- invalid combinations: a message, not a traceback -----------------------------------
@pytest.mark.parametrize("n_ranks, words", [(9, "multiple of 2"), (15, "at most 8")])
def test_uneven_split_over_nodes_shows_message(pred, n_ranks, words):
    w = widgets.fabric_explorer(system="hgx-h200-2node")
    png, n = _png(w), w.n_updates
    pred.calls.clear()
    w.controls["n_ranks"].value = n_ranks
    assert words in _msg(w) and "Traceback" not in _msg(w)
    assert _msg(w).startswith("<div")
    assert _png(w) == png and w.n_updates == n and not pred.calls
    w.controls["n_ranks"].value = n_ranks + 1
    assert _msg(w) == "" and _png(w) != png


def test_model_error_becomes_message(monkeypatch):
    w = widgets.fabric_explorer()
    png = _png(w)

    def bad(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(collectives, "predict", bad)
    w.controls["message_bytes"].value = 2 ** 30            # must not raise
    assert "RuntimeError" in _msg(w) and "kaput" in _msg(w)
    assert _png(w) == png
    monkeypatch.undo()
    w.controls["message_bytes"].value = 2 ** 20
    assert _msg(w) == ""


# === plot functions of the chapter ======================================================
def _ring_system():
    hgx = systems.get("hgx-h200")
    m = np.zeros((8, 8), dtype=int)
    for i in range(8):
        m[i, (i + 1) % 8] = m[(i + 1) % 8, i] = 9
    nv = dataclasses.replace(hgx.nvlink, fabric="mesh", nvls=False, switch_chips=None,
                             peer_links=tuple(map(tuple, m.tolist())))
    return dataclasses.replace(hgx, name="ring", nvlink=nv)


def test_plot_fabric_direct_and_switched():
    ax = plotting.plot_fabric(_ring_system(), label="(a) ring")
    assert len(ax.lines) == 8                             # one line per linked pair
    assert [t.get_text() for t in ax.texts].count("9") == 8
    assert "(a) ring" in [t.get_text() for t in ax.texts]
    ax = plotting.plot_fabric("dgx-1-v100")
    assert len(ax.lines) == 16                            # 4 peers x 8 GPUs / 2
    ax = plotting.plot_fabric("hgx-h200")
    assert len(ax.lines) == 8 * 4                         # every GPU to every chip
    widths = sorted({round(ln.get_linewidth(), 6) for ln in ax.lines})
    assert len(widths) == 2                               # 5 and 4 links
    assert {t.get_text() for t in ax.texts} >= {f"NVSw{j}" for j in range(4)}
    ax = plotting.plot_fabric("h100-pcie")
    assert not ax.lines and any("PCIe" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError, match="system"):
        plotting.plot_fabric("gb200-nvl72")               # 72-GPU domain: too big
    with pytest.raises(ValueError, match="label"):
        plotting.plot_fabric("hgx-h200", label=3)


def test_plot_switch_planes_bars_are_the_topology():
    topo = topology.nvswitch_node("H100")
    ax = plotting.plot_switch_planes(topo)
    split = [topo.graph.edges["gpu0", s]["links"] for s in topo.nvswitches]
    assert split == [5, 4, 4, 5]
    w = np.array(_widths(ax)).reshape(len(topo.nvswitches), len(topo.gpus))
    np.testing.assert_array_equal(w[:, 0], split)
    assert (w.sum(axis=0) == 18).all()                    # every GPU: 18 links
    assert (w > 0).all()                                  # every chip: every GPU
    labels = ax.get_legend_handles_labels()[1]
    assert labels[0] == "NVSw0: 40 ports to GPUs" and "32 ports" in labels[1]
    with pytest.raises(ValueError, match="topo"):
        plotting.plot_switch_planes(topology.layout_a())


def test_plot_peer_links_cells_match_the_system():
    ax = plotting.plot_peer_links("dgx-1-v100")
    peers = systems.nvlink_peers("dgx-1-v100")
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    for i in range(8):
        for j in range(8):
            want = "–" if i == j else str(peers[i].get(j, 0))
            assert cells[i, j] == want
    assert ax.collections                                 # drawn as a mesh


def test_plot_busbw_curves_data_and_checks():
    p = collectives.predict("all_reduce", 2.0 ** np.arange(10, 20), 8, "hgx-h200")
    bw = links.nvlink_gpu_bandwidth(4)
    ax = plotting.plot_busbw_curves([("auto", p, "nvlink")],
                                    line_rates=[("line", bw, "nvlink")])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), p.busbw / 1e9, rtol=1e-12)
    np.testing.assert_allclose(ax.lines[0].get_xdata(), p.message_bytes)
    assert ax.lines[1].get_ydata()[0] == pytest.approx(450.0)
    assert ax.get_xscale() == "log"
    with pytest.raises(units.DirectionError):
        plotting.plot_busbw_curves([("a", p, "nvlink")],
                                   line_rates=[("x", bw.to_bidirectional(), "ib")])
    for bad in ([], [("a", 1.0, "nvlink")], [("a", p, "purple")]):
        with pytest.raises(ValueError):
            plotting.plot_busbw_curves(bad)


def test_plot_tp_layers_bars_and_checks():
    ax = plotting.plot_tp_layers([("a", 6e-3, 1e-3), ("b", 3e-3, 3e-3)])
    assert _widths(ax) == pytest.approx([6.0, 3.0, 1.0, 3.0])
    assert ax.patches[2].get_x() == pytest.approx(6.0)
    assert "17% of compute" in ax.texts[0].get_text()
    assert "100% of compute" in ax.texts[1].get_text()
    for bad in ([], [("a", 0.0, 1.0)], [("a", 1.0, -1.0)], [("a", 1.0)]):
        with pytest.raises(ValueError, match="rows"):
            plotting.plot_tp_layers(bad)


def test_plot_fabric_algorithms_in_place_and_checks():
    fig, ax = plt.subplots()
    bw = links.nvlink_gpu_bandwidth(4)
    rows = [("ring", 1e-3, 300e9, ""), ("nvls", None, None, "n/a here")]
    plotting.plot_fabric_algorithms(rows, line_rates=[("NVLink", bw, "nvlink")],
                                    highlight=0, ax=ax)
    first = list(ax.patches)
    assert _widths(ax) == pytest.approx([300.0, 0.0])
    assert ax.texts[0].get_text() == "1 ms, 300 GB/s"
    assert ax.texts[1].get_text() == "n/a here"
    assert ax.patches[0].get_linewidth() > 0 and ax.patches[1].get_linewidth() == 0
    assert ax.lines[0].get_visible() and not ax.lines[1].get_visible()
    plotting.plot_fabric_algorithms(
        [("ring", 2e-3, 150e9, ""), ("nvls", 1e-3, 400e9, "")],
        line_rates=[("NVLink", bw, "nvlink"),
                    ("NIC", units.Bandwidth(50e9, "per_direction"), "ib")],
        highlight=1, ax=ax)
    assert list(ax.patches) == first                      # updated in place
    assert _widths(ax) == pytest.approx([150.0, 400.0])
    assert ax.lines[1].get_visible() and ax.lines[1].get_xdata()[0] == 50.0
    assert ax.patches[1].get_linewidth() > 0 and ax.patches[0].get_linewidth() == 0
    with pytest.raises(ValueError, match="rows"):
        plotting.plot_fabric_algorithms([("a", 1e-3, None, "")])
    with pytest.raises(ValueError, match="rows"):
        plotting.plot_fabric_algorithms([("a", -1.0, 1e9, "")])
    with pytest.raises(ValueError, match="highlight"):
        plotting.plot_fabric_algorithms(rows, highlight=2)
    with pytest.raises(units.DirectionError):
        plotting.plot_fabric_algorithms(
            rows, line_rates=[("x", bw.to_bidirectional(), "nvlink")])
    with pytest.raises(ValueError, match="at most two"):
        plotting.plot_fabric_algorithms(rows, line_rates=[("x", bw, "nvlink")] * 3)
