"""Fit the layer-shard compute model to our 1x H200 layer runs; write its constants.

Reads ``gpulab/data/measurements/raw/h200-x1-2026-12-01-layers/layer_fit.csv`` (the fit
grid) and NOTHING else for the fit; ``layer_holdout.csv`` is only used afterwards to
report the error on shapes the fit never saw. Writes ``gpulab/data/layer_efficiency.yaml``
(or checks it with ``--check``: exits 1 when the stored constants differ).

The model form is in ``gpulab/parallelism/efficiency.py``. The fit: per precision,
Levenberg-Marquardt on the log of the whole shard's forward + backward time
(``fwd_bwd_ms``), all constants positive (fitted in log space), from a fixed start
(three starting exponents, best kept), so the result is deterministic. Values are
rounded to 4 significant digits.

Usage::

    python scripts/fit_layer_efficiency.py            # rewrite the YAML
    python scripts/fit_layer_efficiency.py --check    # compare with the stored one
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab import specs  # noqa: E402
from gpulab.parallelism.efficiency import (  # noqa: E402
    narayanan_shard_flops, shard_terms, shard_time)

RUN = "measurements/raw/h200-x1-2026-12-01-layers"
RUN_DIR = ROOT / "gpulab" / "data" / RUN
OUT = ROOT / "gpulab" / "data" / "layer_efficiency.yaml"
GPU = specs.gpu("H200")
PEAK = {"bf16": GPU.fp16_dense_flops, "fp8": GPU.fp8_dense_flops}
#: parameter vector: log of these, in this order
PARAMS = ("floor_s", "floor_exponent", "gemm_efficiency", "gemm_half_dim",
          "attention_efficiency", "full_width_s_per_element",
          "shard_width_s_per_element", "weight_s_per_element")
H_BANDS = ((0, 1024), (1024, 4096), (4096, 10**9))       # hidden / tp
T_BANDS = ((0, 4096), (4096, 8192), (8192, 10**9))        # tokens


def rows(name, precision):
    with open(RUN_DIR / name, newline="") as f:
        return [r for r in csv.DictReader(f) if r["precision"] == precision]


def shape(r):
    return (int(r["hidden"]), int(r["tp"]), int(r["seq_len"]), int(r["micro_batch"]))


def coef_of(theta, precision):
    c = dict(zip(PARAMS, np.exp(theta)))
    c["peak_flops"] = PEAK[precision]
    c["hbm_bandwidth"] = GPU.memory_bandwidth
    return c


def predict(theta, precision, shapes):
    c = coef_of(theta, precision)
    return np.array([shard_time(shard_terms(*s), GPU, precision, c) for s in shapes])


def lm(theta, precision, shapes, y, iters=300):
    """Levenberg-Marquardt on r = log(model / measured)."""
    def res(th):
        return np.log(predict(th, precision, shapes) / y)
    r = res(theta)
    cost, lam = r @ r, 1e-3
    for _ in range(iters):
        jac = np.empty((len(y), len(theta)))
        for j in range(len(theta)):
            d = np.zeros_like(theta)
            d[j] = 1e-6
            jac[:, j] = (res(theta + d) - r) / 1e-6
        a, g = jac.T @ jac, jac.T @ r
        improved = False
        while lam < 1e12:
            step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            th = np.clip(theta + step, -80.0, 10.0)
            rn = res(th)
            if rn @ rn < cost:
                improved = cost - rn @ rn > 1e-14 * cost
                theta, r, cost, lam = th, rn, rn @ rn, max(lam / 3, 1e-9)
                break
            lam *= 4
        if not improved:
            break
    return theta, cost


def fit(precision):
    fit_rows = rows("layer_fit.csv", precision)
    shapes = [shape(r) for r in fit_rows]
    y = np.array([float(r["fwd_bwd_ms"]) * 1e-3 for r in fit_rows])
    best = None
    for p0 in (1.0, 2.0, 4.0):
        start = np.log([1e-3, p0, 0.6, 50.0, 0.4, 1e-11, 1e-11, 1e-11])
        theta, cost = lm(start, precision, shapes, y)
        if best is None or cost < best[1]:
            best = (theta, cost)
    c = {k: float(f"{v:.4g}") for k, v in zip(PARAMS, np.exp(best[0]))}
    for k in ("full_width_s_per_element", "shard_width_s_per_element",
              "weight_s_per_element"):
        if c[k] < 1e-20:            # a term the data does not need: exactly zero
            c[k] = 0.0
    return c


def errors(c, precision, name):
    """(shape, tokens, measured eff, model eff, eff error) per row of ``name``."""
    coef = dict(c, peak_flops=PEAK[precision], hbm_bandwidth=GPU.memory_bandwidth)
    out = []
    for r in rows(name, precision):
        s = shape(r)
        meas = float(r["fwd_bwd_ms"]) * 1e-3
        model = shard_time(shard_terms(*s), GPU, precision, coef)
        flops = narayanan_shard_flops(*s)
        out.append((s, s[2] * s[3], flops / (meas * PEAK[precision]),
                    flops / (model * PEAK[precision]), meas / model - 1.0))
    return out


def band_table(errs):
    def summary(sel):
        e = [abs(x[4]) for x in sel]
        return {"rows": len(e), "mean_abs": round(float(np.mean(e)), 4),
                "worst_abs": round(float(np.max(e)), 4)}
    table = {"all": summary(errs)}
    for lo, hi in H_BANDS:
        sel = [x for x in errs if lo <= x[0][0] / x[0][1] < hi]
        if sel:
            table[f"h_per_tp_{lo}_{hi if hi < 10**9 else 'up'}"] = summary(sel)
    for lo, hi in T_BANDS:
        sel = [x for x in errs if lo <= x[1] < hi]
        if sel:
            table[f"tokens_{lo}_{hi if hi < 10**9 else 'up'}"] = summary(sel)
    return table


MEANING = {
    "floor_s": "Floor of one eager shard's forward + backward (CPU launch cost) [s]",
    "floor_exponent": "Exponent p of the smooth maximum (t0^p + g^p)^(1/p) of the floor and the GPU work",
    "gemm_efficiency": "Fraction of the dense peak the layer's GEMMs reach when wide (fwd + bwd, incl. bias and its gradient)",
    "gemm_half_dim": "n0: a GEMM whose smaller weight dimension is d runs at gemm_efficiency x d/(d + n0) [elements]",
    "attention_efficiency": "Fraction of the dense peak reached by attention (flash, causal, head dim 128) on its Narayanan FLOPs 12 T s h / t",
    "full_width_s_per_element": "Memory-bound time per token x hidden element (LayerNorms, residual adds, replicated on every TP rank) at the reference HBM bandwidth [s]",
    "shard_width_s_per_element": "Memory-bound time per token x hidden/tp element (GeLU, biases, fp8 casts of activations) at the reference HBM bandwidth [s]",
    "weight_s_per_element": "Memory-bound time per weight element of the shard (fp8: per-call re-cast and transposes of the weights) at the reference HBM bandwidth [s]",
}


def document():
    src = (f"Derived: fitted by scripts/fit_layer_efficiency.py to our measurements in "
           f"gpulab/data/{RUN}/layer_fit.csv "
           "(1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, 700 W power limit, "
           "2026-12-01; 192 shapes per precision); the held-out grid (layer_holdout.csv) "
           "is not used in the fit")
    doc = {"reference": {
        "gpu": {"value": "H200", "kind": "measured",
                "meaning": "GPU the layer shards were measured on; other GPUs are scaled from it",
                "source": f"Ours: gpulab/data/{RUN}/layer_fit.csv (1x H200 SXM, 2026-12-01)",
                "accessed": "2026-12-01"},
        "bf16_peak_flops": {"value": PEAK["bf16"], "kind": "spec",
                            "meaning": "Dense BF16 peak the efficiencies are fractions of [FLOP/s]",
                            "source": "gpulab/data/gpus.csv, H200 row", "accessed": "2026-12-01"},
        "fp8_peak_flops": {"value": PEAK["fp8"], "kind": "spec",
                           "meaning": "Dense FP8 peak the fp8 efficiencies are fractions of [FLOP/s]",
                           "source": "gpulab/data/gpus.csv, H200 row", "accessed": "2026-12-01"},
        "hbm_bandwidth": {"value": GPU.memory_bandwidth, "kind": "spec",
                          "meaning": "HBM bandwidth of the measured GPU; memory terms scale with reference/this GPU's bandwidth [B/s]",
                          "source": "gpulab/data/gpus.csv, H200 row", "accessed": "2026-12-01"}}}
    for prec in ("bf16", "fp8"):
        c = fit(prec)
        doc[prec] = {k: {"value": v, "kind": "derived",
                         "meaning": MEANING[k], "source": src, "accessed": "2026-12-01"}
                     for k, v in c.items()}
        doc[prec]["fit_error"] = {"value": band_table(errors(c, prec, "layer_fit.csv")),
                                  "kind": "derived",
                                  "meaning": "|model efficiency error| = |measured time / model time - 1| on the fit grid",
                                  "source": src, "accessed": "2026-12-01"}
        doc[prec]["holdout_error"] = {
            "value": band_table(errors(c, prec, "layer_holdout.csv")), "kind": "derived",
            "meaning": "|model efficiency error| on the held-out grid (hidden 3072-14336, tokens 3072-12288; never used in the fit), by hidden/tp and tokens band",
            "source": src.replace("is not used in the fit", "is what this error is measured on"),
            "accessed": "2026-12-01"}
    return doc


def differences(stored, fresh, path=""):
    """Paths where ``stored`` and ``fresh`` differ; numbers within 0.2% (or 2e-4) agree,
    so that the last rounded digit may move with the platform's floating point."""
    if isinstance(fresh, dict):
        if not isinstance(stored, dict) or set(stored) != set(fresh):
            yield f"{path or 'top level'}: keys differ"
            return
        for k in fresh:
            yield from differences(stored[k], fresh[k], f"{path}/{k}")
    elif isinstance(fresh, (int, float)) and not isinstance(fresh, bool):
        if not isinstance(stored, (int, float)) or not math.isclose(
                stored, fresh, rel_tol=2e-3, abs_tol=2e-4 if abs(fresh) > 1e-3 else 0.0):
            yield f"{path}: stored {stored!r}, fresh fit {fresh!r}"
    elif stored != fresh:
        yield f"{path}: stored {stored!r}, fresh fit {fresh!r}"


def dump(doc):
    import yaml
    head = ("# Constants of gpulab.parallelism.layer_efficiency (the layer-shard compute model).\n"
            "# Written by scripts/fit_layer_efficiency.py; do not edit by hand, re-run it.\n"
            "# Read through gpulab.specs.assumption(\"layer_efficiency\", \"<precision>/<name>\").\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the stored YAML instead of writing it")
    args = ap.parse_args(argv)
    doc = document()
    text = dump(doc)
    if args.check:
        import yaml
        stored = yaml.safe_load(OUT.read_text()) if OUT.exists() else None
        diffs = list(differences(stored, doc))
        for d in diffs:
            print(d)
        print("layer_efficiency.yaml differs from a fresh fit" if diffs else
              "layer_efficiency.yaml is up to date")
        return 1 if diffs else 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
