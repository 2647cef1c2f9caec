"""Figures of the collectives topic: step-by-step schedules, predicted busbw/time,
measured-vs-model comparisons and per-algorithm curves.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .._validate import check_choice, check_int
from .style import (COLORS, check_prediction, check_rates, remember_artists, sentinel_patch,
                    cached_artists, bytes_axis, end_labels_clear_of_lines,
                    legend_clear_of_lines, new_axes)
from .. import collectives, units
from .. import collectives as C


#: Algorithms that :func:`plot_collective_steps` can draw.
STEP_ALGORITHMS = ("ring", "tree", "nvls", "direct")
_CHUNK_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759",
                 "#76b7b2", "#edc948", "#9c755f")
_RANK_LETTERS = "abcdefgh"


def _collective_schedule(algorithm, n):
    """Steps of an all_reduce on ``n`` ranks, for drawing.

    Returns ``[(phase, transfers, state), ...]``, the first entry being the
    initial state. ``state[g][c]`` is the frozenset of ranks whose data GPU
    ``g``'s chunk ``c`` holds; a transfer is ``(src, dst, chunk, op)`` with
    ``src``/``dst`` a rank or ``"switch"``, ``chunk`` an index or ``None``
    (the whole buffer) and ``op`` ``"reduce"`` or ``"copy"``.
    """
    state = [[frozenset([g]) for _ in range(n)] for g in range(n)]
    full = frozenset(range(n))
    out = [("initial", [], [row[:] for row in state])]

    def apply(phase, transfers):
        old = [row[:] for row in state]
        for src, dst, c, op in transfers:
            if src == "switch" or dst == "switch":
                continue
            chunks = range(n) if c is None else [c]
            for k in chunks:
                state[dst][k] = (state[dst][k] | old[src][k]) if op == "reduce" \
                    else old[src][k]
        out.append((phase, transfers, [row[:] for row in state]))

    if algorithm == "ring":
        for s in range(n - 1):
            apply("reduce-scatter",
                  [(g, (g + 1) % n, (g - s) % n, "reduce") for g in range(n)])
        for s in range(n - 1):
            apply("all-gather",
                  [(g, (g + 1) % n, (g + 1 - s) % n, "copy") for g in range(n)])
    elif algorithm == "tree":
        levels = max(1, int(np.ceil(np.log2(n))))
        for k in range(levels):
            apply("reduce up", [(r, r - 2 ** k, None, "reduce")
                                for r in range(n) if r % 2 ** (k + 1) == 2 ** k])
        for k in reversed(range(levels)):
            apply("broadcast down",
                  [(r, r + 2 ** k, None, "copy") for r in range(n)
                   if r % 2 ** (k + 1) == 0 and r + 2 ** k < n])
    elif algorithm == "direct":
        apply("one shot", [(src, dst, None, "reduce") for dst in range(n)
                           for src in range(n) if src != dst])
    else:                                     # nvls: ld_reduce, then multicast
        tr = [(g, "switch", None, "reduce") for g in range(n)]
        tr += [("switch", g, g, "copy") for g in range(n)]
        for g in range(n):
            state[g][g] = full
        out.append(("reduce in switch", tr, [row[:] for row in state]))
        tr = [(g, "switch", g, "copy") for g in range(n)]
        tr += [("switch", g, None, "copy") for g in range(n)]
        for g in range(n):
            state[g] = [full] * n
        out.append(("multicast", tr, [row[:] for row in state]))
    return out


_PHASE_WORDS = {
    "initial": "start: each GPU holds its own buffer",
    "reduce-scatter": "reduce-scatter",
    "all-gather": "all-gather",
    "reduce up": "reduce up the tree",
    "broadcast down": "broadcast down the tree",
    "one shot": "one shot: read every peer, add",
    "reduce in switch": "the switch adds, returns one chunk each",
    "multicast": "the switch multicasts each chunk",
}


def _draw_step_panel(ax, n, transfers, state, x0, y0, label):
    """One step of a schedule, its top-left corner at data point (x0, y0)."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    box_w, gap, cell_h, head = _STEP_BOX
    box_h = n * cell_h + head + 0.08
    top = y0 - 0.3 - _ARC_ROOM          # step label, then room for arcs
    bottom = top - box_h
    full = frozenset(range(n))
    xs = [x0 + g * (box_w + gap) for g in range(n)]
    mid = top - head - n * cell_h / 2

    def cell_y(c):                      # centre of chunk c's cell
        return top - head - (c + 0.5) * cell_h

    ax.text(x0, y0, label, fontsize=8, va="top", ha="left", color="#222222",
            fontweight="bold")
    for g in range(n):
        ax.add_patch(FancyBboxPatch(
            (xs[g], bottom), box_w, box_h,
            boxstyle="round,pad=0.02,rounding_size=0.08", fc="white",
            ec=COLORS["model"], lw=1.0, zorder=2))
        ax.text(xs[g] + box_w / 2, top - head / 2 - 0.02, f"GPU{g}",
                ha="center", va="center", fontsize=7, zorder=3)
        for c in range(n):
            have = state[g][c]
            ax.add_patch(Rectangle(
                (xs[g] + 0.08, cell_y(c) - cell_h / 2 + 0.03), box_w - 0.16,
                cell_h - 0.06, fc=_CHUNK_COLORS[c],
                alpha=0.2 + 0.8 * len(have) / n,
                ec=COLORS["model"] if have == full else "none", lw=1.2,
                zorder=3))
            text = "Σ" if have == full else \
                "".join(_RANK_LETTERS[r] for r in sorted(have))
            ax.text(xs[g] + box_w / 2, cell_y(c), text, ha="center",
                    va="center", fontsize=6.5, zorder=4,
                    color="white" if have == full else "#222222",
                    fontweight="bold" if have == full else "normal")
    sw_top = bottom - 0.45
    if any("switch" in (s, d) for s, d, _c, _o in transfers):
        ax.add_patch(FancyBboxPatch(
            (xs[0], sw_top - 0.42), xs[-1] + box_w - xs[0], 0.42,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            fc="#dcebcf", ec=COLORS["nvlink"], lw=1.0, zorder=2))
        ax.text((xs[0] + xs[-1] + box_w) / 2, sw_top - 0.21,
                "NVSwitch: ALUs add, multicast copies", ha="center",
                va="center", fontsize=7, color="#2d5a0b", zorder=3)
    for src, dst, c, op in transfers:
        kw = dict(arrowstyle="-|>,head_length=3,head_width=1.8",
                  color=COLORS["model"] if c is None else _CHUNK_COLORS[c],
                  lw=1.1, ls="-" if op == "reduce" else "--", zorder=5,
                  shrinkA=0, shrinkB=0)
        if "switch" in (src, dst):
            g = dst if src == "switch" else src
            xm = xs[g] + box_w / 2 + (0.2 if src == "switch" else -0.2)
            a, b = (xm, bottom), (xm, sw_top)
            ax.add_patch(FancyArrowPatch(*((b, a) if src == "switch"
                                           else (a, b)), **kw))
            continue
        right = dst > src
        if abs(src - dst) == 1:          # neighbours: straight
            y = cell_y(c) if c is not None else mid + (0.1 if right else -0.1)
            xa = xs[src] + (box_w if right else 0)
            xb = xs[dst] + (0 if right else box_w)
            ax.add_patch(FancyArrowPatch((xa, y), (xb, y), **kw))
            continue
        # farther: rightward arcs over the boxes, leftward arcs under them
        dx = xs[dst] - xs[src]
        y = top + 0.02 if right else bottom - 0.02
        rad = min(0.3, 1.6 * _ARC_ROOM / abs(dx))
        ax.add_patch(FancyArrowPatch(
            (xs[src] + box_w / 2 + (0.12 if right else -0.12), y),
            (xs[dst] + box_w / 2, y),
            connectionstyle=f"arc3,rad={-rad}", **kw))


def _draw_step_key(ax, n, x0, y0):
    """How to read :func:`plot_collective_steps`, in an empty grid slot."""
    from matplotlib.patches import FancyArrowPatch

    letters = ", ".join(_RANK_LETTERS[:n])
    rows = [
        (None, f"{letters}: the data of GPU0 … GPU{n - 1}"),
        (None, f"{_RANK_LETTERS[:2]}: the sum of {_RANK_LETTERS[0]} and "
               f"{_RANK_LETTERS[1]} so far"),
        (None, "Σ (outlined): the complete sum"),
        ("-", "arrow: the receiver adds what arrives"),
        ("--", "dashed: the receiver stores a copy"),
        (None, "colour: one chunk; black: the whole buffer"),
    ]
    y = y0 - 0.2
    ax.text(x0, y0, "How to read the panels", fontsize=8, va="top",
            fontweight="bold", color="#222222")
    for ls, text in rows:
        y -= 0.42
        if ls is not None:
            ax.add_patch(FancyArrowPatch(
                (x0, y), (x0 + 0.8, y), arrowstyle="-|>,head_length=3,"
                "head_width=1.8", color=COLORS["model"], lw=1.1, ls=ls))
        ax.text(x0 + (1.0 if ls else 0.0), y, text, fontsize=7.5,
                va="center", color="#222222")


_STEP_BOX = (1.0, 0.75, 0.36, 0.34)    # box width, gap, cell height, header
_ARC_ROOM = 0.5


def plot_collective_steps(algorithm, n_ranks=4, *, step=None, ax=None):
    """Draw an all_reduce step by step: GPUs, chunks and the transfers of each step.

    Each GPU is a box holding its buffer cut into ``n_ranks`` chunks (one
    colour per chunk). A cell's letters name the GPUs whose data it already
    sums (``a`` = GPU0's, ``b`` = GPU1's...); ``Σ`` marks a fully reduced
    chunk. Arrows are the transfers of the step: solid = the receiver adds
    what arrives, dashed = it stores a copy; coloured = one chunk, black = the
    whole buffer.

    Parameters
    ----------
    algorithm : {"ring", "tree", "nvls", "direct"}
        ``ring``: reduce-scatter then all-gather, ``2(n-1)`` steps; ``tree``:
        reduce up a binary tree then broadcast down (NCCL runs two such trees,
        each on half of the buffer, and pipelines them); ``nvls``: the
        NVSwitch reduces and multicasts; ``direct``: every GPU reads every
        peer's buffer at once (one-shot).
    n_ranks : int
        GPUs, 2-8.
    step : int, optional
        Draw only this step (0 = the initial state); default all steps, as
        small multiples in reading order.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_choice("algorithm", algorithm, STEP_ALGORITHMS)
    n = check_int("n_ranks", n_ranks, low=2, high=len(_RANK_LETTERS))
    sched = _collective_schedule(algorithm, n)
    last = len(sched) - 1
    if step is not None:
        step = check_int("step", step, low=0, high=last)
        panels = [step]
    else:
        panels = list(range(len(sched)))
    ncols = 1 if len(panels) == 1 else 2
    nrows = -(-len(panels) // ncols)
    box_w, gap, cell_h, head = _STEP_BOX
    panel_w = n * box_w + (n - 1) * gap
    below = 1.0 if algorithm == "nvls" else _ARC_ROOM
    panel_h = 0.3 + _ARC_ROOM + n * cell_h + head + 0.08 + below + 0.35
    col_w = panel_w + 0.9
    ax = new_axes(ax, figsize=(min(10.0, 1.0 * ncols * col_w),
                               0.9 * nrows * panel_h))
    for i, k in enumerate(panels):
        _phase, transfers, state = sched[k]
        label = _PHASE_WORDS["initial"] if k == 0 else \
            f"step {k} of {last}: {_PHASE_WORDS[_phase]}"
        r, c = divmod(i, ncols)
        _draw_step_panel(ax, n, transfers, state, c * col_w, -r * panel_h,
                         label)
    if len(panels) < nrows * ncols:                  # an empty slot: the key
        _draw_step_key(ax, n, (ncols - 1) * col_w, -(nrows - 1) * panel_h)
    ax.set_xlim(-0.15, (ncols - 1) * col_w + panel_w + 0.15)
    ax.set_ylim(-nrows * panel_h + 0.3, 0.1)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


_ALGO_COLORS = {"ring": COLORS["pcie"], "tree": COLORS["ib"],
                "direct": COLORS["hbm"], "nvls": COLORS["nvlink"],
                "nvlstree": COLORS["comm"], "collnet": COLORS["model"],
                "none": COLORS["compute"]}


def _metric_values(prediction, metric):
    if metric == "busbw":
        return prediction.busbw / units.GB
    return prediction.time / units.US


def plot_collective_prediction(prediction, *, message_bytes=None, metric="busbw",
                               line_rate=None, ax=None):
    """A predicted nccl-tests curve, coloured by the algorithm chosen per size.

    Calling it again on the same Axes with the same number of sizes updates
    the artists in place (the explorer's redraw); axis limits snap to round
    values so that they change rarely.

    Parameters
    ----------
    prediction : gpulab.collectives.Prediction
        From :func:`gpulab.collectives.predict` over several sizes.
    message_bytes : numeric, optional
        One of the prediction's sizes, marked and labelled. [B]
    metric : {"busbw", "time"}
        busbw [GB/s] on a linear axis, or time per call [µs] on a log axis.
    line_rate : units.Bandwidth, optional
        Per-direction line rate drawn as a dashed line (busbw only).

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_prediction(prediction)
    check_choice("metric", metric, ("busbw", "time"))
    if line_rate is not None and (not isinstance(line_rate, units.Bandwidth)
                                  or line_rate.direction != units.PER_DIRECTION):
        raise ValueError("line_rate must be a per-direction gpulab.units."
                         f"Bandwidth or None; got {line_rate!r}")
    s = prediction.message_bytes
    y = _metric_values(prediction, metric)
    mark = None
    if message_bytes is not None:
        hit = np.flatnonzero(np.isclose(s, float(message_bytes), rtol=1e-12))
        if not hit.size:
            raise ValueError("message_bytes must be one of the prediction's "
                             f"sizes; got {message_bytes!r}")
        mark = int(hit[0])
    ax = new_axes(ax)
    old = cached_artists(ax, "collective_prediction", s.size)
    if old is None:
        ax.clear()
        base, = ax.plot(s, y, "-", color=COLORS["compute"], lw=1.0, alpha=0.5,
                        zorder=2)
        dots = {a: ax.plot([], [], "o", ms=3.8, color=c, zorder=3,
                           label=a)[0] for a, c in _ALGO_COLORS.items()}
        marker, = ax.plot([], [], "o", ms=11, mfc="none", mec=COLORS["accent"],
                          mew=2.2, zorder=4)
        note = ax.annotate("", (s[0], y[0]), xytext=(9, -6),
                           textcoords="offset points", fontsize=8,
                           color="#7a5a00", zorder=5, va="top", ha="left")
        rate = ax.axhline(0, color=COLORS["model"], ls="--", lw=1, zorder=1)
        rate_note = ax.text(0, 0, "", fontsize=8, va="bottom", ha="left",
                            color=COLORS["model"])
        bytes_axis(ax.xaxis)
        ax.set_xlabel("Message size S [B, binary prefixes]")
        art = {"base": base, "dots": dots, "marker": marker, "note": note,
               "rate": rate, "rate_note": rate_note}
        remember_artists(ax, "collective_prediction", s.size, art, sentinel_patch(ax))
    else:
        art = old
        art["base"].set_data(s, y)
    scale = "linear" if metric == "busbw" else "log"
    if ax.get_yscale() != scale:
        ax.set_yscale(scale)
    ax.set_ylabel("busbw [GB/s]" if metric == "busbw" else "Time per call [µs]")
    handles = []
    for a, line in art["dots"].items():
        sel = prediction.algorithm == a
        line.set_data(s[sel], y[sel])
        if sel.any():
            protos = dict.fromkeys(prediction.protocol[sel])
            line.set_label(f"{a} ({', '.join(protos)})")
            handles.append(line)
    marker, note = art["marker"], art["note"]
    if mark is not None:
        marker.set_data([s[mark]], [y[mark]])
        value = (f"{y[mark]:.1f} GB/s" if metric == "busbw"
                 else units.fmt_time(prediction.time[mark]))
        note.set_text(f"{units.fmt_bytes(s[mark])}: {value}\n"
                      f"{prediction.algorithm[mark]}/"
                      f"{prediction.protocol[mark]}")
        note.xy = (s[mark], y[mark])
    marker.set_visible(mark is not None)
    note.set_visible(mark is not None)
    show_rate = line_rate is not None and metric == "busbw"
    art["rate"].set_visible(show_rate)
    art["rate_note"].set_visible(show_rate)
    top = float(np.nanmax(y))
    if show_rate:
        r = line_rate.gb_per_s
        art["rate"].set_ydata([r, r])
        art["rate_note"].set_position((s[0], r))
        art["rate_note"].set_text(f"line rate: {r:.0f} GB/s per direction")
        top = max(top, r)
    ax.set_xlim(s[0] / 1.6, s[-1] * 1.6)
    if metric == "busbw":                 # round up to a multiple of 50 GB/s
        ax.set_ylim(0, 50.0 * np.ceil(top * 1.12 / 50.0) if top > 0 else 1.0)
    else:                                 # whole decades of µs
        lo = float(np.nanmin(y))
        ax.set_ylim(10.0 ** np.floor(np.log10(lo / 1.5)),
                    10.0 ** np.ceil(np.log10(top * 2.5)))
    if mark is not None:
        _place_note(ax, note, s[mark], y[mark], right=mark < 0.75 * s.size,
                    avoid_y=line_rate.gb_per_s if show_rate else None)
    labels = [h.get_label() for h in handles]
    loc = "center left" if metric == "busbw" else "upper left"
    leg = ax.get_legend()
    if leg is None or [t.get_text() for t in leg.texts] != labels \
            or leg._loc != leg.codes[loc]:
        leg = ax.legend(handles=handles, fontsize=8, title_fontsize=8, loc=loc,
                        title="algorithm (protocols) NCCL would pick")
        leg.set_zorder(6)
    return ax


def _place_note(ax, note, x, y, *, right, avoid_y=None):
    """Put the marked point's note beside it, clear of the tick labels.

    Below the point, to its right (left for the last quarter of the sizes); above
    it where the note would hang out of the Axes or be crossed by the line at
    ``avoid_y`` (data units), on the side with room (the curve rises to the right).
    """
    fx, fy = (ax.transScale + ax.transLimits).transform((x, y))
    pt = 72.0 / ax.figure.dpi
    room_below = fy * ax.bbox.height * pt           # [points] down to the x axis
    need = 6 + 2 * 1.25 * note.get_fontsize()       # offset plus two lines
    if avoid_y is not None and avoid_y <= y:        # the line under the point
        fl = (ax.transScale + ax.transLimits).transform((x, avoid_y))[1]
        room_below = min(room_below, (fy - fl) * ax.bbox.height * pt - 2)
    if room_below >= need:
        dx, dy, va = (9 if right else -9), -6, "top"
    else:
        right = fx * ax.bbox.width * pt < 110       # no room on the left
        dx, dy, va = (9 if right else -9), 6, "bottom"
    note.set_position((dx, dy))
    note.set_ha("left" if dx > 0 else "right")
    note.set_va(va)


def plot_collective_comparison(measured=None, predicted=None, *, metric="busbw",
                               line_rate=None, colors=None, markers=None,
                               ax=None):
    """Measured points beside model curves; the same label shares a colour.

    Parameters
    ----------
    measured : dict, optional
        ``{label: (sizes, values)}``: sizes [B] and busbw [B/s] (metric
        ``busbw``) or time per call [s] (metric ``time``).
    predicted : dict, optional
        ``{label: gpulab.collectives.Prediction}``, drawn as lines.
    metric : {"busbw", "time"}
    line_rate : units.Bandwidth, optional
        Per-direction line rate, a dashed line (busbw only).
    colors : dict, optional
        ``{label: colour}``; other labels take colours in turn.
    markers : dict, optional
        ``{label: matplotlib marker}`` for measured points (default ``"o"``).

    The legend sits inside for busbw, at the first corner the line rate does not
    cross; for time (curves that span decades) it sits below the Axes.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.lines import Line2D
    measured = dict(measured or {})
    predicted = dict(predicted or {})
    if not measured and not predicted:
        raise ValueError("measured or predicted must hold at least one series")
    check_choice("metric", metric, ("busbw", "time"))
    for label, p in predicted.items():
        if not isinstance(p, collectives.Prediction):
            raise ValueError(f"predicted[{label!r}] must be a gpulab.collectives."
                             "Prediction")
    for label, v in measured.items():
        if isinstance(v, str) or len(v) != 2 \
                or np.shape(v[0]) != np.shape(v[1]) or np.size(v[0]) < 1:
            raise ValueError(f"measured[{label!r}] must be (sizes, values) of "
                             "equal length")
    if line_rate is not None and (not isinstance(line_rate, units.Bandwidth)
                                  or line_rate.direction != units.PER_DIRECTION):
        raise ValueError("line_rate must be a per-direction gpulab.units."
                         f"Bandwidth or None; got {line_rate!r}")
    palette = [COLORS["nvlink"], COLORS["pcie"], COLORS["ib"], COLORS["hbm"],
               COLORS["comm"], COLORS["accent"], COLORS["compute"], "#6f9fd8"]
    colors = dict(colors or {})
    marks = dict(markers or {})
    labels = list(dict.fromkeys([*predicted, *measured]))
    free = iter(c for c in palette if c not in colors.values())
    for label in labels:
        if label not in colors:
            colors[label] = next(free, COLORS["model"])
    scale = units.GB if metric == "busbw" else units.US
    ax = new_axes(ax)
    handles = []
    for label in labels:
        c = colors[label]
        has_p, has_m = label in predicted, label in measured
        if has_p:
            p = predicted[label]
            ax.plot(p.message_bytes, _metric_values(p, metric), "-", color=c,
                    lw=1.4, alpha=0.85)
        if has_m:
            s, v = (np.asarray(x, dtype=float) for x in measured[label])
            ax.plot(s, v / scale, ls="none", marker=marks.get(label, "o"),
                    color=c, ms=4.5, mew=1.3)
        handles.append(Line2D([], [], color=c, lw=1.4 if has_p else 0,
                              marker=marks.get(label, "o") if has_m else None,
                              ms=4.5, mew=1.3, label=label))
    if line_rate is not None and metric == "busbw":
        r = line_rate.gb_per_s
        ax.axhline(r, color=COLORS["model"], ls="--", lw=1)
        handles.append(Line2D([], [], color=COLORS["model"], ls="--", lw=1,
                              label=f"line rate: {r:.0f} GB/s per direction"))
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Message size S [B, binary prefixes]")
    if metric == "busbw":
        ax.set_ylabel("busbw [GB/s]")
        ax.set_ylim(bottom=0)
    else:
        ax.set_yscale("log")
        ax.set_ylabel("Time per call [µs]")
    legend = dict(handles=handles, fontsize=8, title="points: measured; lines: model",
                  title_fontsize=8)
    if metric == "busbw":        # inside, where the line rate does not cross it
        legend_clear_of_lines(ax, ["upper left", "center left", "lower right",
                                   ("upper center", (0.5, -0.2))], **legend)
    else:                        # times span decades: below the Axes, off every curve
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, **legend)
    return ax


def plot_busbw_curves(curves, *, line_rates=(), ax=None):
    """nccl-tests bus bandwidth against message size, one line per prediction.

    Parameters
    ----------
    curves : sequence of (label, collectives.Prediction, kind) or
        (label, Prediction, kind, linestyle)
        ``kind`` is a key of :data:`COLORS`.
    line_rates : sequence of (label, units.Bandwidth, kind), optional
        Per-direction reference rates drawn as dashed horizontal lines.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    curves = list(curves)
    if not curves:
        raise ValueError("curves must be a non-empty sequence of (label, Prediction, "
                         "kind)")
    rates = check_rates(line_rates, "line_rates")
    ax = new_axes(ax)
    top = 0.0
    for item in curves:
        if not (isinstance(item, tuple) and len(item) in (3, 4)
                and isinstance(item[1], C.Prediction)):
            raise ValueError("curves must be (label, Prediction, kind[, linestyle]) "
                             f"tuples; got {item!r}"[:200])
        label, p, kind = item[:3]
        check_choice("kind", kind, COLORS)
        ls = item[3] if len(item) == 4 else "-"
        y = np.asarray(p.busbw) / units.GB
        ax.plot(p.message_bytes, y, ls, color=COLORS[kind], label=str(label))
        top = max(top, float(y.max()))
    x0 = min(float(np.min(item[1].message_bytes)) for item in curves)
    for label, bw, kind in rates:
        ax.axhline(bw.gb_per_s, color=COLORS[kind], lw=1.0, ls="--", alpha=0.8)
        ax.text(x0, bw.gb_per_s, f" {label}", fontsize=7.5, va="bottom",
                color=COLORS[kind])
        top = max(top, bw.gb_per_s)
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Message size S [bytes]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    ax.set_ylim(0, top * 1.12)
    ax.legend(loc="center left")
    return ax


def plot_fabric_algorithms(rows, *, line_rates=(), highlight=None, ax=None):
    """Horizontal bars of predicted busbw per algorithm, with per-direction line rates.

    Calling it again on the same Axes with the same row labels updates the bars,
    texts and lines in place (the fabric explorer redraws this way).

    Parameters
    ----------
    rows : sequence of (label, time, busbw, note)
        ``time`` [s] and ``busbw`` [B/s, per direction] of one algorithm, or
        ``None`` for both where it does not apply (``note`` says why).
    line_rates : sequence of (label, units.Bandwidth, kind), at most two
        Per-direction line rates drawn as dashed vertical lines.
    highlight : int, optional
        Row to outline (NCCL's choice).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 4 for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, time, busbw, "
                         "note) tuples")
    gb, texts = [], []
    for label, t, bb, note in rows:
        if (t is None) != (bb is None):
            raise ValueError(f"rows: {label!r} needs both time and busbw, or neither")
        if t is None:
            gb.append(0.0)
            texts.append(note if note else "n/a")
            continue
        t, bb = float(t), float(bb)
        if not (np.isfinite(t) and t > 0 and np.isfinite(bb) and bb >= 0):
            raise ValueError(f"rows: {label!r} needs time > 0 [s] and busbw >= 0 "
                             f"[B/s]; got {t!r}, {bb!r}")
        gb.append(bb / units.GB)
        texts.append(f"{units.fmt_time(t)}, {bb / units.GB:.3g} GB/s"
                     + (f" ({note})" if note else ""))
    rates = check_rates(line_rates, "line_rates")
    if len(rates) > 2:
        raise ValueError("line_rates: at most two")
    if highlight is not None:
        highlight = check_int("highlight", highlight, low=0, high=len(rows) - 1)
    ax = new_axes(ax)
    key = tuple(str(r[0]) for r in rows)
    y = np.arange(len(rows))[::-1]
    old = cached_artists(ax, "fabric_algorithms", key)
    if old is None:
        ax.clear()
        bars = ax.barh(y, gb, color=COLORS["nvlink"])
        labels = [ax.annotate(s, (v, yi), xytext=(4, 0), textcoords="offset points",
                              va="center", fontsize=8, zorder=4)
                  for yi, v, s in zip(y, gb, texts)]
        lines = [ax.axvline(0, ls="--", lw=1.2, visible=False, zorder=1, alpha=0.7)
                 for _ in range(2)]
        tags = [ax.text(0, 1.01, "", fontsize=7, va="bottom", ha="left",
                        transform=ax.get_xaxis_transform()) for _ in range(2)]
        ax.set_yticks(y, list(key))
        ax.set_xlabel("busbw [GB/s, per direction]")
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))     # few tick labels: fast redraw
        remember_artists(ax, "fabric_algorithms", key, (bars, labels, lines, tags), bars[0])
    else:
        bars, labels, lines, tags = old
        for b, txt, yi, v, s in zip(bars, labels, y, gb, texts):
            b.set_width(v)
            txt.xy = (v, yi)
            txt.set_text(s)
    for i, (b, txt) in enumerate(zip(bars, labels)):
        on = i == highlight
        b.set_edgecolor(COLORS["accent"] if on else "none")
        b.set_linewidth(3.0 if on else 0.0)
        txt.set_fontweight("bold" if on else "normal")
        txt.set_color("#222222" if gb[i] > 0 else "#777777")
    top = max(gb + [1e-9])
    for i, (line, tag) in enumerate(zip(lines, tags)):
        if i < len(rates):
            label, bw, kind = rates[i]
            line.set_xdata([bw.gb_per_s, bw.gb_per_s])
            line.set_color(COLORS[kind])
            line.set_visible(True)
            tag.set_position((bw.gb_per_s, 1.01))
            tag.set_text(f"{label}, {bw.gb_per_s:.3g} GB/s")
            tag.set_color(COLORS[kind])
            tag.set_visible(True)
            top = max(top, bw.gb_per_s)
        else:
            line.set_visible(False)
            tag.set_visible(False)
    ax.set_xlim(0, top * 1.6)
    end_labels_clear_of_lines(ax, labels)
    return ax
