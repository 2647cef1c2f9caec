"""Kernel-free interactive charts for the published book (Altair / Vega-Lite), one
module per topic. Each ``<name>_chart`` evaluates public model functions at build
time over a small grid of its explorer's main controls and returns a
:class:`~gpulab.charts.base.StaticChart`: its Vega-Lite spec binds the controls as
parameters (sliders, drop-downs, radio buttons that step over the grid points
only) and its HTML, rendered by the book's vendored vega, vega-lite and
vega-embed, needs no kernel and no network. Depends on the models only (not on
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
from .links import (  # noqa: F401
    LINK_COUNTS,
    link_chart,
)
from .pcie import (  # noqa: F401
    PCIE_LANES,
    PCIE_PAYLOADS,
    pcie_chart,
    PIPELINE_PLACEMENTS,
    PIPELINE_HIDDEN,
    PIPELINE_SEQ_LENS,
    PIPELINE_MICRO_BATCHES,
    PIPELINE_DTYPES,
    pipeline_chart,
)
from .topology import (  # noqa: F401
    TOPOLOGY_MEASURED,
    topology_texts,
    topology_chart,
)
from .collectives import (  # noqa: F401
    COLLECTIVE_SYSTEMS,
    COLLECTIVE_OPS,
    COLLECTIVE_RANKS,
    COLLECTIVE_MARKS,
    COLLECTIVE_CURVE,
    collective_chart,
    FABRIC_SYSTEMS,
    FABRIC_RANKS,
    FABRIC_MARKS,
    fabric_chart,
)
from .parallelism import (  # noqa: F401
    BUCKET_SYSTEMS,
    BUCKET_RANKS,
    BUCKET_GRADIENTS,
    BUCKET_MARKS,
    BUCKET_CURVE,
    bucket_chart,
    LAYOUT_MODELS,
    LAYOUT_BATCHES,
    LAYOUT_CHOICES,
    layout_chart,
    TP_MODELS,
    TP_CHART_SEQ_LENS,
    TP_CHART_DEGREES,
    tp_chart,
    ROI_PRICES,
    ROI_TOKENS,
    roi_chart,
)
from .network import (  # noqa: F401
    NETWORK_CLUSTERS,
    NETWORK_CHART_NODES,
    NETWORK_CHART_FABRICS,
    NETWORK_MARKS,
    NETWORK_CURVE,
    network_chart,
)
from .inference import (  # noqa: F401
    DECODE_CHART_SYSTEMS,
    DECODE_CHART_TPS,
    DECODE_CHART_BATCHES,
    DECODE_CHART_ALLREDUCE,
    decode_chart,
    EP_CHART_SYSTEMS,
    EP_CHART_KERNELS,
    EP_CHART_SIZES,
    EP_CHART_TOKENS,
    ep_chart,
)
from .serving import (  # noqa: F401
    SERVING_CHART_MODELS,
    SERVING_CHART_TPOTS_MS,
    SERVING_CHART_CONTEXTS,
    serving_chart,
)

#: Chart names in book order (one per explorer); ``<name>_chart`` is the builder.
CHART_NAMES = ("scaling", "link", "pcie", "pipeline", "topology", "collective",
               "fabric", "network", "bucket", "layout", "tp", "roi", "decode",
               "serving", "ep")


def charts():
    """All chart builders by name: ``{name: builder}``; each needs no argument."""
    found = globals()
    return {n: found[f"{n}_chart"] for n in CHART_NAMES}
