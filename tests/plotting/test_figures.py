"""plot_* functions: Axes in/out, data equal to the models, units, no titles, style."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from gpulab import links, measurements, plotting as P, scaling, topology, units  # noqa: E402,E501
from gpulab.units import Bandwidth, DirectionError  # noqa: E402

GPUS4 = ["V100", "A100", "H100", "B200"]
PD = "per_direction"


def _steps(**kw):
    return [scaling.data_parallel_step(g, kw.get("n", 8), kw.get("p", 7e9),
                                       kw.get("d", 4096)) for g in GPUS4]


def _budget():
    return [("raw signalling rate", links.nvlink_gpu_bandwidth(4, raw=True), "model"),
            ("after coding", links.nvlink_gpu_bandwidth(4), "nvlink"),
            ("measured", measurements.copy_bandwidth().peak("p2p"), "accent")]


def _collective_prediction():
    from gpulab import collectives

    return collectives.predict("all_reduce", 2.0 ** np.arange(3, 31), 8,
                               "hgx-h200")


#: How to call every plot_* function (keyword arguments).
CALLS = {
    "plot_growth": lambda: {},
    "plot_scaling_efficiency": lambda: {},
    "plot_dp_steps": lambda: {"steps": _steps()},
    "plot_nrz_pam4": lambda: {},
    "plot_eye": lambda: {"modulation": "NRZ", "n_symbols": 60},
    "plot_nvlink_generations": lambda: {},
    "plot_link_budget": lambda: {"budget": _budget()},
    "plot_copy_bandwidth": lambda: {"kinds": ("p2p", "h2d_pinned"),
                                    "nominal": links.nvlink_gpu_bandwidth(4)},
    "plot_link_vs_generations": lambda: {"custom": Bandwidth(1e12, "bidirectional")},
    "plot_topology": lambda: {"topo": topology.layout_a(),
                              "highlight": ("gpu0", "gpu4")},
    "plot_pcie_budget": lambda: {"generation": 5, "lanes": 16,
                                 "max_payload_bytes": 256},
    "plot_tlp_efficiency": lambda: {"generation": 5},
    "plot_host_copies": lambda: {"kinds": ("h2d_pinned", "h2d_pageable")},
    "plot_stage_transfers": lambda: {"transfers": [("same switch", 1e-3, "pcie"),
                                                   ("NVLink", 2e-4, "nvlink")],
                                     "compute_time": 0.1, "highlight": 0},
    # Chapter 4: in-network reduction
    "plot_collective_steps": lambda: {"algorithm": "ring", "n_ranks": 4},
    "plot_collective_prediction": lambda: {
        "prediction": _collective_prediction(), "message_bytes": 2 ** 20,
        "line_rate": links.nvlink_gpu_bandwidth(4)},
    "plot_collective_comparison": lambda: {
        "measured": {"ring": ([2.0 ** 20, 2.0 ** 30], [5e10, 3e11])},
        "predicted": {"ring": _collective_prediction()}},
}
#: Diagrams without data axes (no axis label to carry a unit).
DIAGRAMS = {"plot_topology"}
DIAGRAMS |= {"plot_collective_steps"}      # Chapter 4
_UNITLESS_BUG = ("gpulab/plotting.py {f}: axis label {label!r} carries no unit in "
                 "brackets (module rule: 'Axes carry units'), expected e.g. {fix}")
LABEL_XFAIL: dict = {}
# Chapter 5: NVSwitch and scaling out
CALLS.update({
    "plot_fabric": lambda: {"system": "dgx-1-v100", "label": "(a) DGX-1"},
    "plot_switch_planes": lambda: {"topo": topology.nvswitch_node("H100")},
    "plot_peer_links": lambda: {"system": "dgx-1-v100"},
    "plot_busbw_curves": lambda: {
        "curves": [("auto", __import__("gpulab").collectives.predict(
            "all_reduce", 2.0 ** np.arange(10, 31), 8, "hgx-h200"), "nvlink")],
        "line_rates": [("line rate", links.nvlink_gpu_bandwidth(4), "nvlink")]},
    "plot_tp_layers": lambda: {"rows": [("TP=8", 6e-3, 1e-3), ("TP=16", 3e-3, 3e-3)]},
    "plot_fabric_algorithms": lambda: {
        "rows": [("ring", 1e-3, 3e11, ""), ("nvls", None, None, "n/a")],
        "line_rates": [("NVLink", Bandwidth(450e9, PD), "nvlink")], "highlight": 0},
})
DIAGRAMS |= {"plot_fabric", "plot_peer_links"}      # Chapter 5
# Chapter 8: tensor parallelism
CALLS.update({
    "plot_megatron_layer": lambda: {},
    "plot_tp_degree": lambda: {
        "rows": [("TP1", 4e-3, 0.0, 0.0, "does not fit"),
                 ("TP2", 2e-3, 1e-3, 5e-4, "")], "highlight": 1},
    "plot_tp_measured": lambda: {"rows": [("70b", 16e-3, 1e-3, 27e-3, 1e-3)]},
})
DIAGRAMS |= {"plot_megatron_layer"}      # Chapter 8
CALLS.update({                                      # Chapter 9
    "plot_step_comparison": lambda: {"rows": [(
        "TP2", __import__("gpulab").parallelism.step_time(
            "13b", "hgx-h200", (2, 1, 4), global_batch=64))]},
    "plot_speedup_slowdown": lambda: {"points": [("article", 1 / 3.2, 1 / 2.1)]},
    "plot_fp8_speedup": lambda: {
        "curves": [("model", [512, 1024, 4096], [0.6, 0.9, 1.4])],
        "points": [("measured", [512, 4096], [0.7, 1.3], [False, True])]},
    "plot_power_clock": lambda: {"fit": __import__("gpulab").parallelism.power_clock_fit(),
                                 "limits": [("500 W", 500.0)]},
    "plot_roi": lambda: {"roi": __import__("gpulab").parallelism.nvlink_roi(
        1.0, 1.3, tokens_per_step=1e6, price_fast=3.0, price_slow=2.0,
        n_gpus=8, project_tokens=1e11)},
})


def _compare_args():
    from pathlib import Path

    from gpulab import collectives, nccltests
    sweep = nccltests.read_all(Path(__file__).parents[1] / "data" / "nccltests"
                               / "h100_2x8_all_reduce.txt")[0]
    pred = collectives.predict("all_reduce", sweep.size_bytes[sweep.size_bytes > 0],
                               n_ranks=8, system="dgx-h100")
    return {"sweep": sweep, "prediction": pred}


CALLS.update({
    "plot_compare": _compare_args,
    "plot_run_floors": lambda: {"floors": {"a": [13e-6, 14e-6], "b": [20e-6]},
                                "model_s": 16e-6},
})
def _scale_out_args():
    from gpulab import collectives, network
    c = network.scale_out("gcp-a3-mega", 2)
    return {"prediction": collectives.predict("all_reduce", 2.0 ** np.arange(3, 35),
                                              c.n_gpus, c),
            "message_bytes": 2 ** 30,
            "published": ("published", [2 ** 20, 2 ** 30], [20e9, 300e9]),
            "line_rates": [("NICs of one node", Bandwidth(200e9, PD), "ib")]}


# Beyond one server (network)
CALLS.update({
    "plot_scale_out": _scale_out_args,
    "plot_busbw_vs_nodes": lambda: {
        "nodes": [2, 4, 8, 16], "curves": [("1:1", [360e9] * 4, "ib"),
                                          ("2:1", [360e9, 360e9, 180e9, 180e9], "comm")],
        "leaf_nodes": 4},
    "plot_ep_alltoall": lambda: {
        "curves": [("in a node", [2, 4, 8], [1e-4, 3e-4, 8e-4], "nvlink"),
                   ("across nodes", [2, 4, 8], [2e-3, 4e-3, 5e-3], "ib")],
        "domain": 8},
    "plot_step_latency": lambda: {
        "points": [{"protocol": "LL", "steps": 1, "time_s": 30e-6, "fitted": True,
                    "crowded": False},
                   {"protocol": "LL", "steps": 3, "time_s": 80e-6, "fitted": True,
                    "crowded": False},
                   {"protocol": "LL", "steps": 6, "time_s": 120e-6, "fitted": False,
                    "crowded": False},
                   {"protocol": "Simple", "steps": 14, "time_s": 560e-6,
                    "fitted": False, "crowded": True}],
        "fits": {"LL": (5e-6, 25e-6), "Simple": (18e-6, 33e-6)}},
    "plot_mixed_ring": lambda: {
        "rows": [{"protocol": "LL", "collective": "all_gather", "n_ranks": 4,
                  "ratio": 0.65, "dataflow_ratio": 0.7, "crowded": False},
                 {"protocol": "Simple", "collective": "all_reduce", "n_ranks": 8,
                  "ratio": 1.2, "dataflow_ratio": 0.6, "crowded": True}]},
})
# Chapter 7: parallel strategies
CALLS.update({
    "plot_memory_breakdown": lambda: {
        "results": [__import__("gpulab").parallelism.step_time(
            "13b", "dgx-h100", (2, 2, 2), global_batch=64, zero=1)],
        "capacity": 80e9, "usable": 72e9},
    "plot_step_breakdown": lambda: {
        "step_times": __import__("gpulab").parallelism.step_time(
            "13b", "h100-pcie", (8, 1, 1), global_batch=64)},
})
# Chapter 6: reading nccl-tests
CALLS.update({
    "plot_time_curves": lambda: {
        "curves": [("measured", [8, 1024, 2 ** 20], [18e-6, 18e-6, 20e-6],
                    "nvlink", "measured"),
                   ("model", [8, 1024, 2 ** 20], [17e-6, 17e-6, 21e-6],
                    "model", "model")],
        "marks": [("n_1/2", 2 ** 22)]},
    "plot_article_audit": lambda: {
        "sizes": [8, 2 ** 20, 2 ** 30], "claimed_busbw": [4e7, 2.53e11, 8.71e11],
        "curves": [("model", [8, 2 ** 20, 2 ** 30], [1e6, 1e11, 4.5e11], "model")],
        "line_rate": Bandwidth(450e9, PD), "n_ranks": 8},
    "plot_bucket_time": lambda: {
        "bucket_bytes": [2 ** 20, 2 ** 24, 2 ** 28], "total_time": [0.1, 0.01, 0.006],
        "chosen": (2 ** 24, 0.01), "one_call_time": 0.006},
})
# Serving: decode across GPUs
CALLS.update({
    "plot_decode_layers": lambda: {
        "rows": __import__("gpulab.plotting.inference").plotting.inference
        .decode_model_rows()},
    "plot_allreduce_sizes": lambda: {
        "system": "hgx-h200", "n_ranks": 8, "published_system": "h200_sxm"},
    "plot_tpot_breakdown": lambda: {
        "groups": [("TP8", __import__("gpulab").inference.decode_step(
            "llama3-70b", "hgx-h200", tp=8, batch=32, context=8192))]},
})

# Serving: NVLink or PCIe for serving (layouts, published TPOT, tokens per USD, KV transfer)
CALLS.update({
    "plot_serving_layouts": lambda: {
        "options": {"h100-pcie": __import__("gpulab.inference.roi").inference.roi
                    .layout_options("llama3-70b", "h100-pcie", tpot_target=0.05,
                                    context=4096)},
        "tpot_target": 0.05},
    "plot_tpot_check": lambda: {
        "checks": [{"published": 0.01, "model": 0.012, "tp": 2, "fits_memory": True},
                   {"published": 0.03, "model": 0.025, "tp": 8, "fits_memory": False}]},
    "plot_tokens_per_dollar": lambda: {
        "rows": __import__("gpulab.inference.roi").inference.roi.buying_table(
            "llama3-70b", {"hgx-h200": 3.0, "h100-pcie": 2.25}, tpot_target=0.05,
            context=4096)},
    "plot_kv_transfer": lambda: {
        "paths": [("NVLink", 0.001), ("8 NICs", 0.007), ("one NIC", 0.05)],
        "prefill_s": 0.3},
    "plot_ep_check": lambda: {
        "rows": __import__("gpulab.inference.ep").inference.ep.ep_checks(),
        "kernel": "low_latency"},
    "plot_kv_transfer_check": lambda: {
        "rows": __import__("gpulab.inference.disagg").inference.disagg
        .kv_transfer_checks()},
    "plot_ttft_share": lambda: {
        "curves": [("one NIC", "sequential", [1024, 8192, 32768], [0.05, 0.2, 0.1]),
                   ("one NIC", "layerwise", [1024, 8192, 32768], [0.01, 0.004, 0.002])]},
    "plot_ep_times": lambda: {
        "groups": [(op, __import__("gpulab.inference.ep").inference.ep.ep_time(
            "hgx-h200", 32, 128, kernel="low_latency", operation=op))
            for op in ("dispatch", "combine")]},
})

def test_every_plot_function_is_exercised():
    public = {n for n in P.__all__ if n.startswith("plot_")}
    assert public == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_new_figure_only_without_ax(name):
    f = getattr(P, name)
    before = len(plt.get_fignums())
    ax = f(**CALLS[name]())
    assert isinstance(ax, Axes)
    assert len(plt.get_fignums()) == before + 1
    fig, given = plt.subplots()
    n = len(plt.get_fignums())
    out = f(**CALLS[name](), ax=given)
    assert out is given
    assert len(plt.get_fignums()) == n                # no new figure
    assert given.lines or given.patches or given.collections
    assert fig.axes == [given]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_no_titles(name):
    ax = getattr(P, name)(**CALLS[name]())
    assert [ax.get_title(loc=loc) for loc in ("left", "center", "right")] == [""] * 3
    assert ax.figure.get_suptitle() == ""


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=LABEL_XFAIL[n])]
                 if n in LABEL_XFAIL else []) for n in sorted(set(CALLS) - DIAGRAMS)])
def test_axis_labels_carry_units(name):
    ax = getattr(P, name)(**CALLS[name]())
    labels = [lbl for lbl in (ax.get_xlabel(), ax.get_ylabel()) if lbl]
    assert labels, "at least one axis is labelled"
    for lbl in labels:
        assert "[" in lbl and "]" in lbl, lbl


def test_does_not_call_show(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show called"))
    for name in CALLS:
        getattr(P, name)(**CALLS[name]())
        plt.close("all")


# --- data equals model output ---------------------------------------------------------
def test_nvlink_generations_bars():
    ax = P.plot_nvlink_generations()
    per_dir = [links.nvlink_gpu_bandwidth(g).gb_per_s for g in range(1, 6)]
    lower, upper = ax.patches[:5], ax.patches[5:]
    np.testing.assert_allclose([p.get_height() for p in lower], per_dir, rtol=1e-12)
    # the stacked upper bar brings the top to the bidirectional total
    np.testing.assert_allclose([p.get_y() + p.get_height() for p in upper],
                               [2 * v for v in per_dir], rtol=1e-12)
    np.testing.assert_allclose([p.get_y() + p.get_height() for p in upper],
                               [160, 300, 600, 900, 1800], rtol=1e-12)


def test_dp_steps_bars():
    steps = _steps()
    ax = P.plot_dp_steps(steps)
    comp, comm = ax.patches[:4], ax.patches[4:]
    assert len(ax.patches) == 8
    np.testing.assert_allclose([p.get_width() for p in comp],
                               [s.compute_time * 1e3 for s in steps], rtol=1e-12)
    np.testing.assert_allclose([p.get_width() for p in comm],
                               [s.exposed_comm_time * 1e3 for s in steps], rtol=1e-12)
    np.testing.assert_allclose([p.get_x() for p in comm],
                               [p.get_width() for p in comp], rtol=1e-12)
    assert [t.get_text() for t in ax.get_yticklabels()] == GPUS4
    assert ax.get_xlabel() == "Step time [ms]"


def test_dp_steps_refuses_non_steps():
    with pytest.raises(ValueError, match="steps"):
        P.plot_dp_steps([])
    with pytest.raises(ValueError, match="steps"):
        P.plot_dp_steps([1.0, 2.0])


def test_scaling_efficiency_lines():
    overlaps = (0.0, 0.5, 0.9)
    ax = P.plot_scaling_efficiency(8, overlaps=overlaps)
    curves = ax.lines[:3]
    for line, o in zip(curves, overlaps):
        x, y = line.get_data()
        np.testing.assert_allclose(y, scaling.effective_gpus(8, 1.0, x, overlap=o),
                                   rtol=1e-12)
        assert x.min() == pytest.approx(0.01) and x.max() == pytest.approx(10)
    # at ratio 1 with no overlap: 8 GPUs deliver 4
    x, y = curves[0].get_data()
    assert np.interp(1.0, x, y) == pytest.approx(4.0, rel=1e-2)
    hlines = [ln.get_ydata()[0] for ln in ax.lines[3:]]
    assert sorted(hlines) == [4, 8]


def test_growth_bars():
    rows = scaling.growth_table()
    ax = P.plot_growth()
    heights = [p.get_height() for p in ax.patches]
    expected = [r[m] for m in ("fp16_dense_flops", "nvlink_bandwidth",
                               "memory_bandwidth") for r in rows]
    np.testing.assert_allclose(heights, expected, rtol=1e-12)


def test_link_budget_bars_and_direction_check():
    budget = _budget()
    ax = P.plot_link_budget(budget)
    np.testing.assert_allclose([p.get_width() for p in ax.patches],
                               [b.gb_per_s for _, b, _ in budget], rtol=1e-12)
    assert "per direction" in ax.get_xlabel()
    mixed = budget + [("bidir", Bandwidth(1e9, "bidirectional"), "model")]
    with pytest.raises(DirectionError):
        P.plot_link_budget(mixed)
    with pytest.raises(ValueError, match="kind"):
        P.plot_link_budget([("x", Bandwidth(1e9, PD), "purple")])
    with pytest.raises(ValueError, match="budget"):
        P.plot_link_budget([])


def test_copy_bandwidth_points_and_nominal():
    run = measurements.copy_bandwidth()
    nominal = links.nvlink_gpu_bandwidth(4)
    ax = P.plot_copy_bandwidth(run, ("p2p",), nominal=nominal)
    x, y = ax.lines[0].get_data()
    s, bw = run.kinds["p2p"]
    np.testing.assert_array_equal(x, s)
    np.testing.assert_allclose(y, bw / 1e9, rtol=1e-12)
    assert ax.lines[-1].get_ydata()[0] == pytest.approx(450.0)
    fit_y = ax.lines[1].get_ydata()
    assert fit_y.max() < 450 and fit_y.max() == pytest.approx(bw.max() / 1e9, rel=0.05)
    assert ax.get_xscale() == "log"
    with pytest.raises(DirectionError):
        P.plot_copy_bandwidth(run, nominal=nominal.to_bidirectional())
    with pytest.raises(ValueError, match="kinds"):
        P.plot_copy_bandwidth(run, ("p2p_tridir",))


def test_link_vs_generations_bars():
    custom = Bandwidth(1e12, "bidirectional")
    ax = P.plot_link_vs_generations(custom, label="mine")
    heights = [p.get_height() for p in ax.patches]
    expected = [links.nvlink_gpu_bandwidth(g).gb_per_s for g in range(1, 6)] + [500.0]
    np.testing.assert_allclose(heights, expected, rtol=1e-12)
    assert ax.get_xticklabels()[-1].get_text() == "mine"
    with pytest.raises(ValueError, match="custom"):
        P.plot_link_vs_generations(1e12)


def test_nrz_pam4_levels():
    bits = (0, 0, 0, 1, 1, 1, 1, 0)
    ax = P.plot_nrz_pam4(bits)
    nrz, pam4 = ax.lines[:2]
    np.testing.assert_allclose(nrz.get_ydata(), [4, 4, 4, 6, 6, 6, 6, 4, 4])
    # Gray code 00 -> -3, 01 -> -1, 11 -> +1, 10 -> +3; drawn as level / 3 * 1.5
    np.testing.assert_allclose(pam4.get_ydata(), [-1.5, -0.5, 0.5, 1.5, 1.5])
    np.testing.assert_allclose(pam4.get_xdata(), [0, 2, 4, 6, 8])    # 2 bit periods
    for bad in [(1, 0, 1), (0, 2), ()]:
        with pytest.raises(ValueError, match="bits"):
            P.plot_nrz_pam4(bad)


def test_eye_levels():
    nrz = P.plot_eye("NRZ", n_symbols=50, noise=0.0)
    pam = P.plot_eye("PAM4", n_symbols=50, noise=0.0)
    # at the centre of a unit interval the noiseless band-limited signal sits on a level
    def levels(ax):
        mid = np.array([ln.get_ydata()[len(ln.get_ydata()) // 2] for ln in ax.lines])
        return np.unique(np.round(mid, 1))
    assert set(levels(nrz)) <= {-1.0, 1.0}
    assert len(levels(pam)) > 2
    with pytest.raises(ValueError, match="modulation"):
        P.plot_eye("PAM8")


# --- in-place updates (the widgets' fast path) ----------------------------------------
def test_dp_steps_update_in_place():
    fig, ax = plt.subplots()
    P.plot_dp_steps(_steps(), ax=ax)
    first = list(ax.patches)
    new = _steps(p=70e9, n=16)
    P.plot_dp_steps(new, ax=ax)
    assert len(ax.patches) == 8
    assert list(ax.patches) == first                    # the same artists, updated
    np.testing.assert_allclose([p.get_width() for p in ax.patches[:4]],
                               [s.compute_time * 1e3 for s in new], rtol=1e-12)
    np.testing.assert_allclose([p.get_width() for p in ax.patches[4:]],
                               [s.exposed_comm_time * 1e3 for s in new], rtol=1e-12)
    texts = [t.get_text() for t in ax.texts]
    assert all("of 16 GPUs" in t for t in texts)
    right = max((s.compute_time + s.exposed_comm_time) * 1e3 for s in new)
    assert ax.get_xlim()[1] == pytest.approx(right * 1.45)


def test_dp_steps_redraws_for_other_gpus():
    fig, ax = plt.subplots()
    P.plot_dp_steps(_steps(), ax=ax)
    two = [scaling.data_parallel_step(g) for g in ("H100", "H200")]
    P.plot_dp_steps(two, ax=ax)
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_yticklabels()] == ["H100", "H200"]


def test_link_vs_generations_update_in_place():
    fig, ax = plt.subplots()
    P.plot_link_vs_generations(Bandwidth(100e9, PD), label="a", ax=ax)
    first = list(ax.patches)
    P.plot_link_vs_generations(Bandwidth(700e9, PD), label="b", ax=ax)
    assert list(ax.patches) == first and len(first) == 6
    assert ax.patches[-1].get_height() == pytest.approx(700.0)
    assert ax.patches[3].get_height() == pytest.approx(450.0)
    assert ax.get_xticklabels()[-1].get_text() == "b"
    assert ax.get_ylim()[1] >= 900 * 1.18 - 1e-9
    assert "700" in [t.get_text() for t in ax.texts]


def test_redraw_after_clear():
    fig, ax = plt.subplots()
    P.plot_dp_steps(_steps(), ax=ax)
    ax.clear()
    P.plot_dp_steps(_steps(), ax=ax)
    assert len(ax.patches) == 8


# --- style ----------------------------------------------------------------------------
def test_use_book_style_changes_rcparams_only_when_called():
    with matplotlib.rc_context():
        matplotlib.rcParams["axes.spines.top"] = True
        matplotlib.rcParams["axes.grid"] = False
        P.plot_growth()                           # plotting does not apply the style
        assert matplotlib.rcParams["axes.spines.top"] is True
        P.use_book_style()
        for k, v in P.STYLE.items():
            assert matplotlib.rcParams[k] == (list(v) if isinstance(v, tuple) else v), k
        assert matplotlib.rcParams["axes.grid"] is True


def test_import_leaves_rcparams_untouched():
    code = textwrap.dedent("""
        import matplotlib as mpl
        before = {k: repr(v) for k, v in mpl.rcParams.items()}
        import gpulab, gpulab.plotting, gpulab.widgets
        gpulab.widgets.scaling_explorer()
        after = {k: repr(v) for k, v in mpl.rcParams.items()}
        changed = sorted(k for k in before if before[k] != after[k])
        assert not changed, changed
        gpulab.plotting.use_book_style()
        after = {k: repr(v) for k, v in mpl.rcParams.items()}
        assert after["axes.spines.top"] == "False", after["axes.spines.top"]
        print("ok")
    """)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_colors():
    assert set(P.COLORS) >= {"nvlink", "pcie", "compute", "comm"}
    assert all(c.startswith("#") and len(c) == 7 for c in P.COLORS.values())


def test_bytes_axis_uses_binary_labels():
    fig, ax = plt.subplots()
    ax.plot([2**10, 2**30], [1, 2])
    P.bytes_axis(ax.xaxis)
    assert ax.get_xscale() == "log"
    fmt = ax.xaxis.get_major_formatter()
    assert fmt(2**30, 0) == "1 GiB" and fmt(0, 0) == ""
    assert units.fmt_bytes(2**20) == fmt(2**20, 0)


def test_plot_run_floors_counts_every_run():
    from gpulab.plotting import plot_run_floors
    fast, slow = [13e-6] * 5, [20e-6] * 3
    ax = plot_run_floors({"a": fast, "b": slow}, model_s=16e-6)
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == pytest.approx(8)          # stacked bars: each run once
    assert ax.lines[0].get_xdata()[0] == pytest.approx(16)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "model"]


@pytest.mark.parametrize("kw, msg", [
    ({"floors": {}}, "floors"), ({"floors": [1e-5]}, "floors"),
    ({"floors": {"a": []}}, "floors"), ({"floors": {"a": [-1e-6]}}, "floors"),
    ({"floors": {"a": "13"}}, "floors"), ({"floors": {"a": [np.nan]}}, "floors"),
    ({"floors": {"a": [1e-5]}, "model_s": 0}, "model_s"),
    ({"floors": {"a": [1e-5]}, "model_s": True}, "model_s"),
    ({"floors": {"a": [1e-5]}, "bin_us": -1}, "bin_us"),
    ({"floors": {"a": [1e-5]}, "bin_us": "1"}, "bin_us")])
def test_plot_run_floors_bad_input(kw, msg):
    from gpulab.plotting import plot_run_floors
    with pytest.raises(ValueError, match=msg):
        plot_run_floors(**kw)


# --- network plots ---------------------------------------------------------------------
def test_plot_scale_out_draws_the_prediction_and_the_published_points():
    from gpulab.plotting import plot_scale_out
    kw = _scale_out_args()
    pred = kw["prediction"]
    ax = plot_scale_out(**kw)
    dots = {ln.get_label().split(" (")[0]: ln for ln in ax.lines}
    shown = sorted(set(map(str, pred.algorithm)))
    for a in shown:                                   # one colour per algorithm picked
        sel = pred.algorithm == a
        assert np.allclose(dots[a].get_xdata(), pred.message_bytes[sel])
        assert np.allclose(dots[a].get_ydata(), pred.busbw[sel] / 1e9)
    pub = dots["published"]
    assert list(pub.get_xdata()) == [2 ** 20, 2 ** 30]
    assert list(pub.get_ydata()) == pytest.approx([20.0, 300.0])
    assert "busbw" in ax.get_ylabel() and "per direction" in ax.get_ylabel()
    assert ax.get_xscale() == "log"
    # a second call on the same Axes updates in place
    lines = list(ax.lines)
    plot_scale_out(pred, message_bytes=2 ** 10, published=None,
                   line_rates=kw["line_rates"], ax=ax)
    assert list(ax.lines) == lines and not pub.get_visible()


@pytest.mark.parametrize("kw, msg", [
    ({"prediction": None}, "prediction"),
    ({"message_bytes": 3}, "message_bytes"),
    ({"published": ("p", [1, 2], [1])}, "published"),
    ({"published": [1, 2]}, "published"),
    ({"line_rates": [("x", Bandwidth(1e9, "bidirectional"), "ib")]}, "per direction")])
def test_plot_scale_out_bad_input(kw, msg):
    from gpulab.plotting import plot_scale_out
    with pytest.raises(ValueError, match=msg):
        plot_scale_out(**{**_scale_out_args(), **kw})


def test_plot_step_latency_values_and_bad_input():
    from gpulab.plotting import PROTOCOL_COLORS, plot_step_latency
    args = CALLS["plot_step_latency"]()
    ax = plot_step_latency(**args)
    ll = ax.lines[0]
    assert list(ll.get_xdata()) == [0, 14]
    assert list(ll.get_ydata()) == pytest.approx([5, 5 + 14 * 25])      # us
    marks = [(tuple(ln.get_xdata()), tuple(ln.get_ydata()), ln.get_marker(),
              ln.get_markerfacecolor()) for ln in ax.lines[2:6]]
    assert marks[0][:3] == ((1,), (pytest.approx(30),), "o")
    assert marks[2][3] == "white"                                  # held out: open
    assert marks[3][2] == "x"                                      # crowded: a cross
    assert ax.lines[1].get_color() == PROTOCOL_COLORS["Simple"]
    assert ax.get_ylabel() == "Time of one call [µs]"
    for kw, msg in [({"fits": {}}, "fits"), ({"fits": {"ll": (0.0, 1e-6)}}, "protocol"),
                    ({"fits": {"LL": (0.0, 0.0), "Simple": (0.0, 1e-6)}}, "fits"),
                    ({"points": []}, "points"), ({"points": "x"}, "points"),
                    ({"points": [{"protocol": "LL128", "steps": 1, "time_s": 1e-5,
                                  "fitted": True, "crowded": False}]}, "points"),
                    ({"points": [{"protocol": "LL", "steps": -1, "time_s": 1e-5,
                                  "fitted": True, "crowded": False}]}, "points"),
                    ({"points": [{"protocol": "LL", "steps": 1, "time_s": 0.0,
                                  "fitted": True, "crowded": False}]}, "points")]:
        with pytest.raises(ValueError, match=msg):
            plot_step_latency(**{**args, **kw})


def test_plot_mixed_ring_values_and_bad_input():
    from gpulab.plotting import PROTOCOL_COLORS, plot_mixed_ring
    args = CALLS["plot_mixed_ring"]()
    ax = plot_mixed_ring(**args)
    dash, dot = ax.lines[0], ax.lines[1]
    assert list(dash.get_ydata()) == pytest.approx([0.7, 0.7])     # the dataflow's share
    assert list(dot.get_ydata()) == pytest.approx([0.65]) and dot.get_marker() == "o"
    assert ax.lines[3].get_marker() == "x"                          # crowded: a cross
    assert ax.lines[3].get_color() == PROTOCOL_COLORS["Simple"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["AG 4", "AR 8"]
    assert any(list(ln.get_ydata()) == [1.0, 1.0] for ln in ax.lines)   # lockstep's 1
    assert ax.get_ylim()[1] > 1.2
    row = args["rows"][0]
    for kw, msg in [({"rows": []}, "rows"), ({"rows": "x"}, "rows"),
                    ({"rows": [{**row, "protocol": "ll"}]}, "protocol"),
                    ({"rows": [{**row, "collective": "alltoall"}]}, "collective"),
                    ({"rows": [{**row, "ratio": 0.0}]}, "ratio"),
                    ({"rows": [{**row, "dataflow_ratio": float("nan")}]}, "dataflow_ratio"),
                    ({"rows": [{k: v for k, v in row.items() if k != "crowded"}]}, "rows")]:
        with pytest.raises(ValueError, match=msg):
            plot_mixed_ring(**{**args, **kw})


def test_plot_busbw_vs_nodes_values_and_bad_input():
    from gpulab.plotting import plot_busbw_vs_nodes
    ax = plot_busbw_vs_nodes(**CALLS["plot_busbw_vs_nodes"]())
    assert list(ax.lines[1].get_ydata()) == pytest.approx([360, 360, 180, 180])
    assert ax.get_xscale() == "log"
    for kw, msg in [({"nodes": [4, 2]}, "nodes"), ({"curves": []}, "curves"),
                    ({"curves": [("a", [1, 2], "ib")]}, "curves"),
                    ({"curves": [("a", [1, 2, 3, 4], "no-colour")]}, "kind")]:
        with pytest.raises(ValueError, match=msg):
            plot_busbw_vs_nodes(**{**CALLS["plot_busbw_vs_nodes"](), **kw})
