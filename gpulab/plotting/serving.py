"""Figures of the serving-layout chapter (NVLink or PCIe for serving): layouts of each
server at a TPOT target, the model beside published TPOT rows, tokens per USD, and
the KV-cache transfer of disaggregated serving.

matplotlib only: every function takes ``ax=None``, draws from the rows it is given
(computed by :mod:`gpulab.inference.roi` and :mod:`gpulab.inference.kv`), returns the
Axes and sets no title.
"""
from __future__ import annotations

from .style import COLORS, new_axes

__all__ = ["SYSTEM_STYLE", "plot_serving_layouts", "plot_tpot_check",
           "plot_tokens_per_dollar", "plot_kv_transfer"]

#: Colour and marker of each server preset (NVLink servers green, PCIe blue).
SYSTEM_STYLE = {
    "hgx-h200": (COLORS["nvlink"], "o"),
    "dgx-h100": ("#2e7d32", "s"),
    "h100-pcie": (COLORS["pcie"], "^"),
    "l40s-x8": ("#6a8fc7", "v"),
}


def _style(system):
    return SYSTEM_STYLE.get(system, (COLORS["model"], "D"))


def plot_serving_layouts(options, *, tpot_target=None, ax=None):
    """Tokens/s per GPU against TPOT for every layout of each server.

    Parameters
    ----------
    options : dict
        ``{system: [ServingOption, ...]}`` (:func:`gpulab.inference.roi.layout_options`).
    tpot_target : float, optional
        Draw the target as a vertical line. [s]

    Layouts that meet the target are filled; the best one per server is ringed and
    labelled. With a target, the TPOT axis ends at twice the target.
    """
    ax = new_axes(ax)
    if not options:
        raise ValueError("options must name at least one system")
    for system, opts in options.items():
        color, marker = _style(system)
        good = [o for o in opts if o.meets_target]
        bad = [o for o in opts if not o.meets_target]
        ax.scatter([o.tpot * 1e3 for o in good], [o.tokens_per_s_per_gpu for o in good],
                   color=color, marker=marker, s=30, label=system, zorder=3)
        ax.scatter([o.tpot * 1e3 for o in bad], [o.tokens_per_s_per_gpu for o in bad],
                   facecolors="none", edgecolors=color, marker=marker, s=30, zorder=2,
                   label=None if good else system)
        if good:
            b = max(good, key=lambda o: o.tokens_per_s_per_gpu)
            ax.scatter([b.tpot * 1e3], [b.tokens_per_s_per_gpu], s=140,
                       facecolors="none", edgecolors=color, linewidths=1.5, zorder=4)
            left = tpot_target is not None and b.tpot > 0.7 * tpot_target
            ax.annotate(b.label, (b.tpot * 1e3, b.tokens_per_s_per_gpu),
                        textcoords="offset points", xytext=(-9 if left else 9, 5),
                        ha="right" if left else "left", fontsize=8, color=color)
    if tpot_target is not None:
        ax.axvline(tpot_target * 1e3, color=COLORS["comm"], ls="--", lw=1)
        ax.set_xlim(0, 2 * tpot_target * 1e3)      # far misses are off the chart
    ax.set_yscale("log")
    ax.set_xlabel("time per output token, TPOT [ms]")
    ax.set_ylabel("output per GPU [tokens/s]")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def plot_tpot_check(checks, *, ax=None):
    """Model TPOT against published TPOT, one point per published row.

    Parameters
    ----------
    checks : list of dict
        Rows of :func:`gpulab.inference.roi.published_tpot_checks` (``published``,
        ``model`` in s, ``tp``, ``fits_memory``).

    The diagonal is a perfect model; the grey band is +-25 %. Rows whose KV cache
    would not fit in the model's memory are drawn hollow.
    """
    ax = new_axes(ax)
    if not checks:
        raise ValueError("checks must hold at least one row")
    tps = sorted({c["tp"] for c in checks})
    colors = ["#7b4fa0", COLORS["pcie"], COLORS["nvlink"], COLORS["ib"], "#555555"]
    for i, tp in enumerate(tps):
        rows = [c for c in checks if c["tp"] == tp]
        for fits in (True, False):
            sel = [c for c in rows if c["fits_memory"] is fits]
            if not sel:
                continue
            col = colors[i % len(colors)]
            ax.scatter([c["published"] * 1e3 for c in sel],
                       [c["model"] * 1e3 for c in sel], s=22,
                       color=col if fits else "none", edgecolors=col,
                       label=f"TP{tp}" if fits else None, zorder=3)
    lo = min(min(c["published"], c["model"]) for c in checks) * 1e3 * 0.8
    hi = max(max(c["published"], c["model"]) for c in checks) * 1e3 * 1.2
    ax.plot([lo, hi], [lo, hi], color=COLORS["model"], lw=1)
    ax.fill_between([lo, hi], [lo * 0.75, hi * 0.75], [lo * 1.25, hi * 1.25],
                    color="0.85", zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("published TPOT [ms]")
    ax.set_ylabel("model TPOT [ms]")
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_tokens_per_dollar(rows, *, ax=None):
    """Horizontal bars: output tokens per USD of each server at its best layout.

    Parameters
    ----------
    rows : list of dict
        :func:`gpulab.inference.roi.buying_table` rows (``system``, ``option``,
        ``tokens_per_usd``, ``meets_target``).
    """
    ax = new_axes(ax)
    if not rows:
        raise ValueError("rows must hold at least one system")
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        color, _ = _style(r["system"])
        v = r["tokens_per_usd"] / 1e6
        ax.barh(y, v, color=color, height=0.6)
        text = r["option"].label if r["meets_target"] else "misses the target"
        ax.text(v, y, f" {text}", va="center", fontsize=8)
    ax.set_yticks(ys, [r["system"] for r in rows])
    ax.set_xlabel("output tokens per USD [million], example prices")
    ax.set_xlim(0, max(r["tokens_per_usd"] for r in rows) / 1e6 * 1.35 or 1)
    return ax


def plot_kv_transfer(paths, prefill_s, *, ax=None):
    """Stacked bars: prefill time and the KV-cache transfer over each path.

    Parameters
    ----------
    paths : list of (str, float)
        ``(label, transfer seconds)`` per path.
    prefill_s : float
        Prefill time of the same prompt (the rest of the TTFT). [s]
    """
    ax = new_axes(ax)
    if not paths:
        raise ValueError("paths must hold at least one (label, seconds) pair")
    ys = list(range(len(paths)))[::-1]
    for i, (y, (label, t)) in enumerate(zip(ys, paths)):
        ax.barh(y, prefill_s * 1e3, color=COLORS["compute"], height=0.6,
                label="prefill" if i == 0 else None)
        ax.barh(y, t * 1e3, left=prefill_s * 1e3, color=COLORS["comm"], height=0.6,
                label="KV transfer" if i == 0 else None)
        share = t / (t + prefill_s)
        ax.text((prefill_s + t) * 1e3, y, f" {share:.1%}" if share < 0.01 else
                f" {share:.0%}", va="center", fontsize=8)
    ax.set_yticks(ys, [p[0] for p in paths])
    ax.set_xlabel("time to first token on the decode side [ms]")
    ax.set_xlim(0, max(prefill_s + t for _, t in paths) * 1e3 * 1.25)
    ax.legend(fontsize=8, loc="upper center", ncol=2, bbox_to_anchor=(0.5, 1.15),
              frameon=False)
    return ax
