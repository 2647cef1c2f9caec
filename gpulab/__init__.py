"""gpulab: models, plots and widgets for the multi-GPU interconnects course.

Layers, one direction of dependency::

    units, specs, links, collectives, scaling, measurements, ..., parallelism, inference
                  (pure models, SI units)
        <- plotting   (matplotlib; ``ax=None`` in, ``Axes`` out)
        <- widgets    (ipywidgets; returns the widget)
    charts   (Altair/Vega-Lite; models evaluated on a grid at build time, for the book)

``import gpulab`` has no side effects: no rcParams change, no file or network I/O.
``plotting``, ``widgets`` and ``charts`` import matplotlib / ipywidgets / altair and
are imported lazily.
"""
from __future__ import annotations

import importlib

from . import collectives, links, measurements, scaling, specs, units
from . import pcie, systems  # PCIe chapter: link/protocol/copy model, system presets
from . import topology  # PCIe chapter: server topology graph, topo -m reader
from . import nccltests, parallelism  # measuring and parallel-layout chapters
from . import inference  # serving chapters

__version__ = "0.1.0"

__all__ = ["__version__", "units", "specs", "links", "collectives", "scaling",
           "measurements", "plotting", "widgets", "charts"]
__all__ += ["pcie", "systems"]
__all__ += ["topology"]
__all__ += ["nccltests", "parallelism", "bench"]
__all__ += ["inference"]


def __getattr__(name):  # lazy optional layers (PEP 562)
    if name in ("plotting", "widgets", "charts", "bench"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
