"""Plots of measured nccl-tests sweeps against the model (matplotlib).

Imported lazily (``gpulab compare --plot`` and notebooks): ``import gpulab`` does
not import matplotlib.
"""
from __future__ import annotations

import matplotlib  # noqa: F401  (this module is the matplotlib side of nccltests)
import numpy as np

from . import units
from .nccltests import Sweep
from .plotting import COLORS, bytes_axis, new_axes

__all__ = ["plot_compare", "plot_run_floors"]


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
    ax.set_xlabel("time per call of small messages [µs]")
    ax.set_ylabel("runs")
    ax.legend(frameon=False, fontsize=8)
    return ax
