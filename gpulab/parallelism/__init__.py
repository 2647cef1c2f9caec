r"""Choosing a parallel layout: memory, communication, compute and bubble models.

One module per part of the question: :mod:`.model` (presets, counts), :mod:`.layout`,
:mod:`.memory`, :mod:`.comm`, :mod:`.efficiency`, :mod:`.step`, :mod:`.chooser`, :mod:`.tp` and :mod:`.roi`;
this package re-exports their public names.

Given a transformer (:class:`ModelSpec`, presets in ``data/llm_models.yaml``) and a
cluster (:mod:`gpulab.systems`), this module answers: how much memory does each GPU
need for a tensor- (TP), pipeline- (PP) and data-parallel (DP) layout, how long does
one training step take, and which layout is fastest among those that fit?

* memory per GPU: :func:`training_memory` (weights, gradients, master weights and
  Adam states, :func:`model_state_bytes` per parameter with Megatron-LM's number
  formats and its distributed optimizer / ZeRO stages, activations per Korthikanti
  et al. 2022) and :func:`inference_memory` (weights and KV cache);
* communication per step: :func:`step_communication`, every collective timed with
  :func:`gpulab.collectives.collective_time` on the chosen system and placement
  (one process per GPU, as torchrun launches training);
* compute: :func:`flops_per_step` (Narayanan et al. 2021) at the efficiency of each
  shard's shape, :func:`layer_efficiency` (fitted to our own H200 layer-shard runs;
  ``mfu=`` still forces a flat one);
* the pipeline bubble: :func:`bubble_fraction`;
* step time and throughput: :func:`step_time`; the chooser: :func:`rank_layouts`;
* helpers for the chapters: :func:`tp_allreduce_count`, :func:`speedup`,
  :func:`slowdown`, :func:`nvlink_roi`, :func:`cluster`.

Units are SI: bytes, seconds, FLOP, FLOP/s. Rank placement follows Megatron-LM's
default order: TP ranks are adjacent GPUs, DP ranks next, PP stages outermost.

Examples
--------
>>> from gpulab import parallelism as par
>>> spec = par.model("llama3-70b")
>>> round(spec.params / 1e9, 2)
70.55
>>> mem = par.training_memory(spec, tp=8, pp=4, dp=2, zero=1, recompute="selective",
...                           sequence_parallel=True)
>>> round(mem.total / 1e9, 1)
50.1
>>> par.tp_allreduce_count()          # 2 forward + 2 backward, per layer and micro-batch
4
>>> round(par.bubble_fraction(4, 16), 4)
0.1875

References
----------
* Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models
  Using Model Parallelism", arXiv:1909.08053.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", SC21, arXiv:2104.04473.
* Megatron-LM documentation, "Distributed Optimizer" (NVIDIA/Megatron-LM,
  docs/user-guide/features/dist_optimizer.md).
* Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", SC20, arXiv:1910.02054.
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", arXiv:2205.05198.
"""
from __future__ import annotations

from .model import (  # noqa: F401
    RECOMPUTE,
    ZERO_STAGES,
    MLP_KINDS,
    NORMS,
    FLOPS_METHODS,
    assumption,
    ModelSpec,
    model_names,
    model,
    parameter_count,
    flops_per_step,
    layer_flops,
    per_op_recomputed_matrices,
)
from .checks import (  # noqa: F401
    WHOLE_MODEL_SYSTEM, recompute_scale_fit, whole_model_check,
)
from .overlap import (  # noqa: F401
    TP_OVERLAP_METHODS,
    TP_OVERLAP_SITES,
    OVERLAP_SITE_METHODS,
    tp_overlap_sites,
    tp_overlap_effect,
)
from .layout import (  # noqa: F401
    Layout,
    PIPELINE_SPLITS,
    cluster,
    stage_layers,
    validate_layout,
)
from .memory import (  # noqa: F401
    DTYPE_BYTES,
    DTYPES,
    STATE_PARTS,
    model_state_bytes,
    activation_memory_per_layer,
    TrainingMemory,
    training_memory,
    fp8_memory_overhead,
    FP8_FRAMEWORKS,
    InferenceMemory,
    inference_memory,
)
from .comm import (  # noqa: F401
    ExpertAllToAll,
    expert_alltoall_time,
    bucket_allreduce_time,
    tp_allreduce_count,
    cp_exposed,
    Communication,
    step_communication,
)
from .efficiency import (  # noqa: F401
    ATTENTION_BACKENDS,
    MIX_ORDER_MAX_WIDTH,
    MIX_ORDER_MIN_ELEMENTS,
    MIX_ORDER_MIN_ROWS,
    MIX_ORDER_SPILL_FREE_WIDTH,
    PRECISIONS,
    RECIPES,
    attention_backend_check,
    attention_backend_ratio,
    attention_time_check,
    layer_efficiency,
    mix_order_fused,
    mix_order_spills,
    stage_compute_time,
)
from .fp8 import (  # noqa: F401
    ONE_SEQUENCE_RUNS,
    RECIPE_RUNS,
    fp8_speedup,
    fp8_speedup_curve,
    measured_fp8_speedups,
    mix_order_profiles,
    mix_order_kernels,
    recipe_runs,
)
from .power import (  # noqa: F401
    POWER_PRECISIONS, clock_factor, ignoring_limits, power_clock_check, power_clock_curve,
    power_clock_fit, sustained_clock,
)
from .step import (  # noqa: F401
    RECOMPUTE_COSTS,
    bubble_fraction,
    compiled_recompute_scale,
    StepTime,
    step_time,
)
from .chooser import (  # noqa: F401
    LayoutResult,
    Ranking,
    rank_layouts,
)
from .tp import (  # noqa: F401
    TP_DEGREES,
    tp_degree_rows,
)
from .roi import (  # noqa: F401
    speedup,
    slowdown,
    ROI,
    nvlink_roi,
    ROI_FAST_SYSTEMS,
    ROI_SLOW_SYSTEMS,
    ROI_NODES,
    ROI_GLOBAL_BATCH,
    ROI_SEARCH,
    ROI_EXAMPLE_PRICES,
    ROI_NETWORK_FROM,
    roi_cluster,
    roi_best_step,
    roi_comparison,
)
from .published import (  # noqa: F401
    PUBLISHED_FP8,
    published_fp8_rows,
    published_fp8_check,
    published_fp8_summary,
)

__all__ = [
    "RECOMPUTE",
    "ZERO_STAGES",
    "MLP_KINDS",
    "NORMS",
    "FLOPS_METHODS",
    "assumption",
    "ModelSpec",
    "model_names",
    "model",
    "parameter_count",
    "flops_per_step",
    "layer_flops",
    "per_op_recomputed_matrices",
    "TP_OVERLAP_METHODS",
    "TP_OVERLAP_SITES",
    "OVERLAP_SITE_METHODS",
    "tp_overlap_sites",
    "tp_overlap_effect",
    "WHOLE_MODEL_SYSTEM",
    "whole_model_check",
    "ATTENTION_BACKENDS",
    "attention_backend_check",
    "attention_backend_ratio",
    "attention_time_check",
    "Layout",
    "PIPELINE_SPLITS",
    "cluster",
    "stage_layers",
    "validate_layout",
    "DTYPE_BYTES",
    "DTYPES",
    "STATE_PARTS",
    "model_state_bytes",
    "activation_memory_per_layer",
    "TrainingMemory",
    "training_memory",
    "InferenceMemory",
    "inference_memory",
    "fp8_memory_overhead",
    "FP8_FRAMEWORKS",
    "bucket_allreduce_time",
    "expert_alltoall_time",
    "ExpertAllToAll",
    "tp_allreduce_count",
    "cp_exposed",
    "Communication",
    "step_communication",
    "PRECISIONS",
    "RECIPES",
    "layer_efficiency",
    "mix_order_fused",
    "mix_order_spills",
    "MIX_ORDER_MIN_ROWS",
    "MIX_ORDER_SPILL_FREE_WIDTH",
    "MIX_ORDER_MIN_ELEMENTS",
    "MIX_ORDER_MAX_WIDTH",
    "stage_compute_time",
    "RECIPE_RUNS",
    "ONE_SEQUENCE_RUNS",
    "fp8_speedup",
    "fp8_speedup_curve",
    "measured_fp8_speedups",
    "mix_order_profiles",
    "mix_order_kernels",
    "recipe_runs",
    "bubble_fraction",
    "StepTime",
    "step_time",
    "RECOMPUTE_COSTS",
    "compiled_recompute_scale",
    "recompute_scale_fit",
    "LayoutResult",
    "Ranking",
    "rank_layouts",
    "TP_DEGREES",
    "tp_degree_rows",
    "speedup",
    "slowdown",
    "ROI",
    "nvlink_roi",
    "ROI_FAST_SYSTEMS",
    "ROI_SLOW_SYSTEMS",
    "ROI_NODES",
    "ROI_GLOBAL_BATCH",
    "ROI_SEARCH",
    "ROI_EXAMPLE_PRICES",
    "ROI_NETWORK_FROM",
    "roi_cluster",
    "roi_best_step",
    "roi_comparison",
    "PUBLISHED_FP8",
    "published_fp8_rows",
    "published_fp8_check",
    "published_fp8_summary",
    "POWER_PRECISIONS",
    "clock_factor",
    "ignoring_limits",
    "power_clock_check",
    "power_clock_curve",
    "power_clock_fit",
    "sustained_clock",
]
