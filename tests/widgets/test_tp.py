"""Chapter 8 (tensor parallelism in practice): the TP explorer, driven headless, and
the chapter's plot functions.

Every control must reach ``gpulab.parallelism.step_time`` in SI units / plain
values, change the image, and invalid combinations must show a message instead of
a traceback. The initial state must equal the chapter's static figure.
"""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import parallelism, plotting, systems, widgets  # noqa: E402
from tests.recorder import Recorder, check_explorer_factory, patch_everywhere  # noqa: E402,E501


@pytest.fixture
def step(monkeypatch):
    return Recorder(monkeypatch, parallelism, "step_time", direct=False)


def _png(w):
    return bytes(w.view.image.value)


def _widths(ax):
    return [p.get_width() for p in ax.patches]


# --- factory ------------------------------------------------------------------------
def test_tp_explorer_is_a_registered_factory():
    w = check_explorer_factory("tp")
    assert "per layer" in w.summary.value
    assert list(w.controls["model"].options) == parallelism.model_names()
    assert list(w.controls["system"].options) == systems.names()


@pytest.mark.parametrize("kwargs, param", [
    ({"model": "7b"}, "model"), ({"system": "nope"}, "system"),
    ({"tp": 3}, "tp"), ({"tp": True}, "tp"), ({"seq_len": 3000}, "seq_len"),
    ({"micro_batch": 0}, "micro_batch"), ({"micro_batch": 2.0}, "micro_batch"),
    ({"sequence_parallel": 1}, "sequence_parallel"),
    ({"tp_overlap": 1.5}, "tp_overlap"), ({"tp_overlap": "x"}, "tp_overlap"),
    ({"precision": "fp16"}, "precision"), ({"precision": "FP8"}, "precision"),
    ({"precision": None}, "precision"), ({"precision": ["fp8"]}, "precision"),
])
def test_factory_refuses_bad_arguments(kwargs, param):
    with pytest.raises(ValueError, match=param):
        widgets.tp_explorer(**kwargs)


# --- initial state == the chapter's static figure ---------------------------------
def test_default_state_is_the_static_figure():
    w = widgets.tp_explorer()
    c = w.controls
    assert (c["model"].value, c["system"].value, c["tp"].value, c["seq_len"].value,
            c["micro_batch"].value, c["sequence_parallel"].value,
            c["tp_overlap"].value, c["precision"].value) == \
        ("13b", "hgx-h200", 4, 4096, 1, False, 0.0, "bf16")
    rows, steps, _ = parallelism.tp_degree_rows("13b", "hgx-h200", seq_len=4096)
    # built as book/tensor_parallel.md builds it
    spec = parallelism.model("13b")
    for (label, comp, comm, expo, note), t in zip(rows, steps):
        st = parallelism.step_time(spec, "hgx-h200", (t, 1, 8 // t),
                                   global_batch=8 // t, seq_len=4096, zero=1)
        assert label == f"TP{t} × DP{8 // t}"
        assert comp == st.compute / spec.layers and comm == st.comm.tp / spec.layers
        assert expo == comm and note == ("" if st.fits else "does not fit")
    assert w.rows == rows and list(steps) == [1, 2, 4, 8]
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ref = plotting.plot_tp_degree(rows, highlight=2, ax=ax)
    np.testing.assert_allclose(_widths(w.view.ax), _widths(ref), rtol=1e-12)
    assert w.highlighted == 2
    assert "fits." in w.summary.value and "Fastest layout that fits: TP4" in \
        w.summary.value


# --- every control reaches the model ------------------------------------------------
CASES = [
    ("model", "70b", "spec", parallelism.model("70b")),
    ("system", "h100-pcie", "system", None),
    ("tp", 8, "layout", None),
    ("seq_len", 2048, "seq_len", 2048),
    ("micro_batch", 2, "micro_batch", 2),
    ("sequence_parallel", True, "sequence_parallel", True),
    ("precision", "fp8", "precision", "fp8"),
]


@pytest.mark.parametrize("control, value, param, expected", CASES,
                         ids=[c for c, *_ in CASES])
def test_control_reaches_model(step, control, value, param, expected):
    w = widgets.tp_explorer()
    png, n = _png(w), w.n_updates
    step.calls.clear()
    w.controls[control].value = value
    assert w.n_updates == n + 1 and w.message.value == ""
    assert step.calls, "the model was not called"
    if control == "system":
        assert {call["system"].name for call in step.calls} == {"h100-pcie"}
    elif control == "tp":
        assert w.highlighted == [call["layout"][0] for call in step.calls].index(8)
        assert "TP8 × DP1" in w.summary.value
    else:
        for call in step.calls:
            assert call[param] == expected
            assert type(call[param]) is type(expected)
    for call in step.calls:
        assert call["zero"] == 1 and type(call["micro_batch"]) is int
        t, pp, dp = call["layout"]
        assert pp == 1 and call["global_batch"] == dp * call["micro_batch"]
    if control != "tp":
        assert _png(w) != png


def test_overlap_needs_sequence_parallelism(step):
    w = widgets.tp_explorer()
    png, n = _png(w), w.n_updates
    step.calls.clear()
    w.controls["tp_overlap"].value = 0.5
    assert "--sequence-parallel" in w.message.value and not step.calls
    assert _png(w) == png and w.n_updates == n
    w.controls["sequence_parallel"].value = True
    assert w.message.value == ""
    assert {call["tp_overlap"] for call in step.calls} == {0.5}
    assert all(call["sequence_parallel"] is True for call in step.calls)


def test_every_control_is_tested():
    assert set(widgets.tp_explorer().controls) == \
        {c for c, *_ in CASES} | {"tp_overlap"}


def test_invalid_tp_shows_message():
    w = widgets.tp_explorer()
    png = _png(w)
    w.controls["tp"].value = 16                    # 8 GPUs on hgx-h200
    assert "hgx-h200 has 8 GPUs" in w.message.value and _png(w) == png
    # the unchanged figure says which setting it shows
    assert w.summary.value == ("The figure still shows the last setting that ran: "
                               "13b on hgx-h200 in BF16, TP4, sequence length 4096, "
                               "micro-batch 1.")
    w.controls["system"].value = "gb200-nvl72"
    assert "40 attention heads" in w.message.value     # 13b: 40 heads
    w.controls["model"].value = "70b"
    assert w.message.value == "" and "TP16 × DP4" in w.summary.value
    w.controls["system"].value = "hgx-h200-2node"
    assert w.message.value == "" and "TP spans NVLink domains" in w.summary.value


# --- precision ----------------------------------------------------------------------
@pytest.mark.parametrize("system", ["hgx-h200", "dgx-h100"])
def test_fp8_lowers_the_compute_of_70b_at_tp1(system):
    """FP8 (torchao float8 under torch.compile) shortens the 70b layer's compute at
    TP1 and sequence 4096 on H200/H100; the bars follow the model."""
    w = widgets.tp_explorer("70b", system, 1)
    bf16 = list(w.rows)
    png = _png(w)
    w.controls["precision"].value = "fp8"
    assert w.message.value == "" and _png(w) != png
    fp8 = list(w.rows)
    assert [r[0] for r in fp8] == [r[0] for r in bf16]
    assert fp8[0][1] < bf16[0][1]                          # compute per layer, TP1
    assert [r[2] for r in fp8] == pytest.approx([r[2] for r in bf16])  # same TP bytes
    want, _, _ = parallelism.tp_degree_rows("70b", system, seq_len=4096,
                                            precision="fp8")
    assert fp8 == want
    np.testing.assert_allclose(_widths(w.view.ax)[:len(fp8)],
                               [r[1] * 1e3 for r in fp8], rtol=1e-12)
    assert "in <b>FP8</b>" in w.summary.value and "torchao" in w.summary.value


def test_fp8_on_a_gpu_without_fp8_is_a_message():
    w = widgets.tp_explorer("70b", "dgx-a100", 1)
    png, n = _png(w), w.n_updates
    w.controls["precision"].value = "fp8"                   # A100: no FP8 Tensor Cores
    msg = w.message.value
    assert "precision" in msg and "A100" in msg and "FP8" in msg
    assert "Traceback" not in msg and "Error" not in msg and "<br>" not in msg
    assert _png(w) == png and w.n_updates == n            # figure kept, and said so
    assert "still shows the last setting that ran: 70b on dgx-a100 in BF16" in \
        w.summary.value
    w.controls["system"].value = "hgx-h200"                 # an FP8 GPU: it runs
    assert w.message.value == "" and "in <b>FP8</b>" in w.summary.value
    assert _png(w) != png
    w.controls["system"].value = "dgx-1-v100"
    assert "V100" in w.message.value and "precision" in w.message.value
    w.controls["precision"].value = "bf16"
    assert w.message.value == "" and "in <b>BF16</b>" in w.summary.value


def test_fp8_on_a_gpu_without_fp8_from_the_factory():
    """Built straight into a refused state: a message, nothing stale drawn."""
    w = widgets.tp_explorer(system="dgx-a100", precision="fp8")
    assert "precision" in w.message.value and "A100" in w.message.value
    assert w.summary.value == "" and _png(w) == b""
    w.controls["precision"].value = "bf16"
    assert w.message.value == "" and _png(w).startswith(b"\x89PNG")


def test_model_error_becomes_message(monkeypatch):
    w = widgets.tp_explorer()

    def bad(*a, **k):
        raise RuntimeError("kaput")

    patch_everywhere(monkeypatch, parallelism, "step_time", bad)
    w.controls["seq_len"].value = 2048
    assert "RuntimeError" in w.message.value and "kaput" in w.message.value




# === plot functions of the chapter ==================================================
def test_plot_megatron_layer_operators():
    ax = plotting.plot_megatron_layer()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("f") == 2 and texts.count("g") == 2
    assert sum("AllReduce" in t for t in texts) == parallelism.tp_allreduce_count()
    assert texts.count("fwd: AllReduce") == 2 and texts.count("bwd: AllReduce") == 2
    ax = plotting.plot_megatron_layer(sequence_parallel=True)
    texts = [t.get_text() for t in ax.texts]
    assert sum("reduce-scatter" in t for t in texts) == 4
    assert sum("all-gather" in t for t in texts) == 4
    assert not any("AllReduce" in t for t in texts)
    with pytest.raises(ValueError, match="sequence_parallel"):
        plotting.plot_megatron_layer(sequence_parallel="yes")


def test_plot_tp_degree_bars_in_place_and_checks():
    rows = [("TP1", 4e-3, 0.0, 0.0, "does not fit"), ("TP2", 2e-3, 1e-3, 5e-4, "")]
    fig, ax = plt.subplots()
    plotting.plot_tp_degree(rows, highlight=1, ax=ax)
    first = list(ax.patches)
    w = _widths(ax)
    assert w[:2] == pytest.approx([4.0, 2.0]) and w[2:4] == pytest.approx([0, 0.5])
    assert w[4:6] == pytest.approx([0, 0.5])            # hidden part
    assert ax.patches[6].get_width() == pytest.approx(2.5)  # highlight frame
    assert ax.texts[0].get_text() == "no TP communication; does not fit"
    assert ax.texts[1].get_text() == "20% exposed"
    plotting.plot_tp_degree([(r[0], r[1] * 2, r[2], r[3], "") for r in rows],
                            highlight=0, ax=ax)
    assert list(ax.patches) == first
    assert _widths(ax)[:2] == pytest.approx([8.0, 4.0])
    plotting.plot_tp_degree(rows[:1], ax=ax)
    assert len(ax.patches) == 4 and not ax.patches[3].get_visible()
    for bad in ([], [("a", 0.0, 0.0, 0.0, "")], [("a", 1.0, 1.0, 2.0, "")],
                [("a", 1.0, 1.0)]):
        with pytest.raises(ValueError, match="rows"):
            plotting.plot_tp_degree(bad)
    with pytest.raises(ValueError, match="highlight"):
        plotting.plot_tp_degree(rows, highlight=2)


def test_plot_tp_measured_bars_and_checks():
    ax = plotting.plot_tp_measured([("a", 4e-3, 1e-3, 5e-3, 1e-3)])
    assert _widths(ax) == pytest.approx([4.0, 1.0, 5.0, 1.0])
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["comm 25% of compute", "model +20%"]
    for bad in ([], [("a", 0.0, 1.0, 1.0, 1.0)], [("a", 1.0, -1.0, 1.0, 1.0)],
                [("a", 1.0, 1.0)]):
        with pytest.raises(ValueError, match="rows"):
            plotting.plot_tp_measured(bad)
