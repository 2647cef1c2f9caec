"""No text of a figure collides with other text or hides under a legend.

Every public ``plot_*`` of :mod:`gpulab.plotting` is drawn twice over: with the
arguments of ``CALLS`` in ``tests/plotting/test_figures.py`` and, above all, as the book
draws it. ``BOOK`` rebuilds every figure of the chapters that calls a plot function
(``book/*.md``) with the same public gpulab calls, figure size and extra artists as
the chapter's cell; ``test_book_table_covers_every_chapter_figure`` keeps the table
in step with the chapters.

A figure is drawn (Agg, book style) and every text that matplotlib really draws is
collected: axis labels, tick labels, offset texts, ``ax.texts``, annotations, legend
entries and titles. Two of them must not overlap, and no text may reach into a legend
that is not its own (the legend's whole box, frame or not). Boxes are the texts'
window extents in pixels; overlaps of 1 px or less are tolerated.

Reference lines (``axhline``/``axvline``, any straight line across the Axes) count
too: none may cross a text (legend titles included) or a legend's box, and the label
beside a reference line may not be crossed by a curve or covered by a marker.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import re
from functools import cache
from pathlib import Path
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

import gpulab as gl  # noqa: E402
from gpulab import (collectives, links, measurements, nccltests, pcie,  # noqa: E402
                    scaling, specs, systems, topology, units)
from gpulab import parallelism as par  # noqa: E402
from gpulab import plotting as P  # noqa: E402
from tests.plotting.test_figures import CALLS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE_PX = 1.0


# === the checker ====================================================================
def drawn_texts(fig):
    """Draw ``fig``; return the texts matplotlib drew, each with its box [px].

    A text counts when its ``draw`` ran while the figure was drawn (so tick labels
    outside the view limits and texts of invisible artists do not), it is visible
    and not blank. A clipped text counts with the part of its box inside its clip
    box, and not at all when nothing is left.

    ``draw_without_rendering`` runs the whole draw (layout, tick placement, legend
    placement, every ``Text.draw``) but skips rasterising, which takes half the time;
    the boxes are those of ``fig.canvas.draw()`` to the pixel.
    """
    drawn = []
    text_draw = Text.draw

    def draw(self, renderer):
        text_draw(self, renderer)
        if self.get_visible() and self.get_text().strip() and self.get_alpha() != 0:
            drawn.append(self)

    with mock.patch.object(Text, "draw", draw):
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    out = []
    for t in dict.fromkeys(drawn):
        box = t.get_window_extent(renderer)
        if not np.all(np.isfinite(box.get_points())):
            continue
        if t.get_clip_on() and t.get_clip_box() is not None:
            box = Bbox.intersection(box, t.get_clip_box())
            if box is None:
                continue
        out.append((t, box))
    return out


def _overlap(a, b):
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return (w, h) if w > TOLERANCE_PX and h > TOLERANCE_PX else None


def _legends(fig):
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    return [leg for leg in legends if leg is not None and leg.get_visible()]


def text_collisions(fig):
    """Every pair of overlapping texts and every text inside a foreign legend."""
    texts = drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    found = []
    for (t1, b1), (t2, b2) in itertools.combinations(texts, 2):
        hit = _overlap(b1, b2)
        if hit:
            found.append(f"{t1.get_text()!r} overlaps {t2.get_text()!r} "
                         f"({hit[0]:.0f} x {hit[1]:.0f} px)")
    for leg in _legends(fig):
        own = {id(t) for t in leg.get_texts()} | {id(leg.get_title())}
        box = leg.get_window_extent(renderer)
        entries = ", ".join(repr(t.get_text()) for t in leg.get_texts())
        for t, b in texts:
            hit = id(t) not in own and _overlap(b, box)
            if hit:
                found.append(f"{t.get_text()!r} is under the legend [{entries}] "
                             f"({hit[0]:.0f} x {hit[1]:.0f} px)")
    return found


def reference_lines(fig):
    """The reference lines of ``fig``: (line, axes, display path clipped to the axes).

    A reference line is a straight horizontal or vertical ``Line2D`` drawn with a
    line style that spans at least 90 % of its Axes (``axhline``, ``axvline``, a
    dashed line across the plot), visible and drawn.
    """
    out = []
    for ax in fig.axes:
        box = ax.bbox
        for line in ax.lines:
            if not line.get_visible() or line.get_linestyle() in ("None", "none", " ",
                                                                 ""):
                continue
            pts = line.get_transform().transform(np.column_stack(
                [np.asarray(line.get_xdata(), dtype=float),
                 np.asarray(line.get_ydata(), dtype=float)]))
            pts = pts[np.all(np.isfinite(pts), axis=1)]
            if len(pts) < 2:
                continue
            (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
            flat = y1 - y0 <= 1.0 and x1 - x0 >= 0.9 * box.width
            upright = x1 - x0 <= 1.0 and y1 - y0 >= 0.9 * box.height
            inside = box.y0 - 1 <= y0 <= box.y1 + 1 and box.x0 - 1 <= x0 <= box.x1 + 1
            if (flat or upright) and inside:
                seg = Bbox([[max(x0, box.x0), max(y0, box.y0)],
                            [min(x1, box.x1), min(y1, box.y1)]])
                out.append((line, ax, seg))
    return out


def _crosses(seg, box):
    """Whether the straight segment ``seg`` (a degenerate Bbox) passes through
    ``box`` more than the tolerance deep."""
    if seg.height <= 1.0:                       # horizontal
        y = seg.y0
        return (box.y0 + TOLERANCE_PX < y < box.y1 - TOLERANCE_PX
                and min(seg.x1, box.x1) - max(seg.x0, box.x0) > TOLERANCE_PX)
    x = seg.x0
    return (box.x0 + TOLERANCE_PX < x < box.x1 - TOLERANCE_PX
            and min(seg.y1, box.y1) - max(seg.y0, box.y0) > TOLERANCE_PX)


def _curves(ax):
    """The data lines of ``ax`` drawn with a line style (not reference lines)."""
    return [line for line in ax.lines if line.get_visible()
            and line.get_linestyle() not in ("None", "none", " ", "")]


def _marked(ax):
    """The visible lines of ``ax`` drawn with markers."""
    return [line for line in ax.lines if line.get_visible()
            and line.get_marker() not in (None, "None", "none", " ", "")]


def _marker_hits(line, box):
    """Whether a marker of ``line`` (its square, ``markersize`` points wide)
    reaches into ``box``."""
    with np.errstate(all="ignore"):
        pts = line.get_transform().transform(np.column_stack(
            [np.asarray(line.get_xdata(), dtype=float),
             np.asarray(line.get_ydata(), dtype=float)]))
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    r = line.get_markersize() * line.figure.dpi / 72.0 / 2.0
    return bool(np.any((pts[:, 0] + r > box.x0) & (pts[:, 0] - r < box.x1)
                       & (pts[:, 1] + r > box.y0) & (pts[:, 1] - r < box.y1)))


def line_collisions(fig):
    """Reference lines through texts or legends; curves through a reference line's
    label.

    Every drawn text (legend entries and titles included) must not be crossed by a
    reference line of its figure, and no reference line may cross a legend box
    (its whole box, title included, frame or not). A text in an Axes that lies
    beside a reference line (within one text height of it) is that line's label:
    no other line of the Axes may pass through it, no marker may cover it.
    """
    texts = drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    refs = reference_lines(fig)
    found = []
    for line, _ax, seg in refs:
        name = line.get_label()
        what = "reference line" + ("" if name.startswith("_") else f" {name!r}")
        where = (f"at y={seg.y0:.0f} px" if seg.height <= 1.0
                 else f"at x={seg.x0:.0f} px")
        for t, b in texts:
            if _crosses(seg, b):
                found.append(f"{what} ({where}) crosses {t.get_text()!r}")
        for leg in _legends(fig):
            if _crosses(seg, leg.get_window_extent(renderer)):
                entries = ", ".join(repr(t.get_text()) for t in leg.get_texts())
                found.append(f"{what} ({where}) crosses the legend [{entries}]")
    for t, b in texts:
        ax = t.axes
        if ax is None or t not in ax.texts:
            continue
        near = [ln for ln, a, seg in refs if a is ax and (
            (seg.height <= 1.0 and b.y0 - b.height <= seg.y0 <= b.y1 + b.height)
            or (seg.height > 1.0 and b.x0 - b.height <= seg.x0 <= b.x1 + b.height))]
        if not near:
            continue
        inner = Bbox([[b.x0 + TOLERANCE_PX, b.y0 + TOLERANCE_PX],
                      [b.x1 - TOLERANCE_PX, b.y1 - TOLERANCE_PX]])
        for line in _curves(ax):
            if any(line is ln for ln in near) or any(line is ln for ln, _a, _s in refs):
                continue
            path = line.get_transform().transform_path(line.get_path())
            if path.intersects_bbox(inner, filled=False):
                found.append(f"the line {line.get_label()!r} crosses the reference "
                             f"line's label {t.get_text()!r}")
        for line in _marked(ax):
            if _marker_hits(line, inner):
                found.append(f"a marker of {line.get_label()!r} covers the reference "
                             f"line's label {t.get_text()!r}")
    return found


def check(fig, name):
    found = text_collisions(fig) + line_collisions(fig)
    assert not found, f"{name}: texts collide:\n  " + "\n  ".join(found)


@pytest.fixture(autouse=True)
def book_style():
    """Draw as the book does: its rcParams (restored afterwards) and Agg."""
    with matplotlib.rc_context():
        P.use_book_style(svg=False)
        yield


# === the checker catches collisions ===================================================
def test_checker_finds_two_texts_at_one_spot():
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.5, 0.5, "second label")
    found = text_collisions(fig)
    assert len(found) == 1
    assert "'first label' overlaps 'second label'" in found[0]


def test_checker_finds_a_text_under_a_legend():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a curve with a long label")
    ax.text(0.02, 0.97, "53.8 s", transform=ax.transAxes, va="top")
    ax.legend(loc="upper left")
    found = text_collisions(fig)
    assert any("'53.8 s' is under the legend ['a curve with a long label']" in f
               for f in found), found
    assert not any("'a curve with a long label' is under" in f for f in found)


def test_checker_finds_crowded_tick_labels():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xticks(range(8), [f"label {i}" for i in range(8)])
    assert any("'label 0' overlaps 'label 1'" in f for f in text_collisions(fig))


def test_checker_passes_texts_that_are_apart_hidden_or_clipped():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="curve")
    ax.legend(loc="upper left")
    ax.text(0.9, 0.1, "apart", transform=ax.transAxes)
    ax.text(0.9, 0.1, "hidden", transform=ax.transAxes, visible=False)
    ax.text(0.9, 0.1, "   ", transform=ax.transAxes)
    ax.text(5.0, 0.1, "clipped away", clip_on=True)      # right of the x limits
    ax.text(5.0, 0.1, "clipped away too", clip_on=True)
    ax.set_xlim(0, 1)
    assert text_collisions(fig) == []


def test_checker_finds_a_reference_line_through_a_legend_title():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="curve")
    ax.set_ylim(0, 1)
    leg = ax.legend(loc="upper left", title="points: measured; lines: model")
    fig.draw_without_rendering()
    title = leg.get_title().get_window_extent(fig.canvas.get_renderer())
    y = ax.transData.inverted().transform(((title.x0 + title.x1) / 2,
                                           (title.y0 + title.y1) / 2))[1]
    ax.axhline(y, ls="--")
    found = line_collisions(fig)
    assert any("crosses 'points: measured; lines: model'" in f for f in found), found
    assert any("crosses the legend ['curve']" in f for f in found), found


def test_checker_finds_a_reference_line_through_a_text():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 100)
    ax.barh([0], [70])
    ax.annotate("65.4 GB", (70, 0), xytext=(4, 0), textcoords="offset points",
                va="center")
    ax.axvline(80, ls="--")
    assert any("crosses '65.4 GB'" in f for f in line_collisions(fig))


def test_checker_finds_a_curve_or_marker_on_a_reference_lines_label():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axhline(0.5, ls="--")
    ax.annotate("line rate 450", (1.0, 0.5), xycoords=("axes fraction", "data"),
                xytext=(-3, -4), textcoords="offset points", ha="right", va="top")
    ax.plot([0.8, 1.0], [0.0, 1.0], label="NVLS")
    ax.plot([0.95], [0.47], "X", ms=8, label="claimed")
    found = line_collisions(fig)
    assert any("the line 'NVLS' crosses the reference line's label 'line rate 450'"
               in f for f in found), found
    assert any("a marker of 'claimed' covers" in f for f in found), found


def test_checker_passes_a_label_beside_its_line_and_a_legend_off_it():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.plot([0, 1], [0, 0.3], label="curve")
    ax.axhline(0.8, ls="--")
    ax.annotate("line rate", (0.0, 0.8), xycoords=("axes fraction", "data"),
                xytext=(4, 3), textcoords="offset points", va="bottom")
    ax.legend(loc="lower right")
    assert line_collisions(fig) == []


# === the plot functions with the arguments of tests/plotting/test_figures.py================
def test_every_plot_function_is_drawn():
    public = {n for n in P.__all__ if n.startswith("plot_")}
    assert public == set(CALLS)
    in_book = {name for calls in BOOK_CALLS.values() for name in calls}
    assert public - in_book == NOT_IN_BOOK


#: CALLS entries that are a book figure exactly (same arguments, default figure
#: size): drawn once, under the book's name. name -> (book figure, CALLS arguments).
SAME_AS_BOOK = {
    "plot_growth": ("why_interconnect:fig-why-growth", {}),
    "plot_scaling_efficiency": ("why_interconnect:fig-why-efficiency", {}),
    "plot_nrz_pam4": ("nvlink:fig-nvlink-nrz-pam4", {}),
    "plot_nvlink_generations": ("nvlink:fig-nvlink-generations", {}),
    "plot_collective_steps": ("in_network_reduction:fig-in-ring",
                              {"algorithm": "ring", "n_ranks": 4}),
    "plot_megatron_layer": ("tensor_parallel:fig-tp-megatron", {}),
    "plot_speedup_slowdown": ("nvlink_roi:fig-roi-speedup",
                              {"points": [("article", 1 / 3.2, 1 / 2.1)]}),
}


def test_calls_drawn_as_book_figures_are_unchanged():
    for name, (key, kwargs) in SAME_AS_BOOK.items():
        assert key in BOOK and BOOK_CALLS[key] == (name,), key
        assert CALLS[name]() == kwargs, f"{name}: CALLS changed, draw it here again"


@pytest.mark.parametrize("name", sorted(set(CALLS) - set(SAME_AS_BOOK)))
def test_calls_figure_text_does_not_collide(name):
    ax = getattr(P, name)(**CALLS[name]())
    check(ax.figure, name)


# === the book's figures ===============================================================
#: Plot functions no chapter figure calls (their text is checked with the arguments of
#: test_figures.CALLS): the EP explorer draws plot_ep_times.
NOT_IN_BOOK: set = {"plot_ep_times"}
#: "chapter:figure name" -> a function that draws the figure as the chapter does.
BOOK = {}
#: "chapter:figure name" -> the plot functions its chapter cell calls.
BOOK_CALLS = {}


def book(key, *calls):
    def register(build):
        BOOK[key] = build
        BOOK_CALLS[key] = calls
        return build
    return register


_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)\n```", re.S)
_FIG_NAME = re.compile(r"^\s*name:\s*(\S+)", re.M)
_PLOT_CALL = re.compile(r"\b(plot_[a-z0-9_]+)\(")


def chapter_figures():
    """{"chapter:figure name": sorted plot_* calls} of the book's code cells."""
    out = {}
    for md in sorted((ROOT / "book").glob("*.md")):
        for i, cell in enumerate(_CELL.findall(md.read_text(encoding="utf-8"))):
            calls = sorted(set(_PLOT_CALL.findall(cell)))
            if not calls:
                continue
            name = _FIG_NAME.search(cell)
            key = f"{md.stem}:{name.group(1) if name else f'(code cell {i}, no name)'}"
            out[key] = calls
    return out


def test_book_table_covers_every_chapter_figure():
    want = chapter_figures()
    assert want, "no figure cells found in book/*.md"
    have = {k: sorted(set(v)) for k, v in BOOK_CALLS.items()}
    assert have == want, (
        "BOOK must rebuild every figure cell of the chapters that calls plot_*; "
        f"missing: {sorted(set(want) - set(have))}, stale: "
        f"{sorted(set(have) - set(want))}, other calls: "
        f"{sorted(k for k in set(want) & set(have) if want[k] != have[k])}")


# --- why_interconnect -----------------------------------------------------------------
@book("why_interconnect:fig-why-growth", "plot_growth")
def _why_growth():
    return P.plot_growth(baseline="V100").figure


@book("why_interconnect:fig-why-efficiency", "plot_scaling_efficiency")
def _why_efficiency():
    return P.plot_scaling_efficiency(n_gpus=8, overlaps=(0.0, 0.5, 0.9)).figure


@book("why_interconnect:fig-why-dp-steps", "plot_dp_steps")
def _why_dp_steps():
    steps = [scaling.data_parallel_step(g, 8, 7e9, 4096)
             for g in ("V100", "A100", "H100", "B200")]
    return P.plot_dp_steps(steps).figure


# --- nvlink -----------------------------------------------------------------------------
NVLINK_RUN = "h200-x2-2026-11-30"


@book("nvlink:fig-nvlink-nrz-pam4", "plot_nrz_pam4")
def _nvlink_nrz_pam4():
    return P.plot_nrz_pam4().figure


@book("nvlink:fig-nvlink-eye", "plot_eye")
def _nvlink_eye():
    fig, axs = plt.subplots(1, 2, figsize=(8, 3))
    P.plot_eye("NRZ", ax=axs[0])
    P.plot_eye("PAM4", ax=axs[1])
    axs[1].set_ylabel("")
    return fig


@book("nvlink:fig-nvlink-generations", "plot_nvlink_generations")
def _nvlink_generations():
    return P.plot_nvlink_generations().figure


@book("nvlink:fig-nvlink-budget", "plot_link_budget")
def _nvlink_budget():
    status = measurements.parse_nvlink_status(
        measurements.raw_capture(NVLINK_RUN, "nvlink-status.txt"))
    n_links = len(status[0])
    raw_link = links.nvlink_link_bandwidth(4, raw=True)
    data_link = links.nvlink_link_bandwidth(4)
    raw_gpu = links.nvlink_gpu_bandwidth(4, n_links, raw=True)
    spec_gpu = links.nvlink_gpu_bandwidth(4, n_links)
    run = measurements.copy_bandwidth()
    ring_busbw = spec_gpu * scaling.assumption("nvlink_allreduce_efficiency")
    budget = [
        (f"raw signalling rate\n({n_links} × {raw_link.gb_per_s:.4f} GB/s)",
         raw_gpu, "compute"),
        (f"spec\n({n_links} × {data_link.gb_per_s:.4g} GB/s)", spec_gpu,
         "nvlink"),
        ("measured copy\nGPU0→GPU1 (2× H200)", run.peak("p2p"), "accent"),
        ("public ring AllReduce\nbusbw (8× H100)", ring_busbw, "model"),
    ]
    return P.plot_link_budget(budget).figure


@book("nvlink:fig-nvlink-copy", "plot_copy_bandwidth")
def _nvlink_copy():
    return P.plot_copy_bandwidth(kinds=("p2p",),
                                 nominal=links.nvlink_gpu_bandwidth(4)).figure


@book("nvlink:fig-nvlink-calculator", "plot_link_vs_generations")
def _nvlink_calculator():
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    P.plot_link_vs_generations(links.nvlink_gpu_bandwidth(4), label="preset", ax=ax)
    return fig


# --- pcie -------------------------------------------------------------------------------
PCIE_ARTICLE_OVERHEAD_PCT = (15, 20)


@book("pcie:fig-pcie-tlp", "plot_tlp_efficiency")
def _pcie_tlp():
    run = measurements.copy_bandwidth()
    gen5 = pcie.encoded_bandwidth(5, 16)
    g5 = specs.pcie(5)
    h2d_pct = run.peak("h2d_pinned") / gen5
    art_eff = [(1 - p / 100) / g5.encoding_efficiency
               for p in PCIE_ARTICLE_OVERHEAD_PCT]
    ax = P.plot_tlp_efficiency()
    lo, hi = PCIE_ARTICLE_OVERHEAD_PCT
    ax.axhspan(100 * art_eff[1], 100 * art_eff[0], color="#c0392b", alpha=0.12,
               label=f"article: {lo}–{hi}% overhead")
    ax.plot([256], [100 * h2d_pct], "*", ms=12, color="#e0a100",
            label="measured pinned H2D, 2× H200")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    return ax.figure


@book("pcie:fig-pcie-budget", "plot_pcie_budget")
def _pcie_budget():
    run = measurements.copy_bandwidth()
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    P.plot_pcie_budget(5, 16, 256, measured=run.peak("h2d_pinned"),
                       measured_label="measured pinned H2D, 2× H200", ax=ax)
    return fig


@book("pcie:fig-pcie-copies", "plot_host_copies")
def _pcie_copies():
    run = measurements.copy_bandwidth()
    return P.plot_host_copies(run, system="h200-x2-measured").figure


@book("pcie:fig-pcie-staging", "plot_link_budget")
def _pcie_staging():
    run = measurements.copy_bandwidth()
    staging = [("NVLink copy GPU0→GPU1", run.peak("p2p"), "nvlink"),
               ("pinned H2D copy", run.peak("h2d_pinned"), "pcie"),
               ("GPU0→host→GPU1 (no P2P)", run.peak("p2p_via_host"), "compute"),
               ("pageable H2D copy", run.peak("h2d_pageable"), "ib")]
    return P.plot_link_budget(staging).figure


@book("pcie:fig-pcie-layout-a", "plot_topology")
def _pcie_layout_a():
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    P.plot_topology(topology.layout_a(), highlight=("gpu0", "gpu4"), ax=ax)
    return fig


@book("pcie:fig-pcie-layout-b", "plot_topology")
def _pcie_layout_b():
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    P.plot_topology(topology.layout_b(), highlight=("gpu0", "gpu6"), ax=ax)
    return fig


@book("pcie:fig-pcie-pipeline", "plot_stage_transfers")
def _pcie_pipeline():
    run = measurements.copy_bandwidth()
    gen5 = pcie.encoded_bandwidth(5, 16)
    hidden, seq, mb, dtype_bytes = 4096, 4096, 1, 2
    act = mb * seq * hidden * dtype_bytes
    t_stage = par.stage_compute_time(hidden, 8, seq, mb, gpu="H100")
    eta = {"P2P/NVLink": pcie.copy_bandwidth("p2p", system="hgx-h200")
           / links.nvlink_gpu_bandwidth(4),
           "P2P/PCIe": pcie.copy_bandwidth("p2p", system="h100-pcie") / gen5,
           "SHM": run.peak("p2p_via_host") / gen5}
    layouts = {"A": topology.layout_a(), "B": topology.layout_b(),
               "nvswitch": topology.nvswitch_node("H200")}
    short = {"A": "A", "B": "B", "nvswitch": "HGX"}
    via = {"P2P/NVLink": "P2P", "P2P/PCIe": "P2P", "SHM": "via host"}
    kind = {"P2P/NVLink": "nvlink", "P2P/PCIe": "pcie", "SHM": "compute"}
    rows = []
    for label, lay, (a, b) in gl.widgets.PIPELINE_REFERENCES:
        t = layouts[lay]
        cls = topology.path_class(t, a, b)
        tr = topology.nccl_transport(t, a, b)[0]
        bw = topology.bottleneck_bandwidth(t, a, b) * eta[tr]
        one = links.transfer_time(act, topology.path_latency(t, a, b), bw)
        rows.append((f"{label}\n{short[lay]}: GPU{a[3:]} → GPU{b[3:]}, "
                     f"{cls}, {via[tr]}", 2 * one, kind[tr]))
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    P.plot_stage_transfers(rows, t_stage, highlight=2, ax=ax)
    return fig


@book("pcie:fig-pcie-gdr", "plot_topology")
def _pcie_gdr():
    fig, ax = plt.subplots(figsize=(9.0, 4.6))
    P.plot_topology(topology.nvswitch_node("H200"), highlight=("gpu0", "nic0"),
                    ax=ax)
    return fig


@book("pcie:fig-pcie-reader", "plot_topology")
def _pcie_reader():
    reader = topology.parse_topo_matrix(gl.widgets.topology_samples()["dgx-h100"])
    fig, ax = plt.subplots(figsize=(12.0, 4.6))
    P.plot_topology(reader, ax=ax)
    return fig


# --- in_network_reduction ----------------------------------------------------------------
IN_RUN = "h200-x2-2026-11-30-nccl-c"
IN_POOLED = "h200-x2-2026-11-30-pooled"
IN_SIZES = 2.0 ** np.arange(3, 35)
#: The source article's all_reduce_perf rows: size [B], algbw, busbw [GB/s].
IN_ARTICLE_ROWS = [(8, 0.02, 0.04), (2 ** 10, 2.1, 3.7), (2 ** 20, 145, 253),
                   (64 * 2 ** 20, 478, 836), (256 * 2 ** 20, 492, 861),
                   (2 ** 30, 498, 871), (2 ** 31, 499, 873)]


def nccl_sweep(run, filename):
    """{collective: (sizes [B], times [s], busbw [B/s])} of one sweep."""
    text = measurements.raw_capture(run, filename)
    out = {}
    for r in csv.DictReader(io.StringIO(text)):
        out.setdefault(r["collective"], []).append(
            (float(r["size_bytes"]), float(r["time_us"]) * units.US,
             float(r["busbw_GBps"]) * units.GB))
    return {k: tuple(np.array(c) for c in zip(*v)) for k, v in out.items()}


def _article_in():
    s = np.array([r[0] for r in IN_ARTICLE_ROWS], dtype=float)
    alg = np.array([r[1] for r in IN_ARTICLE_ROWS]) * units.GB
    bus = np.array([r[2] for r in IN_ARTICLE_ROWS]) * units.GB
    return s, bus, s / alg


@book("in_network_reduction:fig-in-ring", "plot_collective_steps")
def _in_ring():
    return P.plot_collective_steps("ring", 4).figure


@book("in_network_reduction:fig-in-tree", "plot_collective_steps")
def _in_tree():
    return P.plot_collective_steps("tree", 4).figure


@book("in_network_reduction:fig-in-nvls", "plot_collective_steps")
def _in_nvls():
    return P.plot_collective_steps("nvls", 4).figure


@book("in_network_reduction:fig-in-algorithms", "plot_collective_comparison")
def _in_algorithms():
    hgx = systems.get("hgx-h200")
    by_algo = {a: collectives.predict("all_reduce", IN_SIZES, 8, hgx, algorithm=a,
                                      gpus_per_process=1)
               for a in ("ring", "tree", "direct", "nvls")}
    return P.plot_collective_comparison(predicted=by_algo, metric="time").figure


@book("in_network_reduction:fig-in-protocols", "plot_collective_comparison")
def _in_protocols():
    meas, pred = {}, {}
    for p in collectives.PROTOCOLS:
        s, _t, bus = nccl_sweep(IN_RUN, f"c_proto_{p}.csv")["all_reduce"]
        meas[p] = (s, bus)
        pred[p] = collectives.predict("all_reduce", s, 2, "h200-x2-measured",
                                      protocol=p)
    line = collectives.fabric_bandwidth("h200-x2-measured")
    return P.plot_collective_comparison(meas, pred, line_rate=line).figure


@book("in_network_reduction:fig-in-h200x2", "plot_collective_comparison")
def _in_h200x2():
    med = nccl_sweep(IN_POOLED, "p2p_center.csv")
    runs = [nccl_sweep(r, f) for r, f in measurements.FIT_RUNS["p2p"]]
    show = ("all_reduce", "all_gather", "reduce_scatter")
    ax = P.plot_collective_comparison(
        {c: (med[c][0], med[c][2]) for c in show},
        {c: collectives.predict(c, med[c][0], 2, "h200-x2-measured") for c in show},
        line_rate=collectives.fabric_bandwidth("h200-x2-measured"))
    colors = [h.get_color() for h in ax.get_legend().legend_handles]
    for c, color in zip(show, colors):
        every = np.vstack([r[c][2] for r in runs]) / units.GB
        ax.vlines(med[c][0], every.min(axis=0), every.max(axis=0), color=color,
                  lw=1.2, alpha=0.6)
    return ax.figure


@book("in_network_reduction:fig-in-public", "plot_collective_comparison")
def _in_public():
    kib, mib, gib = units.KiB, units.MiB, units.GiB
    nvls = [(32 * kib, 1.44), (128 * kib, 5.7), (512 * kib, 23.9), (mib, 39.9),
            (4 * mib, 107), (8 * mib, 156), (16 * mib, 220), (32 * mib, 276),
            (64 * mib, 347), (128 * mib, 402), (256 * mib, 436), (512 * mib, 450),
            (gib, 464), (4 * gib, 473), (16 * gib, 482)]
    pub = {"nvls": np.array(nvls).T, "ring": np.array([(16 * gib, 367.2)]).T}
    issues = np.array([(4 * gib, 475), (4 * gib, 370), (4 * gib, 480)]).T
    art_s, art_bus, _ = _article_in()
    hgx = systems.get("hgx-h200")
    ring_pred = collectives.predict("all_reduce", IN_SIZES[10:], 8, hgx,
                                    algorithm="ring")
    nvls_pred = collectives.predict("all_reduce", IN_SIZES[10:], 8, hgx)
    return P.plot_collective_comparison(
        {"public 8× H200, NCCL default (NVLS)": (pub["nvls"][0],
                                                 pub["nvls"][1] * units.GB),
         "public 8× H200, ring only": (pub["ring"][0], pub["ring"][1] * units.GB),
         "public 8× H100/H200, NCCL issues": (issues[0], issues[1] * units.GB),
         "source article (claimed)": (art_s, art_bus)},
        {"public 8× H200, NCCL default (NVLS)": nvls_pred,
         "public 8× H200, ring only": ring_pred},
        line_rate=collectives.fabric_bandwidth(hgx),
        markers={"source article (claimed)": "x",
                 "public 8× H100/H200, NCCL issues": "s"},
        colors={"source article (claimed)": P.COLORS["comm"]}).figure


@book("in_network_reduction:fig-in-latency", "plot_collective_comparison")
def _in_latency():
    med = nccl_sweep(IN_POOLED, "p2p_center.csv")
    s_all, t_ar, _ = med["all_reduce"]
    small = s_all <= units.MiB
    art_s, _, art_t = _article_in()
    deepep = (np.array([8.0, 1024.0]), np.array([12.5, 16.0]) * units.US)
    ax = P.plot_collective_comparison(
        {"measured 2× H200 (ours, pooled)": (s_all[small], t_ar[small]),
         "public 8× H20 (DeepEP#303)": deepep,
         "source article (implied)": (art_s[:3], art_t[:3])},
        {"measured 2× H200 (ours, pooled)": collectives.predict(
            "all_reduce", s_all[small], 2, "h200-x2-measured", gpus_per_process=2),
         "model 8× H200": collectives.predict("all_reduce", s_all[small], 8,
                                              systems.get("hgx-h200"))},
        metric="time", markers={"source article (implied)": "x"},
        colors={"source article (implied)": P.COLORS["comm"]})
    for us, ls in ((4.2, "--"), (1.8, ":")):            # the article's ring / SHARP
        ax.axhline(us, color=P.COLORS["comm"], ls=ls, lw=1)
    ax.set_ylim(0.2, 200)
    return ax.figure


def test_explorer_note_clears_the_tick_labels():
    """The collective explorer's note follows its size slider: small sizes put the
    marked point on the x axis, where a note below it would cover the tick labels."""
    pred = collectives.predict("all_reduce", IN_SIZES, 16, "hgx-h200-2node")
    line = collectives.fabric_bandwidth("hgx-h200-2node")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))       # the widget's figure size
    for metric, size in (("busbw", 8), ("busbw", 64 * units.KiB),
                         ("busbw", units.MiB), ("busbw", 16 * units.GiB),
                         ("time", units.MiB)):       # redrawn in place, as the widget
        P.plot_collective_prediction(pred, message_bytes=size, metric=metric,
                                     line_rate=line, ax=ax)
        check(fig, f"explorer, {metric}, {units.fmt_bytes(size)}")


@book("in_network_reduction:fig-in-explorer", "plot_collective_prediction")
def _in_explorer():
    hgx = systems.get("hgx-h200")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    P.plot_collective_prediction(
        collectives.predict("all_reduce", IN_SIZES, 8, "hgx-h200"),
        message_bytes=64 * units.MiB, line_rate=collectives.fabric_bandwidth(hgx),
        ax=ax)
    return fig


# --- nvswitch -----------------------------------------------------------------------------
NS_SIZES = 2 ** np.arange(10, 35)


@cache
def _ns_fabrics():
    """The chapter's 8x H200 board rewired as a direct ring and a direct mesh."""
    hgx = systems.get("hgx-h200")
    n, n_links = hgx.n_gpus, hgx.nvlink.links_per_gpu

    def direct_fabric(name, peer_links):
        nv = dataclasses.replace(
            hgx.nvlink, fabric="mesh", nvls=False, switch_chips=None,
            peer_links=tuple(tuple(map(int, row)) for row in peer_links))
        return dataclasses.replace(hgx, name=name, nvlink=nv)

    ring_links = np.zeros((n, n), dtype=int)
    for i in range(n):
        j = (i + 1) % n
        ring_links[i, j] = ring_links[j, i] = n_links // 2
    cube = np.array([[bin(i ^ j).count("1") == 1 for j in range(n)]
                     for i in range(n)])
    mesh_links = np.where(cube, 2, 3) - 3 * np.eye(n, dtype=int)
    return (direct_fabric("8x H200 as a direct ring", ring_links),
            direct_fabric("8x H200 as a direct full mesh", mesh_links), hgx)


@book("nvswitch:fig-nvswitch-fabrics", "plot_fabric")
def _ns_fabrics_fig():
    fig, axs = plt.subplots(1, 3, figsize=(9.6, 4.0))
    for ax, system, label in zip(axs, _ns_fabrics(),
                                 ("(a) direct ring", "(b) direct full mesh",
                                  "(c) NVSwitch")):
        P.plot_fabric(system, label=label, ax=ax)
    return fig


@book("nvswitch:fig-nvswitch-allreduce", "plot_busbw_curves")
def _ns_allreduce():
    _ring, mesh, hgx = _ns_fabrics()

    def allreduce(system, algorithm):
        return collectives.predict("all_reduce", NS_SIZES, 8, system,
                                   algorithm=algorithm)

    return P.plot_busbw_curves(
        [("ring: direct ring, mesh or NVSwitch", allreduce(hgx, "ring"), "nvlink"),
         ("one-shot on the direct mesh", allreduce(mesh, "direct"), "accent"),
         ("NVLS on NVSwitch", allreduce(hgx, "nvls"), "model", "--")],
        line_rates=[("NVLink4 line rate per GPU", links.nvlink_gpu_bandwidth(4),
                     "nvlink")]).figure


@book("nvswitch:fig-nvswitch-planes", "plot_switch_planes")
def _ns_planes():
    return P.plot_switch_planes(topology.nvswitch_node("H100")).figure


@book("nvswitch:fig-nvswitch-topology", "plot_topology")
def _ns_topology():
    fig, ax = plt.subplots(figsize=(9.0, 4.6))
    P.plot_topology(topology.nvswitch_node("H100"), highlight=("gpu0", "gpu5"),
                    ax=ax)
    return fig


@book("nvswitch:fig-nvswitch-dgx1", "plot_peer_links")
def _ns_dgx1():
    return P.plot_peer_links(systems.get("dgx-1-v100")).figure


@book("nvswitch:fig-nvswitch-scale-out", "plot_link_budget")
def _ns_scale_out():
    two = systems.get("hgx-h200-2node")
    budget = [
        ("NVLink5 per GPU\n(GB200 NVL72, 72-GPU domain)",
         links.nvlink_gpu_bandwidth(5), "nvlink"),
        ("NVLink4 per GPU\n(HGX H200, 8-GPU domain)",
         links.nvlink_gpu_bandwidth(4), "nvlink"),
        ("ConnectX-8, 800 Gb/s\n(one per GPU, GB300 era)",
         specs.nic("ConnectX-8").line_rate, "ib"),
        ("ConnectX-7, 400 Gb/s\n(one per GPU, HGX H200)",
         two.network_bandwidth_per_gpu, "ib"),
    ]
    return P.plot_link_budget(budget).figure


@book("nvswitch:fig-nvswitch-two-nodes", "plot_busbw_curves")
def _ns_two_nodes():
    two, hgx = systems.get("hgx-h200-2node"), systems.get("hgx-h200")
    n2 = two.n_gpus
    auto = collectives.predict("all_reduce", NS_SIZES, n2, two)
    ring = collectives.predict("all_reduce", NS_SIZES, n2, two, algorithm="ring")
    one = collectives.predict("all_reduce", NS_SIZES, 8, hgx)
    nic = two.network_bandwidth_per_gpu
    return P.plot_busbw_curves(
        [("one node, 8 ranks", one, "nvlink"),
         ("two nodes, 16 ranks, NCCL's choice", auto, "ib"),
         ("two nodes, 16 ranks, ring", ring, "comm", "--")],
        line_rates=[("NVLink4 per GPU", links.nvlink_gpu_bandwidth(4), "nvlink"),
                    ("eight NICs of one node", nic * two.network.nics_per_node, "ib"),
                    ("one ConnectX-7", nic, "pcie")]).figure


def _ns_tp_message():
    spec = par.model("70b")
    return 1 * 4096 * spec.hidden * 2            # bytes per TP all_reduce


@book("nvswitch:fig-nvswitch-tp", "plot_tp_layers")
def _ns_tp():
    spec, seq = par.model("70b"), 4096
    msg = _ns_tp_message()
    peak = specs.gpu("H200").fp16_dense_flops
    flops_fwd = par.layer_flops(spec, seq, seq_len=seq) / 3
    two, hgx = systems.get("hgx-h200-2node"), systems.get("hgx-h200")

    def tp_layer(where, tp, system, algorithm="auto"):
        p = collectives.predict("all_reduce", msg, tp, system, algorithm=algorithm)
        eff = par.layer_efficiency(spec.hidden, spec.heads, tp, seq, 1)
        return (f"TP={tp}, {where}", 3 * flops_fwd / tp / (peak * eff),
                4 * p.time_scalar)

    return P.plot_tp_layers([tp_layer("one HGX H200 node", 8, hgx),
                             tp_layer("two nodes,\nNCCL's choice", two.n_gpus, two),
                             tp_layer("two nodes,\nring forced", two.n_gpus, two,
                                      "ring")]).figure


@book("nvswitch:fig-nvswitch-explorer", "plot_fabric_algorithms")
def _ns_explorer():
    msg = _ns_tp_message()
    best = collectives.predict("all_reduce", msg, 8, "hgx-h200")
    rows = []
    for algo in collectives.ALGORITHMS:
        label = gl.widgets.FABRIC_LABELS[algo]
        try:
            p = collectives.predict("all_reduce", msg, 8, "hgx-h200", algorithm=algo)
        except ValueError:
            rows.append((label, None, None, "needs ranks in several NVLink domains"))
            continue
        rows.append((label, p.time_scalar, float(p.busbw[0]), ""))
    high = list(collectives.ALGORITHMS).index(str(best.algorithm[0]))
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    P.plot_fabric_algorithms(
        rows, line_rates=[("NVLink per GPU", links.nvlink_gpu_bandwidth(4),
                           "nvlink")], highlight=high, ax=ax)
    return fig


# --- reading_nccl_tests ------------------------------------------------------------------
RN_SYS = "h200-x2-measured"
RN_SIZES = 2.0 ** np.arange(10, 35)
RN_ALL = 2.0 ** np.arange(3, 35)


def rn_sweeps(run, name):
    """{collective: Sweep} of one recorded run."""
    text = measurements.raw_capture(run, name)
    return {s.collective: s for s in nccltests.read_all(text)}


@cache
def _rn_p2p_shm():
    pooled = "h200-x2-2026-11-30-pooled"
    return (rn_sweeps(pooled, "p2p_center.csv")["all_reduce"],
            rn_sweeps(pooled, "shm_center.csv")["all_reduce"])


@book("reading_nccl_tests:fig-rn-busbw", "plot_busbw_curves")
def _rn_busbw():
    curves = [(f"ring, {n} GPUs",
               collectives.predict("all_reduce", RN_SIZES, n, "hgx-h200",
                                   algorithm="ring"), kind, ls)
              for n, kind, ls in ((2, "pcie", "-"), (4, "ib", "--"),
                                  (8, "nvlink", "-"))]
    return P.plot_busbw_curves(
        curves, line_rates=[("NVLink4 per GPU",
                             collectives.fabric_bandwidth(RN_SYS), "nvlink")]).figure


@book("reading_nccl_tests:fig-rn-regimes", "plot_time_curves")
def _rn_regimes():
    ar, _ = _rn_p2p_shm()
    alpha = collectives.predict("all_reduce", 8, 2, RN_SYS).time_scalar
    peak = collectives.predict("all_reduce", 16 * units.GiB, 2, RN_SYS)
    n_half = links.half_bandwidth_size(
        alpha, units.Bandwidth(float(peak.algbw[0]), "per_direction"))
    model = collectives.predict("all_reduce", RN_ALL, 2, RN_SYS)
    return P.plot_time_curves(
        [("measured, 2x H200", ar.size_bytes.astype(float), ar.time_s, "nvlink",
          "measured"),
         ("model", RN_ALL, model.time, "model", "model")],
        marks=[("S_1/2 (model)", n_half)]).figure


@book("reading_nccl_tests:fig-rn-bimodal", "plot_run_floors")
def _rn_bimodal():
    every = {tr: measurements.pool_runs(measurements.FIT_RUNS[tr]
                                        + measurements.HOLDOUT_RUNS[tr])
             for tr in ("p2p", "shm")}

    def run_floors(pooled):
        out = []
        for p in pooled.values():
            small = p.size_bytes <= 32 * units.KiB
            out += list(np.nanmedian(p.times[:, small], axis=1))
        return np.array(out)

    ax = P.plot_run_floors(
        {"NCCL defaults (P2P)": run_floors(every["p2p"]),
         "NCCL_P2P_DISABLE=1 (SHM)": run_floors(every["shm"])},
        model_s=collectives.predict("all_reduce", 8, 2, RN_SYS).time_scalar)
    ax.set_ylabel("runs x collectives")
    return ax.figure


@book("reading_nccl_tests:fig-rn-measured", "plot_compare")
def _rn_measured():
    ar, shm_ar = _rn_p2p_shm()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.4), sharey=False)
    P.plot_compare(ar, collectives.predict(
        "all_reduce", ar.size_bytes.astype(float), 2, RN_SYS), ax=a1)
    P.plot_compare(shm_ar, collectives.predict(
        "all_reduce", np.asarray(shm_ar.size_bytes, dtype=float), 2, RN_SYS,
        transport="shm"), ax=a2)
    fig.tight_layout()
    return fig


@book("reading_nccl_tests:fig-rn-floor", "plot_time_curves")
def _rn_floor():
    c_ar = rn_sweeps("h200-x2-2026-11-30-nccl-c", "c_default.txt")["all_reduce"]
    t_ar = rn_sweeps("h200-x2-2026-11-30-run2", "nccl_default.txt")["all_reduce"]
    one_ar = rn_sweeps("h200-x1-2026-11-30-bench-smoke", "smoke.txt")["all_reduce"]
    b_ar = rn_sweeps("h200-x2-2026-11-30-bench",
                     "bench_default_r1.txt")["all_reduce"]
    model = collectives.predict("all_reduce", RN_ALL, 2, RN_SYS)
    return P.plot_time_curves(
        [("C++ loop, 2 GPUs", c_ar.size_bytes, c_ar.time_s, "nvlink", "measured"),
         ("torch.distributed, 2 GPUs", t_ar.size_bytes, t_ar.time_s, "ib",
          "measured"),
         ("gpulab.bench, 2 GPUs", b_ar.size_bytes, b_ar.time_s, "pcie",
          "measured"),
         ("gpulab.bench, 1 GPU", one_ar.size_bytes, one_ar.time_s, "hbm",
          "measured"),
         ("model, 2 GPUs", RN_ALL, model.time, "model", "model")]).figure


@book("reading_nccl_tests:fig-rn-audit", "plot_article_audit")
def _rn_audit(**extra):
    article = [(8, 0.02, 0.04), (1024, 2.1, 3.7), (2 ** 20, 145, 253),
               (64 * 2 ** 20, 478, 836), (256 * 2 ** 20, 492, 861),
               (2 ** 30, 498, 871), (2 ** 31, 499, 873)]
    lines = ["# Collective test starting: all_reduce_perf",
             "#  size count type redop root time algbw busbw #wrong"]
    for size, alg, bus in article:
        t_us = size / (alg * units.GB) * 1e6
        lines.append(f"{size} {size // 4} float sum -1 {t_us:.3f} {alg} {bus} 0")
    claimed = nccltests.parse("\n".join(lines), source="source article")
    claimed.n_ranks = 8
    h100 = "dgx-h100"
    ar, _ = _rn_p2p_shm()
    return P.plot_article_audit(
        claimed.size_bytes.astype(float), claimed.busbw,
        [("model 8x H100, NCCL default", RN_SIZES,
          collectives.predict("all_reduce", RN_SIZES, 8, h100).busbw, "nvlink"),
         ("model 8x H100, ring", RN_SIZES,
          collectives.predict("all_reduce", RN_SIZES, 8, h100,
                              algorithm="ring").busbw, "ib"),
         ("measured 2x H200 (ours)", ar.size_bytes.astype(float), ar.busbw,
          "pcie")],
        line_rate=collectives.fabric_bandwidth(h100), **extra).figure


def test_rn_audit_with_the_impossible_band_does_not_collide():
    """The audit figure with its ranks given: the band where algbw would pass the
    line rate and its label are drawn too."""
    check(_rn_audit(n_ranks=8), "reading_nccl_tests:fig-rn-audit, n_ranks=8")


@book("reading_nccl_tests:fig-rn-buckets", "plot_bucket_time")
def _rn_buckets():
    grad = 2 * units.GiB
    ddp = 25 * units.MiB
    (t_ddp,), _ = par.bucket_allreduce_time(grad, [ddp], 2, RN_SYS)
    grid = np.asarray(gl.widgets.BUCKET_GRID)
    b_tot, _ = par.bucket_allreduce_time(grad, grid, 2, RN_SYS)
    b_one = collectives.predict("all_reduce", grad, 2, RN_SYS).time_scalar
    return P.plot_bucket_time(grid, b_tot, chosen=(ddp, t_ddp),
                              one_call_time=b_one).figure


# --- parallel_strategies ------------------------------------------------------------------
PS_NVLINK, PS_PCIE, PS_BATCH = "dgx-h100", "h100-pcie", 64
PS_LAYOUTS = ((1, 1, 8), (8, 1, 1), (4, 1, 2), (1, 4, 2), (2, 2, 2))


def _ps_capacity():
    cap = systems.get(PS_NVLINK).gpu_spec.memory_bytes
    return cap, cap * (1 - par.assumption("memory_reserve_fraction"))


@cache
def _ps_steps(system):
    return {lay: par.step_time(par.model("13b"), system, lay, global_batch=PS_BATCH,
                               zero=1)
            for lay in PS_LAYOUTS}


@book("parallel_strategies:fig-par-memory-dp", "plot_memory_breakdown")
def _ps_memory_dp():
    cap, usable = _ps_capacity()
    rows = [(f"ZeRO-{z}" + (" (plain DP)" if z == 0 else ""),
             par.training_memory(par.model("13b"), 1, 1, 8, zero=z,
                                 micro_batches=PS_BATCH // 8))
            for z in par.ZERO_STAGES]
    return P.plot_memory_breakdown(rows, capacity=cap, usable=usable).figure


@book("parallel_strategies:fig-par-steps-nvlink", "plot_step_breakdown")
def _ps_steps_nvlink():
    return P.plot_step_breakdown(list(_ps_steps(PS_NVLINK).values())).figure


@book("parallel_strategies:fig-par-steps-pcie", "plot_step_breakdown")
def _ps_steps_pcie():
    return P.plot_step_breakdown(list(_ps_steps(PS_PCIE).values())).figure


@book("parallel_strategies:fig-par-cp-steps", "plot_step_breakdown")
def _ps_cp_steps():
    system = par.cluster("hgx-h200", 4)
    lays = [(8, 1, 4), (8, 4, 1), (8, 1, 2, 1, 2), (8, 1, 1, 1, 4), (4, 1, 1, 1, 8),
            (2, 1, 1, 1, 16)]
    steps = [par.step_time("llama3-70b", system, lay, global_batch=16, seq_len=131072,
                           zero=3, sequence_parallel=True, recompute="full")
             for lay in lays]
    return P.plot_step_breakdown(steps).figure


@book("parallel_strategies:fig-par-memory-layouts", "plot_memory_breakdown")
def _ps_memory_layouts():
    cap, usable = _ps_capacity()
    return P.plot_memory_breakdown(list(_ps_steps(PS_NVLINK).values()),
                                   capacity=cap, usable=usable).figure


@book("parallel_strategies:fig-par-explorer", "plot_memory_breakdown",
      "plot_step_breakdown")
def _ps_explorer():
    cap, usable = _ps_capacity()
    default = _ps_steps(PS_NVLINK)[2, 2, 2]
    fig, (ax_mem, ax_step) = plt.subplots(2, 1, figsize=(7.2, 4.4))
    fig.subplots_adjust(hspace=0.75)
    labels = gl.widgets.LAYOUT_LABELS
    P.plot_memory_breakdown([(labels[0], default)], capacity=cap, usable=usable,
                            ax=ax_mem)
    P.plot_step_breakdown([(labels[1], default)], ax=ax_step)
    return fig


# --- tensor_parallel ----------------------------------------------------------------------
@book("tensor_parallel:fig-tp-megatron", "plot_megatron_layer")
def _tp_megatron():
    return P.plot_megatron_layer().figure


@book("tensor_parallel:fig-tp-sp", "plot_megatron_layer")
def _tp_sp():
    return P.plot_megatron_layer(sequence_parallel=True).figure


@book("tensor_parallel:fig-tp-measured", "plot_tp_measured")
def _tp_measured():
    peak = specs.gpu("H200").fp16_dense_flops
    per_layer = par.tp_allreduce_count()
    text = measurements.raw_capture("h200-x2-2026-11-30-bench", "tp_layer.csv")
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        spec, s, b = par.model(r["model"]), int(r["seq"]), int(r["micro_batch"])
        tp, size = int(r["tp"]), float(r["allreduce_bytes"])
        flops = par.layer_flops(spec, b * s, seq_len=s) / tp
        ar_model = collectives.predict("all_reduce", size, 2,
                                       "h200-x2-measured").time_scalar
        rows.append((f"{r['model']} s={s}",
                     float(r["fwd_bwd_compute_ms"]) * units.MS,
                     per_layer * float(r["allreduce_ms"]) * units.MS,
                     flops / (peak * par.layer_efficiency(spec.hidden, spec.heads,
                                                          tp, s, b)),
                     per_layer * ar_model))
    return P.plot_tp_measured(rows).figure


@book("tensor_parallel:fig-tp-degree", "plot_tp_degree")
def _tp_degree():
    rows, steps, _skipped = par.tp_degree_rows(
        "13b", "hgx-h200", seq_len=4096, micro_batch=1, sequence_parallel=False,
        tp_overlap=0.0)
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    P.plot_tp_degree(rows, highlight=list(steps).index(4), ax=ax)
    return fig


# --- nvlink_roi ---------------------------------------------------------------------------
ROI_FAST, ROI_SLOW, ROI_NODES_70B = "dgx-h100", "h100-pcie", 8


@cache
def _roi_picks():
    """The chooser's fastest layout per (model, system), as the chapter computes it."""
    return {(m, s): par.roi_best_step(m, s, n)
            for m, n in (("13b", 1), ("70b", ROI_NODES_70B))
            for s in (ROI_FAST, "hgx-h200", ROI_SLOW)}


@book("tensor_parallel:fig-tp-fp8", "plot_fp8_speedup")
def _tp_fp8():
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    pts = par.measured_fp8_speedups()
    P.plot_fp8_speedup(
        [("model, TP8, 2048 tokens", *par.fp8_speedup_curve(8, 1)),
         ("model, TP8, 8192 tokens", *par.fp8_speedup_curve(8, 4)),
         ("model, eager FP8 variant, TP8, 8192 tokens",
          *par.fp8_speedup_curve(8, 4, recipe="eager"))],
        [("measured, 1× H200", [r["width"] for r in pts],
          [r["measured"] for r in pts], [r["held_out"] for r in pts])], ax=ax)
    ax.set_ylim(0.3, 1.9)
    return fig


@book("tensor_parallel:fig-tp-power", "plot_power_clock")
def _tp_power():
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    P.plot_power_clock(par.power_clock_fit(), limits=[("500 W", 500.0)], ax=ax)
    return fig


@book("nvlink_roi:fig-roi-speedup", "plot_speedup_slowdown")
def _roi_speedup():
    return P.plot_speedup_slowdown([("article", 1 / 3.2, 1 / 2.1)]).figure


@book("nvlink_roi:fig-roi-steps", "plot_step_comparison")
def _roi_steps():
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    P.plot_step_comparison(
        [(f"{m.upper()} {s}\n{st.layout}", st) for (m, s), st in _roi_picks().items()],
        ax=ax)
    return fig


@book("nvlink_roi:fig-roi-project", "plot_roi")
def _roi_project():
    picks = _roi_picks()
    fast, slow = picks[("70b", ROI_FAST)], picks[("70b", ROI_SLOW)]
    roi70 = par.nvlink_roi(
        fast.total, slow.total,
        tokens_per_step=par.ROI_GLOBAL_BATCH * par.model("70b").seq_len,
        price_fast=3.00, price_slow=2.25, n_gpus=8 * ROI_NODES_70B,
        project_tokens=200e9)
    fig, ax = plt.subplots(figsize=(6.4, 2.2))
    P.plot_roi(roi70, labels=(ROI_FAST, ROI_SLOW), currency="USD", ax=ax)
    return fig


# --- scale_out ------------------------------------------------------------------------------
SO_SIZES = 2 ** np.arange(3, 35)
SO_GIB = int(np.flatnonzero(SO_SIZES == units.GiB)[0])


def _so(system, **kw):
    return collectives.predict("all_reduce", SO_SIZES, system.n_gpus, system, **kw)


def _so_node():
    from gpulab import network
    two = network.scale_out("dgx-h100-spod", 2)
    path = network.network_path(two, two.n_gpus)
    nic = units.Bandwidth(path.nic_rate, units.PER_DIRECTION)
    return two, path, nic, nic * path.nics


@book("scale_out:fig-so-budget", "plot_link_budget")
def _so_budget():
    _, path, nic, node = _so_node()
    return P.plot_link_budget(
        [("NVLink4 per GPU (inside the node)", links.nvlink_gpu_bandwidth(4), "nvlink"),
         ("all eight NICs of one node", node, "ib"),
         ("NCCL's share of them (fabric efficiency)",
          units.Bandwidth(path.net_bw, units.PER_DIRECTION), "ib"),
         ("one ConnectX-7 NIC", nic, "ib")]).figure


@book("scale_out:fig-so-fabrics", "plot_busbw_curves")
def _so_fabrics():
    from gpulab import network
    _, _, _, node = _so_node()
    curves = [(fab, _so(network.scale_out("dgx-h100-spod", 4, fabric=fab)), k)
              for fab, k in zip(("ib", "roce", "efa", "tcpx"),
                                ("ib", "pcie", "hbm", "comm"))]
    return P.plot_busbw_curves(curves, line_rates=[("eight NICs of one node", node,
                                                    "ib")]).figure


@book("scale_out:fig-so-oversub", "plot_busbw_vs_nodes")
def _so_oversub():
    from gpulab import network
    nodes = [2, 4, 8, 16, 32, 64, 128]
    curves = []
    for o, kind in ((1.0, "ib"), (2.0, "comm")):
        bus = []
        for n in nodes:
            c = network.scale_out("dgx-h100-spod", n)
            c = dataclasses.replace(c, network=dataclasses.replace(
                c.network, oversubscription=o))
            bus.append(float(_so(c).busbw[SO_GIB]))
        curves.append((f"oversubscription {o:g}:1", bus, kind))
    return P.plot_busbw_vs_nodes(nodes, curves, leaf_nodes=32).figure


@book("scale_out:fig-so-net-steps", "plot_step_latency")
def _so_net_steps():
    from gpulab import network
    chk = network.loopback_check()
    return P.plot_step_latency(chk.step_points(),
                               {p: (chk.base_s[p], chk.step_s[p]) for p in chk.step_s}
                               ).figure


@book("scale_out:fig-so-mixed-ring", "plot_mixed_ring")
def _so_mixed_ring():
    from gpulab import network
    return P.plot_mixed_ring(network.mixed_ring_check().rows).figure


@book("scale_out:fig-so-ep", "plot_ep_alltoall")
def _so_ep():
    from gpulab import network
    from gpulab import parallelism as par
    moe = par.model("mixtral-8x7b")
    tokens = moe.seq_len                              # micro-batch 1, TP1
    pod8, rack = network.scale_out("dgx-h100-spod", 8), network.scale_out("gb200-nvl72", 1)
    curves = []
    for label, system, stride, kind in (("DGX H100, EP ranks adjacent", pod8, 1, "nvlink"),
                                        ("DGX H100, one EP rank per node", pod8, 8, "ib"),
                                        ("GB200 NVL72 rack", rack, 1, "hbm")):
        eps = [e for e in (2, 4, 8, 16, 32, 64) if e * stride <= system.n_gpus]
        curves.append((label, eps, [par.expert_alltoall_time(
            tokens, moe.hidden, e, system, top_k=moe.top_k, stride=stride).total
            for e in eps], kind))
    return P.plot_ep_alltoall(curves, domain=8, domain_label="one DGX H100 node").figure


@book("scale_out:fig-so-nodes", "plot_busbw_curves")
def _so_nodes():
    from gpulab import network
    _, _, _, node = _so_node()
    one = collectives.predict("all_reduce", SO_SIZES, 8, "dgx-h100")
    runs = [(f"{k} nodes", _so(network.scale_out("dgx-h100-spod", k)), kind)
            for k, kind in zip((2, 4, 16, 64), ("ib", "pcie", "hbm", "comm"))]
    return P.plot_busbw_curves(
        [("one node (8 GPUs)", one, "nvlink")] + runs,
        line_rates=[("NVLink4 per GPU", links.nvlink_gpu_bandwidth(4), "nvlink"),
                    ("eight NICs of one node", node, "ib")]).figure


@book("scale_out:fig-so-gdr", "plot_busbw_curves")
def _so_gdr():
    from gpulab import network
    two, _, _, node = _so_node()
    return P.plot_busbw_curves(
        [("GPUDirect RDMA", _so(two), "ib"),
         ("through host memory", _so(network.scale_out("dgx-h100-spod", 2, gdr=False)),
          "pcie")],
        line_rates=[("eight NICs of one node", node, "ib")]).figure


@book("scale_out:fig-so-sharp", "plot_fabric_algorithms")
def _so_sharp():
    from gpulab import network
    _, _, _, node = _so_node()
    rows = network.algorithm_table("all_reduce", [units.GiB], 16, "dgx-h100-spod",
                                   sharp=True)
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    P.plot_fabric_algorithms(
        [(r["algorithm"], r["time_s"], r["busbw"], "") for r in rows],
        line_rates=[("eight NICs of one node", node, "ib")],
        highlight=[r["chosen"] for r in rows].index(True), ax=ax)
    return fig


@book("scale_out:fig-so-public", "plot_scale_out")
def _so_public():
    from gpulab import network, widgets
    c = network.scale_out("gcp-a3-mega", 2)
    path = network.network_path(c, c.n_gpus)
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    P.plot_scale_out(_so(c), message_bytes=units.GiB,
                     published=widgets.published_points("gcp-a3-mega", 2),
                     line_rates=[("NICs of one node", units.Bandwidth(
                         path.nics * path.nic_rate, units.PER_DIRECTION), "ib")],
                     ax=ax)
    return fig


# --- serving_decode -------------------------------------------------------------------------
SD_MODEL, SD_BATCH, SD_CONTEXT = "llama3-70b", 32, 8192    # as book/serving_decode.md


@book("serving_decode:fig-sd-decode", "plot_decode_layers")
def _sd_decode():
    from gpulab.plotting import inference as pinf
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    pinf.plot_decode_layers(pinf.decode_model_rows(), ax=ax)
    return fig


@book("serving_decode:fig-sd-allreduce", "plot_allreduce_sizes")
def _sd_allreduce():
    from gpulab.plotting import inference as pinf
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.0, 3.8))
    pinf.plot_allreduce_sizes("hgx-h200", 8, "h200_sxm", ax=a1,
                              label="HGX H200, 8 GPUs (NVLink)")
    pinf.plot_allreduce_sizes("l40s-x8", 2, "l40s", ax=a2, label="8x L40S, 2 GPUs (PCIe)")
    return fig


@book("serving_decode:fig-sd-tpot", "plot_tpot_breakdown")
def _sd_tpot():
    from gpulab.plotting import inference as pinf
    tps = (1, 2, 4, 8)
    nv = pinf.tpot_rows(SD_MODEL, "hgx-h200", tps, batch=SD_BATCH, context=SD_CONTEXT,
                        allreduce="twoshot")
    pc = pinf.tpot_rows(SD_MODEL, "l40s-x8", tps, batch=SD_BATCH, context=SD_CONTEXT)
    groups = ([(f"HGX H200 TP{t}", d) for t, d in nv]
              + [(f"8x L40S TP{t}", d) for t, d in pc])
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    pinf.plot_tpot_breakdown(groups, ax=ax)
    return fig


# --- serving_pcie ---------------------------------------------------------------------------
def _sp_roi():
    from gpulab.inference import roi
    return roi


@book("serving_pcie:fig-sp-layouts", "plot_serving_layouts")
def _sp_layouts():
    roi = _sp_roi()
    options = {s: roi.layout_options("llama3-70b", s, tpot_target=0.05, context=4096)
               for s in roi.SYSTEMS}
    return P.plot_serving_layouts(options, tpot_target=0.05).figure


@book("serving_pcie:fig-sp-check", "plot_tpot_check")
def _sp_check():
    return P.plot_tpot_check(_sp_roi().published_tpot_checks()).figure


@book("serving_pcie:fig-sp-tpd", "plot_tokens_per_dollar")
def _sp_tpd():
    roi = _sp_roi()
    rows = roi.buying_table("llama3-70b", roi.EXAMPLE_PRICES, tpot_target=0.05,
                            context=4096)
    return P.plot_tokens_per_dollar(rows).figure


# --- serving_ep_disagg ----------------------------------------------------------------------
@book("serving_ep_disagg:fig-se-ep-check", "plot_ep_check")
def _se_ep_check():
    from gpulab.inference import ep
    rows = ep.ep_checks()
    fig, axs = plt.subplots(1, 2, figsize=(9.0, 3.8))
    P.plot_ep_check(rows, kernel="normal", ax=axs[0])
    P.plot_ep_check(rows, kernel="low_latency", ax=axs[1])
    fig.tight_layout()
    return fig


@book("serving_ep_disagg:fig-sp-kv", "plot_kv_transfer")
def _se_kv():
    from gpulab import collectives, inference, specs, systems
    from gpulab.inference import kv
    kv_bytes = kv.model_kv_bytes_per_token("llama3-70b") * 8192
    prefill = inference.prefill_time("llama3-70b", "hgx-h200", tp=8, prompt=8192,
                                     precision="fp8").ttft
    cx7 = specs.nic("ConnectX-7").line_rate.bytes_per_s
    nvl = collectives.fabric_bandwidth(systems.get("hgx-h200")).bytes_per_s
    paths = [("NVLink, same node (8 GPUs)", 8 * nvl), ("8x ConnectX-7 RDMA", 8 * cx7),
             ("one NIC (TCP, at best)", cx7)]
    return P.plot_kv_transfer([(n, kv.kv_transfer_time(kv_bytes, b)) for n, b in paths],
                              prefill).figure


@book("serving_ep_disagg:fig-se-kv-check", "plot_kv_transfer_check")
def _se_kv_check():
    from gpulab.inference import disagg
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    P.plot_kv_transfer_check(disagg.kv_transfer_checks(), ax=ax)
    return fig


@book("serving_ep_disagg:fig-se-ttft", "plot_ttft_share")
def _se_ttft():
    from gpulab import collectives, inference, parallelism, specs, systems
    from gpulab.inference import disagg, kv
    prompts = [512, 1024, 2048, 4096, 8192, 16384, 32768]
    cx7 = specs.nic("ConnectX-7").line_rate.bytes_per_s
    nvl = collectives.fabric_bandwidth(systems.get("hgx-h200")).bytes_per_s
    paths = [("NVLink, same node (8 GPUs)", 8 * nvl), ("8x ConnectX-7 RDMA", 8 * cx7),
             ("one NIC (TCP, at best)", cx7)]
    layers = parallelism.model("llama3-70b").layers
    pre = {p: inference.prefill_time("llama3-70b", "hgx-h200", tp=8, prompt=p,
                                     precision="fp8").ttft for p in prompts}
    per_token = kv.model_kv_bytes_per_token("llama3-70b")
    curves = [(n, o, prompts,
               [disagg.exposed_share(pre[p], kv.kv_transfer_time(per_token * p, bw),
                                     layers=None if o == "sequential" else layers)
                for p in prompts])
              for n, bw in paths for o in disagg.OVERLAPS]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    P.plot_ttft_share(curves, ax=ax)
    return fig



# --- every figure of the book ---------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(BOOK))
def test_book_figure_text_does_not_collide(key):
    check(BOOK[key](), key)
