"""Figures of the nccl-tests topic: time curves, the article audit, measured sweeps
against the model and host-floor histograms.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np

from ..nccltests import Sweep
from .. import units
from .._validate import check_choice, check_int
from .style import COLORS, check_rates, curve_arrays, bytes_axis, new_axes


def plot_time_curves(curves, *, marks=(), ax=None):
    """Time per call against message size, log-log, measured points and model lines.

    Parameters
    ----------
    curves : sequence of (label, sizes, times, kind, style)
        ``sizes`` [B], ``times`` [s]; ``kind`` a key of :data:`COLORS`;
        ``style`` ``"measured"`` (markers) or ``"model"`` (a line).
    marks : sequence of (label, size), optional
        Vertical dotted lines at message sizes [B] (e.g. the half-bandwidth size).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    curves = list(curves)
    if not curves:
        raise ValueError("curves must be a non-empty sequence of (label, sizes, "
                         "times, kind, style)")
    checked = []
    for item in curves:
        if not (isinstance(item, tuple) and len(item) == 5):
            raise ValueError("curves must be (label, sizes, times, kind, style) "
                             f"tuples; got {item!r}")
        label, x, y, kind, style = item
        check_choice("kind", kind, COLORS)
        check_choice("style", style, ("measured", "model"))
        x, y = curve_arrays("curves", label, x, y)
        checked.append((str(label), x, y, kind, style))
    marks = list(marks or ())
    for m in marks:
        if not (isinstance(m, tuple) and len(m) == 2 and float(m[1]) > 0):
            raise ValueError(f"marks must be (label, size > 0 [B]) tuples; got {m!r}")
    ax = new_axes(ax)
    for label, x, y, kind, style in checked:
        if style == "measured":
            ax.plot(x, y * 1e6, "o", ms=4, color=COLORS[kind], label=label)
        else:
            ax.plot(x, y * 1e6, "-", lw=1.4, color=COLORS[kind], label=label)
    for label, size in marks:
        ax.axvline(float(size), ls=":", lw=1.2, color=COLORS["accent"])
        ax.annotate(str(label), (float(size), 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -3), textcoords="offset points", fontsize=8,
                    va="top", color="#555555")
    bytes_axis(ax.xaxis)
    ax.set_yscale("log")
    ax.set_xlabel("Message size [B, binary prefixes]")
    ax.set_ylabel("Time per call [µs]")
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_article_audit(sizes, claimed_busbw, curves, *, line_rate, n_ranks=None,
                       ax=None):
    """Claimed nccl-tests busbw against model curves and the per-direction line rate.

    The line rate caps a ring's busbw, not busbw itself: NVLS and other in-network
    reductions move less than ``2(n-1)/n`` of the data over each link, so their
    busbw may pass it (the dashed line's label says so). What no algorithm can pass
    is algbw above the line rate, that is busbw above ``2(n-1)/n`` times it; that
    band is shaded where ``n_ranks`` is given.

    Parameters
    ----------
    sizes, claimed_busbw : array_like
        The claimed table: message sizes [B] and busbw [B/s].
    curves : sequence of (label, sizes, busbw, kind)
        Reference busbw curves [B, B/s] (model or measurement).
    line_rate : units.Bandwidth
        Per-direction line rate of one GPU, a dashed line.
    n_ranks : int, optional
        Ranks of the claimed AllReduce (>= 2): shades busbw above
        ``2(n-1)/n`` x line rate, where algbw would exceed the line rate.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    x, y = curve_arrays("claimed", "claimed table", sizes, claimed_busbw)
    (rate,) = check_rates([("line rate", line_rate, "nvlink")], "line_rate")
    if n_ranks is not None:
        n_ranks = check_int("n_ranks", n_ranks, low=2)
    checked = []
    for item in curves or ():
        if not (isinstance(item, tuple) and len(item) == 4):
            raise ValueError("curves must be (label, sizes, busbw, kind) tuples; "
                             f"got {item!r}")
        label, cx, cy, kind = item
        check_choice("kind", kind, COLORS)
        cx, cy = curve_arrays("curves", label, cx, cy)
        checked.append((str(label), cx, cy, kind))
    ax = new_axes(ax)
    lr = rate[1].gb_per_s
    cap = None if n_ranks is None else lr * 2 * (n_ranks - 1) / n_ranks
    highest = max([float(y.max()) / units.GB, lr]
                  + [float(cy.max()) / units.GB for _l, _x, cy, _k in checked])
    top = max(highest * 1.15, (cap or 0.0) * 1.12)
    ax.axhline(lr, ls="--", lw=1.2, color=COLORS["nvlink"])
    # at the left end, where every busbw curve is still near zero
    ax.annotate(f"line rate {lr:.0f} GB/s per direction: caps a ring's busbw;\n"
                "NVLS (in-switch reduction) busbw may pass it", (0.0, lr),
                xycoords=("axes fraction", "data"), xytext=(4, 3),
                textcoords="offset points", fontsize=8, ha="left", va="bottom",
                color=COLORS["nvlink"])
    if cap is not None:
        ax.axhspan(cap, top, color=COLORS["comm"], alpha=0.08, lw=0)
        ax.axhline(cap, ls=":", lw=1.0, color=COLORS["comm"])
        ax.annotate(f"shaded: algbw above the line rate (busbw > {cap:.0f} GB/s "
                    f"with {n_ranks} ranks), impossible", (0.0, cap),
                    xycoords=("axes fraction", "data"), xytext=(4, -3),
                    textcoords="offset points", fontsize=8, ha="left",
                    va="top", color=COLORS["comm"])
    for label, cx, cy, kind in checked:
        ax.plot(cx, cy / units.GB, "-", lw=1.4, color=COLORS[kind], label=label)
    ax.plot(x, y / units.GB, "X", ms=8, color=COLORS["comm"],
            label="claimed (source article)")
    bytes_axis(ax.xaxis)
    ax.set_ylim(0, top)
    ax.set_xlabel("Message size [B, binary prefixes]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    return ax


def plot_compare(sweep, prediction, ax=None):
    """Measured vs predicted busbw over message size.

    Parameters
    ----------
    sweep : nccltests.Sweep
        The measurement (out-of-place columns).
    prediction : collectives.Prediction
        :func:`gpulab.collectives.predict` for the sweep's sizes.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a nccltests.Sweep; got {type(sweep).__name__}")
    if not hasattr(prediction, "busbw") or not hasattr(prediction, "message_bytes"):
        raise ValueError("prediction must be a collectives.Prediction; got "
                         f"{type(prediction).__name__}")
    ax = new_axes(ax)
    keep = sweep.size_bytes > 0
    s = sweep.size_bytes[keep].astype(float)
    ax.plot(s, sweep.busbw[keep] / units.GB, "o", ms=4, color=COLORS["nvlink"],
            label="measured busbw")
    order = np.argsort(prediction.message_bytes)
    ax.plot(prediction.message_bytes[order], prediction.busbw[order] / units.GB, "-",
            lw=1.4, color=COLORS["model"], label="model busbw")
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Message size [B, binary prefixes]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    what = sweep.collective or "collective"
    ranks = f", {sweep.n_ranks} ranks" if sweep.n_ranks else ""
    ax.legend(loc="upper left", fontsize=8, title=f"{what}{ranks}",
              title_fontsize=8)
    return ax


def plot_run_floors(floors, model_s=None, ax=None, bin_us=0.5):
    """Histogram of per-run small-message floors, stacked by label.

    Parameters
    ----------
    floors : dict[str, array_like]
        Label -> floors of single runs (e.g. each run's median time per call up to
        32 KiB, per collective). [s]
    model_s : float, optional
        A model's host time per call, drawn as a dashed line. [s]
    ax : matplotlib Axes, optional
    bin_us : float, default 0.5
        Bin width. [µs]

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not isinstance(floors, dict) or not floors:
        raise ValueError("floors must be a non-empty dict of label -> floor times [s]")
    data = {}
    for label, v in floors.items():
        a = np.asarray(v, dtype=float).ravel() if not isinstance(v, (str, bytes)) \
            else np.array([np.nan])
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"floors[{label!r}] must be positive finite times [s]")
        data[str(label)] = a * 1e6
    if model_s is not None and (not isinstance(model_s, (int, float))
                                or isinstance(model_s, bool)
                                or not np.isfinite(model_s) or model_s <= 0):
        raise ValueError(f"model_s must be a positive time [s] or None; got {model_s!r}")
    if isinstance(bin_us, bool) or not isinstance(bin_us, (int, float)) \
            or not np.isfinite(bin_us) or bin_us <= 0:
        raise ValueError(f"bin_us must be a positive number of µs; got {bin_us!r}")
    ax = new_axes(ax, figsize=(6.4, 2.8))
    every = np.concatenate(list(data.values()))
    lo = np.floor(every.min() / bin_us) * bin_us
    hi = np.ceil(every.max() / bin_us) * bin_us + bin_us
    palette = [COLORS["nvlink"], COLORS["pcie"], COLORS["ib"], COLORS["hbm"]]
    ax.hist(list(data.values()), bins=np.arange(lo, hi + 1e-9, bin_us), stacked=True,
            label=list(data), color=[palette[i % len(palette)] for i in range(len(data))])
    if model_s is not None:
        ax.axvline(model_s * 1e6, color=COLORS["model"], ls="--", lw=1, label="model")
    ax.set_xlabel("Time per call of small messages [µs]")
    ax.set_ylabel("Runs [count]")
    ax.legend(frameon=False, fontsize=8)
    return ax
