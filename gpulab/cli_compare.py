"""Deprecated: the comparison functions moved to :mod:`gpulab.calibration`.

Kept for one course iteration so that older notebooks still run.
"""
import warnings

from .calibration import BANDS, band_summary, compare_rows

warnings.warn("gpulab.cli_compare is deprecated; use gpulab.calibration "
              "(compare_rows, band_summary, BANDS)", DeprecationWarning, stacklevel=2)

__all__ = ["BANDS", "band_summary", "compare_rows"]
