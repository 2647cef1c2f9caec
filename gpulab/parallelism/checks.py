"""The step-time model beside our own whole-model runs (held out of every fit).

``measure/full_step.py`` ran forward + backward of a whole Llama 3 8B (and of the Llama 3
70B shape with 8 of its 80 blocks) on one H200
(torch.compile per block, torchao float8 in FP8, torchtitan's activation checkpointing);
:func:`whole_model_check` sets :func:`step_time` beside each run. The layer-shard fits
never saw these runs (they are whole models, with the logits layer, the loss and the
recomputation of torchtitan's policies).

Units: tokens per second; errors are ``model / measured - 1``.
"""
from __future__ import annotations

import dataclasses

from .. import measurements
from .layout import Layout
from .model import model
from .step import step_time

__all__ = ["WHOLE_MODEL_SYSTEM", "whole_model_check"]

#: The preset whose GPU the runs used (one of its GPUs: layout TP1 PP1 DP1).
WHOLE_MODEL_SYSTEM = "hgx-h200"
_RECOMPUTE = {"op": "per-op", "full": "full", "none": "none"}


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
        (model / measured - 1; negative: the model is slower).

    Examples
    --------
    >>> rows = whole_model_check()
    >>> sorted({r["recompute"] for r in rows})
    ['full', 'none', 'per-op']
    >>> all(abs(r["error"]) < 0.25 for r in rows)
    True
    """
    out = []
    for r in measurements.full_step_runs():
        rc = _RECOMPUTE[r["ac"]]
        recipe = "compiled" if r["compiled"] else "eager"
        spec = model(r["model"])
        if r["layers"] and r["layers"] != spec.layers:
            # the run kept the model's shape with fewer blocks (to fit one GPU)
            spec = dataclasses.replace(spec, layers=r["layers"],
                                       name=f"{spec.name} ({r['layers']} layers)")
        st = step_time(spec, WHOLE_MODEL_SYSTEM, Layout(1, 1, 1),
                       global_batch=r["batch"], micro_batch=r["batch"],
                       seq_len=r["seq_len"], recompute=rc, precision=r["precision"],
                       recipe=recipe)
        out.append({"model": r["model"], "layers": spec.layers,
                    "precision": r["precision"], "recompute": rc, "recipe": recipe,
                    "batch": r["batch"],
                    "seq_len": r["seq_len"],
                    "measured_tokens_per_s": r["tokens_per_s"],
                    "model_tokens_per_s": st.tokens_per_s,
                    "error": st.tokens_per_s / r["tokens_per_s"] - 1.0})
    return out
