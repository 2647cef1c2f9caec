"""Bad-input rows for gpulab.inference (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, NONNEG, SCALAR_ONLY, Case

from gpulab import inference

MODULES = (inference,)
NO_ARGS = {inference.decode_checks, inference.prefill_checks,
           inference.prefill_constants}

_LAYER = dict(hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, tp=8, batch=32,
              context=8192)
_LAYER_BAD = {"hidden": INT(1, 10**6), "heads": INT(1, 4096), "kv_heads": INT(1, 64) + [7],
              "ffn_hidden": INT(1, 10**7) + [28673], "tp": INT(1, 64) + [3],
              "batch": INT(1, 10**6), "context": INT(1, 10**8),
              "precision": CHOICE("BF16", "fp16")}
_MODEL_BAD = [None, 3, True, "", "no-such-model", "LLAMA3-70B", ["llama3-70b"],
              "mixtral-8x7b", "gpt3-175b"]
_SYSTEM_BAD = [None, 3, True, "", "no-such-system", "HGX-H200", ["hgx-h200"], "/"]
_STEP = dict(model="llama3-70b", system="hgx-h200", tp=8, pp=1, batch=32, context=8192,
             precision="bf16", recipe="compiled", allreduce="nccl")
_STEP_BAD = {"model": _MODEL_BAD, "system": _SYSTEM_BAD, "tp": INT(1, 8) + [3],
             "pp": INT(1, 8) + [2], "batch": INT(1, 10**6),
             "context": INT(1, 10**8), "precision": CHOICE("FP8"),
             "recipe": CHOICE("fused"), "allreduce": CHOICE("ring")}
_PREFILL_LAYER = dict(_LAYER, batch=1, prompt=2048)
del _PREFILL_LAYER["context"]
_PREFILL_LAYER_BAD = dict(_LAYER_BAD, batch=INT(1, 10**4), prompt=INT(1, 10**6))
del _PREFILL_LAYER_BAD["context"]
_PREFILL = dict(_STEP, prompt=2048, batch=1)
del _PREFILL["context"]
_PREFILL_BAD = dict(_STEP_BAD, prompt=INT(1, 10**6), batch=INT(1, 10**4))
del _PREFILL_BAD["context"]

CASES = [
    Case(inference.decode_layer_time, dict(_LAYER, gpu="H200", precision="bf16",
                                           recipe="compiled"),
         dict(_LAYER_BAD, gpu=CHOICE("h200"), recipe=CHOICE("Compiled"))),
    Case(inference.decode_layer_terms, dict(_LAYER, precision="fp8"), _LAYER_BAD),
    Case(inference.bandwidth_floor, dict(_LAYER, gpu="H100", precision="bf16"),
         dict(_LAYER_BAD, gpu=CHOICE("h100"))),
    Case(inference.decode_constants, {"recipe": "eager"}, {"recipe": CHOICE()}),
    Case(inference.custom_constant, {"name": "sync_s"}, {"name": CHOICE("SYNC_S")}),
    Case(inference.allreduce_time,
         {"message_bytes": 2.0**19, "n_ranks": 8, "system": "hgx-h200",
          "algorithm": "twoshot"},
         {"message_bytes": NONNEG + SCALAR_ONLY, "n_ranks": INT(1, 8),
          "system": _SYSTEM_BAD, "algorithm": CHOICE("one-shot")}),
    Case(inference.custom_allreduce_time,
         {"message_bytes": 2.0**19, "n_ranks": 8, "system": "hgx-h200"},
         {"message_bytes": NONNEG + SCALAR_ONLY, "n_ranks": INT(1, 8),
          "system": _SYSTEM_BAD}),
    Case(inference.allreduce_model_time,
         {"kind": "custom", "message_bytes": 2.0**19, "n_ranks": 8, "system": "hgx-h200"},
         {"kind": CHOICE("vllm_custom"), "message_bytes": NONNEG + SCALAR_ONLY,
          "n_ranks": INT(1, 8), "system": _SYSTEM_BAD}),
    Case(inference.allreduce_comparison,
         {"system": "hgx-h200", "n_ranks": 8, "published_system": "h200_sxm"},
         {"system": _SYSTEM_BAD, "n_ranks": [0, -1, 1.5, "8", True, None],
          "published_system": [None, "", "nowhere", 3]}),
    Case(inference.decode_step, _STEP, _STEP_BAD),
    Case(inference.prefill_time, _PREFILL, _PREFILL_BAD),
    Case(inference.prefill_layer_time, dict(_PREFILL_LAYER, gpu="H200", precision="fp8"),
         dict(_PREFILL_LAYER_BAD, gpu=CHOICE("h200"))),
    Case(inference.prefill_layer_terms, dict(_PREFILL_LAYER, precision="bf16"),
         _PREFILL_LAYER_BAD),
]
