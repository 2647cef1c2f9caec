"""When FP8 pays: the layer-shard model's BF16/FP8 ratio and our recipe runs beside it.

FP8 halves a GEMM's time at the Tensor Cores' peak, but a shard also runs attention,
norms and activations in BF16, and FP8 adds casts and amax reductions (each weight and
activation that enters an FP8 GEMM is scaled and cast, every micro-batch). The
functions here ask the compute model of :mod:`.efficiency` the question "how much faster
is this shard in FP8?" and list our 1x H200 runs of the same question with the model's
time beside each: the compiled recipes from ``data/measurements/raw/h200-x1-2026-12-02-
recipes-static`` (static-shape compiles, queued timing: the kernels back to back), the
held-out shards of one sequence per micro-batch from ``h200-x1-2026-12-03-mixorder``, the
eager variants from ``data/measurements/raw/h200-x1-2026-12-02-recipes``.
"""
from __future__ import annotations

import csv
import functools
import io
import statistics

from .. import specs
from .._validate import check_choice, check_int
from .efficiency import (RECIPES, mix_order_fused, mix_order_spills, recipe_shard_time,
                         shard_terms)

__all__ = ["fp8_speedup", "fp8_speedup_curve", "recipe_runs", "measured_fp8_speedups",
           "mix_order_profiles", "RECIPE_RUNS", "ONE_SEQUENCE_RUNS",
           "ONE_SEQUENCE_ROWWISE_RUNS", "MIX_ORDER_RUN", "MIX_ORDER_WIDE_RUN",
           "WIDE_NORM_RUNS", "MIX_ORDER_SPILL_RUN", "mix_order_kernels"]

#: Our compiled-recipe runs (1x H200 SXM, PyTorch 2.11, torchao 0.18, 2026-12-02).
RECIPE_RUNS = ("measurements/raw/h200-x1-2026-12-02-recipes-static/"
               "layer_recipes_static.csv")
#: Our rowwise runs of the fit and holdout grids (the same machine and software).
ROWWISE_RUNS = ("measurements/raw/h200-x1-2026-12-02-recipes-rowwise/"
                "layer_recipes_rowwise.csv")
#: Our GPT runs of the fit and holdout grids, compiled BF16 and FP8 tensorwise (held out).
GPT_RUNS = "measurements/raw/h200-x1-2026-12-02-recipes-gpt/layer_recipes_gpt.csv"
#: Our eager runs of the same day (BF16 eager and torchao FP8 without compile).
EAGER_RUNS = "measurements/raw/h200-x1-2026-12-02-recipes/layer_recipes.csv"
#: Our held-out runs of one sequence per micro-batch, compiled FP8 tensorwise, shapes on
#: both sides of Inductor's mix-order rule (:func:`.efficiency.mix_order_fused`).
ONE_SEQUENCE_RUNS = ("measurements/raw/h200-x1-2026-12-03-mixorder/"
                     "layer_recipes_one_sequence.csv")
#: The same for torchao's rowwise recipe (six shapes of 16384 tokens).
ONE_SEQUENCE_ROWWISE_RUNS = ("measurements/raw/h200-x1-2026-12-03-mixorder/"
                             "layer_recipes_one_sequence_rowwise.csv")
#: Kernel profiles of compiled FP8 shards with Inductor's mix-order fusion on and off.
MIX_ORDER_RUN = "measurements/raw/h200-x1-2026-12-03-mixorder"
#: The same at wide norms (LayerNorm 16384), with each kernel's registers and spills,
#: and held-out Llama shards of one sequence at RMSNorm widths 7168-12288.
MIX_ORDER_WIDE_RUN = "measurements/raw/h200-x1-2026-12-03-mixorder-wide"
#: Profiles taken after the spill term was set (held out of it): RMSNorm 6144 and 7168,
#: LayerNorm 12288 with the fusion on and off.
MIX_ORDER_SPILL_RUN = "measurements/raw/h200-x1-2026-12-03-mixorder-spill"
#: Our held-out runs of those wide-norm shards (grid "widenorm").
WIDE_NORM_RUNS = f"{MIX_ORDER_WIDE_RUN}/layer_recipes_wide_norm.csv"
#: Hidden sizes of the Llama fit grid; every other row is held out of the fits.
FIT_HIDDEN = (2048, 4096, 8192, 16384)
_COMPILED = ("bf16-compiled", "fp8-tensorwise", "fp8-rowwise")
#: The norm of each shard kind of our runs.
_NORM = {"gpt": "layernorm", "llama": "rmsnorm"}


def fp8_speedup(hidden, tp, seq_len, micro_batch, *, gpu="H200", recipe="compiled"):
    """BF16 time over FP8 time of one TP shard of a GPT layer (> 1: FP8 is faster).

    Parameters
    ----------
    hidden : int
        Hidden size h (a multiple of 128; heads = h / 128, FFN 4h).
    tp : int
        Tensor-parallel degree; must divide the heads.
    seq_len, micro_batch : int
        Tokens per micro-batch = ``seq_len * micro_batch``.
    gpu : str
        A GPU with FP8 Tensor Cores (``"H100"``, ``"H200"``, ``"B200"``).
    recipe : {"compiled", "compiled-rowwise", "eager"}
        Execution recipe of both precisions
        (:func:`gpulab.parallelism.layer_efficiency`).

    Returns
    -------
    float

    Examples
    --------
    >>> wide = fp8_speedup(16384, 2, 2048, 4)
    >>> thin = fp8_speedup(4096, 8, 2048, 4)
    >>> thin < 1 < wide
    True
    """
    h = check_int("hidden", hidden, low=128, high=10**6)
    if h % 128:
        raise ValueError(f"hidden must be a multiple of 128 (head dimension); got {h}")
    t = check_int("tp", tp, low=1, high=10**6)
    if t > h // 128 or (h // 128) % t:
        # both names: a tp that fits one hidden size is wrong for a smaller one
        raise ValueError(f"tp must divide the {h // 128} heads of hidden {h} "
                         f"(hidden / 128); got tp {t}")
    s = check_int("seq_len", seq_len, low=1, high=10**7)
    b = check_int("micro_batch", micro_batch, low=1, high=10**5)
    check_choice("gpu", gpu, specs.gpu_names())
    check_choice("recipe", recipe, RECIPES)
    g = specs.gpu(gpu)
    if not g.fp8_dense_flops:
        raise ValueError(f"gpu must have FP8 Tensor Cores (H100, H200, B200, ...); got "
                         f"{gpu!r}")
    terms = shard_terms(h, t, s, b)
    return recipe_shard_time(terms, g, "bf16", recipe) \
        / recipe_shard_time(terms, g, "fp8", recipe)


#: Hidden sizes per GPU of :func:`fp8_speedup_curve`. [elements]
CURVE_WIDTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


def fp8_speedup_curve(tp, micro_batch, *, seq_len=2048, gpu="H200", recipe="compiled"):
    """:func:`fp8_speedup` against the hidden size per GPU, at one TP degree.

    For each width w of :data:`CURVE_WIDTHS` the layer has hidden ``w * tp`` (kept
    where its heads divide by ``tp`` and it is at least 1024 and at most 10^6, the
    hidden sizes :func:`fp8_speedup` takes).

    Returns
    -------
    (widths, speedups) : tuple of lists

    Examples
    --------
    >>> w, s = fp8_speedup_curve(8, 4)
    >>> w[0], s[-1] > 1 > s[0]
    (256, True)
    """
    t = check_int("tp", tp, low=1, high=1024)
    check_int("micro_batch", micro_batch, low=1, high=10**5)
    xs = [w for w in CURVE_WIDTHS
          if 1024 <= w * t <= 10**6 and (w * t // 128) % t == 0]
    return xs, [fp8_speedup(w * t, t, seq_len, micro_batch, gpu=gpu, recipe=recipe)
                for w in xs]


_RECIPE_NAMES = {"bf16-eager": ("bf16", "eager"), "bf16-compiled": ("bf16", "compiled"),
                 "fp8-tensorwise": ("fp8", "compiled"),
                 "fp8-tensorwise-eager": ("fp8", None),
                 "fp8-rowwise": ("fp8", "compiled-rowwise")}


@functools.lru_cache(maxsize=1)
def _runs():
    times, meta = {}, {}
    for path, recipes, column in ((RECIPE_RUNS, _COMPILED, "fwd_bwd_queued_ms"),
                                  (ROWWISE_RUNS, ("fp8-rowwise",), "fwd_bwd_queued_ms"),
                                  (GPT_RUNS, _COMPILED, "fwd_bwd_queued_ms"),
                                  (ONE_SEQUENCE_RUNS, ("fp8-tensorwise",),
                                   "fwd_bwd_queued_ms"),
                                  (WIDE_NORM_RUNS, ("fp8-tensorwise",),
                                   "fwd_bwd_queued_ms"),
                                  (ONE_SEQUENCE_ROWWISE_RUNS, ("fp8-rowwise",),
                                   "fwd_bwd_queued_ms"),
                                  (EAGER_RUNS, ("bf16-eager", "fp8-tensorwise-eager"),
                                   "fwd_bwd_ms")):
        for r in csv.DictReader(io.StringIO(specs.read_data_text(path))):
            if r["recipe"] not in recipes:
                continue
            k = (r["kind"], r["recipe"], int(r["hidden"]), int(r["tp"]),
                 int(r["seq_len"]), int(r["micro_batch"]))
            single = path in (ONE_SEQUENCE_RUNS, ONE_SEQUENCE_ROWWISE_RUNS,
                              WIDE_NORM_RUNS)
            if single and k in times:
                raise ValueError(f"{path}: shape {k} is in another run too")
            times.setdefault(k, []).append(float(r[column]) * 1e-3)
            fit = r["kind"] == "llama" and int(r["hidden"]) in FIT_HIDDEN
            grid = "onesequence" if single else \
                "fit" if fit else "holdout"
            meta[k] = (grid, int(r["ffn_hidden"]),
                       int(r["kv_heads"]))
    out = []
    g = specs.gpu("H200")
    for k in sorted(times):
        kind, recipe, h, t, s, b = k
        grid, f, kv = meta[k]
        precision, model_recipe = _RECIPE_NAMES[recipe]
        terms = shard_terms(h, t, s, b, qkv_out=h + 2 * kv * 128, ffn_hidden=f,
                            swiglu=kind == "llama",
                            norm=_NORM[kind])
        model = (recipe_shard_time(terms, g, precision, model_recipe)
                 if model_recipe else None)
        measured = statistics.median(times[k])
        out.append({"kind": kind, "recipe": recipe, "precision": precision,
                    "hidden": h, "tp": t, "seq_len": s, "micro_batch": b,
                    "tokens": s * b, "grid": grid, "repeats": len(times[k]),
                    "measured_s": measured, "model_s": model,
                    "error": None if model is None else model / measured - 1.0})
    return tuple(out)


def recipe_runs(recipe=None, *, kind=None):
    """Our 1x H200 layer-shard runs under each recipe, with the model's time beside.

    Parameters
    ----------
    recipe : str, optional
        One of ``"bf16-eager"``, ``"bf16-compiled"``, ``"fp8-tensorwise"`` (torchao,
        compiled: the model's ``recipe="compiled"``), ``"fp8-rowwise"`` (the model's
        ``recipe="compiled-rowwise"``) and ``"fp8-tensorwise-eager"`` (measured, not
        modelled: ``model_s`` is None).
        Default: all.
    kind : {"gpt", "llama"}, optional
        Layer kind. Default: both.

    Returns
    -------
    list of dict
        One per shape and recipe: kind, recipe, precision, hidden, tp, seq_len,
        micro_batch, tokens, grid (``"fit"`` or ``"holdout"``: the compiled
        constants were fitted on the Llama rows of the fit grid only;
        ``"onesequence"``: held out too, the shards of one sequence per micro-batch
        of :data:`ONE_SEQUENCE_RUNS` and :data:`ONE_SEQUENCE_ROWWISE_RUNS`), repeats,
        measured_s (median of the repeats; compiled recipes: the queued time, the
        kernels back to back), model_s and error (model / measured - 1).

    Examples
    --------
    >>> held = [r for r in recipe_runs("fp8-tensorwise") if r["grid"] == "holdout"]
    >>> len(held) >= 40 and all(abs(r["error"]) < 0.2 for r in held)
    True
    """
    if recipe is not None:
        check_choice("recipe", recipe, tuple(_RECIPE_NAMES))
    if kind is not None:
        check_choice("kind", kind, ("gpt", "llama"))
    return [dict(r) for r in _runs()
            if (recipe is None or r["recipe"] == recipe)
            and (kind is None or r["kind"] == kind)]




def measured_fp8_speedups():
    """Shapes we ran both in BF16 and in compiled FP8: measured and modelled ratio.

    Both are compiled runs (static shapes, queued timing). The model ratio is
    :func:`fp8_speedup`'s, for the shard's own layer shapes (GQA and SwiGLU for the
    Llama layers).

    Returns
    -------
    list of dict
        kind, hidden, tp, tokens, width (hidden / tp), held_out (the FP8 fit never
        saw the shape), measured (BF16 time / FP8 time), model (the same from the
        model) and error (model / measured - 1).

    Examples
    --------
    >>> rows = measured_fp8_speedups()
    >>> any(r["measured"] > 1.2 for r in rows) and any(r["measured"] < 0.8 for r in rows)
    True
    """
    runs = recipe_runs()
    key = lambda r: (r["kind"], r["hidden"], r["tp"], r["seq_len"], r["micro_batch"])  # noqa: E731
    bf16 = {}
    for r in runs:
        if r["recipe"] == "bf16-compiled":
            bf16[key(r)] = r
    out = []
    for r in runs:
        if r["recipe"] != "fp8-tensorwise" or key(r) not in bf16:
            continue
        b = bf16[key(r)]
        measured = b["measured_s"] / r["measured_s"]
        model = b["model_s"] / r["model_s"]
        out.append({"kind": r["kind"], "hidden": r["hidden"], "tp": r["tp"],
                    "tokens": r["tokens"], "width": r["hidden"] // r["tp"],
                    "held_out": r["grid"] == "holdout", "measured": measured,
                    "model": model, "error": model / measured - 1.0})
    return out


def _profile_files():
    names = ["kernels_probe_gpt_8192x1.csv", "kernels_probe_gpt_2048x4.csv"]
    names += [f"kernels_mix_{m}_{k}.csv" for m in ("on", "off") for k in ("gpt", "llama")]
    names += [f"kernels_mix_{m}_{s}_16384x1.csv" for m in ("on", "off")
              for s in ("gpt_8192", "llama_6144", "llama_8192")]
    out = [(f"{MIX_ORDER_RUN}/{n}", "off" if "_off_" in n else "on", False) for n in names]
    # the wide run repeats two "on" profiles of the first (kept there) and adds GPT
    # 16384 on and off, and Llama 7168 off
    out += [(f"{MIX_ORDER_WIDE_RUN}/kernels_mix_{m}_{k}_wide.csv", m, False)
            for m in ("on", "off") for k in ("gpt", "llama")]
    # held out of the spill term: Llama 6144 on (a repeat, the first kept) and 7168 on,
    # GPT 12288 on and off
    out += [(f"{MIX_ORDER_SPILL_RUN}/kernels_mix_{n}.csv", n[:n.index("_")], True)
            for n in ("on_llama_wide_6144", "on_llama_wide_7168", "on_gpt_wide_12288",
                      "off_gpt_wide_12288")]
    return out


@functools.lru_cache(maxsize=1)
def _profiles():
    out = {}
    for name, mode, held in _profile_files():
        text = specs.read_data_text(name)
        mine = {}
        for r in csv.DictReader(io.StringIO(text)):
            k = (r["kind"], int(r["hidden"]), int(r["tp"]), int(r["seq_len"]),
                 int(r["micro_batch"]))
            d = mine.setdefault(k, {"other_ms": 0.0, "fused_ms": 0.0})
            if r["kernel_class"] != "other":
                continue
            ms = float(r["ms_per_step"])
            d["other_ms"] += ms
            n = r["kernel"]
            if n.startswith("triton_per_fused") and "_scaled_mm" in n and "norm" in n \
                    and "backward" in n:
                d["fused_ms"] += ms
        for k, d in mine.items():
            if mode in out.setdefault(k, {}):
                if MIX_ORDER_RUN + "/" in name:
                    raise ValueError(f"{name}: shape {k} profiled {mode} twice")
                continue                   # a repeat in a later run: the first kept
            out[k][mode] = d
            out[k]["held_out"] = out[k].get("held_out", False) or held
    return out


def mix_order_profiles():
    """Our kernel profiles of compiled FP8 shards, with the mix-order rule beside each.

    ``measure/profile_shard.py`` on 1x H200 (PyTorch 2.11, torchao 0.18 tensorwise,
    static compile; :data:`MIX_ORDER_RUN` and :data:`MIX_ORDER_WIDE_RUN`): per shape,
    the kernel time of class "other" per step with Inductor's mix-order reduction on
    (the default) and, where profiled, off (``TORCHINDUCTOR_MIX_ORDER_REDUCTION=0``), and
    the time of the persistent kernel that fuses the norm's backward with an FP8 cast.

    Returns
    -------
    list of dict
        kind, hidden, tp, seq_len, micro_batch, rule (:func:`mix_order_fused` for the
        shard's rows and width), spills (:func:`mix_order_spills` for its width and norm:
        RMSNorm for Llama, LayerNorm for GPT), fused_ms (that kernel's time with the
        fusion on; 0 when the compiler did not emit it), other_on_ms, other_off_ms (None
        where not profiled off), extra_s_per_element ((on - off) / (tokens x hidden), or
        None), extra_s_per_row ((on - off) / tokens, or None) and held_out (profiled
        after the spill term was set, :data:`MIX_ORDER_SPILL_RUN`: not in its mean).

    Examples
    --------
    >>> rows = mix_order_profiles()
    >>> all(r["rule"] == (r["fused_ms"] > 0) for r in rows)
    True
    >>> sorted((r["kind"], r["hidden"], r["held_out"]) for r in rows
    ...        if r["spills"] and r["rule"])  # doctest: +NORMALIZE_WHITESPACE
    [('gpt', 12288, True), ('gpt', 16384, False), ('llama', 7168, True),
     ('llama', 8192, False)]
    """
    out = []
    for k, d in sorted(_profiles().items()):
        kind, h, t, s, b = k
        on, off = d.get("on"), d.get("off")
        if on is None:
            continue
        extra = None if off is None else \
            (on["other_ms"] - off["other_ms"]) * 1e-3 / (s * b)
        out.append({"kind": kind, "hidden": h, "tp": t, "seq_len": s, "micro_batch": b,
                    "rule": mix_order_fused(s * b, h, b),
                    "spills": mix_order_spills(h, _NORM[kind]), "fused_ms": on["fused_ms"],
                    "other_on_ms": on["other_ms"],
                    "other_off_ms": None if off is None else off["other_ms"],
                    "extra_s_per_element": None if extra is None else extra / h,
                    "extra_s_per_row": extra, "held_out": d.get("held_out", False)})
    return out


def mix_order_kernels():
    """Registers and spills of the fused mix-order kernels, as Triton compiled them.

    ``measure/profile_shard.py --meta`` (:data:`MIX_ORDER_WIDE_RUN`): for each profiled
    shard, the persistent kernels that compute a norm's backward (those Inductor launched
    on its mix-order grid: ``RSPLIT_SIZE`` in the configuration), with the launch
    configuration and what the compiled binary reports.

    Returns
    -------
    list of dict
        kind, hidden, tp, seq_len, kernel, casts (True where the kernel also writes the
        FP8 copy: ``_scaled_mm`` in its name), num_warps, registers (per thread),
        spills, mix (True with the fusion on).

    Examples
    --------
    >>> k = [r for r in mix_order_kernels() if r["casts"] and r["mix"]]
    >>> sorted((r["kind"], r["hidden"], r["num_warps"], r["spills"])
    ...        for r in k)  # doctest: +NORMALIZE_WHITESPACE
    [('gpt', 8192, 8, 6), ('gpt', 12288, 16, 272), ('gpt', 16384, 16, 212),
     ('llama', 6144, 8, 64), ('llama', 7168, 8, 582), ('llama', 8192, 8, 594)]
    """
    out = []
    # the Llama "on" file did not come back from the machine; the command printed its
    # fused kernel's line, kept as meta_mix_on_llama_wide_printed.csv
    files = [(MIX_ORDER_WIDE_RUN, m, n) for m, n in (
        ("on", "gpt_wide"), ("off", "gpt_wide"), ("off", "llama_wide"),
        ("on", "llama_wide_printed"))]
    files += [(MIX_ORDER_SPILL_RUN, m, n) for m, n in (
        ("on", "llama_wide_6144"), ("on", "llama_wide_7168"), ("on", "gpt_wide_12288"),
        ("off", "gpt_wide_12288"))]
    for run, mode, name in files:
        text = specs.read_data_text(f"{run}/meta_mix_{mode}_{name}.csv")
        for r in csv.DictReader(io.StringIO(text)):
            n = r["kernel"]
            if not (n.startswith("triton_per") and "norm_backward" in n
                    and "RSPLIT_SIZE" in r["config"]):
                continue
            out.append({"kind": r["kind"], "hidden": int(r["hidden"]), "tp": int(r["tp"]),
                        "seq_len": int(r["seq_len"]), "kernel": n,
                        "casts": "_scaled_mm" in n, "num_warps": int(r["num_warps"]),
                        "registers": int(r["n_regs"]), "spills": int(r["n_spills"]),
                        "mix": mode == "on"})
    return out
