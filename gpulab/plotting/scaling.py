"""Figures of the scaling topic: GPU growth, data-parallel efficiency and step bars.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .._validate import check_int
from .style import COLORS, remember_artists, cached_artists, new_axes
from .. import scaling


_GROWTH_LABELS = {
    "fp16_dense_flops": ("Dense FP16/BF16 compute", "compute"),
    "nvlink_bandwidth": ("NVLink per GPU (per direction)", "nvlink"),
    "memory_bandwidth": ("HBM bandwidth", "hbm"),
}


def plot_growth(gpus=None, baseline="V100", ax=None):
    """Grouped bars: growth of compute, NVLink and HBM relative to ``baseline``."""
    rows = scaling.growth_table(gpus, baseline)
    ax = new_axes(ax)
    x = np.arange(len(rows))
    width = 0.27
    for i, (metric, (label, color)) in enumerate(_GROWTH_LABELS.items()):
        vals = [r[metric] for r in rows]
        bars = ax.bar(x + (i - 1) * width, vals, width, label=label,
                      color=COLORS[color])
        ax.bar_label(bars, labels=[f"{v:.1f}×" for v in vals], fontsize=7,
                     padding=1)
    ax.set_xticks(x, [r["gpu"] for r in rows])
    ax.set_ylabel(f"Growth relative to {baseline} [×]")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}×"))
    top = max(r[m] for r in rows for m in _GROWTH_LABELS)
    ax.set_ylim(0.8, top * 2.2)
    ax.legend(loc="upper left")
    return ax


def plot_scaling_efficiency(n_gpus=8, overlaps=(0.0, 0.5, 0.9), ax=None):
    """Effective GPUs vs the communication-to-compute ratio, for several overlaps."""
    n = check_int("n_gpus", n_gpus, low=1, high=100_000)
    ratio = np.logspace(-2, 1, 200)
    ax = new_axes(ax)
    for o, ls in zip(overlaps, ("-", "--", ":")):
        eff = scaling.effective_gpus(n, 1.0, ratio, overlap=o)
        ax.plot(ratio, eff, ls, color=COLORS["comm"],
                label=f"{o:.0%} of communication overlapped")
    ax.axhline(n, color=COLORS["compute"], lw=1, alpha=0.6)
    ax.axhline(n / 2, color=COLORS["accent"], lw=1, alpha=0.8)
    ax.annotate(f"{n} GPUs deliver {n // 2}: exposed comm = compute",
                (1.0, n / 2), xytext=(0.012, n / 2 * 0.78), fontsize=8,
                color="#7a5a00")
    ax.set_xscale("log")
    ax.set_xlabel("Communication time / compute time per step [×]")
    ax.set_ylabel(f"Effective GPUs [of {n}]")
    ax.set_ylim(0, n * 1.08)
    ax.legend(loc="lower left")
    return ax


def plot_dp_steps(steps, ax=None):
    """Horizontal stacked bars of compute and exposed communication per step.

    Calling it again on the same Axes with the same GPUs updates the bars in place.

    Parameters
    ----------
    steps : sequence of scaling.DPStep
        One bar per step (e.g. one per GPU generation).
    """
    steps = list(steps)
    if not steps or not all(isinstance(s, scaling.DPStep) for s in steps):
        raise ValueError("steps must be a non-empty sequence of scaling.DPStep")
    ax = new_axes(ax)
    key = tuple(s.gpu for s in steps)
    y = np.arange(len(steps))[::-1]
    comp = np.array([s.compute_time for s in steps]) * 1e3
    comm = np.array([s.exposed_comm_time for s in steps]) * 1e3
    labels = [f"  {s.efficiency:.0%} → {s.effective_gpus:.1f} of {s.n_gpus} GPUs"
              for s in steps]
    old = cached_artists(ax, "dp_steps", key)
    if old is None:
        ax.clear()
        b1 = ax.barh(y, comp, color=COLORS["compute"], label="compute")
        b2 = ax.barh(y, comm, left=comp, color=COLORS["comm"],
                     label="exposed communication")
        texts = [ax.text(c + m, yi, t, va="center", fontsize=8)
                 for yi, c, m, t in zip(y, comp, comm, labels)]
        ax.set_yticks(y, list(key))
        ax.set_xlabel("Step time [ms]")
        ax.legend(loc="lower right")
        ax.grid(axis="y", visible=False)
        remember_artists(ax, "dp_steps", key, (b1, b2, texts), b1[0])
    else:
        b1, b2, texts = old
        for r1, r2, txt, yi, c, m, t in zip(b1, b2, texts, y, comp, comm, labels):
            r1.set_width(c)
            r2.set_x(c)
            r2.set_width(m)
            txt.set_position((c + m, yi))
            txt.set_text(t)
    ax.set_xlim(0, float(np.max(comp + comm)) * 1.45)
    return ax
