"""The step-time model beside our own whole-model runs.

``measure/full_step.py`` ran forward + backward of a whole Llama 3 8B (and of the Llama 3
70B shape with 8 of its 80 blocks) on one H200
(torch.compile per block, torchao float8 in FP8, torchtitan's activation checkpointing);
:func:`whole_model_check` sets :func:`step_time` beside each run. The layer-shard fits
never saw these runs (they are whole models, with the logits layer, the loss and the
recomputation of torchtitan's policies). One thing was taken from some of them: what
recomputation costs under torch.compile (:func:`recompute_scale_fit`, from the Llama 3 8B
runs at one sequence of the 2026-12-03 recording, which the check marks as fitted); every
other run is held out.

Units: tokens per second; errors are ``model / measured - 1``.
"""
from __future__ import annotations

import dataclasses
import statistics

from .. import measurements
from .layout import Layout
from .model import model
from .step import step_time

__all__ = ["WHOLE_MODEL_SYSTEM", "whole_model_check", "recompute_scale_fit"]

#: The preset whose GPU the runs used (one of its GPUs: layout TP1 PP1 DP1).
WHOLE_MODEL_SYSTEM = "hgx-h200"
_RECOMPUTE = {"op": "per-op", "full": "full", "none": "none"}


def _spec_of(r):
    spec = model(r["model"])
    if r["layers"] and r["layers"] != spec.layers:
        # the run kept the model's shape with fewer blocks (to fit one GPU)
        spec = dataclasses.replace(spec, layers=r["layers"],
                                   name=f"{spec.name} ({r['layers']} layers)")
    return spec


def _fit_runs():
    """The runs :func:`recompute_scale_fit` uses: Llama 3 8B, one sequence, compiled."""
    return [r for r in measurements.full_step_runs(measurements.RECOMPUTE_FILES,
                                                   measurements.RECOMPUTE_RUN)
            if r["model"] == "llama3-8b" and r["batch"] == 1 and r["compiled"]]


def recompute_scale_fit():
    """What recomputation cost our compiled whole-model runs, as a fraction of the step
    model's FLOP charge for it: for each run with checkpointing and its twin without
    (same model, precision, sequence), ``(t_ac / t_none - 1) / (T_ac / T_none - 1)``
    with ``t`` measured and ``T`` :func:`step_time` with ``recompute_cost="flops"``; the
    median per precision and policy. ``data/parallelism_assumptions.yaml``'s
    ``compiled_recompute_scale`` holds these values (a test re-derives them).

    Returns
    -------
    dict
        ``{precision: {policy: {"scale": median, "runs": [(seq_len, ratio), ...]}}}``.

    Examples
    --------
    >>> f = recompute_scale_fit()
    >>> f["fp8"]["per-op"]["scale"] < 0.2 < f["bf16"]["full"]["scale"] < 1
    True
    """
    runs = _fit_runs()
    base = {(r["precision"], r["seq_len"]): r for r in runs if r["ac"] == "none"}
    out, plain = {}, {}
    for r in runs:
        if r["ac"] == "none" or (r["precision"], r["seq_len"]) not in base:
            continue
        r0 = base[(r["precision"], r["seq_len"])]
        rc = _RECOMPUTE[r["ac"]]

        def model_s(policy, run=r):
            return step_time(_spec_of(run), WHOLE_MODEL_SYSTEM, Layout(1, 1, 1),
                             global_batch=1, micro_batch=1, seq_len=run["seq_len"],
                             recompute=policy, precision=run["precision"]).total

        key = (r["precision"], r["seq_len"])
        if key not in plain:
            plain[key] = model_s("none")
        ratio = (r["step_s"] / r0["step_s"] - 1) / (model_s(rc) / plain[key] - 1)
        out.setdefault(r["precision"], {}).setdefault(rc, []).append(
            (r["seq_len"], ratio))
    return {p: {rc: {"scale": statistics.median(x for _, x in v), "runs": sorted(v)}
                for rc, v in d.items()} for p, d in out.items()}


def whole_model_check():
    """Each whole-model run beside the step model (one GPU, no optimizer step).

    Returns
    -------
    list of dict
        One per run of :func:`gpulab.measurements.full_step_runs`: ``model`` (the
        preset whose shape ran), ``layers`` (blocks run), ``precision``,
        ``recompute`` (the model's name of the run's checkpointing), ``batch``,
        ``recipe`` (``"compiled"`` or ``"eager"``), ``seq_len``,
        ``measured_tokens_per_s``, ``model_tokens_per_s`` and ``error``
        (model / measured - 1; negative: the model is slower), with compiled runs'
        recomputation at its measured cost (``recompute_cost="compiled"``);
        ``flops_recompute_error`` (the same with recomputation at its FLOP charge) and
        ``fitted`` (the run entered :func:`recompute_scale_fit`, with checkpointing or
        as the twin without; the rest are held out).

    Examples
    --------
    >>> rows = whole_model_check()
    >>> sorted({r["recompute"] for r in rows})
    ['full', 'none', 'per-op']
    >>> all(abs(r["error"]) < 0.25 for r in rows)
    True
    """
    out = []
    later = measurements.full_step_runs(measurements.RECOMPUTE_FILES,
                                        measurements.RECOMPUTE_RUN)
    fitted = {(r["model"], r["precision"], r["ac"], r["batch"], r["seq_len"])
              for r in _fit_runs()}          # with the runs without checkpointing
    runs = [(r, False) for r in measurements.full_step_runs()] + [(r, True) for r in later]
    for r, recorded_later in runs:
        rc = _RECOMPUTE[r["ac"]]
        recipe = "compiled" if r["compiled"] else "eager"
        spec = _spec_of(r)
        kw = dict(global_batch=r["batch"], micro_batch=r["batch"], seq_len=r["seq_len"],
                  recompute=rc, precision=r["precision"], recipe=recipe)
        flops = step_time(spec, WHOLE_MODEL_SYSTEM, Layout(1, 1, 1), **kw)
        st = step_time(spec, WHOLE_MODEL_SYSTEM, Layout(1, 1, 1),
                       recompute_cost="compiled", **kw) \
            if r["compiled"] and rc in ("per-op", "full") else flops
        key = (r["model"], r["precision"], r["ac"], r["batch"], r["seq_len"])
        out.append({"model": r["model"], "layers": spec.layers,
                    "precision": r["precision"], "recompute": rc, "recipe": recipe,
                    "batch": r["batch"],
                    "seq_len": r["seq_len"],
                    "measured_tokens_per_s": r["tokens_per_s"],
                    "model_tokens_per_s": st.tokens_per_s,
                    "error": st.tokens_per_s / r["tokens_per_s"] - 1.0,
                    "flops_recompute_error": flops.tokens_per_s / r["tokens_per_s"] - 1.0,
                    "fitted": recorded_later and key in fitted})
    return out
