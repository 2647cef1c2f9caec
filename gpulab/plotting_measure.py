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

__all__ = ["plot_compare"]


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
