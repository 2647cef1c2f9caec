"""Tensor-parallel communication hidden behind GEMMs (Transformer Engine userbuffers).

With sequence parallelism a layer's TP traffic is eight collectives of equal size per
micro-batch (:func:`tp_allreduce_count`: four all-reduces, each a reduce-scatter plus an
all-gather). Megatron's ``--tp-comm-overlap`` hands them to Transformer Engine, which
overlaps each with a GEMM of the same layer at a "site" (``transformer_engine/pytorch/
module/base.py``, the method table of ``initialize_ub``: lines 193-211 at v1.9):

==============  ==========  ===================================================
site            collective  default method (TE v1.9)
==============  ==========  ===================================================
qkv_fprop       all-gather  ring_exchange: the gather in TP peer-to-peer steps,
fc1_fprop       all-gather  each beside the GEMM of the chunk already present
proj_dgrad      all-gather  (``split_overlap_ag``)
fc2_dgrad       all-gather
proj_fprop      reduce-sc.  pipeline: the GEMM in 4 chunks, chunk k's reduce-scatter
fc2_fprop       reduce-sc.  beside chunk k+1's GEMM (``split_overlap_rs``)
qkv_wgrad       reduce-sc.  bulk: the data-gradient's reduce-scatter beside the
fc1_wgrad       reduce-sc.  weight-gradient GEMM (``bulk_overlap``)
==============  ==========  ===================================================

A configuration may set ``ring_exchange`` for the forward reduce-scatters too
(peer-to-peer reduce-scatter), as Megatron-Bridge's FP8 H100 Llama 3 70B configuration
does (``userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192``).

What the model charges, per site (ours, from our runs):

* the part of the collective left on the critical path: the last of ``n`` chunks of a
  pipeline site (``1/n``), nothing for ring exchange and bulk sites (each collective
  is taken to be shorter than the GEMM it hides behind);
* the slowdown of the GEMM that hosts it, measured on one H200 (``measure/
  overlap_contention.py``): the split into chunks (``tp_overlap_split_cost_4/8``) and
  the copy running beside it -- copy-engine copies at an NVLink-like rate for ring
  exchange (``tp_overlap_slowdown_p2p``), an SM carve-out of 16-24 SMs for pipeline
  sites (``tp_overlap_slowdown_pipeline``), a copy kernel sharing the SMs for bulk sites
  (``tp_overlap_slowdown_bulk``).

The GEMM's share of the layer's linear-layer time is taken as its share of the FLOPs.
Not modelled: the cross-GPU side (NVLink traffic, the peer's progress), a collective
slowed beyond its GEMM by the GEMM beside it, PyTorch's async TP (copy-engine
micro-pipelining of its own: how much of it hides could not be measured on one GPU).

Units are SI.
"""
from __future__ import annotations

import math

from .._validate import check_choice, check_int
from .model import as_model, assumption

__all__ = ["TP_OVERLAP_METHODS", "TP_OVERLAP_SITES", "OVERLAP_SITE_METHODS",
           "tp_overlap_sites", "tp_overlap_effect"]

#: Named overlap configurations: ``"none"`` (the collectives on the critical path, or a
#: flat hidden share through ``tp_overlap``), ``"userbuffers"`` (Transformer Engine's
#: default method per site), ``"userbuffers-p2p"`` (ring exchange at every forward
#: site too, as Megatron-Bridge's FP8 H100 configurations).
TP_OVERLAP_METHODS = ("none", "userbuffers", "userbuffers-p2p")
#: The eight overlap sites of a layer with sequence parallelism, with their collective.
TP_OVERLAP_SITES = (("qkv_fprop", "all_gather"), ("proj_fprop", "reduce_scatter"),
                    ("fc1_fprop", "all_gather"), ("fc2_fprop", "reduce_scatter"),
                    ("proj_dgrad", "all_gather"), ("fc2_dgrad", "all_gather"),
                    ("qkv_wgrad", "reduce_scatter"), ("fc1_wgrad", "reduce_scatter"))
#: Overlap methods a site may use.
OVERLAP_SITE_METHODS = ("ring_exchange", "pipeline", "bulk")
_TE_DEFAULT = {"qkv_fprop": "ring_exchange", "fc1_fprop": "ring_exchange",
               "proj_dgrad": "ring_exchange", "fc2_dgrad": "ring_exchange",
               "proj_fprop": "pipeline", "fc2_fprop": "pipeline",
               "qkv_wgrad": "bulk", "fc1_wgrad": "bulk"}
_PIPELINE_SPLITS = 4              # TE's num_splits default for pipeline sites (base.py)


def _methods(method):
    if isinstance(method, dict):
        bad = set(method) - {s for s, _ in TP_OVERLAP_SITES}
        if bad:
            raise ValueError(f"method: unknown site(s) {sorted(bad)}; valid: "
                             f"{[s for s, _ in TP_OVERLAP_SITES]}")
        for site, m in method.items():
            check_choice(f"method[{site!r}]", m, OVERLAP_SITE_METHODS)
        return dict(_TE_DEFAULT, **method)
    check_choice("method", method, TP_OVERLAP_METHODS)
    if method == "none":
        return None
    out = dict(_TE_DEFAULT)
    if method == "userbuffers-p2p":
        out.update(proj_fprop="ring_exchange", fc2_fprop="ring_exchange")
    return out


def _split_cost(n):
    """Measured extra time of a GEMM split in ``n`` row blocks (1: none), interpolated
    in log2(n) between our 4- and 8-block medians, held beyond 8."""
    if n <= 1:
        return 0.0
    c4, c8 = assumption("tp_overlap_split_cost_4"), assumption("tp_overlap_split_cost_8")
    x = math.log2(n)
    if x <= 2:
        return c4 * x / 2
    return c4 + (c8 - c4) * min(x - 2, 1.0)


def _site_flops(m):
    """Forward FLOP weights (per token, whole layer) of the four linear GEMMs."""
    h, d = m.hidden, m.hidden // m.heads
    kv = m.kv_heads * d
    f = m.expert_ffn_hidden * m.top_k if m.num_experts else m.ffn_hidden
    up = 2 if m.mlp == "swiglu" else 1
    return {"qkv": h * (h + 2 * kv), "proj": h * h, "fc1": h * f * up, "fc2": f * h}


def tp_overlap_sites(spec, tp, method="userbuffers"):
    """Per overlap site: method, exposed share of its collective, GEMM share, slowdown.

    Parameters
    ----------
    spec : ModelSpec or str
    tp : int
        TP degree (ring exchange splits a GEMM in ``tp`` chunks), >= 2.
    method : str or dict
        One of :data:`TP_OVERLAP_METHODS` other than ``"none"``, or ``{site: method}``
        with methods from :data:`OVERLAP_SITE_METHODS` (sites left out keep Transformer
        Engine's default).

    Returns
    -------
    list of dict
        One per :data:`TP_OVERLAP_SITES` entry: ``site``, ``collective``, ``method``,
        ``exposed`` (share of that collective left on the critical path),
        ``gemm_share`` (the hosting GEMM's share of the layer's linear-layer FLOPs,
        forward + backward) and ``slowdown`` (of that GEMM while it hosts the
        collective, measured).

    Examples
    --------
    >>> rows = tp_overlap_sites("llama3-70b", 4)
    >>> [(r["site"], r["method"], r["exposed"]) for r in rows][:2]
    [('qkv_fprop', 'ring_exchange', 0.0), ('proj_fprop', 'pipeline', 0.25)]
    >>> round(sum(r["gemm_share"] for r in rows), 3)   # 8 of the 12 GEMMs host one
    0.667
    """
    m = as_model(spec)
    t = check_int("tp", tp, low=2, high=1_000_000)
    if method == "none":
        raise ValueError("method: 'none' has no overlap sites; valid: "
                         f"{list(TP_OVERLAP_METHODS[1:])} or a {{site: method}} dict")
    methods = _methods(method)
    w = _site_flops(m)
    total = 3.0 * sum(w.values())                       # forward + dgrad + wgrad
    slow = {"ring_exchange": (1 + _split_cost(t))
            * (1 + assumption("tp_overlap_slowdown_p2p")) - 1,
            "pipeline": (1 + _split_cost(_PIPELINE_SPLITS))
            * (1 + assumption("tp_overlap_slowdown_pipeline")) - 1,
            "bulk": assumption("tp_overlap_slowdown_bulk")}
    rows = []
    for site, coll in TP_OVERLAP_SITES:
        meth = methods[site]
        if meth == "bulk" and coll == "all_gather" and site.endswith("fprop"):
            raise ValueError(f"method[{site!r}]: a forward all-gather cannot be a bulk "
                             "overlap (no independent GEMM runs beside it); use "
                             "'ring_exchange' or 'pipeline'")
        rows.append({"site": site, "collective": coll, "method": meth,
                     "exposed": 1.0 / _PIPELINE_SPLITS if meth == "pipeline" else 0.0,
                     "gemm_share": w[site.split("_")[0]] / total,
                     "slowdown": slow[meth]})
    return rows


def tp_overlap_effect(spec, tp, method="userbuffers"):
    """(exposed share of the TP traffic, GEMM slowdown share) under an overlap method.

    The step model charges ``t_TP x exposed + t_linear x slowdown_share`` for the TP
    communication, where ``t_linear`` is the time of the layers' linear GEMMs.

    Parameters
    ----------
    spec, tp, method
        As in :func:`tp_overlap_sites`; ``method="none"`` gives ``(1.0, 0.0)``, and so
        does ``tp=1`` (no TP traffic).

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> e, s = tp_overlap_effect("llama3-70b", 4, "userbuffers")
    >>> e                                  # the last of 4 chunks of 2 of 8 collectives
    0.0625
    >>> tp_overlap_effect("llama3-70b", 4, "none")
    (1.0, 0.0)
    """
    if isinstance(method, str):
        check_choice("method", method, TP_OVERLAP_METHODS)
    t = check_int("tp", tp, low=1, high=1_000_000)
    if method == "none" or t == 1:
        as_model(spec)
        return 1.0, 0.0
    rows = tp_overlap_sites(spec, t, method)
    exposed = sum(r["exposed"] for r in rows) / len(rows)
    return exposed, sum(r["gemm_share"] * r["slowdown"] for r in rows)
