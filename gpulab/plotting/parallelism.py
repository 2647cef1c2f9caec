"""Figures of the parallelism topic: memory and step breakdowns, gradient buckets,
the Megatron layer, tensor-parallel degrees, step comparisons and ROI.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .style import (COLORS, curve_arrays, remember_artists, cached_artists, bytes_axis,
                    end_labels_clear_of_lines, new_axes)
from .. import units
from .. import parallelism as par


def plot_tp_layers(rows, *, ax=None):
    """Stacked bars per configuration: compute and tensor-parallel communication.

    Parameters
    ----------
    rows : sequence of (label, compute_time, comm_time)
        Times per transformer layer [s] (forward plus backward); communication
        is drawn as not overlapped with compute.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 3 for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, compute_time, "
                         "comm_time) tuples")
    comp = np.array([float(r[1]) for r in rows])
    comm = np.array([float(r[2]) for r in rows])
    if not (np.all(np.isfinite(comp)) and np.all(comp > 0)
            and np.all(np.isfinite(comm)) and np.all(comm >= 0)):
        raise ValueError("rows: compute_time must be > 0 and comm_time >= 0 [s]")
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    ax.barh(y, comp * 1e3, color=COLORS["compute"], label="compute (at the MFU assumed)")
    ax.barh(y, comm * 1e3, left=comp * 1e3, color=COLORS["comm"],
            label="TP all_reduce (not overlapped)")
    for yi, c, m in zip(y, comp, comm):
        ax.annotate(f"comm = {m / c:.0%} of compute", ((c + m) * 1e3, yi),
                    xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
    ax.set_yticks(y, [str(r[0]) for r in rows])
    ax.set_xlabel("Time per transformer layer, forward + backward [ms]")
    ax.set_xlim(0, float(np.max(comp + comm)) * 1e3 * 1.5)
    ax.grid(axis="y", visible=False)
    # above the Axes: inside, it would cover the end label of the top bar
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
    return ax


def plot_bucket_time(bucket_bytes, total_time, *, chosen, one_call_time=None,
                     ax=None):
    """Total gradient all_reduce time against bucket size, the chosen bucket marked.

    Calling it again on the same Axes with as many points updates it in place
    (the bucket explorer redraws this way).

    Parameters
    ----------
    bucket_bytes : array_like
        Bucket sizes [B], increasing.
    total_time : array_like
        Time of all the buckets' all_reduce calls, one after another. [s]
    chosen : (bucket_bytes, total_time)
        The point to mark [B, s].
    one_call_time : float, optional
        Time of one all_reduce of the whole gradient [s], drawn dashed.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    x, y = curve_arrays("total_time", "bucket curve", bucket_bytes, total_time)
    if np.any(np.diff(x) <= 0) or np.any(y <= 0):
        raise ValueError("bucket_bytes must increase and total_time be > 0 [s]")
    if not (isinstance(chosen, tuple) and len(chosen) == 2
            and float(chosen[0]) > 0 and float(chosen[1]) > 0):
        raise ValueError(f"chosen must be (bucket_bytes > 0, time > 0); got "
                         f"{chosen!r}")
    cx, cy = float(chosen[0]), float(chosen[1])
    if one_call_time is not None and not float(one_call_time) > 0:
        raise ValueError(f"one_call_time must be > 0 [s]; got {one_call_time!r}")
    ax = new_axes(ax)
    key = (len(x),)
    old = cached_artists(ax, "bucket_time", key)
    if old is None:
        ax.clear()
        from matplotlib.patches import Rectangle

        sentinel = ax.add_patch(Rectangle((0, 0), 0, 0, visible=False))
        (line,) = ax.plot(x, y * 1e3, "-", lw=1.8, color=COLORS["comm"],
                          label="all buckets, one after another")
        (one,) = ax.plot([x[0], x[-1]], [1, 1], "--", lw=1.2,
                         color=COLORS["model"],
                         label="one call for the whole gradient")
        (dot,) = ax.plot([cx], [cy * 1e3], "o", ms=9, color=COLORS["accent"],
                         mec="#222222", zorder=5)
        tag = ax.annotate("", (cx, cy * 1e3), xytext=(6, 6),
                          textcoords="offset points", fontsize=8)
        bytes_axis(ax.xaxis)
        ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter, NullLocator

        # plain labels: mathtext (10^k) labels would cost most of a redraw
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("Bucket size [B, binary prefixes]")
        ax.set_ylabel("Gradient all_reduce time [ms]")
        ax.legend(loc="upper right", fontsize=8)
        remember_artists(ax, "bucket_time", key, (line, one, dot, tag), sentinel)
    else:
        line, one, dot, tag = old
        line.set_data(x, y * 1e3)
    dot.set_data([cx], [cy * 1e3])
    tag.xy = (cx, cy * 1e3)
    tag.set_text(f"{units.fmt_bytes(cx)}: {units.fmt_time(cy)}")
    lo, hi = float(y.min()), float(y.max())
    if one_call_time is None:
        one.set_visible(False)
    else:
        t1 = float(one_call_time)
        one.set_data([x[0], x[-1]], [t1 * 1e3, t1 * 1e3])
        one.set_visible(True)
        lo, hi = min(lo, t1), max(hi, t1)
    ax.set_xlim(x[0] / 1.3, x[-1] * 1.3)
    ax.set_ylim(lo * 1e3 / 1.5, hi * 1e3 * 2.0)
    return ax

#: Parts of a training GPU's memory as Megatron-LM's distributed-optimizer accounting
#: counts them (TrainingMemory attribute, legend label, colour), left to right: the
#: optimizer's share is its fp32 master weights, the fp32 gradient copy (kept only for
#: 16-bit gradients; drawn only where some bar has one) and Adam's m and v.
_MEMORY_PARTS = (("weights", "weights", "#2f6db3"),
                 ("gradients", "gradients", "#8fb3e0"),
                 ("master", "fp32 master weights", "#4b2474"),
                 ("grad_copy", "fp32 gradient copy", "#7b4fa0"),
                 ("adam_m", "Adam m (fp32)", "#a983cf"),
                 ("adam_v", "Adam v (fp32)", "#d5c2ea"),
                 ("activations", "activations", "#e0a100"))
#: Parts of a step time (StepTime.components() key, legend label, colour).
_STEP_BREAKDOWN_PARTS = (("compute", "compute", COLORS["compute"]),
               ("tp_comm", "TP communication", COLORS["comm"]),
               ("pp_comm", "PP communication", COLORS["ib"]),
               ("dp_comm", "DP communication (exposed)", COLORS["pcie"]),
               ("bubble", "pipeline bubble", "#c8c8c8"))
#: The expert-parallel all-to-all, drawn only when a step has EP > 1.
_STEP_BREAKDOWN_EP = ("ep_comm", "EP all-to-all", COLORS["nvlink"])
#: The context-parallel key/value ring, drawn only when a step has CP > 1.
_STEP_BREAKDOWN_CP = ("cp_comm", "CP key/value ring (exposed)", COLORS["hbm"])


def _result_rows(results, name, want):
    """``[(label, obj)]`` from one result or a sequence of results / (label, result).

    ``want`` is "memory" (TrainingMemory) or "step" (StepTime)."""
    def one(label, r):
        if isinstance(r, par.LayoutResult):
            if r.step is None:
                raise ValueError(f"{name}: layout {r.layout} has no step time "
                                 f"({'; '.join(r.reasons)})")
            r = r.step
        if isinstance(r, par.StepTime):
            lab = str(r.layout) if label is None else str(label)
            return lab, (r.memory if want == "memory" else r)
        if want == "memory" and isinstance(r, par.TrainingMemory):
            return ("" if label is None else str(label)), r
        kinds = ("parallelism.StepTime, LayoutResult or TrainingMemory"
                 if want == "memory" else "parallelism.StepTime or LayoutResult")
        raise ValueError(f"{name} must be a {kinds}, a sequence of them or of "
                         f"(label, result) pairs; got {r!r}")

    single = (par.StepTime, par.LayoutResult, par.TrainingMemory)
    items = [results] if isinstance(results, single) else results
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ValueError(f"{name} must be a result or a non-empty sequence of "
                         f"results; got {results!r}")
    rows = []
    for it in items:
        if isinstance(it, tuple) and len(it) == 2 and not isinstance(it[0], single):
            rows.append(one(it[0], it[1]))
        else:
            rows.append(one(None, it))
    if not rows:
        raise ValueError(f"{name} must not be empty")
    return rows


def _nice_ceil(x):
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above ``x``
    (stable axis limits: a widget can reuse its cached background)."""
    k = 10.0 ** np.floor(np.log10(x))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * k >= x * (1 - 1e-12):
            return m * k
    return 10 * k  # pragma: no cover


def _stacked_barh(ax, kind, key, labels, parts, values, end_texts, xlabel):
    """Horizontal stacked bars, updated in place on a second call with ``key``."""
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    old = cached_artists(ax, kind, key)
    if old is None:
        ax.clear()
        bars = []
        for (_k, label, color), v in zip(parts, values):
            bars.append(ax.barh(y, v, left=left, color=color, label=label,
                                height=0.6))
            left = left + v
        texts = [ax.annotate(t, (x, yi), xytext=(4, 0), textcoords="offset points",
                             va="center", fontsize=8)
                 for yi, x, t in zip(y, left, end_texts)]
        ax.set_yticks(y, labels)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
        remember_artists(ax, kind, key, (bars, texts), bars[0][0])
        return ax, left, None
    bars, texts = old[:2]
    for cont, v in zip(bars, values):
        for rect, x0, w in zip(cont, left, v):
            rect.set_x(x0)
            rect.set_width(w)
        left = left + v
    for txt, yi, x, t in zip(texts, y, left, end_texts):
        txt.xy = (x, yi)
        txt.set_text(t)
    for tick, lab in zip(ax.get_yticklabels(), labels):
        if tick.get_text() != lab:
            ax.set_yticks(y, labels)
            break
    return ax, left, old


def plot_memory_breakdown(results, *, capacity=None, usable=None, ax=None):
    """Stacked bars of training memory per GPU, against the GPU's memory.

    One labelled segment per part of Megatron-LM's accounting: weights, gradients,
    fp32 master weights, the fp32 gradient copy (only where some bar has one), Adam's
    m and v, and activations (:class:`gpulab.parallelism.TrainingMemory`).

    Calling it again on the same Axes with the same labels updates the bars, texts
    and lines in place (the layout explorer redraws this way).

    Parameters
    ----------
    results : parallelism.StepTime, LayoutResult or TrainingMemory, or a sequence
        One bar per result; an item may be a ``(label, result)`` pair. A StepTime
        or LayoutResult is labelled with its layout.
    capacity : float, optional
        The GPU's memory, drawn as a solid line. [B]
    usable : float, optional
        The memory left after the reserve, drawn as a dashed line. [B]
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        x axis in GB (1e9 bytes).
    """
    rows = _result_rows(results, "results", "memory")
    limits = []
    for name, v in (("capacity", capacity), ("usable", usable)):
        if v is not None:
            v = float(v) if isinstance(v, (int, float, np.floating,
                                           np.integer)) else None
            if v is None or not np.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive number of bytes or "
                                 "None")
        limits.append(v)
    cap, use = limits
    ax = new_axes(ax)
    parts = tuple(p for p in _MEMORY_PARTS if p[0] != "grad_copy"
                  or any(m.grad_copy > 0 for _l, m in rows))
    values = [np.array([getattr(m, k) for _l, m in rows]) / units.GB
              for k, _n, _c in parts]
    totals = np.array([m.total for _l, m in rows]) / units.GB
    ends = [f"{t:.1f} GB" for t in totals]
    key = (len(rows), tuple(k for k, _n, _c in parts))
    ax, _left, old = _stacked_barh(ax, "memory_breakdown", key,
                                   [lab for lab, _m in rows], parts,
                                   values, ends, "Memory per GPU [GB]")
    if old is None:
        lines = [ax.axvline(0, color="#222222", lw=1.4, visible=False, zorder=3),
                 ax.axvline(0, color="#222222", lw=1.2, ls="--", visible=False,
                            zorder=3)]
        tags = [ax.text(0, 1.02, "", fontsize=8, va="bottom", ha=ha,
                        transform=ax.get_xaxis_transform())
                for ha in ("left", "right")]
        state = ax._gpulab_state
        state["artists"] = state["artists"] + (lines, tags)
    else:
        lines, tags = old[2], old[3]
    for line, tag, v, word in zip(lines, tags, (cap, use),
                                  ("GPU memory", "usable")):
        on = v is not None
        line.set_visible(on)
        tag.set_visible(on)
        if on:
            x = v / units.GB
            line.set_xdata([x, x])
            tag.set_position((x, 1.02))
            tag.set_text(f" {word} {x:.0f} GB " if word == "GPU memory"
                         else f"{word} {x:.0f} GB ")
    top = max([float(totals.max())] + [v / units.GB for v in (cap, use)
                                        if v is not None])
    ax.set_xlim(0, _nice_ceil(top * 1.22))
    end_labels_clear_of_lines(ax, ax._gpulab_state["artists"][1])
    return ax


def plot_step_breakdown(step_times, *, ax=None):
    """Stacked bars of one training step: compute, TP, PP and exposed DP
    communication, and the pipeline bubble.

    Calling it again on the same Axes with the same labels updates the bars in
    place.

    Parameters
    ----------
    step_times : parallelism.StepTime or LayoutResult, or a sequence
        One bar per step; an item may be a ``(label, step)`` pair (default label:
        the layout).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        x axis in seconds; each bar ends with the step time and the end-to-end
        MFU.
    """
    rows = _result_rows(step_times, "step_times", "step")
    ax = new_axes(ax)
    comps = [st.components() for _l, st in rows]
    parts = _STEP_BREAKDOWN_PARTS
    if any(st.ep > 1 for _l, st in rows):
        parts = parts + (_STEP_BREAKDOWN_EP,)
    if any(st.layout.cp > 1 for _l, st in rows):
        parts = parts + (_STEP_BREAKDOWN_CP,)
    values = [np.array([c.get(k, 0.0) for c in comps]) for k, _n, _c in parts]
    ends = [f"{st.total:.2f} s, MFU {st.mfu:.0%}" for _l, st in rows]
    key = (len(rows), len(parts))
    ax, left, _old = _stacked_barh(ax, "step_breakdown", key,
                                   [lab for lab, _s in rows], parts,
                                   values,
                                   ends, "Step time [s]")
    ax.set_xlim(0, _nice_ceil(float(left.max()) * 1.4))
    return ax

#: Stages of one Megatron transformer layer, left to right: (text, kind) with kind
#: "rep" (replicated on every TP rank), "shard" (split over the ranks) or "f"/"g"
#: (the conjugate communication operators of Shoeybi et al. 2019, Fig. 3-4).
_MEGATRON_STAGES = (
    ("input X", "rep"), ("LayerNorm", "rep"), ("f", "f"),
    ("QKV\ncols {i}/{t}", "shard"), ("attention\nheads {i}/{t}", "shard"),
    ("out proj\nrows {i}/{t}", "shard"), ("g", "g"),
    ("+ residual\ndropout", "rep"), ("LayerNorm", "rep"), ("f", "f"),
    ("FC1 + GeLU\ncols {i}/{t}", "shard"), ("FC2\nrows {i}/{t}", "shard"),
    ("g", "g"), ("+ residual\ndropout", "rep"),
)


def plot_megatron_layer(*, sequence_parallel=False, ax=None):
    """Schematic of one Megatron-LM transformer layer split over two TP ranks.

    Column-parallel GEMMs (QKV, FC1) and row-parallel GEMMs (attention output,
    FC2) run on each rank's shard; the ``f`` and ``g`` operators mark where the
    tensor-parallel collectives fall. Without sequence parallelism ``g`` is an
    AllReduce in the forward pass and ``f`` one in the backward pass (two of each
    per layer); with it, ``g`` becomes a reduce-scatter (backward: all-gather) and
    ``f`` an all-gather (backward: reduce-scatter), and the replicated blocks hold
    1/t of the sequence.

    Parameters
    ----------
    sequence_parallel : bool
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.patches import Circle, FancyBboxPatch

    if not isinstance(sequence_parallel, (bool, np.bool_)):
        raise ValueError("sequence_parallel must be True or False; got "
                         f"{sequence_parallel!r}")
    ax = new_axes(ax, figsize=(10.5, 3.4))
    t, n = 2, len(_MEGATRON_STAGES)
    lanes = (1.0, 0.0)                       # y of rank 0 and rank 1
    if sequence_parallel:
        ops = {"f": ("all-gather", "reduce-scatter"),
               "g": ("reduce-scatter", "all-gather")}
    else:
        ops = {"f": ("—", "AllReduce"), "g": ("AllReduce", "—")}
    fwd_c, bwd_c = COLORS["comm"], COLORS["pcie"]
    for k, (text, kind) in enumerate(_MEGATRON_STAGES):
        x = float(k)
        if k:
            for y in lanes:
                ax.plot([x - 0.62, x - 0.38], [y, y], color="#999999", lw=1.0,
                        zorder=1)
        if kind in ("f", "g"):
            ax.add_patch(Circle((x, 0.5), 0.3, facecolor="white",
                                edgecolor=COLORS["model"], lw=1.5, zorder=3))
            ax.text(x, 0.5, kind, ha="center", va="center", fontsize=12,
                    fontstyle="italic", fontweight="bold", zorder=4)
            for y in lanes:
                ax.plot([x - 0.38, x + 0.38], [y, y], color="#999999", lw=1.0,
                        zorder=1)
            fwd, bwd = ops[kind]
            ax.text(x, -0.62, f"fwd: {fwd}", ha="center", va="top", fontsize=7.5,
                    color=fwd_c if fwd != "—" else "#777777")
            ax.text(x, -0.92, f"bwd: {bwd}", ha="center", va="top", fontsize=7.5,
                    color=bwd_c if bwd != "—" else "#777777")
        elif kind == "rep":
            label = text + ("\n(1/t of seq.)" if sequence_parallel and k else "")
            ax.add_patch(FancyBboxPatch((x - 0.4, -0.3), 0.8, 1.6,
                                        boxstyle="round,pad=0.02",
                                        facecolor="#eeeeee", edgecolor="#888888",
                                        zorder=2))
            # upright: the tall narrow box fits "(1/t of seq.)" only this way,
            # and neighbouring labels would run into each other
            ax.text(x, 0.5, label, ha="center", va="center", fontsize=7.5,
                    rotation=90, multialignment="center", zorder=3)
        else:
            for i, y in enumerate(lanes, start=1):
                ax.add_patch(FancyBboxPatch((x - 0.42, y - 0.28), 0.84, 0.56,
                                            boxstyle="round,pad=0.02",
                                            facecolor="#dfe9f5",
                                            edgecolor=COLORS["pcie"], zorder=2))
                ax.text(x, y, text.format(i=i, t=t), ha="center", va="center",
                        fontsize=7, zorder=3)
    for i, y in enumerate(lanes):
        ax.text(-0.62, y, f"GPU {i}", ha="right", va="center", fontsize=8.5)
    ax.text(-0.62, -0.77, "collective", ha="right", va="center", fontsize=8,
            color="#555555")
    ax.set_xlim(-1.5, n - 0.45)
    ax.set_ylim(-1.25, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _tp_rows(rows, width):
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == width for r in rows):
        raise ValueError(f"rows must be a non-empty sequence of {width}-tuples")
    return rows


def plot_tp_degree(rows, *, highlight=None, ax=None):
    """Per-layer compute and tensor-parallel communication for several TP degrees.

    Calling it again on an Axes it drew before updates the bars and texts in
    place (the TP explorer reuses one figure); a different number of rows
    redraws the Axes.

    Parameters
    ----------
    rows : sequence of (label, compute_time, comm_time, exposed_time, note)
        Per transformer layer and micro-batch, forward plus backward [s]:
        compute, TP communication before overlap, and the part of it left on the
        critical path (``0 <= exposed_time <= comm_time``); the hidden rest is
        drawn hatched inside the compute bar. ``note`` (str) is printed after the
        bar (e.g. "does not fit").
    highlight : int, optional
        Row to outline.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = _tp_rows(rows, 5)
    try:
        comp = np.array([float(r[1]) for r in rows])
        comm = np.array([float(r[2]) for r in rows])
        expo = np.array([float(r[3]) for r in rows])
    except (TypeError, ValueError):
        raise ValueError("rows: times must be numbers [s]") from None
    if not (np.all(np.isfinite(comp)) and np.all(comp > 0) and np.all(np.isfinite(comm))
            and np.all(comm >= 0) and np.all(expo >= 0)
            and np.all(expo <= comm * (1 + 1e-12))):
        raise ValueError("rows: compute_time must be > 0 and 0 <= exposed_time <= "
                         "comm_time [s]")
    if highlight is not None and (isinstance(highlight, bool) or highlight
                                  not in range(len(rows))):
        raise ValueError(f"highlight must be a row index in [0, {len(rows) - 1}] or "
                         f"None; got {highlight!r}")
    ms = 1e3
    hidden = np.minimum(comm - expo, comp)
    heads = [(f"{e / (c + e):.0%} exposed" if m > 0 else "no TP communication")
             + (f"; {r[4]}" if r[4] else "")
             for c, m, e, r in zip(comp, comm, expo, rows)]
    labels = [str(r[0]) for r in rows]
    state = getattr(ax, "_gpulab_tp_degree", None)
    if state is not None and state["n"] != len(rows):
        ax.cla()
        state = None
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    if state is None:               # build the artists once, then update in place
        state = {"n": len(rows), "labels": None}
        state["comp"] = ax.barh(y, comp * ms, color=COLORS["compute"],
                                label="compute")
        state["expo"] = ax.barh(y, expo * ms, left=comp * ms, color=COLORS["comm"],
                                label="TP communication, exposed")
        state["hidden"] = ax.barh(
            y, hidden * ms, left=(comp - hidden) * ms, height=0.5, fill=False,
            hatch="////", edgecolor=COLORS["comm"], lw=0,
            label="TP communication, hidden behind GEMMs")
        state["frame"] = ax.barh(0, 1, fill=False, edgecolor=COLORS["model"],
                                 lw=2.0)[0]
        state["texts"] = [ax.annotate("", (0, yi), xytext=(4, 0),
                                      textcoords="offset points", va="center",
                                      fontsize=8) for yi in y]
        ax.set_xlabel("Time per layer and micro-batch, forward + backward [ms]")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper center", ncol=3, fontsize=7.5, handlelength=1.5,
                  columnspacing=1.0, borderaxespad=0.1)
        ax.set_ylim(-0.6, len(rows) - 0.4 + 0.9)
        ax._gpulab_tp_degree = state
    for i in range(len(rows)):
        state["comp"][i].set_width(comp[i] * ms)
        state["expo"][i].set_x(comp[i] * ms)
        state["expo"][i].set_width(expo[i] * ms)
        state["hidden"][i].set_x((comp[i] - hidden[i]) * ms)
        state["hidden"][i].set_width(hidden[i] * ms)
        txt = state["texts"][i]
        txt.set_text(heads[i])
        txt.xy = ((comp[i] + expo[i]) * ms, y[i])
        txt.set_fontweight("bold" if i == highlight else "normal")
    frame = state["frame"]
    frame.set_visible(highlight is not None)
    if highlight is not None:
        frame.set_xy((0, y[highlight] - 0.4))
        frame.set_width((comp[highlight] + expo[highlight]) * ms)
    if labels != state["labels"]:
        ax.set_yticks(y, labels)
        state["labels"] = labels
    ax.set_xlim(0, float(np.max(comp + expo)) * ms * 1.6)
    return ax


def plot_tp_measured(rows, *, ax=None):
    """Measured against modelled: one TP layer's compute and its AllReduces.

    Parameters
    ----------
    rows : sequence of (label, measured_compute, measured_comm, model_compute, model_comm)
        Per transformer layer and micro-batch on one TP rank, forward plus
        backward [s]. Each row becomes two stacked bars, measured (solid) and
        model (hatched); the label notes the model's error on the total.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = _tp_rows(rows, 5)
    try:
        data = np.array([[float(v) for v in r[1:]] for r in rows])
    except (TypeError, ValueError):
        raise ValueError("rows: times must be numbers [s]") from None
    if not (np.all(np.isfinite(data)) and np.all(data[:, [0, 2]] > 0)
            and np.all(data >= 0)):
        raise ValueError("rows: compute times must be > 0 and comm times >= 0 [s]")
    ax = new_axes(ax, figsize=(7.0, 0.9 + 0.75 * len(rows)))
    ms, n = 1e3, len(rows)
    y_meas = np.arange(n)[::-1] * 2.6 + 1.0
    y_mod = y_meas - 0.9
    kw = {"height": 0.8}
    ax.barh(y_meas, data[:, 0] * ms, color=COLORS["compute"],
            label="compute, measured", **kw)
    ax.barh(y_meas, data[:, 1] * ms, left=data[:, 0] * ms, color=COLORS["comm"],
            label="4 AllReduces, measured", **kw)
    ax.barh(y_mod, data[:, 2] * ms, facecolor="white", edgecolor=COLORS["compute"],
            hatch="///", label="compute, model", **kw)
    ax.barh(y_mod, data[:, 3] * ms, left=data[:, 2] * ms, facecolor="white",
            edgecolor=COLORS["comm"], hatch="///", label="4 AllReduces, model",
            **kw)
    for ym, yo, d in zip(y_meas, y_mod, data):
        meas, mod = d[0] + d[1], d[2] + d[3]
        ax.annotate(f"comm {d[1] / d[0]:.0%} of compute", (meas * ms, ym),
                    xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
        ax.annotate(f"model {mod / meas - 1:+.0%}", (mod * ms, yo), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ticks = np.ravel(np.column_stack([y_meas, y_mod]))
    labels = np.ravel([[f"{r[0]}, measured", "model"] for r in rows])
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("Time per layer and micro-batch on one TP=2 rank, "
                  "forward + backward [ms]")
    ax.set_xlim(0, float(np.max(data[:, :2].sum(1).tolist()
                                + data[:, 2:].sum(1).tolist())) * ms * 1.3)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8)
    return ax

#: Colour of each part of a step (keys of parallelism.StepTime.components()).
_STEP_PARTS = (("compute", "compute", "compute"), ("tp_comm", "comm", "TP comm."),
               ("pp_comm", "ib", "PP comm."), ("dp_comm", "hbm", "DP comm."),
               ("bubble", "accent", "pipeline bubble"))
#: The expert-parallel all-to-all, drawn only when a row has EP > 1.
_STEP_PART_EP = ("ep_comm", "nvlink", "EP all-to-all")
#: The context-parallel key/value ring, drawn only when a row has CP > 1.
_STEP_PART_CP = ("cp_comm", "pcie", "CP key/value ring")


def plot_step_comparison(rows, *, ax=None):
    """Stacked horizontal bars of step time per system: compute, exposed TP, PP and
    DP communication and the pipeline bubble.

    Parameters
    ----------
    rows : sequence of (label, parallelism.StepTime)
        One bar per row, top to bottom; each is annotated with its throughput.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 2
                           and isinstance(r[1], par.StepTime) for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, StepTime) "
                         "tuples")
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    parts = _STEP_PARTS
    if any(r[1].ep > 1 for r in rows):
        parts = parts + (_STEP_PART_EP,)
    if any(r[1].layout.cp > 1 for r in rows):
        parts = parts + (_STEP_PART_CP,)
    for key, kind, name in parts:
        w = np.array([r[1].components().get(key, 0.0) for r in rows])
        ax.barh(y, w, left=left, color=COLORS[kind], label=name)
        left += w
    for yi, (_label, st) in zip(y, rows):
        ax.annotate(f"{st.total:.3g} s, {st.tokens_per_s / 1e3:.3g}k tokens/s",
                    (st.total, yi), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(y, [str(r[0]) for r in rows])
    ax.set_xlabel("Step time [s]")
    ax.set_xlim(0, float(left.max()) * 1.45)
    ax.grid(axis="y", visible=False)
    # above the Axes, one row: inside, it would cover a bar's end label
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(parts),
              fontsize=7.5, handlelength=1.5, columnspacing=1.2)
    return ax


def plot_speedup_slowdown(points=(), *, ax=None):
    """Speedup of the fast system against slowdown of the slow one, for the same pair.

    The curve is :func:`gpulab.parallelism.speedup` against
    :func:`gpulab.parallelism.slowdown` for step-time ratios from 1 to 4; the dotted
    diagonal is where the two would be equal (they never are, except at zero).

    Parameters
    ----------
    points : sequence of (label, t_fast, t_slow), optional
        Pairs of times [s] (or inverse throughputs) to mark on the curve.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    points = list(points)
    for p in points:
        if not (isinstance(p, tuple) and len(p) == 3):
            raise ValueError("points must be (label, t_fast, t_slow) tuples; got "
                             f"{p!r}"[:200])
    marks = [(str(lbl), 100 * par.slowdown(f, s), 100 * par.speedup(f, s))
             for lbl, f, s in points]
    ax = new_axes(ax)
    ratio = np.linspace(1.0, 4.0, 200)
    x = [100 * par.slowdown(1.0, r) for r in ratio]
    y = [100 * par.speedup(1.0, r) for r in ratio]
    ax.plot(x, y, color=COLORS["model"], label="speedup of the fast system")
    ax.plot([0, 75], [0, 75], ":", color="#888888", lw=1.2,
            label="if speedup were the slowdown")
    for lbl, sx, sy in marks:
        ax.plot([sx], [sy], "o", color=COLORS["nvlink"], ms=6, zorder=4)
        ax.plot([sx, sx], [sx, sy], "-", color=COLORS["comm"], lw=1.0)
        ax.annotate(f"{lbl}: slowdown {sx:.0f}%, speedup {sy:.0f}%", (sx, sy),
                    xytext=(-8, 8), textcoords="offset points", ha="right",
                    fontsize=8)
    ax.set_xlabel("Slowdown of the slow system, 1 − t_fast/t_slow [%]")
    ax.set_ylabel("Speedup, t_slow/t_fast − 1 [%]")
    ax.set_xlim(0, 75)
    ax.set_ylim(0, 300)
    ax.legend(loc="upper left")
    return ax


def plot_fp8_speedup(curves, points=(), *, ax=None):
    """BF16 time over FP8 time of one layer shard against its width per GPU.

    Parameters
    ----------
    curves : sequence of (label, widths, speedups)
        Model curves: hidden / TP [elements] and BF16 time / FP8 time, e.g. from
        :func:`gpulab.parallelism.fp8_speedup`.
    points : sequence of (label, widths, speedups, held_out), optional
        Measured points; ``held_out`` (a sequence of bool) draws the shapes the
        model's fit never saw as open markers.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    curves, points = list(curves), list(points)
    if not curves:
        raise ValueError("curves must hold at least one (label, widths, speedups)")
    for c in curves:
        if not (isinstance(c, tuple) and len(c) == 3 and len(c[1]) == len(c[2])):
            raise ValueError("curves must be (label, widths, speedups) tuples of "
                             f"equal lengths; got {c!r}"[:200])
    for p in points:
        if not (isinstance(p, tuple) and len(p) == 4
                and len(p[1]) == len(p[2]) == len(p[3])):
            raise ValueError("points must be (label, widths, speedups, held_out) "
                             f"tuples of equal lengths; got {p!r}"[:200])
    ax = new_axes(ax)
    palette = [COLORS["model"], COLORS["nvlink"], COLORS["comm"], "#7a5195"]
    for i, (lbl, x, y) in enumerate(curves):
        ax.plot(x, y, "-", color=palette[i % len(palette)], lw=1.8, label=lbl)
    markers = ["o", "s", "^", "D"]
    for i, (lbl, x, y, held) in enumerate(points):
        x, y, held = np.asarray(x, float), np.asarray(y, float), np.asarray(held, bool)
        col = palette[i % len(palette)]
        ax.plot(x[~held], y[~held], markers[i % 4], color=col, ms=6, ls="none",
                label=f"{lbl} (fit)")
        if held.any():
            ax.plot(x[held], y[held], markers[i % 4], mfc="white", mec=col, mew=1.5,
                    ms=7, ls="none", label=f"{lbl} (held out)")
    ax.axhline(1.0, color="#888888", lw=1.0, ls=":")
    ax.text(0.99, 1.0, "FP8 as fast as BF16 ", transform=ax.get_yaxis_transform(),
            ha="right", va="bottom", fontsize=8, color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("Hidden size per GPU, h / TP [elements]")
    ax.set_ylabel("BF16 time / FP8 time [ratio]")
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_roi(roi, *, labels=("NVLink", "PCIe"), currency="USD", ax=None):
    """Cost and length of one training project on the fast and the slow system.

    Calling it again on the same Axes updates the bars and labels in place (the
    ROI explorer redraws this way).

    Parameters
    ----------
    roi : parallelism.ROI
        From :func:`gpulab.parallelism.nvlink_roi`.
    labels : (str, str)
        Names of the fast and the slow system.
    currency : str
        Currency of the prices the ROI was computed with (axis label only).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not isinstance(roi, par.ROI):
        raise ValueError(f"roi must be a parallelism.ROI; got {roi!r}"[:200])
    if not (isinstance(labels, (tuple, list)) and len(labels) == 2):
        raise ValueError(f"labels must be two strings; got {labels!r}")
    cost = np.array([roi.cost_fast, roi.cost_slow])
    days = np.array([roi.project_s_fast, roi.project_s_slow]) / 86400.0
    k = 1e3 if cost.max() < 1e7 else 1e6
    unit = "thousand" if k == 1e3 else "million"
    width = cost / k
    texts = [f"{c:,.4g} {unit} {currency}, {d:.3g} days" for c, d in
             zip(width, days)]
    key = tuple(str(x) for x in labels)
    y = np.array([1, 0])
    ax = new_axes(ax)
    old = cached_artists(ax, "roi", 2)
    if old is None:
        ax.clear()
        bars = ax.barh(y, width, color=[COLORS["nvlink"], COLORS["pcie"]],
                       height=0.55)
        notes = [ax.annotate(t, (w, yi), xytext=(4, 0), textcoords="offset points",
                             va="center", fontsize=8.5)
                 for yi, w, t in zip(y, width, texts)]
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))
        remember_artists(ax, "roi", 2, (bars, notes), bars[0])
    else:
        bars, notes = old
        for b, txt, yi, w, t in zip(bars, notes, y, width, texts):
            b.set_width(w)
            txt.xy = (w, yi)
            txt.set_text(t)
    if [t.get_text() for t in ax.get_yticklabels()] != list(key):
        ax.set_yticks(y, list(key))
    ax.set_xlabel(f"Project cost [{unit} {currency}]")
    ax.set_xlim(0, float(width.max()) * 1.7)
    return ax


def plot_power_clock(fit, *, limits=(), ax=None):
    """SM clock and board power against the number of busy SMs, each as a fraction of its
    ceiling (the top clock, the board's limit): the sweep's points (``fit`` from
    :func:`gpulab.parallelism.power_clock_fit`) and the fitted model.

    Parameters
    ----------
    fit : dict
        :func:`gpulab.parallelism.power_clock_fit`'s result.
    limits : sequence of (label, watts), optional
        Other board limits whose modelled clock curve is drawn dashed.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    need = {"free", "fit", "held_out", "limit_w", "top_mhz"}
    if not isinstance(fit, dict) or not need <= set(fit):
        raise ValueError(f"fit must be power_clock_fit()'s dict (keys {sorted(need)})")
    limits = list(limits)
    for item in limits:
        ok = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
        if not ok:
            raise ValueError(f"limits must be (label, watts) tuples; got {item!r}"[:200])
    ax = new_axes(ax)
    top, lim = fit["top_mhz"], fit["limit_w"]
    k = np.linspace(2, 132, 200)
    pw, clk = par.power_clock_curve(k)
    clock_col, power_col = COLORS["model"], COLORS["comm"]
    ax.plot(k, clk / top, "-", color=clock_col, lw=1.8,
            label=f"model: SM clock / {top:.0f} MHz")
    ax.plot(k, pw / lim, "-", color=power_col, lw=1.4,
            label=f"model: board power / {lim:.0f} W")
    for lbl, w in limits:
        ax.plot(k, par.power_clock_curve(k, w)[1] / top, "--", color=clock_col, lw=1.4,
                label=f"model: SM clock at a {lbl} limit")
    groups = (("free", True, "under the limit"), ("fit", True, "at the limit, fitted"),
              ("held_out", False, "at the limit, held out"))
    for key, filled, lbl in groups:
        pts = np.asarray(fit[key], float).reshape(-1, 3)
        kw = {} if filled else {"mfc": "white", "mew": 1.5}
        mk = "o" if key == "free" else "s"
        ax.plot(pts[:, 0], pts[:, 2] / top, mk, color=clock_col, mec=clock_col, ms=6,
                ls="none", label=f"measured, {lbl}", **kw)
        ax.plot(pts[:, 0], pts[:, 1] / lim, mk, color=power_col, mec=power_col, ms=5,
                ls="none", **kw)
    ax.set_xlabel("Busy SMs, BF16 tensor-core tiles [SMs]")
    ax.set_ylabel("Share of top clock or of limit [ratio]")
    ax.set_xlim(0, 136)
    ax.set_ylim(0, 1.45)
    ax.legend(loc="upper left", fontsize=7.5, ncol=2)
    return ax
