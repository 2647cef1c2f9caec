"""Kernel-free interactive charts for the published book (Altair / Vega-Lite), one
module per topic. Each ``<topic>_chart`` evaluates public model functions at build
time over a small grid of its explorer's main controls and returns a
:class:`~gpulab.charts.base.StaticChart`, whose HTML the book renders offline with
the vendored vega, vega-lite and vega-embed. Depends on the models only (not on
matplotlib, ipywidgets or the plotting layer).
"""
from __future__ import annotations

from . import base  # noqa: F401
from .base import (  # noqa: F401
    Control,
    StaticChart,
    VEGA_LITE_VERSION,
)
from .scaling import (  # noqa: F401
    SCALING_GPUS,
    SCALING_PARAMS,
    SCALING_OVERLAP,
    scaling_chart,
)
