"""Interactive explorers (ipywidgets), one module per topic. UI only: all math lives
in the model modules; :mod:`.base` holds the parts every explorer shares.

Each explorer is a factory with no required argument that *returns* a widget (it
never displays it), so tests can drive it headless. Controls hold display units
(GB/s, GBd, billions of parameters); they are converted to SI here, at the edge,
before any model call. Invalid input shows a message inside the widget instead
of a traceback.

Figures are drawn on one persistent Agg figure per explorer and shipped as PNG
bytes into an :class:`ipywidgets.Image`: no new figure per update and no
dependence on the notebook's matplotlib backend (about 25 ms per update on two
cores, see ``benchmarks/widgets.py``).
"""
from __future__ import annotations

import warnings

from .base import (  # noqa: F401
    parse_params,
    parse_bandwidth,
)
from .scaling import (  # noqa: F401
    scaling_explorer,
)
from .links import (  # noqa: F401
    link_explorer,
)
from .pcie import (  # noqa: F401
    pcie_explorer,
    PIPELINE_LAYOUTS,
    PIPELINE_REFERENCES,
    pipeline_explorer,
)
from .topology import (  # noqa: F401
    topology_samples,
    topology_explorer,
)
from .collectives import (  # noqa: F401
    COLLECTIVE_SIZES,
    COLLECTIVE_LAUNCH,
    collective_explorer,
    FABRIC_LABELS,
    FABRIC_SIZES,
    fabric_explorer,
)
from .parallelism import (  # noqa: F401
    BUCKET_LABELS,
    BUCKET_SIZES,
    GRADIENT_SIZES,
    BUCKET_GRID,
    bucket_explorer,
    LAYOUT_BATCHES,
    LAYOUT_LABELS,
    layout_explorer,
    TP_SEQ_LENS,
    tp_explorer,
    roi_explorer,
)
from .network import (  # noqa: F401
    NETWORK_SIZES,
    NETWORK_NODES,
    NETWORK_NICS,
    NETWORK_FABRICS,
    published_points,
    network_explorer,
)
from .inference import (  # noqa: F401
    DECODE_SYSTEMS,
    DECODE_MODELS,
    decode_explorer,
    EP_SIZES,
    EP_TOKENS,
    ep_explorer,
)
from .serving import SERVING_MODELS, SERVING_CONTEXTS, serving_explorer  # noqa: F401

#: Explorer names in book order; ``<name>_explorer`` is the factory.
EXPLORER_NAMES = ("scaling", "link", "pcie", "pipeline", "topology", "collective",
                  "fabric", "network", "bucket", "layout", "tp", "roi", "decode",
                  "serving", "ep")

#: Model-layer names this package exported before they moved to gpulab.parallelism.
_MOVED = ("bucket_allreduce_time", "tp_degree_rows", "TP_DEGREES", "roi_cluster",
          "ROI_FAST_SYSTEMS", "ROI_SLOW_SYSTEMS", "ROI_NODES", "ROI_GLOBAL_BATCH",
          "ROI_SEARCH", "ROI_EXAMPLE_PRICES", "ROI_NETWORK_FROM")


def explorers():
    """All explorers by name: ``{name: factory}``; each factory needs no argument."""
    found = globals()
    return {n: found[f"{n}_explorer"] for n in EXPLORER_NAMES}


def __getattr__(name):  # PEP 562: thin deprecation shim for the moved model names
    if name in _MOVED:
        from .. import parallelism as model_layer

        warnings.warn(f"gpulab.widgets.{name} moved to gpulab.parallelism.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(model_layer, name)
    raise AttributeError(f"module 'gpulab.widgets' has no attribute {name!r}")


__all__ = [
    "explorers",
    "EXPLORER_NAMES",
    "parse_params",
    "parse_bandwidth",
    "scaling_explorer",
    "link_explorer",
    "pcie_explorer",
    "PIPELINE_LAYOUTS",
    "PIPELINE_REFERENCES",
    "pipeline_explorer",
    "topology_samples",
    "topology_explorer",
    "COLLECTIVE_SIZES",
    "COLLECTIVE_LAUNCH",
    "collective_explorer",
    "FABRIC_LABELS",
    "FABRIC_SIZES",
    "fabric_explorer",
    "BUCKET_LABELS",
    "BUCKET_SIZES",
    "GRADIENT_SIZES",
    "BUCKET_GRID",
    "bucket_explorer",
    "LAYOUT_BATCHES",
    "LAYOUT_LABELS",
    "layout_explorer",
    "TP_SEQ_LENS",
    "tp_explorer",
    "roi_explorer",
    "NETWORK_SIZES",
    "NETWORK_NODES",
    "NETWORK_NICS",
    "NETWORK_FABRICS",
    "published_points",
    "network_explorer",
    "DECODE_SYSTEMS",
    "DECODE_MODELS",
    "decode_explorer",
    "SERVING_MODELS",
    "SERVING_CONTEXTS",
    "serving_explorer",
    "EP_SIZES",
    "EP_TOKENS",
    "ep_explorer",
]
