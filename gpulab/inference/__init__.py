r"""Serving across GPUs: decode and prefill time of a dense SwiGLU / GQA model under
tensor and pipeline parallelism, and the all-reduces of decode-sized messages.

* :func:`decode_layer_time`: one decode step through one TP shard of one layer, compute
  and memory only, fitted to our 1x H200 runs (``data/decode_model.yaml``, written by
  ``scripts/fit_decode.py``; :func:`decode_checks` holds the held-out errors);
* :func:`allreduce_time`: one TP all-reduce, NCCL (the course's collective model) or a
  serving engine's one-shot / two-shot kernel (modelled from its mechanism);
* :func:`decode_step`: time per output token (TPOT), communication share, tokens/s per
  GPU; :func:`prefill_time`: time to first token (TTFT);
* :func:`prefill_layer_time`: the prefill of one TP shard of one layer, fitted to our
  1x H200 prefill runs (``data/prefill_model.yaml``, written by
  ``scripts/fit_prefill.py``; :func:`prefill_checks` holds the held-out errors).

Units are SI: bytes, seconds, bytes per second, FLOP/s; GB = 1e9 B, GiB = 2**30 B.

Examples
--------
>>> from gpulab import inference
>>> d = inference.decode_step("llama3-70b", "hgx-h200", tp=8, batch=32, context=8192,
...                           allreduce="twoshot")
>>> round(d.message_bytes / 2**10)        # one all-reduce: 32 x 8192 x 2 B = 512 KiB
512
>>> d.tpot < inference.decode_step("llama3-70b", "hgx-h200", tp=4, batch=32,
...                                context=8192, allreduce="twoshot").tpot
True

References
----------
* Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053 (two all-reduces per layer).
* vLLM, ``csrc/custom_all_reduce.cuh`` (commit 036bb685): ``cross_device_reduce_1stage``
  and ``cross_device_reduce_2stage``, https://github.com/vllm-project/vllm
"""
from __future__ import annotations

from .decode import (  # noqa: F401
    HEAD_DIM,
    PRECISIONS,
    RECIPES,
    bandwidth_floor,
    decode_checks,
    decode_constants,
    decode_layer_terms,
    decode_layer_time,
)
from .prefill import (  # noqa: F401
    prefill_checks,
    prefill_constants,
    prefill_layer_terms,
    prefill_layer_time,
)
from .serving import (  # noqa: F401
    ALLREDUCE,
    PUBLISHED_ALLREDUCE,
    DecodeStep,
    Prefill,
    allreduce_comparison,
    allreduce_model_time,
    allreduce_time,
    custom_allreduce_time,
    custom_constant,
    decode_step,
    prefill_time,
)
from . import disagg, ep  # noqa: F401
from .ep import (  # noqa: F401
    EPFabric,
    EPTime,
    EPTraffic,
    deepep_h800,
    ep_checks,
    ep_fabric,
    ep_time,
    ep_traffic,
)

__all__ = ["HEAD_DIM", "PRECISIONS", "RECIPES", "ALLREDUCE", "decode_layer_time",
           "decode_layer_terms", "bandwidth_floor", "decode_constants", "decode_checks",
           "allreduce_time", "custom_constant", "DecodeStep", "decode_step", "Prefill",
           "prefill_time", "ep", "disagg", "EPTraffic", "ep_traffic", "EPFabric",
           "ep_fabric", "deepep_h800", "EPTime", "ep_time", "ep_checks",
           "prefill_layer_time", "prefill_layer_terms", "prefill_constants",
           "prefill_checks", "custom_allreduce_time", "PUBLISHED_ALLREDUCE",
           "allreduce_model_time", "allreduce_comparison"]
