"""Fit the decode layer-shard model (gpulab.inference.decode_layer_time) to our 1x H200
decode runs.

Reads ``gpulab/data/measurements/raw/h200-x1-2026-12-02-decode/decode_<recipe>.csv``
(``measure/decode_shard.py``: one decode step of one TP shard of a Llama-style layer
under CUDA graphs). Each recipe (``compiled``, ``eager``) is fitted on its ``fit`` rows
ONLY (llama3-8b and llama3-70b shapes); the ``holdout`` rows (a hidden size the fit has
not, and batches / contexts the fit has not) give the errors stored beside the
constants. Levenberg-Marquardt on log time, constants kept in range by their transforms
(positive: exp; efficiencies in (0, 1]: logistic; smooth-max power >= 1), fixed starts,
best kept. Writes ``gpulab/data/decode_model.yaml`` (``--check``: exit 1 if the stored
file differs from a fresh fit).
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
from gpulab.inference.decode import (  # noqa: E402
    CONSTANTS, decode_layer_terms, decode_terms_time)

RUN = "measurements/raw/h200-x1-2026-12-02-decode"
OUT = ROOT / "gpulab" / "data" / "decode_model.yaml"
GPU = specs.gpu("H200")
MEANING = {
    "fixed_s": "Fixed cost of one layer shard's kernels per decode step under CUDA "
    "graphs [s]",
    "weight_bandwidth_fraction": "Fraction of the GPU's spec HBM bandwidth at which the "
    "shard's weights stream [1]",
    "kv_bandwidth_fraction": "Fraction of the GPU's spec HBM bandwidth at which the KV "
    "cache streams through attention [1]",
    "gemm_efficiency_bf16": "Fraction of the dense BF16 Tensor Core peak the BF16 "
    "decode GEMMs reach [1]",
    "gemm_efficiency_fp8": "Fraction of the dense FP8 Tensor Core peak the FP8 decode "
    "GEMMs reach [1]",
    "attention_efficiency": "Fraction of the dense BF16 peak the attention FLOPs reach [1]",
    "smooth_max_power": "Power p of the smooth maximum (mem^p + math^p)^(1/p) of the "
    "memory and math times (1: their sum) [1]",
    "fp8_fixed_s": "Extra fixed cost of an FP8 layer shard per decode step [s]",
    "fp8_cast_s_per_element": "Time per activation element cast to FP8 [s]",
}
# transforms of the fitted parameters: "log" (positive), "logit" (0, 1], "p" (>= 1)
FORM = {"fixed_s": "log", "weight_bandwidth_fraction": "log",
        "kv_bandwidth_fraction": "log", "gemm_efficiency_bf16": "logit",
        "gemm_efficiency_fp8": "logit", "attention_efficiency": "logit",
        "smooth_max_power": "p", "fp8_fixed_s": "log", "fp8_cast_s_per_element": "log"}
STARTS = (
    dict(fixed_s=30e-6, weight_bandwidth_fraction=0.8, kv_bandwidth_fraction=0.8,
         gemm_efficiency_bf16=0.5, gemm_efficiency_fp8=0.5, attention_efficiency=0.5,
         smooth_max_power=2.0, fp8_fixed_s=1e-6, fp8_cast_s_per_element=1e-12),
    dict(fixed_s=40e-6, weight_bandwidth_fraction=0.9, kv_bandwidth_fraction=0.6,
         gemm_efficiency_bf16=0.73, gemm_efficiency_fp8=0.5, attention_efficiency=0.27,
         smooth_max_power=3.7, fp8_fixed_s=5e-6, fp8_cast_s_per_element=1e-11),
    dict(fixed_s=20e-6, weight_bandwidth_fraction=0.7, kv_bandwidth_fraction=0.9,
         gemm_efficiency_bf16=0.27, gemm_efficiency_fp8=0.27, attention_efficiency=0.73,
         smooth_max_power=8.4, fp8_fixed_s=1e-7, fp8_cast_s_per_element=1e-13),
)


def encode(c):
    return to_theta(c, CONSTANTS, FORM)


def decode(theta):
    return from_theta(theta, CONSTANTS, FORM)


def rows(recipe):
    text = specs.read_data_text(f"{RUN}/decode_{recipe}.csv")
    return list(csv.DictReader(text.splitlines()))


def terms(r):
    return decode_layer_terms(*(int(r[k]) for k in (
        "hidden", "heads", "kv_heads", "ffn_hidden", "tp", "batch", "context")),
        precision=r["precision"])


def model(r, c):
    return decode_terms_time(terms(r), GPU, r["precision"], c)


def batched(data):
    """The rows' terms as arrays, one set per precision (the fit's inner loop)."""
    out = {}
    for p in ("bf16", "fp8"):
        idx = [i for i, r in enumerate(data) if r["precision"] == p]
        ts = [terms(data[i]) for i in idx]
        out[p] = (np.array(idx, dtype=int),
                  {k: np.array([t[k] for t in ts]) for k in ts[0]} if ts else None)
    return out


def fit(data):
    t = np.array([float(r["layer_us"]) * 1e-6 for r in data])

    groups = batched(data)

    def res(theta):
        with np.errstate(over="ignore"):
            c = decode(np.clip(theta, -40, 40))
        m = np.empty_like(t)
        for p, (idx, ts) in groups.items():
            if ts is not None:
                m[idx] = decode_terms_time(ts, GPU, p, c)
        return np.log(m) - np.log(t)
    best = min((levenberg_marquardt(encode(s), res) for s in STARTS),
               key=lambda th: float(res(th) @ res(th)))
    return {n: float(f"{v:.4g}") for n, v in decode(best).items()}



def bands(data, c):
    """Errors (model / measured - 1) by precision and batch band."""
    err = [(r, model(r, c) / (float(r["layer_us"]) * 1e-6) - 1) for r in data]
    out = {"all": error_summary([e for _, e in err])}
    for p in ("bf16", "fp8"):
        for name, lo, hi in (("batch_1_to_16", 1, 16), ("batch_17_and_above", 17, 10**9)):
            out[f"{p}_{name}"] = error_summary([e for r, e in err if r["precision"] == p
                                          and lo <= int(r["batch"]) <= hi])
    return out


def document():
    doc, checks = {}, {}
    for recipe in ("compiled", "eager"):
        data = rows(recipe)
        fitted = [r for r in data if r["grid"] == "fit"]
        held = [r for r in data if r["grid"] == "holdout"]
        c = fit(fitted)
        src = (f"Derived: fitted by scripts/fit_decode.py to the {len(fitted)} fit rows "
               f"of gpulab/data/{RUN}/decode_{recipe}.csv (1x H200 SXM, driver "
               f"580.159.04, PyTorch 2.11.0+cu130, CUDA graphs, 2026-12-02); its "
               f"{len(held)} held-out rows are not used")
        doc[recipe] = {n: {"value": c[n], "kind": "derived", "meaning": MEANING[n],
                           "source": src, "accessed": "2026-12-02"} for n in CONSTANTS}
        checks[f"{recipe}_fit"] = bands(fitted, c)
        checks[f"{recipe}_held_out"] = bands(held, c)
    doc["checks"] = {
        "value": checks, "kind": "derived",
        "meaning": "model / measured - 1 on the fit and held-out rows of each recipe, "
                   "by precision and batch band: n, mean |error|, worst (signed; "
                   "positive: the model is slower)",
        "source": f"Derived: scripts/fit_decode.py on gpulab/data/{RUN}",
        "accessed": "2026-12-02"}
    return doc


HEADER = """\
# Constants of the decode layer-shard model (gpulab.inference.decode_layer_time) and its
# errors on our runs. Written by scripts/fit_decode.py; do not edit by hand, re-run it.
"""


def render(doc):
    return yaml_text(HEADER, doc)


def main(argv=None):
    return write_or_check(OUT, lambda: render(document()),
                          "scripts/fit_decode.py", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
