"""Deprecated: the nccl-tests figures moved to :mod:`gpulab.plotting.nccltests`.

Kept for one course iteration so that older notebooks still run.
"""
import warnings

from .plotting.nccltests import plot_compare, plot_run_floors

warnings.warn("gpulab.plotting_measure is deprecated; use gpulab.plotting "
              "(plot_compare, plot_run_floors)", DeprecationWarning, stacklevel=2)

__all__ = ["plot_compare", "plot_run_floors"]
