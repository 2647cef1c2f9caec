"""Serving figures: data equal the models and the tables, axes carry units, bad
input is refused."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import inference, plotting, units  # noqa: E402
from gpulab.plotting import inference as P  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return P.decode_model_rows()


def test_decode_rows_are_our_runs(rows):
    assert len(rows) == 272
    assert {r["grid"] for r in rows} == {"fit", "holdout"}
    r = rows[0]
    assert r["model_s"] == inference.decode_layer_time(
        r["hidden"], r["heads"], r["kv_heads"], r["ffn_hidden"], r["tp"], r["batch"],
        r["context"], precision=r["precision"])


def test_held_out_errors_match_the_stored_checks(rows):
    held = [abs(r["error"]) for r in rows if r["grid"] == "holdout"]
    stored = inference.decode_checks()["compiled_held_out"]["all"]
    assert np.mean(held) == pytest.approx(stored["mean_abs"], abs=2e-3)


def test_plot_decode_layers_draws_every_selected_row(rows):
    ax = P.plot_decode_layers(rows)
    sel = [r for r in rows if r["shape"] in ("llama3-70b", "h5120-gqa8")
           and r["precision"] == "bf16"]
    n = sum(len(c.get_offsets()) for c in ax.collections)
    assert n == 2 * len(sel)                    # measured + model per row
    assert "µs" in ax.get_ylabel() and ax.get_xscale() == "log"
    assert ax.get_title() == ""
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="rows"):
        P.plot_decode_layers(rows, shapes=("nope",))


def test_plot_allreduce_sizes_spans_the_decode_sizes():
    ax = P.plot_allreduce_sizes("l40s-x8", 2, "l40s")
    lo, hi = ax.lines[0].get_xdata()[[0, -1]]
    assert lo == pytest.approx(8 * units.KiB) and hi == pytest.approx(8 * units.MiB)
    assert any("median |error|" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(ax.figure)


def test_plot_tpot_breakdown_stacks_compute_and_comm():
    groups = P.tpot_rows("llama3-70b", "hgx-h200", (2, 8), batch=32, context=8192)
    ax = plotting.plot_tpot_breakdown([(f"TP{t}", d) for t, d in groups])
    widths = [p.get_width() for p in ax.patches]
    want = [d.compute_time * 1e3 for _, d in groups] + [d.comm_time * 1e3
                                                        for _, d in groups]
    assert widths == pytest.approx(want)
    assert "[ms]" in ax.get_xlabel()
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="groups"):
        P.plot_tpot_breakdown([])
    with pytest.raises(ValueError, match="tps"):
        P.tpot_rows("llama3-70b", "hgx-h200", (3,), batch=1, context=1)
