"""Figures for the course, one module per topic (matplotlib only).

Rules: every ``plot_*`` takes ``ax=None`` (a new figure is made only when needed),
draws from gpulab models or data, returns the ``Axes``, never calls ``plt.show()``
and sets no title (the caption carries the message). Axes carry units; byte axes
use binary prefixes and a log scale. The house style is applied only by an
explicit :func:`use_book_style` call.

A topic's model lives in ``gpulab.<topic>``, its figures in ``gpulab.plotting.<topic>``;
this package re-exports every public name, so ``gpulab.plotting.plot_fabric`` works.
"""
from __future__ import annotations

from . import style  # noqa: F401
from . import scaling  # noqa: F401
from . import links  # noqa: F401
from . import topology  # noqa: F401
from . import pcie  # noqa: F401
from . import collectives  # noqa: F401
from . import systems  # noqa: F401
from . import nccltests  # noqa: F401
from . import parallelism  # noqa: F401
from . import network  # noqa: F401
from . import inference  # noqa: F401
from . import serving  # noqa: F401
from .style import (  # noqa: F401
    COLORS,
    STYLE,
    use_book_style,
    new_axes,
    bytes_axis,
)
from .scaling import (  # noqa: F401
    plot_growth,
    plot_scaling_efficiency,
    plot_dp_steps,
)
from .links import (  # noqa: F401
    plot_nrz_pam4,
    plot_eye,
    plot_nvlink_generations,
    plot_link_budget,
    plot_copy_bandwidth,
    plot_link_vs_generations,
)
from .topology import (  # noqa: F401
    plot_topology,
)
from .pcie import (  # noqa: F401
    plot_pcie_budget,
    plot_tlp_efficiency,
    plot_host_copies,
    plot_stage_transfers,
)
from .collectives import (  # noqa: F401
    STEP_ALGORITHMS,
    plot_collective_steps,
    plot_collective_prediction,
    plot_collective_comparison,
    plot_busbw_curves,
    plot_fabric_algorithms,
)
from .systems import (  # noqa: F401
    plot_fabric,
    plot_switch_planes,
    plot_peer_links,
)
from .nccltests import (  # noqa: F401
    plot_time_curves,
    plot_article_audit,
    plot_compare,
    plot_run_floors,
)
from .parallelism import (  # noqa: F401
    plot_tp_layers,
    plot_bucket_time,
    plot_memory_breakdown,
    plot_step_breakdown,
    plot_megatron_layer,
    plot_tp_degree,
    plot_tp_measured,
    plot_step_comparison,
    plot_speedup_slowdown,
    plot_fp8_speedup,
    plot_roi,
    plot_power_clock,
)
from .network import (  # noqa: F401
    NETWORK_ALGO_COLORS,
    plot_scale_out,
    plot_busbw_vs_nodes,
    plot_ep_alltoall,
    PROTOCOL_COLORS,
    plot_step_latency,
    plot_mixed_ring,
)
from .inference import (  # noqa: F401
    plot_decode_layers,
    plot_allreduce_sizes,
    plot_tpot_breakdown,
    plot_ep_check,
    plot_kv_transfer_check,
    plot_ttft_share,
    plot_ep_times,
)
from .serving import (  # noqa: F401
    SYSTEM_STYLE, plot_serving_layouts, plot_tpot_check, plot_tokens_per_dollar,
    plot_kv_transfer,
)

__all__ = [
    "COLORS",
    "STYLE",
    "use_book_style",
    "new_axes",
    "bytes_axis",
    "plot_growth",
    "plot_scaling_efficiency",
    "plot_dp_steps",
    "plot_nrz_pam4",
    "plot_eye",
    "plot_nvlink_generations",
    "plot_link_budget",
    "plot_copy_bandwidth",
    "plot_link_vs_generations",
    "plot_topology",
    "plot_pcie_budget",
    "plot_tlp_efficiency",
    "plot_host_copies",
    "plot_stage_transfers",
    "STEP_ALGORITHMS",
    "plot_collective_steps",
    "plot_collective_prediction",
    "plot_collective_comparison",
    "plot_busbw_curves",
    "plot_fabric_algorithms",
    "plot_fabric",
    "plot_switch_planes",
    "plot_peer_links",
    "plot_time_curves",
    "plot_article_audit",
    "plot_compare",
    "plot_run_floors",
    "plot_tp_layers",
    "plot_bucket_time",
    "plot_memory_breakdown",
    "plot_step_breakdown",
    "plot_megatron_layer",
    "plot_tp_degree",
    "plot_tp_measured",
    "plot_step_comparison",
    "plot_speedup_slowdown",
    "plot_fp8_speedup",
    "plot_roi",
    "plot_power_clock",
    "NETWORK_ALGO_COLORS",
    "plot_scale_out",
    "plot_busbw_vs_nodes",
    "plot_ep_alltoall",
    "PROTOCOL_COLORS",
    "plot_step_latency",
    "plot_mixed_ring",
    "plot_decode_layers",
    "plot_allreduce_sizes",
    "plot_tpot_breakdown",
    "plot_ep_check",
    "plot_kv_transfer_check",
    "plot_ttft_share",
    "plot_ep_times",
    "SYSTEM_STYLE", "plot_serving_layouts", "plot_tpot_check", "plot_tokens_per_dollar",
    "plot_kv_transfer",
]
