"""Fit the compiled-recipe constants of the layer-shard model to our 1x H200 runs.

Reads ``gpulab/data/measurements/raw/h200-x1-2026-12-02-recipes-static/
layer_recipes_static.csv`` (``measure/layer_recipes.py --static``, run by
``bash measure/run_recipes_h200.sh queued`` and ``queued-grid``): Llama and GPT layer
shards under torch.compile (static shapes) and torchao float8 training, each timed
twice: synced (the host issues the step while the GPU runs it) and queued (a GPU sleep
first, so the host has issued the whole step before the GPU starts: the kernels back
to back, as in a model whose host runs ahead). The fit uses the queued times of the
Llama rows whose hidden size is in the fit grid (2048, 4096, 8192, 16384) ONLY; the
held-out rows (hidden 3072, 6144, 12288, and every GPT row) give the errors reported
beside the constants. Two steps, constants positive (fitted in log space,
Levenberg-Marquardt on log time, fixed starts, best kept):

1. ``bf16-compiled``: the BF16 GEMM speed-up over the eager fit, the scale of the
   eager fit's memory terms, a fixed cost per shard;
2. ``fp8-tensorwise`` (with 1. fixed): the FP8 GEMM speed-up, the cast cost per
   weight element and per activation element, the recipe's extra fixed cost;
3. ``fp8-rowwise`` (with 1. fixed): the same four FP8 constants again, for torchao's
   rowwise scaling (``compiled-rowwise``), on the rowwise rows of the static runs and of
   ``h200-x1-2026-12-02-recipes-rowwise/layer_recipes_rowwise.csv`` (the fit and
   holdout grids, ``bash measure/run_recipes_h200.sh queued-grid 230 250 fp8-rowwise``).

The shards with 16384 tokens per micro-batch
(``h200-x1-2026-12-02-recipes-16k/layer_recipes_16k.csv``, ``bash
measure/run_tokens16k_h200.sh``) are held out and only checked. Every GPT row is held out,
those of the static runs and those of
``h200-x1-2026-12-02-recipes-gpt/layer_recipes_gpt.csv`` (the GPT fit and holdout grids,
``GRID_KIND=gpt bash measure/run_recipes_h200.sh queued-grid 160 140``).

The eager constants (``data/layer_efficiency.yaml``) are used unchanged. Writes
``gpulab/data/layer_recipes.yaml`` (``--check``: exit 1 if the stored file differs
from a fresh fit).
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
sys.path.insert(0, str(ROOT / "scripts"))

from fitting import levenberg_marquardt  # noqa: E402
from gpulab import specs  # noqa: E402
from gpulab.parallelism import mix_order_profiles  # noqa: E402
from gpulab.parallelism.efficiency import (  # noqa: E402
    coefficients, recipe_shard_time, shard_terms, shard_time)

RUN = "measurements/raw/h200-x1-2026-12-02-recipes-static"
CSV = ROOT / "gpulab" / "data" / RUN / "layer_recipes_static.csv"
ROWWISE = ROOT / "gpulab" / "data" / "measurements/raw/h200-x1-2026-12-02-recipes-rowwise" \
    / "layer_recipes_rowwise.csv"
GPT = ROOT / "gpulab" / "data" / "measurements/raw/h200-x1-2026-12-02-recipes-gpt" \
    / "layer_recipes_gpt.csv"
DYNAMIC = ROOT / "gpulab" / "data" / "measurements/raw/h200-x1-2026-12-02-recipes" \
    / "layer_recipes.csv"
TOKENS_16K = ROOT / "gpulab" / "data" / "measurements/raw/h200-x1-2026-12-02-recipes-16k" \
    / "layer_recipes_16k.csv"
MIX_RUN = "measurements/raw/h200-x1-2026-12-03-mixorder"
ONE_SEQUENCE = ROOT / "gpulab" / "data" / MIX_RUN / "layer_recipes_one_sequence.csv"
ONE_SEQUENCE_RW = ROOT / "gpulab" / "data" / MIX_RUN / "layer_recipes_one_sequence_rowwise.csv"
OUT = ROOT / "gpulab" / "data" / "layer_recipes.yaml"
GPU = specs.gpu("H200")
#: The per-element terms' bandwidth factor on our GPU (recipe_shard_time's ``bw``).
HBM_RATIO = coefficients("bf16")["hbm_bandwidth"] / GPU.memory_bandwidth
FIT_HIDDEN = {2048, 4096, 8192, 16384}
BF16 = ("bf16_gemm_scale", "memory_scale", "fixed_s")
FP8 = ("fp8_gemm_scale", "fp8_weight_s_per_element", "fp8_activation_s_per_element",
       "fp8_fixed_s")
HOST = ("host_bf16_s", "host_fp8_s", "host_exponent")
MIX_NAME = "fp8_mix_order_s_per_element"
SPILL_NAME = "fp8_mix_order_spill_s_per_row"
WIDE_RUN = "measurements/raw/h200-x1-2026-12-03-mixorder-wide"
WIDE_NORM = ROOT / "gpulab" / "data" / WIDE_RUN / "layer_recipes_wide_norm.csv"
MEANING = {
    "bf16_gemm_scale": "Speed-up of the BF16 GEMM term of the eager fit when the kernels "
    "run back to back under torch.compile [1]",
    "memory_scale": "Scale of the eager fit's memory terms (norms, activations, residuals) "
    "under torch.compile, which fuses them [1]",
    "fixed_s": "Fixed GPU cost per shard forward + backward under torch.compile [s]",
    "fp8_gemm_scale": "Speed-up of the FP8 GEMM term of the eager fit (the same "
    "_scaled_mm kernels) when the kernels run back to back [1]",
    "fp8_weight_s_per_element": "Time per weight element of the shard for the FP8 casts "
    "of the weights (amax, cast, transposed copy; every micro-batch) at the reference HBM "
    "bandwidth [s]",
    "fp8_activation_s_per_element": "Time per activation or gradient element that crosses "
    "an FP8 cast, T x sum(k + n) over the four linear layers, at the reference HBM "
    "bandwidth [s]",
    "fp8_fixed_s": "Extra fixed cost per shard forward + backward of the compiled FP8 "
    "recipe [s]",
    MIX_NAME: "Extra time per element of the norm's rows x width when Inductor fuses the "
    "norm's backward and the FP8 cast of its transposed output into one mix-order "
    "persistent reduction (one sequence per micro-batch), at the reference HBM "
    "bandwidth [s]",
    SPILL_NAME: "Extra time per row of the norm when that fused mix-order kernel spills "
    "registers (gpulab.parallelism.mix_order_spills), instead of the per-element term [s]",
    "host_bf16_s": "Host issue time of one compiled BF16 shard step (forward + backward) "
    "in our runs, the floor of a shard timed on its own [s]",
    "host_fp8_s": "Host issue time of one compiled FP8 (torchao tensorwise) shard step in "
    "our runs, the floor of a shard timed on its own [s]",
    "host_exponent": "Exponent of the smooth maximum of GPU time and host issue time for a "
    "shard timed on its own (synced) [1]",
}


def key(r):
    return (r["kind"], r["recipe"], int(r["hidden"]), int(r["tp"]), int(r["seq_len"]),
            int(r["micro_batch"]), int(r["ffn_hidden"]), int(r["kv_heads"]))


def measured(column="fwd_bwd_queued_ms", path=CSV):
    """{(kind, recipe, h, tp, s, b, ffn, kv): median seconds} of one timing column
    (the static runs: ``path`` and, for the default, the rowwise grid runs and the GPT
    grid runs, all of which are held out of the fits)."""
    times = defaultdict(list)
    for p in (path, ROWWISE, GPT) if path == CSV else (path,):
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                times[key(r)].append(float(r[column]) * 1e-3)
    return {k: statistics.median(v) for k, v in times.items()}


def host_issue():
    """Median host issue time per recipe in the static runs [s]."""
    t = defaultdict(list)
    with open(CSV, newline="") as f:
        for r in csv.DictReader(f):
            t[r["recipe"]].append(float(r["cpu_issue_ms"]) * 1e-3)
    return {k: round(statistics.median(v), 5) for k, v in sorted(t.items())}


def label(k):
    """"kind hidden/TPtp seqxbatch" of a (kind, hidden, tp, seq_len, micro_batch) key."""
    return f"{k[0]} {k[1]}/TP{k[2]} {k[3]}x{k[4]}"


def mix_order_pairs(per="element", spills=False, held_out=False):
    """{(kind, h, tp, s, b): extra kernel time per element of tokens x hidden (or per
    row) [s]}: the profiled kernel time of class other with Inductor's mix-order fusion
    on (default) minus the same shard with it off (TORCHINDUCTOR_MIX_ORDER_REDUCTION=0),
    :func:`gpulab.parallelism.mix_order_profiles`, for the shapes whose fused kernel
    spills registers (``spills=True``) or does not; ``held_out``: the profiles taken
    after the term was set instead."""
    return {(r["kind"], r["hidden"], r["tp"], r["seq_len"], r["micro_batch"]):
            r[f"extra_s_per_{per}"] for r in mix_order_profiles()
            if r["extra_s_per_row"] is not None and r["spills"] == spills
            and r["held_out"] == held_out}


def mix_order_cost():
    """The mean of :func:`mix_order_pairs` (kernels that do not spill), and those pairs."""
    per = mix_order_pairs()
    return float(f"{statistics.mean(per.values()):.4g}"), per


def mix_order_spill_cost():
    """The mean per row of the spilling kernels' pairs, and those pairs."""
    per = mix_order_pairs("row", spills=True)
    return float(f"{statistics.mean(per.values()):.4g}"), per


def held_out(k):
    return k[0] != "llama" or k[2] not in FIT_HIDDEN


def terms(k):
    kind, _, h, t, s, b, f, kv = k
    return shard_terms(h, t, s, b, qkv_out=h + 2 * kv * 128, ffn_hidden=f,
                       swiglu=kind == "llama",
                       norm="rmsnorm" if kind == "llama" else "layernorm")


def model(k, coef, recipe=None, precision=None, host="ahead"):
    if recipe is None:
        recipe = "compiled-rowwise" if k[1] == "fp8-rowwise" else "compiled"
    if precision is None:
        precision = "fp8" if k[1].startswith("fp8") else "bf16"
    return recipe_shard_time(terms(k), GPU, precision, recipe, coef=coef, host=host)


def fit(t, keys, names, starts, fixed=None, host="ahead"):
    def res(th):
        c = dict(fixed or {}, **dict(zip(names, np.exp(th))))
        c.update({n: 1.0 for n in BF16 + FP8 + HOST if n not in c})
        c.setdefault(SPILL_NAME, 0.0)
        return np.array([np.log(model(k, c, host=host) / t[k]) for k in keys])
    best = min((levenberg_marquardt(np.log(np.array(s0)), res) for s0 in starts),
               key=lambda th: float(res(th) @ res(th)))
    return dict(fixed or {}, **{n: float(f"{v:.4g}") for n, v in zip(names, np.exp(best))})


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
    t = measured()
    synced = measured("fwd_bwd_ms")
    mix, mix_pairs = mix_order_cost()
    spill, spill_pairs = mix_order_spill_cost()
    bf = [k for k in t if k[1] == "bf16-compiled"]
    f8 = [k for k in t if k[1] == "fp8-tensorwise"]
    c = fit(t, sorted(k for k in bf if not held_out(k)), BF16,
            ([1.0, 1.0, 1e-4], [1.2, 0.5, 1e-5], [0.9, 0.3, 3e-4]))
    fit8 = sorted(k for k in f8 if not held_out(k))
    c = fit(t, fit8, FP8, ([1.0, 1e-12, 1e-12, 1e-4], [1.3, 1e-11, 1e-13, 1e-5],
                           [0.8, 1e-13, 1e-11, 3e-4]),
            fixed=dict(c, **{MIX_NAME: mix, SPILL_NAME: spill}))
    bf16_only = {n: c[n] for n in BF16 + (MIX_NAME, SPILL_NAME)}
    rw = [k for k in t if k[1] == "fp8-rowwise"]
    fit_rw = sorted(k for k in rw if not held_out(k))
    crw = fit(t, fit_rw, FP8, ([1.0, 1e-12, 1e-12, 1e-4], [1.3, 1e-11, 1e-13, 1e-5],
                               [0.8, 1e-13, 1e-11, 3e-4]), fixed=bf16_only)
    both = [k for k in synced if k[1] in ("bf16-compiled", "fp8-tensorwise")]
    c = fit(synced, sorted(k for k in both if not held_out(k)), HOST,
            ([2e-3, 3e-3, 4.0], [1e-3, 2e-3, 8.0], [1.5e-3, 3e-3, 2.0]), fixed=c,
            host="synced")
    src = (f"Derived: fitted by scripts/fit_layer_recipes.py to the queued (host: synced) "
           f"times of the "
           f"Llama rows of the fit grid in gpulab/data/{RUN}/layer_recipes_static.csv "
           f"(1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0, "
           f"torch.compile with static shapes, 2026-12-02; "
           f"{sum(1 for k in bf if not held_out(k))} BF16 and {len(fit8)} FP8 shapes); "
           f"its held-out rows are not used")
    doc = {"compiled": {n: {"value": c[n], "kind": "derived", "meaning": MEANING[n],
                            "source": src, "accessed": "2026-12-02"}
                        for n in BF16 + FP8 + HOST}}
    doc["compiled"][MIX_NAME] = {
        "value": mix, "kind": "measured", "meaning": MEANING[MIX_NAME],
        "source": "Measured (not fitted) by scripts/fit_layer_recipes.py from the kernel "
                  f"profiles in gpulab/data/{MIX_RUN} (measure/profile_shard.py; 1x H200 "
                  "SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 "
                  "tensorwise, static-shape torch.compile, 2026-12-03): kernel time of "
                  "class other per step with Inductor's mix-order reduction on minus off "
                  "(TORCHINDUCTOR_MIX_ORDER_REDUCTION=0), over tokens x hidden, the mean of "
                  + ", ".join(f"{label(k)}: {v:.3g}"
                              for k, v in sorted(mix_pairs.items()))
                  + " s per element (the kernels that do not spill registers; see "
                  "checks/mix_order_s_per_element_measured)",
        "accessed": "2026-12-03"}
    doc["compiled"][SPILL_NAME] = {
        "value": spill, "kind": "measured", "meaning": MEANING[SPILL_NAME],
        "source": "Measured (not fitted) by scripts/fit_layer_recipes.py from the kernel "
                  f"profiles in gpulab/data/{MIX_RUN} and gpulab/data/{WIDE_RUN} (the same "
                  "machine and software, 2026-12-03; Triton's register and spill counts "
                  "in its meta_*.csv): kernel time of class other per step with the "
                  "mix-order reduction on minus off, over tokens, the mean of the shapes "
                  "whose fused kernel spills, "
                  + ", ".join(f"{label(k)}: {v:.4g}"
                              for k, v in sorted(spill_pairs.items()))
                  + " s per row",
        "accessed": "2026-12-03"}
    src_rw = (f"Derived: fitted by scripts/fit_layer_recipes.py to the queued times of the "
              f"{len(fit_rw)} fp8-rowwise Llama rows of the fit grid in gpulab/data/{RUN}/"
              f"layer_recipes_static.csv and gpulab/data/measurements/raw/"
              f"h200-x1-2026-12-02-recipes-rowwise/layer_recipes_rowwise.csv (1x H200 SXM, "
              f"torchao 0.18.0 rowwise float8, torch.compile with static shapes, "
              f"2026-12-02), the BF16 constants of compiled/ fixed; held-out rows not used")
    doc["compiled-rowwise"] = {
        n: {"value": crw[n], "kind": "derived",
            "meaning": MEANING[n].replace("recipe", "rowwise recipe", 1)
            .replace("(the same _scaled_mm", "(rowwise-scaled _scaled_mm"),
            "source": src_rw, "accessed": "2026-12-02"} for n in FP8}
    c_rw = dict(c, **{n: crw[n] for n in FP8})
    new = errors(t, list(t), lambda k: model(k, c_rw if k[1] == "fp8-rowwise" else c))
    tw_on_rw = errors(t, rw, lambda k: model(k, c, recipe="compiled"))
    dyn = measured("fwd_bwd_ms", DYNAMIC)
    t16 = measured(path=TOKENS_16K)          # held out: never in a fit
    one = measured(path=ONE_SEQUENCE)        # held out: never in a fit
    one_rw = measured(path=ONE_SEQUENCE_RW)  # held out: never in a fit
    no_mix = dict(c, **{MIX_NAME: 0.0, SPILL_NAME: 0.0})
    wide = measured(path=WIDE_NORM)          # held out: never in a fit
    dyn8 = [k for k in dyn if k[1] == "fp8-tensorwise"]
    fits = {k for k in t if not held_out(k)}
    rows = lambda rec, fitted: {k: v for k, v in new.items()           # noqa: E731
                                if k[1] == rec and (k in fits) == fitted}
    checks = {
        "bf16_compiled_fit": by_band(rows("bf16-compiled", True)),
        "bf16_compiled_held_out": by_band(rows("bf16-compiled", False)),
        "fp8_compiled_fit": by_band(rows("fp8-tensorwise", True)),
        "fp8_compiled_held_out": by_band(rows("fp8-tensorwise", False)),
        "fp8_rowwise_fit": by_band(rows("fp8-rowwise", True)),
        "fp8_rowwise_held_out": by_band(rows("fp8-rowwise", False)),
        "fp8_rowwise_runs_against_the_tensorwise_model": by_band(tw_on_rw),
        "fp8_compiled_model_on_synced_times": by_band(errors(
            synced, f8, lambda k: model(k, c))),
        "synced_model_on_synced_times_held_out": {
            rec: by_band(errors(synced, [k for k in both if k[1] == rec and held_out(k)],
                                lambda k: model(k, c, host="synced")))
            for rec in ("bf16-compiled", "fp8-tensorwise")},
        "fp8_before_eager_model_on_compiled_runs": by_band(errors(
            t, f8, lambda k: model(k, None, recipe="eager"))),
        "fp8_compiled_model_on_dynamic_shape_runs": by_band(errors(
            dyn, dyn8, lambda k: model(k, c))),
        "tokens_16k_held_out": {
            rec: by_band(errors(t16, [k for k in t16 if k[1] == rec],
                                lambda k: model(k, c)))
            for rec in ("bf16-compiled", "fp8-tensorwise")},
        "mix_order_s_per_element_measured": {
            label(k): float(f"{v:.4g}")
            for k, v in sorted(mix_order_pairs().items())},
        "mix_order_spill_s_per_row_measured": {
            label(k): float(f"{v:.4g}")
            for k, v in sorted(spill_pairs.items())},
        "mix_order_spill_s_per_row_held_out": {
            label(k): round(spill / v - 1.0, 4)
            for k, v in sorted(mix_order_pairs("row", True, True).items())},
        "one_sequence_held_out": by_band(errors(one, list(one), lambda k: model(k, c))),
        "wide_norm_held_out": {
            label(k[:1] + k[2:6]): round(v, 4)
            for k, v in sorted(errors(wide, list(wide), lambda k: model(k, c)).items())},
        "wide_norm_held_out_with_the_per_element_term": {
            label(k[:1] + k[2:6]): round(v, 4)
            for k, v in sorted(errors(wide, list(wide), lambda k: model(
                k, dict(c, **{SPILL_NAME: c[MIX_NAME] * k[2] * HBM_RATIO}))).items())},
        "one_sequence_rowwise_held_out": by_band(errors(
            one_rw, list(one_rw), lambda k: model(k, c_rw))),
        "one_sequence_held_out_without_mix_order_term": by_band(errors(
            one, list(one), lambda k: model(k, no_mix))),
        "fp8_compiled_held_out_without_mix_order_term": by_band(errors(
            t, [k for k in f8 if held_out(k)], lambda k: model(k, no_mix))),
        "bf16_eager_model_on_bf16_eager": summary(errors(
            t, [k for k in t if k[1] == "bf16-eager"],
            lambda k: shard_time(terms(k), GPU, "bf16"))),
        "host_issue_s_median": host_issue(),
    }
    doc["checks"] = {
        "value": checks, "kind": "derived",
        "meaning": "Errors of the recipe model (model / measured - 1, positive: the model "
                   "is slower) on our runs, per band of hidden / TP, against the queued "
                   "times unless named; held-out rows were not used in any fit; and the "
                   "median host issue time of one shard step per recipe",
        "source": f"Derived by scripts/fit_layer_recipes.py from gpulab/data/{RUN}/"
                  "layer_recipes_static.csv (and, for the dynamic-shape check, "
                  "../h200-x1-2026-12-02-recipes/layer_recipes.csv) and the model in "
                  "gpulab/parallelism/efficiency.py",
        "accessed": "2026-12-02"}
    return doc


def dump(doc):
    import yaml
    head = ("# Constants of the compiled recipe of gpulab.parallelism (recipe_shard_time)\n"
            "# and the checks of the recipe model on our runs. Written by\n"
            "# scripts/fit_layer_recipes.py; do not edit by hand, re-run it.\n"
            "# Read through gpulab.specs.assumption(\"layer_recipes\", "
            "\"compiled/<name>\").\n")
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
