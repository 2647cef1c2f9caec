"""Figures of the network topic: a collective across nodes, predicted per message size
with the algorithm NCCL would pick, beside published multi-node measurements.

matplotlib only; the numbers come from :mod:`gpulab.network` and
:func:`gpulab.collectives.predict`.
"""
from __future__ import annotations

import numpy as np

from .. import units
from .._validate import check_choice
from .style import (COLORS, bytes_axis, cached_artists, check_prediction, check_rates, curve_arrays,
                    legend_clear_of_lines, new_axes, remember_artists, sentinel_patch)

#: Colour per multi-node algorithm (and "direct", alltoall's).
NETWORK_ALGO_COLORS = {"ring": COLORS["pcie"], "tree": COLORS["ib"],
                       "nvlstree": COLORS["nvlink"], "collnet": COLORS["hbm"],
                       "direct": COLORS["comm"]}


def plot_scale_out(prediction, *, message_bytes=None, published=None, line_rates=(),
                   ax=None):
    """Predicted busbw of a collective across nodes over message sizes, coloured by
    the algorithm NCCL would pick, with published measurements overlaid.

    Calling it again on the same Axes with the same number of sizes and line rates
    updates the artists in place (the network explorer's redraw).

    Parameters
    ----------
    prediction : gpulab.collectives.Prediction
        From :func:`gpulab.collectives.predict` over at least two sizes.
    message_bytes : numeric, optional
        One of the prediction's sizes, marked and labelled. [B]
    published : tuple of (label, sizes, busbw), optional
        Measured points to overlay: sizes [B] and busbw [B/s] of the same length.
    line_rates : sequence of (label, units.Bandwidth, kind)
        Per-direction rates drawn as dashed lines (``kind`` picks the colour).

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_prediction(prediction)
    rates = check_rates(line_rates, "line_rates")
    pub = None
    if published is not None:
        if not (isinstance(published, tuple) and len(published) == 3):
            raise ValueError("published must be (label, sizes, busbw) or None; got "
                             f"{published!r:.60}")
        px, py = curve_arrays("published", published[0], published[1], published[2])
        pub = (str(published[0]), px, py / units.GB)
    s = prediction.message_bytes
    y = prediction.busbw / units.GB
    mark = None
    if message_bytes is not None:
        hit = np.flatnonzero(np.isclose(s, float(message_bytes), rtol=1e-12))
        if not hit.size:
            raise ValueError("message_bytes must be one of the prediction's sizes; "
                             f"got {message_bytes!r}")
        mark = int(hit[0])
    ax = new_axes(ax)
    key = (s.size, len(rates))
    art = cached_artists(ax, "scale_out", key)
    if art is None:
        ax.clear()
        base, = ax.plot(s, y, "-", color=COLORS["compute"], lw=1.0, alpha=0.5,
                        zorder=2)
        dots = {a: ax.plot([], [], "o", ms=3.8, color=c, zorder=3, label=a)[0]
                for a, c in NETWORK_ALGO_COLORS.items()}
        pub_line, = ax.plot([], [], "x", ms=6, mew=1.6, color=COLORS["model"],
                            zorder=4, label="published")
        marker, = ax.plot([], [], "o", ms=11, mfc="none", mec=COLORS["accent"],
                          mew=2.2, zorder=5)
        note = ax.annotate("", (s[0], y[0]), xytext=(-8, 8),
                           textcoords="offset points", fontsize=8, color="#7a5a00",
                           zorder=6, va="bottom", ha="right")
        lines = [(ax.axhline(0, ls="--", lw=1, zorder=1),
                  ax.text(0, 0, "", fontsize=8, va="bottom", ha="left"))
                 for _ in rates]
        bytes_axis(ax.xaxis)
        ax.set_xlabel("Message size S [B, binary prefixes]")
        ax.set_ylabel("busbw [GB/s, per direction]")
        art = {"base": base, "dots": dots, "pub": pub_line, "marker": marker,
               "note": note, "lines": lines}
        remember_artists(ax, "scale_out", key, art, sentinel_patch(ax))
    else:
        art["base"].set_data(s, y)
    handles = []
    for a, line in art["dots"].items():
        sel = prediction.algorithm == a
        line.set_data(s[sel], y[sel])
        if sel.any():
            protos = dict.fromkeys(prediction.protocol[sel])
            line.set_label(f"{a} ({', '.join(protos)})")
            handles.append(line)
    top = float(np.nanmax(y))
    if pub is not None:
        art["pub"].set_data(pub[1], pub[2])
        art["pub"].set_label(pub[0])
        handles.append(art["pub"])
        top = max(top, float(np.max(pub[2])))
    art["pub"].set_visible(pub is not None)
    for (hline, text), (label, bw, kind) in zip(art["lines"], rates):
        r = bw.gb_per_s
        hline.set_ydata([r, r])
        hline.set_color(COLORS[kind])
        text.set_position((s[0], r))
        text.set_text(f"{label}: {r:.0f} GB/s")
        text.set_color(COLORS[kind])
        top = max(top, r)
    marker, note = art["marker"], art["note"]
    if mark is not None:
        marker.set_data([s[mark]], [y[mark]])
        note.set_text(f"{units.fmt_bytes(s[mark])}: {y[mark]:.1f} GB/s\n"
                      f"{prediction.algorithm[mark]}/{prediction.protocol[mark]}, "
                      f"{units.fmt_time(float(prediction.time[mark]))}")
        note.xy = (s[mark], y[mark])
        right = mark < 0.6 * s.size
        note.set_ha("left" if right else "right")
        note.set_position((8 if right else -8, 8))
    marker.set_visible(mark is not None)
    note.set_visible(mark is not None)
    ax.set_xlim(s[0] / 1.6, s[-1] * 1.6)
    ax.set_ylim(0, 50.0 * np.ceil(top * 1.15 / 50.0) if top > 0 else 1.0)
    labels = [h.get_label() for h in handles]
    leg = ax.get_legend()
    if leg is None or [t.get_text() for t in leg.texts] != labels:
        leg = ax.legend(handles=handles, fontsize=8, title_fontsize=8,
                        loc="upper left", title="NCCL's pick (protocols)")
        leg.set_zorder(7)
    return ax


def plot_busbw_vs_nodes(nodes, curves, *, leaf_nodes=None, ax=None):
    """busbw of one collective size as a job grows over more nodes.

    Parameters
    ----------
    nodes : sequence of int
        Node counts (x axis, log base 2).
    curves : sequence of (label, busbw, kind)
        One curve each: busbw [B/s] per node count; ``kind`` picks the colour
        (a key of :data:`gpulab.plotting.COLORS`).
    leaf_nodes : int, optional
        Nodes under one leaf group, marked with a dotted line.

    Returns
    -------
    matplotlib.axes.Axes
    """
    x = np.asarray(nodes, dtype=float).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)) or np.any(x < 1) \
            or np.any(np.diff(x) <= 0):
        raise ValueError("nodes must be at least two increasing node counts >= 1; "
                         f"got {nodes!r}")
    if not curves:
        raise ValueError("curves must hold at least one (label, busbw, kind)")
    ax = new_axes(ax)
    for item in curves:
        if not (isinstance(item, tuple) and len(item) == 3):
            raise ValueError(f"curves must be (label, busbw, kind) tuples; got {item!r}")
        label, y, kind = item
        check_choice("kind", kind, COLORS)
        _, y = curve_arrays("curves", label, x, y)
        ax.plot(x, y / units.GB, "o-", color=COLORS[kind], label=str(label))
    if leaf_nodes is not None:
        ax.axvline(float(leaf_nodes), color=COLORS["model"], ls=":", lw=1)
        ax.annotate("one leaf group", (float(leaf_nodes), 0), xytext=(-4, 6),
                    textcoords="offset points", fontsize=8, ha="right",
                    color=COLORS["model"])
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.minorticks_off()
    ax.set_xlabel("Nodes [count]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    ax.set_ylim(0, None)
    ax.legend(loc="lower left", fontsize=8)
    return ax


def plot_ep_alltoall(curves, *, domain=None, domain_label="one node", ax=None):
    """Time of a MoE layer's expert-parallel all-to-alls against the EP degree.

    Parameters
    ----------
    curves : sequence of (label, ep_degrees, times, kind)
        One curve each: EP degrees (>= 2, increasing), the all-to-all time per layer
        [s] at each, and ``kind``, a key of :data:`gpulab.plotting.COLORS`.
    domain : int, optional
        The NVLink domain size (GPUs), marked with a dotted line.
    domain_label : str
        The dotted line's label.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not curves:
        raise ValueError("curves must hold at least one (label, ep_degrees, times, kind)")
    ax = new_axes(ax)
    ticks, labels = set(), set()
    for item in curves:
        if not (isinstance(item, tuple) and len(item) == 4):
            raise ValueError("curves must be (label, ep_degrees, times, kind) tuples; "
                             f"got {item!r:.80}")
        label, eps, t, kind = item
        check_choice("kind", kind, COLORS)
        x, y = curve_arrays("curves", label, eps, t)
        if np.any(x < 2) or np.any(np.diff(x) <= 0):
            raise ValueError(f"curves: {label!r} needs increasing EP degrees >= 2; "
                             f"got {list(eps)!r}")
        ticks.update(x.tolist())
        ax.plot(x, y * 1e3, "o-", color=COLORS[kind], label=str(label))
        labels.add(str(label))
    if domain is not None:
        ax.axvline(float(domain), ls=":", lw=1, color=COLORS["model"])
        ax.annotate(str(domain_label), (float(domain), 1.0),
                    xycoords=("data", "axes fraction"), xytext=(-4, -4),
                    textcoords="offset points", ha="right", va="top", fontsize=8)
    ax.set_xscale("log", base=2)
    ticks = sorted(ticks)
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.minorticks_off()
    # headroom for the domain's label above every curve
    top = max(float(np.max(ln.get_ydata())) for ln in ax.lines
              if ln.get_label() in labels)
    ax.set_ylim(0, top * 1.18 if top > 0 else 1.0)
    ax.set_xlabel("EP degree [ranks per expert group]")
    ax.set_ylabel("EP all-to-all time per layer [ms]")
    legend_clear_of_lines(ax, [("lower right", (1.0, 0.12)), "center left",
                               "upper left", ("upper center", (0.5, -0.2))],
                          fontsize=8)
    return ax


#: Colour per NCCL protocol in :func:`plot_step_latency`.
PROTOCOL_COLORS = {"LL": COLORS["nvlink"], "LL128": COLORS["pcie"], "Simple": COLORS["ib"]}


def plot_step_latency(points, fits, *, ax=None):
    """Time of small ring calls against the ring's steps, with one line per protocol.

    Parameters
    ----------
    points : sequence of dict
        One per call kind, as :meth:`gpulab.network.LoopbackCheck.step_points` gives:
        ``protocol``, ``steps``, ``time_s`` [s], ``fitted`` (filled marker),
        ``crowded`` (a cross; otherwise an open marker: held out).
    fits : dict
        ``{protocol: (base_s, step_s)}``: the line ``base + steps x step`` [s].

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not isinstance(fits, dict) or not fits:
        raise ValueError("fits must be a non-empty {protocol: (base_s, step_s)} dict")
    for proto, line in fits.items():
        check_choice("protocol", proto, PROTOCOL_COLORS)
        if not (isinstance(line, tuple) and len(line) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                        and np.isfinite(v) for v in line) and line[1] > 0):
            raise ValueError(f"fits must map a protocol to (base_s, step_s > 0); "
                             f"got {proto}: {line!r}")
    pts = list(points) if not isinstance(points, (str, bytes, dict)) else None
    need = {"protocol", "steps", "time_s", "fitted", "crowded"}
    if not pts or any(not isinstance(p, dict) or not need <= set(p) for p in pts):
        raise ValueError(f"points must be dicts with {sorted(need)}; got {points!r}")
    for p in pts:
        if p["protocol"] not in fits:
            raise ValueError(f"points: protocol {p['protocol']!r} has no line in fits")
        t = p["time_s"]
        if not (isinstance(t, (int, float)) and np.isfinite(t) and t > 0) \
                or not (isinstance(p["steps"], int) and p["steps"] >= 0):
            raise ValueError(f"points need steps >= 0 and a time > 0; got {p!r}")
    ax = new_axes(ax)
    top = max(p["steps"] for p in pts)
    x = np.array([0.0, float(top)])
    for proto, (base, step) in fits.items():
        ax.plot(x, (base + step * x) / units.US, "-", color=PROTOCOL_COLORS[proto],
                label=f"{proto}: {step / units.US:.0f} µs per step")
    for p in pts:
        c = PROTOCOL_COLORS[p["protocol"]]
        y = p["time_s"] / units.US
        if p["crowded"]:
            ax.plot(p["steps"], y, "x", color=c, ms=7, mew=1.6)
        elif p["fitted"]:
            ax.plot(p["steps"], y, "o", color=c, ms=7)
        else:
            ax.plot(p["steps"], y, "o", mfc="white", mec=c, mew=1.6, ms=7)
    for marker, kw, label in (("o", {"color": COLORS["model"]}, "fitted"),
                              ("o", {"mfc": "white", "mec": COLORS["model"]}, "held out"),
                              ("x", {"color": COLORS["model"]}, "8 ranks (crowded host)")):
        ax.plot([], [], marker, ls="none", ms=7, label=label, **kw)
    ax.set_xlim(0, top + 1)
    ax.set_ylim(0, None)
    ax.set_xlabel("Network steps of the ring [count]")
    ax.set_ylabel("Time of one call [µs]")
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_mixed_ring(rows, *, ax=None):
    """Small calls of rings that mix two kinds of edge, as a share of the all-network
    ring's time: measured against the dataflow's share and lockstep's 1.

    Parameters
    ----------
    rows : sequence of dict
        As :attr:`gpulab.network.MixedRingCheck.rows`: ``protocol``, ``collective``
        (``"all_gather"`` or ``"all_reduce"``), ``n_ranks``, ``ratio`` (measured),
        ``dataflow_ratio`` and ``crowded`` (a cross instead of a dot).

    Returns
    -------
    matplotlib.axes.Axes
    """
    pts = list(rows) if not isinstance(rows, (str, bytes, dict)) else None
    need = {"protocol", "collective", "n_ranks", "ratio", "dataflow_ratio", "crowded"}
    if not pts or any(not isinstance(r, dict) or not need <= set(r) for r in pts):
        raise ValueError(f"rows must be dicts with {sorted(need)}; got {rows!r}")
    for r in pts:
        check_choice("protocol", r["protocol"], PROTOCOL_COLORS)
        check_choice("collective", r["collective"], ("all_gather", "all_reduce"))
        for k in ("ratio", "dataflow_ratio"):
            v = r[k]
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and np.isfinite(v) and v > 0):
                raise ValueError(f"rows need {k} > 0; got {r!r}")
    ax = new_axes(ax)
    ticks, labels = [], []
    for i, r in enumerate(pts):
        x = i + 0.6 * list(PROTOCOL_COLORS).index(r["protocol"])
        c = PROTOCOL_COLORS[r["protocol"]]
        ax.plot([x - 0.3, x + 0.3], [r["dataflow_ratio"]] * 2, "-", color=c, lw=2.5,
                alpha=0.55)
        ax.plot(x, r["ratio"], "x" if r["crowded"] else "o", color=c, ms=7, mew=1.6)
        ticks.append(x)
        labels.append(f"{'AG' if r['collective'] == 'all_gather' else 'AR'} {r['n_ranks']}")
    ax.axhline(1.0, color=COLORS["model"], ls="--", lw=1.2)
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=8)
    for proto in dict.fromkeys(r["protocol"] for r in pts):
        ax.plot([], [], "o", color=PROTOCOL_COLORS[proto], ms=7, label=f"{proto}: measured")
    ax.plot([], [], "-", color=COLORS["model"], lw=2.5, alpha=0.55,
            label="dataflow (model form)")
    ax.plot([], [], "--", color=COLORS["model"], lw=1.2, label="lockstep (model form)")
    ax.plot([], [], "x", color=COLORS["model"], ms=7, mew=1.6, label="8 ranks (crowded host)")
    top = max(max(r["ratio"], r["dataflow_ratio"]) for r in pts)
    ax.set_ylim(0, max(1.25, top * 1.1) + 0.45)
    ax.set_xlim(min(ticks) - 0.8, max(ticks) + 0.8)
    ax.set_xlabel("Ring: all_gather (AG) or all_reduce (AR), ranks [count]")
    ax.set_ylabel("Mixed ring / all-network ring [ratio]")
    ax.legend(loc="upper left", fontsize=8, ncol=3)
    return ax
