"""Fit the compiled-FP8 constants of the layer-shard model to our 1x H200 recipe runs.

Reads ``gpulab/data/measurements/raw/h200-x1-2026-12-02-recipes/layer_recipes.csv``
(``measure/layer_recipes.py``: GPT and Llama layer shards under torch.compile and
torchao float8 training). The fit uses the ``fp8-tensorwise`` rows of the ``fit`` grid
ONLY; the ``holdout`` rows (hidden 3072, 6144, 12288: sizes the fit grid has not) give
the error reported beside the constants. Three constants, all positive (fitted in log
space, Levenberg-Marquardt on log time, fixed starts, best kept): per weight element,
per cast activation element, and a fixed cost per shard (``recipe_shard_time`` in
``gpulab/parallelism/efficiency.py``). The rest of the model (FP8 GEMM, BF16 attention
and memory terms, launch floor) comes from ``data/layer_efficiency.yaml`` unchanged.

Writes ``gpulab/data/layer_recipes.yaml`` (``--check``: exit 1 if the stored constants
differ from a fresh fit).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab import specs  # noqa: E402
from gpulab.parallelism.efficiency import (  # noqa: E402
    recipe_shard_time, shard_terms, shard_time)

RUN = "measurements/raw/h200-x1-2026-12-02-recipes"
CSV = ROOT / "gpulab" / "data" / RUN / "layer_recipes.csv"
OUT = ROOT / "gpulab" / "data" / "layer_recipes.yaml"
GPU = specs.gpu("H200")
PARAMS = ("weight_s_per_element", "activation_s_per_element", "fixed_s")
MEANING = {
    "weight_s_per_element": "Time per weight element of the shard for the FP8 casts of "
    "the weights (amax, cast, transposed copy; every micro-batch) at the reference HBM "
    "bandwidth [s]",
    "activation_s_per_element": "Time per activation or gradient element that crosses an "
    "FP8 cast, T x sum(k + n) over the four linear layers, at the reference HBM bandwidth "
    "[s]",
    "fixed_s": "Fixed cost per shard forward + backward of the compiled FP8 recipe, on top "
    "of the GPU work [s]",
}


def measured():
    """{(kind, recipe, h, tp, s, b, ffn, kv): [seconds...]} and each key's grid."""
    times, grid = defaultdict(list), {}
    with open(CSV, newline="") as f:
        for r in csv.DictReader(f):
            k = (r["kind"], r["recipe"], int(r["hidden"]), int(r["tp"]),
                 int(r["seq_len"]), int(r["micro_batch"]), int(r["ffn_hidden"]),
                 int(r["kv_heads"]))
            times[k].append(float(r["fwd_bwd_ms"]) * 1e-3)
            grid[k] = r["grid"]
    return {k: statistics.median(v) for k, v in times.items()}, grid


def terms(k):
    kind, _, h, t, s, b, f, kv = k
    return shard_terms(h, t, s, b, qkv_out=h + 2 * kv * 128, ffn_hidden=f,
                       swiglu=kind == "llama")


def model(k, coef, recipe="compiled", precision="fp8"):
    return recipe_shard_time(terms(k), GPU, precision, recipe, coef=coef)


def lm(theta, res, iters=300):
    r = res(theta)
    cost, lam = r @ r, 1e-2
    for _ in range(iters):
        jac = np.array([(res(theta + e * 1e-6) - r) / 1e-6
                        for e in np.eye(len(theta))]).T
        a, g = jac.T @ jac, jac.T @ r
        step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
        r2 = res(theta + step)
        if r2 @ r2 < cost:
            theta, r, cost, lam = theta + step, r2, r2 @ r2, lam / 3
        else:
            lam *= 4
    return theta


def fit(t, keys):
    def res(th):
        c = dict(zip(PARAMS, np.exp(th)))
        return np.array([np.log(model(k, c) / t[k]) for k in keys])
    starts = ([1e-12, 1e-12, 1e-4], [1e-11, 1e-13, 3e-4], [1e-13, 1e-11, 1e-3])
    best = min((lm(np.log(np.array(s0)), res) for s0 in starts),
               key=lambda th: float(res(th) @ res(th)))
    return {n: float(f"{v:.4g}") for n, v in zip(PARAMS, np.exp(best))}


def errors(t, keys, fn):
    """Model / measured - 1 per key (positive: the model is slower)."""
    return {k: fn(k) / t[k] - 1.0 for k in keys}


def summary(errs):
    e = np.array(list(errs.values()))
    if not len(e):
        return {"n": 0}
    return {"n": int(len(e)), "median": round(float(np.median(e)), 4),
            "mean_abs": round(float(np.mean(np.abs(e))), 4),
            "worst": round(float(e[np.argmax(np.abs(e))]), 4)}


def by_band(errs):
    lo = {k: v for k, v in errs.items() if k[2] / k[3] < 1024}
    hi = {k: v for k, v in errs.items() if k[2] / k[3] >= 1024}
    return {"h_over_tp_below_1024": summary(lo), "h_over_tp_1024_and_above": summary(hi)}


def document():
    t, grid = measured()
    fp8 = [k for k in t if k[1] == "fp8-tensorwise"]
    fit_keys = sorted(k for k in fp8 if grid[k] == "fit")
    hold_keys = sorted(k for k in fp8 if grid[k] == "holdout")
    c = fit(t, fit_keys)
    src = (f"Derived: fitted by scripts/fit_layer_recipes.py to the fp8-tensorwise rows of "
           f"the fit grid in gpulab/data/{RUN}/layer_recipes.csv (1x H200 SXM, driver "
           f"580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0, torch.compile with dynamic "
           f"shapes, 2026-12-02; {len(fit_keys)} shapes); its held-out rows are not used")
    doc = {"fp8_compiled": {n: {"value": c[n], "kind": "derived", "meaning": MEANING[n],
                                "source": src, "accessed": "2026-12-02"} for n in PARAMS}}
    new = errors(t, fp8, lambda k: model(k, c))
    old = errors(t, fp8, lambda k: model(k, None, recipe="eager"))
    bf16c = [k for k in t if k[1] == "bf16-compiled"]
    bf16e = [k for k in t if k[1] == "bf16-eager"]
    pairs = {k: t[k] / t[(k[0], "bf16-eager", *k[2:])] - 1.0
             for k in bf16c if (k[0], "bf16-eager", *k[2:]) in t}
    checks = {
        "fp8_compiled_fit": by_band({k: new[k] for k in fit_keys}),
        "fp8_compiled_held_out": by_band({k: new[k] for k in hold_keys}),
        "fp8_before_eager_model_on_compiled_runs": by_band(old),
        "bf16_model_on_bf16_eager": {
            kind: summary(errors(t, [k for k in bf16e if k[0] == kind],
                                 lambda k: shard_time(terms(k), GPU, "bf16")))
            for kind in ("gpt", "llama")},
        "bf16_model_on_bf16_compiled": summary(errors(
            t, bf16c, lambda k: shard_time(terms(k), GPU, "bf16"))),
        "bf16_compiled_over_eager_minus_1": summary(pairs),
    }
    doc["checks"] = {
        "value": checks, "kind": "derived",
        "meaning": "Errors of the recipe model (model / measured - 1, positive: the model "
                   "is slower) on our runs, per band of hidden / TP; held-out rows were "
                   "not used in any fit",
        "source": f"Derived by scripts/fit_layer_recipes.py from gpulab/data/{RUN}/"
                  "layer_recipes.csv and the model in gpulab/parallelism/efficiency.py",
        "accessed": "2026-12-02"}
    return doc


def dump(doc):
    import yaml
    head = ("# Constants of the compiled-FP8 recipe of gpulab.parallelism (recipe_shard_time)\n"
            "# and the checks of the recipe model on our runs. Written by\n"
            "# scripts/fit_layer_recipes.py; do not edit by hand, re-run it.\n"
            "# Read through gpulab.specs.assumption(\"layer_recipes\", "
            "\"fp8_compiled/<name>\").\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = dump(document())
    if args.check:
        if OUT.read_text() != text:
            print("layer_recipes.yaml differs from a fresh fit", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
