"""Bad-input rows for gpulab.parallelism (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import (CHOICE, FRACTION_CLOSED, FRACTION_OPEN, INF, INT, NAN,
                        NONNEG, POS, SCALAR_ONLY, Case)

from gpulab import parallelism as par

MODULES = (par,)
NO_ARGS = {par.model_names}


def _opt(values):
    """Drop None: the parameter is optional (None = the documented default)."""
    return [v for v in values if v is not None]


_SPEC_BAD = [None, 3, True, "", "no-such-model", "13B", ["13b"]]
_SYSTEM_BAD = [None, 3, True, "", "no-such-system", "HGX-H200", ["hgx-h200"], "/"]
_LAYOUT_BAD = [None, "8x1x1", 8, (0, 1, 1), (1, 1), (1, 1, 1, 1, 1), (1.5, 1, 1),
               (True, 1, 1), ("8", 1, 1), (1, -1, 1), (16, 1, 1)]
_LAYOUT_BAD_SHAPE = _LAYOUT_BAD[:-1]          # validate_layout: (16,1,1) is a reason
_FLAG = [None, 1, 0, "yes", [True]]
_SEQ = [0, -1, 2.5, "8", True, NAN, INF, ["a"]]
_OPT_POS = _opt(POS)
_FRAC_OPEN = _opt(FRACTION_OPEN)
_FRAC_CLOSED = _opt(FRACTION_CLOSED)
_RESERVE = [-0.1, 1.0, 2, NAN, INF, "0.1", True, [0.1, 0.2]]
_BUCKET = [0, 0.5, -1.0, NAN, INF, "1", True, [1e6, 2e6]]
_ZERO = INT(0, 3)
_MEM = dict(spec="13b", tp=2, pp=2, dp=2, micro_batch=1, seq_len=2048, zero=1,
            sequence_parallel=True, recompute="selective", micro_batches=8,
            virtual=1, param_dtype="bf16", grad_dtype="fp32", fp32_grad_copy=None,
            weight_bytes=2, grad_bytes=4)
_STEP = dict(spec="13b", system="hgx-h200", layout=(2, 2, 2), global_batch=64,
             micro_batch=1, seq_len=2048, zero=1, sequence_parallel=False,
             recompute="none", mfu=0.4, dp_overlap=1.0, tp_overlap=0.0,
             bucket_bytes=25 * 2**20, reserve=0.1, nvls=True, precision="bf16")
_PRECISION = CHOICE("BF16", "fp16")

CASES = [
    Case(par.model, {"name": "13b"}, {"name": CHOICE("13B", "llama-3-8b")}),
    Case(par.parameter_count, {"spec": "llama3-8b"}, {"spec": _SPEC_BAD}),
    Case(par.assumption, {"name": "mfu"}, {"name": CHOICE("MFU", "bytes")}),
    Case(par.cluster, {"system": "hgx-h200", "nodes": 8, "network_from": None},
         {"system": _SYSTEM_BAD, "nodes": INT(1, 100_000),
          "network_from": [3, True, "", "no-such-system", "h100-pcie", ["x"]]}),
    Case(par.cluster, {"system": "h100-pcie", "nodes": 1, "network_from": None},
         {"system": _SYSTEM_BAD, "nodes": [2, 0, 2.5]},
         exempt={"network_from": "covered by the row above"}),
    Case(par.activation_memory_per_layer,
         {"spec": "13b", "tp": 2, "micro_batch": 1, "seq_len": 2048,
          "sequence_parallel": False, "recompute": "none"},
         {"spec": _SPEC_BAD, "tp": INT(1, 1_000_000), "micro_batch": INT(1),
          "seq_len": _SEQ, "sequence_parallel": _FLAG, "recompute": CHOICE("Full")}),
    Case(par.training_memory, _MEM,
         {"spec": _SPEC_BAD, "tp": INT(1, 1_000_000), "pp": INT(1, 1_000_000),
          "dp": INT(1, 1_000_000), "micro_batch": INT(1), "seq_len": _SEQ,
          "zero": _ZERO, "sequence_parallel": _FLAG, "recompute": CHOICE(),
          "micro_batches": _SEQ, "virtual": INT(1, 1_000_000),
          "param_dtype": _opt(CHOICE("BF16", "fp8")),
          "grad_dtype": _opt(CHOICE("FP32")), "fp32_grad_copy": _opt(_FLAG),
          "weight_bytes": _OPT_POS + SCALAR_ONLY + [17],
          "grad_bytes": _OPT_POS + [1e308], "ep": INT(1, 1_000_000) + [2]}),
    Case(par.inference_memory,
         {"spec": "llama3-70b", "tp": 8, "pp": 1, "batch": 4, "seq_len": 8192,
          "weight_bytes": 2, "kv_dtype_bytes": 1},
         {"spec": _SPEC_BAD, "tp": INT(1, 1_000_000), "pp": INT(1, 1_000_000),
          "batch": INT(1), "seq_len": _SEQ, "weight_bytes": _OPT_POS,
          "kv_dtype_bytes": POS + SCALAR_ONLY}),
    Case(par.tp_allreduce_count, {"sequence_parallel": True, "recompute": "full"},
         {"sequence_parallel": _FLAG, "recompute": CHOICE()}),
    Case(par.bubble_fraction, {"pp": 4, "micro_batches": 8, "virtual": 2},
         {"pp": INT(1, 1_000_000), "micro_batches": INT(1),
          "virtual": INT(1, 1_000_000)}),
    Case(par.flops_per_step,
         {"spec": "70b", "tokens": 4096 * 64, "seq_len": 4096, "recompute": "full",
          "method": "6n"},
         {"spec": _SPEC_BAD, "tokens": NONNEG + SCALAR_ONLY, "seq_len": _SEQ,
          "recompute": CHOICE(), "method": CHOICE("6N", "Narayanan")}),
    Case(par.layer_flops,
         {"spec": "70b", "tokens": 4096, "seq_len": 4096, "recompute": "none"},
         {"spec": _SPEC_BAD, "tokens": NONNEG + SCALAR_ONLY, "seq_len": _SEQ,
          "recompute": CHOICE()}),
    Case(par.step_communication,
         {"spec": "13b", "system": "hgx-h200", "layout": (2, 2, 2), "micro_batch": 1,
          "micro_batches": 8, "seq_len": 2048, "zero": 1,
          "sequence_parallel": True, "recompute": "none",
          "bucket_bytes": 25 * 2**20, "grad_bytes": 2, "weight_bytes": 2,
          "nvls": True},
         {"spec": _SPEC_BAD, "system": _SYSTEM_BAD, "layout": _LAYOUT_BAD,
          "micro_batch": INT(1), "micro_batches": INT(1), "seq_len": _SEQ,
          "zero": _ZERO, "sequence_parallel": _FLAG, "recompute": CHOICE(),
          "bucket_bytes": _BUCKET, "grad_bytes": _OPT_POS,
          "weight_bytes": _OPT_POS, "nvls": _FLAG, "ep": INT(1, 1_000_000) + [2]}),
    Case(par.step_time, _STEP,
         {"spec": _SPEC_BAD, "system": _SYSTEM_BAD,
          "layout": _LAYOUT_BAD + [(3, 1, 1), (1, 3, 1)],
          "global_batch": INT(1) + [63], "micro_batch": INT(1), "seq_len": _SEQ,
          "zero": _ZERO, "sequence_parallel": _FLAG, "recompute": CHOICE(),
          "mfu": _FRAC_OPEN, "dp_overlap": _FRAC_CLOSED,
          "tp_overlap": _FRAC_CLOSED, "bucket_bytes": _BUCKET,
          "reserve": _RESERVE, "nvls": _FLAG, "precision": _PRECISION,
          "ep": INT(1, 1_000_000) + [2], "recipe": CHOICE("Compiled", "torchao")}),
    Case(par.validate_layout,
         {"spec": "13b", "system": "hgx-h200", "layout": (8, 1, 1),
          "global_batch": 64, "micro_batch": 1, "seq_len": 2048, "zero": 1,
          "sequence_parallel": False, "recompute": "none", "n_gpus": 8,
          "reserve": 0.1},
         {"spec": _SPEC_BAD, "system": _SYSTEM_BAD, "layout": _LAYOUT_BAD_SHAPE,
          "global_batch": INT(1), "micro_batch": INT(1), "seq_len": _SEQ,
          "zero": _ZERO, "sequence_parallel": _FLAG, "recompute": CHOICE(),
          "n_gpus": _opt(INT(1, 8)), "reserve": _RESERVE}),
    Case(par.rank_layouts,
         {"spec": "13b", "system": "hgx-h200", "n_gpus": 8, "global_batch": 64,
          "micro_batch": (1, 2), "seq_len": 2048, "zero": 1,
          "sequence_parallel": (False, True), "recompute": ("none", "selective"),
          "virtual": 1, "mfu": 0.4, "dp_overlap": 1.0, "tp_overlap": 0.0,
          "bucket_bytes": 25 * 2**20, "reserve": 0.1, "nvls": True,
          "precision": "bf16"},
         {"spec": _SPEC_BAD, "system": _SYSTEM_BAD, "n_gpus": _opt(INT(1, 8)),
          "global_batch": INT(1), "micro_batch": [0, 2.5, "8", None, True, NAN, (),
                                                   (1, 0), ["a"]],
          "seq_len": _SEQ, "zero": _ZERO,
          "sequence_parallel": [None, 1, "yes", (), (True, 2)],
          "recompute": CHOICE(("none", "all")), "virtual": INT(1) + [(), (1, 0)],
          "mfu": _FRAC_OPEN, "dp_overlap": _FRAC_CLOSED,
          "tp_overlap": _FRAC_CLOSED, "bucket_bytes": _BUCKET,
          "reserve": _RESERVE, "nvls": _FLAG, "precision": _PRECISION,
          "ep": _opt(INT(1, 8)) + [2, (), (1, 0)],
          "recipe": CHOICE("Compiled", "torchao")}),
    *[Case(f, {"t_fast": 2.0, "t_slow": 3.0},
           {"t_fast": POS + SCALAR_ONLY, "t_slow": POS + SCALAR_ONLY})
      for f in (par.speedup, par.slowdown)],
    Case(par.nvlink_roi,
         {"t_fast": 1.0, "t_slow": 1.5, "tokens_per_step": 2**18, "price_fast": 3.0,
          "price_slow": 2.0, "n_gpus": 8, "project_tokens": 1e12},
         {"t_fast": POS, "t_slow": POS, "tokens_per_step": POS + SCALAR_ONLY,
          "price_fast": NONNEG + SCALAR_ONLY, "price_slow": NONNEG,
          "n_gpus": INT(1, 10**9), "project_tokens": POS}),
    Case(par.bucket_allreduce_time,
         {"gradient_bytes": 2**30, "bucket_bytes": [2**25, 2**30], "n_ranks": 2,
          "system": "hgx-h200", "transport": "p2p"},
         {"gradient_bytes": [0, 0.5, -1.0, NAN, INF, "1", True, [1e9, 2e9], None],
          "bucket_bytes": [0, 0.5, -1.0, NAN, INF, "1", None, [], [[1e6]], ["a"]],
          "n_ranks": INT(1, 8), "system": _SYSTEM_BAD, "transport": CHOICE("P2P", "nvlink")}),
    Case(par.expert_alltoall_time,
         {"tokens": 4096, "hidden": 8192, "ep": 8, "system": "hgx-h200", "top_k": 2,
          "element_bytes": 2.0, "stride": 1, "nvls": True},
         {"tokens": INT(1, 10**9), "hidden": INT(1, 10**7), "ep": INT(2, 8),
          "system": _SYSTEM_BAD, "top_k": INT(1, 1024),
          "element_bytes": POS + [8.5], "stride": INT(1, 8), "nvls": _FLAG}),
    Case(par.tp_degree_rows,
         {"model": "13b", "system": "hgx-h200", "seq_len": 2048, "micro_batch": 1,
          "sequence_parallel": False, "tp_overlap": 0.0, "precision": "bf16"},
         {"model": _SPEC_BAD, "system": _SYSTEM_BAD[1:], "seq_len": _SEQ,
          "micro_batch": INT(1), "sequence_parallel": _FLAG,
          "tp_overlap": _FRAC_CLOSED, "precision": _PRECISION}),
    Case(par.roi_cluster, {"system": "h100-pcie", "nodes": 2},
         {"system": _SYSTEM_BAD, "nodes": INT(1, 100_000)}),
    Case(par.roi_best_step, {"model": "13b", "system": "hgx-h200", "nodes": 1,
                             "precision": "bf16"},
         {"model": _SPEC_BAD, "system": _SYSTEM_BAD + ["dgx-a100"],
          "nodes": [0, 3, 16, 2.0, "1", True, None, [1]], "precision": _PRECISION,
          "recipe": CHOICE("Compiled")}),
    Case(par.roi_comparison,
         {"model": "13b", "nodes": 1, "fast": "hgx-h200", "slow": "h100-pcie",
          "price_fast": 3.0, "price_slow": 2.25, "project_tokens": 1e11,
          "precision": "bf16"},
         {"model": _SPEC_BAD, "nodes": [0, 3, 2.0, "1", True, None],
          "fast": _SYSTEM_BAD + ["h100-pcie"], "slow": _SYSTEM_BAD + ["hgx-h200"],
          "price_fast": NONNEG + SCALAR_ONLY, "price_slow": NONNEG,
          "project_tokens": POS, "precision": _PRECISION,
          "recipe": CHOICE("Compiled")}),
    Case(par.fp8_memory_overhead, {"spec": "llama3-70b", "tp": 8, "pp": 4,
                                   "framework": "torchao"},
         {"spec": _SPEC_BAD, "tp": INT(1), "pp": INT(1),
          "framework": CHOICE("TE", "apex")}),
]
