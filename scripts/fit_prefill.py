"""Fit the prefill layer-shard model (gpulab.inference.prefill_layer_time) to our 1x H200
prefill runs.

Reads ``gpulab/data/measurements/raw/h200-x1-2026-12-02-prefill/prefill.csv``
(``measure/prefill_shard.py``: the forward of one TP shard of a Llama-style layer over
``batch`` prompts, compiled pieces, causal SDPA with GQA, BF16 and FP8). The constants are
fitted on the Llama 3 8B and 70B rows with one prompt ONLY; every row of the 5120-wide
layer (``h5120-gqa8``) and every batch-4 row is held out and gives the errors stored beside
the constants, by prompt band and precision. The same bands are stored for the path the
model replaces (``before``: forward FLOPs with full attention at the training layer
efficiency, ``gpulab.parallelism.layer_efficiency``). Levenberg-Marquardt on log time,
constants kept in range by their transforms (positive: exp; fractions in (0, 1]:
logistic), fixed starts, best kept. Writes ``gpulab/data/prefill_model.yaml``
(``--check``: exit 1 if the stored file differs from a fresh fit).
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from fitting import (  # noqa: E402
    error_summary, from_theta, levenberg_marquardt, to_theta, write_or_check, yaml_text)
from gpulab import specs  # noqa: E402
from gpulab.inference.decode import HEAD_DIM, decode_layer_terms  # noqa: E402
from gpulab.inference.prefill import (  # noqa: E402
    PREFILL_CONSTANTS, prefill_layer_terms, prefill_terms_time)
from gpulab.parallelism.efficiency import layer_efficiency, peak_flops  # noqa: E402

RUN = "measurements/raw/h200-x1-2026-12-02-prefill"
OUT = ROOT / "gpulab" / "data" / "prefill_model.yaml"
GPU = specs.gpu("H200")
FIT_SHAPES = ("llama3-8b", "llama3-70b")
KEYS = ("hidden", "heads", "kv_heads", "ffn_hidden", "tp", "batch", "prompt")
MEANING = {
    "fixed_s": "Fixed cost of one layer shard's kernels per prefill, the host issuing "
    "ahead [s]",
    "gemm_efficiency_bf16": "Fraction of the dense BF16 Tensor Core peak the BF16 "
    "prefill GEMMs reach [1]",
    "gemm_efficiency_fp8": "Fraction of the dense FP8 Tensor Core peak the FP8 prefill "
    "GEMMs (torch._scaled_mm, per-tensor scales) reach [1]",
    "attention_efficiency": "Fraction of the dense BF16 peak the causal attention FLOPs "
    "(2 T s heads/tp 128) reach [1]",
    "activation_bandwidth_fraction": "Fraction of the GPU's spec HBM bandwidth at which "
    "the counted activation bytes (the GEMMs' BF16 inputs and outputs, and in FP8 the "
    "cast traffic) stream; below 1 also because norms, rotary, SiLU and residual "
    "kernels move more than that count [1]",
    "fp8_fixed_s": "Extra fixed cost of an FP8 layer shard per prefill (amax and cast "
    "kernels) [s]",
}
# transforms of the fitted parameters: "log" (positive), "logit" (0, 1]
FORM = {"fixed_s": "log", "gemm_efficiency_bf16": "logit", "gemm_efficiency_fp8": "logit",
        "attention_efficiency": "logit", "activation_bandwidth_fraction": "logit",
        "fp8_fixed_s": "log"}
STARTS = (
    dict(fixed_s=20e-6, gemm_efficiency_bf16=0.7, gemm_efficiency_fp8=0.5,
         attention_efficiency=0.5, activation_bandwidth_fraction=0.8, fp8_fixed_s=10e-6),
    dict(fixed_s=5e-6, gemm_efficiency_bf16=0.5, gemm_efficiency_fp8=0.7,
         attention_efficiency=0.3, activation_bandwidth_fraction=0.5, fp8_fixed_s=30e-6),
)
BANDS = (("prompt_below_2048", 1, 2047), ("prompt_2048_to_8192", 2048, 8192),
         ("prompt_above_8192", 8193, 10**9))


def encode(c):
    return to_theta(c, PREFILL_CONSTANTS, FORM)


def decode(theta):
    return from_theta(theta, PREFILL_CONSTANTS, FORM)


def rows():
    return list(csv.DictReader(specs.read_data_text(f"{RUN}/prefill.csv").splitlines()))


def is_fit(r):
    return r["shape"] in FIT_SHAPES and int(r["batch"]) == 1


def measured(r):
    return float(r["layer_us"]) * 1e-6


def terms(r):
    return prefill_layer_terms(*(int(r[k]) for k in KEYS), precision=r["precision"])


def model(r, c):
    return prefill_terms_time(terms(r), GPU, r["precision"], c)


def before(r):
    """The replaced path: forward FLOPs (full attention) at the training efficiency."""
    h, a, kv, f, t, b, s = (int(r[k]) for k in KEYS)
    w = decode_layer_terms(h, a, kv, f, t, 1, 1)["weight_elements"]
    flops = 2.0 * b * s * w + 4.0 * b * s * s * (a / t) * HEAD_DIM
    eta = layer_efficiency(h, a, t, s, b, gpu=GPU.name, precision=r["precision"],
                           recipe="compiled")
    return flops / (eta * peak_flops(GPU, r["precision"]))


def fit(data):
    t = np.array([measured(r) for r in data])
    groups = {}
    for p in ("bf16", "fp8"):
        idx = np.array([i for i, r in enumerate(data) if r["precision"] == p], dtype=int)
        ts = [terms(data[i]) for i in idx]
        groups[p] = (idx, {k: np.array([x[k] for x in ts]) for k in ts[0]})

    def res(theta):
        with np.errstate(over="ignore"):
            c = decode(np.clip(theta, -40, 40))
        m = np.empty_like(t)
        for p, (idx, ts) in groups.items():
            m[idx] = prefill_terms_time(ts, GPU, p, c)
        return np.log(m) - np.log(t)
    best = min((levenberg_marquardt(encode(s), res) for s in STARTS),
               key=lambda th: float(res(th) @ res(th)))
    return {n: float(f"{v:.4g}") for n, v in decode(best).items()}



def bands(data, time):
    """Errors (``time(row)`` / measured - 1) overall, by precision, by prompt band and
    by prompt band and precision."""
    err = [(r, time(r) / measured(r) - 1) for r in data]
    out = {"all": error_summary([e for _, e in err])}
    for p in ("bf16", "fp8"):
        out[p] = error_summary([e for r, e in err if r["precision"] == p])
    for name, lo, hi in BANDS:
        out[name] = error_summary([e for r, e in err if lo <= int(r["prompt"]) <= hi])
        for p in ("bf16", "fp8"):
            out[f"{p}_{name}"] = error_summary([e for r, e in err if r["precision"] == p
                                          and lo <= int(r["prompt"]) <= hi])
    return out


def document():
    data = rows()
    fitted = [r for r in data if is_fit(r)]
    held = [r for r in data if not is_fit(r)]
    c = fit(fitted)
    src = (f"Derived: fitted by scripts/fit_prefill.py to the {len(fitted)} fit rows "
           f"(llama3-8b and llama3-70b, one prompt) of gpulab/data/{RUN}/prefill.csv "
           f"(1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, compiled pieces, "
           f"2026-12-02); its {len(held)} held-out rows are not used")
    doc = {n: {"value": c[n], "kind": "derived", "meaning": MEANING[n], "source": src,
               "accessed": "2026-12-02"} for n in PREFILL_CONSTANTS}
    doc["checks"] = {
        "value": {"fit": bands(fitted, lambda r: model(r, c)),
                  "held_out": bands(held, lambda r: model(r, c)),
                  "before_fit": bands(fitted, before),
                  "before_held_out": bands(held, before)},
        "kind": "derived",
        "meaning": "model / measured - 1 on the fit and held-out rows (held out: every "
                   "h5120-gqa8 row and every batch-4 row), overall, by precision, by "
                   "prompt band and by both: n, mean |error|, worst (signed; positive: "
                   "the model is slower). before_*: the same for the replaced path, "
                   "forward FLOPs with full attention at "
                   "gpulab.parallelism.layer_efficiency (compiled training recipe)",
        "source": f"Derived: scripts/fit_prefill.py on gpulab/data/{RUN}",
        "accessed": "2026-12-02"}
    return doc


HEADER = """\
# Constants of the prefill layer-shard model (gpulab.inference.prefill_layer_time) and its
# errors on our runs. Written by scripts/fit_prefill.py; do not edit by hand, re-run it.
"""


def render(doc):
    return yaml_text(HEADER, doc)


def main(argv=None):
    return write_or_check(OUT, lambda: render(document()),
                          "scripts/fit_prefill.py", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
