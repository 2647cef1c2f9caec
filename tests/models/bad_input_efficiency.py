"""Bad-input rows for gpulab.parallelism.layer_efficiency (collected by
tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, Case

from gpulab import parallelism as par, specs

MODULES = ()

CASES = [
    Case(par.layer_efficiency,
         {"hidden": 8192, "heads": 64, "tp": 8, "seq_len": 2048, "micro_batch": 1,
          "gpu": "H200", "precision": "bf16"},
         {"hidden": INT(1, 10**7), "heads": INT(1, 8192) + [48],
          "tp": INT(1, 64) + [3], "seq_len": INT(1, 10**8),
          "micro_batch": INT(1, 10**6), "gpu": CHOICE("h200", "H200 SXM"),
          "precision": CHOICE("BF16", "fp16"), "recipe": CHOICE("Compiled", "te"),
          "host": CHOICE("queued", "Ahead")}),
    Case(par.layer_efficiency,
         {"hidden": 8192, "heads": 64, "tp": 8, "seq_len": 2048, "micro_batch": 1,
          "gpu": "A100", "precision": "bf16"},
         {"precision": ["fp8"]},
         exempt={p: "covered by the row above" for p in
                 ("hidden", "heads", "tp", "seq_len", "micro_batch", "gpu", "recipe",
                  "host")}),
]
CASES += [
    Case(par.stage_compute_time,
         {"hidden": 4096, "layers": 8, "seq_len": 4096, "micro_batch": 1, "heads": 32,
          "tp": 1, "gpu": "H100", "precision": "bf16"},
         {"hidden": INT(1, 10**7), "layers": INT(1, 10**5),
          "heads": [v for v in INT(1, 4096) if v is not None] + [48],
          "tp": INT(1, 32) + [3], "seq_len": INT(1, 10**8),
          "micro_batch": INT(1, 10**6), "gpu": CHOICE("h100", "H100 SXM"),
          "precision": CHOICE("BF16", "fp16"), "recipe": CHOICE("eager ")}),
    Case(par.stage_compute_time,
         {"hidden": 4096, "layers": 8, "seq_len": 4096, "micro_batch": 1},
         {"hidden": [100, 4000, 64]},
         exempt={p: "covered by the row above" for p in
                 ("layers", "seq_len", "micro_batch", "heads", "tp", "gpu", "precision",
                  "recipe")}),
]

CASES += [
    Case(par.fp8_speedup,
         {"hidden": 8192, "tp": 4, "seq_len": 2048, "micro_batch": 2, "gpu": "H200",
          "recipe": "compiled"},
         {"hidden": INT(128, 10**6) + [1000], "tp": INT(1, 64) + [3],
          "seq_len": INT(1, 10**7), "micro_batch": INT(1, 10**5),
          "gpu": CHOICE("A100", "h200"), "recipe": CHOICE("Eager")}),
    Case(par.fp8_speedup_curve,
         {"tp": 8, "micro_batch": 4, "seq_len": 2048, "gpu": "H100", "recipe": "eager"},
         {"tp": INT(1, 1024), "micro_batch": INT(1, 10**5), "seq_len": INT(1, 10**7),
          "gpu": CHOICE("V100"), "recipe": CHOICE("fused")}),
    Case(par.mix_order_fused, {"rows": 8192, "width": 4096, "sequences": 1},
         {"rows": INT(1), "width": INT(1), "sequences": INT(1)}),
    Case(par.mix_order_spills, {"width": 8192, "norm": "rmsnorm"},
         {"width": INT(1), "norm": CHOICE("RMSNorm", "batchnorm")}),
    Case(par.recipe_runs, {"recipe": "fp8-tensorwise", "kind": "llama"},
         {"recipe": ["fp8", "", 3, True, ["x"], "bf16"],
          "kind": ["no-such-thing", "", 3, True, ["x"], "Llama", "moe"]}),
    Case(par.published_fp8_check,
         {"recipe": "eager", "tp_overlap": False, "power_limits": False,
          "recompute_cost": "compiled", "fp8_gather": False},
         {"recipe": CHOICE("te", "Compiled"), "tp_overlap": [None, 1, "yes", [True]],
          "power_limits": [None, 0, "no", [False]],
          "recompute_cost": CHOICE("Compiled", "measured"),
          "fp8_gather": [None, 0, "no", [False]]}),
    Case(par.published_fp8_summary, {"recipe": "compiled"},
         {"recipe": CHOICE("te", "Compiled")}),
]
NO_ARGS = {par.measured_fp8_speedups, par.published_fp8_rows, par.mix_order_profiles,
           par.mix_order_kernels}

_H100 = specs.gpu("H100", "SXM5 96GB HBM2e")
_SPEC_BAD = [None, "H100", 3, True, {"name": "H100"}]
CASES += [
    Case(par.sustained_clock, {"gpu_spec": _H100, "precision": "fp8"},
         {"gpu_spec": _SPEC_BAD, "precision": CHOICE("FP8", "int8")}),
    Case(par.clock_factor, {"gpu_spec": _H100, "precision": "bf16"},
         {"gpu_spec": _SPEC_BAD, "precision": CHOICE("BF16", "fp4")}),
    Case(par.power_clock_curve, {"sms": [8, 66, 132], "limit_w": 500.0},
         {"sms": [0, -1, 133, 1e9, float("nan"), [], [8, 200], "8", None],
          "limit_w": [0, 100.0, -500.0, float("nan"), float("inf"), "500", True, [500.0]]}),
]
NO_ARGS |= {par.power_clock_fit, par.power_clock_check, par.ignoring_limits,
            par.recompute_scale_fit}
