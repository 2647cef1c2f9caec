"""The layout chooser: every valid TP x PP x DP layout ranked by step time, with
the reasons why the others do not fit or are slower.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass


from .._validate import check_choice, check_int, finite_answer
from .layout import Layout, memory_reason, structural_reasons, as_system
from .model import RECOMPUTE, check_flag, check_positive, seq_len_of, as_model, check_zero, assumption
from .efficiency import RECIPES
from .step import StepTime, step_options, step_result


# --- chooser -----------------------------------------------------------------------
@dataclass(frozen=True)
class LayoutResult:
    """One candidate of :func:`rank_layouts`.

    Attributes
    ----------
    layout : Layout
    options : dict
        ``micro_batch``, ``sequence_parallel`` and ``recompute`` of this candidate.
    step : StepTime or None
        None when a divisibility rule fails.
    reasons : tuple of str
        Why the candidate cannot run (empty when valid).
    why : str
        One line: why it ranks where it does.
    rank : int or None
        1 = fastest; None for invalid candidates.
    """

    layout: Layout
    options: dict
    step: StepTime | None
    reasons: tuple
    why: str
    rank: int | None = None

    @property
    def valid(self):
        """True when the candidate runs and fits."""
        return not self.reasons


@dataclass(frozen=True)
class Ranking:
    """Result of :func:`rank_layouts`: ``valid`` (fastest first) and ``invalid``."""

    valid: list
    invalid: list

    @property
    def best(self):
        """The fastest valid candidate, or None when nothing fits."""
        return self.valid[0] if self.valid else None

    def table(self):
        """Rows (dicts) of every candidate, valid ones first, for display."""
        rows = []
        for r in self.valid + self.invalid:
            st = r.step
            rows.append({"rank": r.rank, "layout": str(r.layout), **r.options,
                         "step_s": None if st is None else st.total,
                         "memory_gb": None if st is None else st.memory.total / 1e9,
                         "why": r.why})
        return rows


_PART_NAMES = {"compute": "compute", "tp_comm": "TP communication",
               "pp_comm": "PP communication", "dp_comm": "DP communication",
               "bubble": "pipeline bubble", "ep_comm": "EP all-to-all",
               "cp_comm": "CP key/value ring"}


def _parts_diff(a, b):
    """Component-wise ``a - b`` of two steps' parts (a part missing counts as 0)."""
    pa, pb = a.components(), b.components()
    return {k: pa.get(k, 0.0) - pb.get(k, 0.0) for k in {**pa, **pb}}


def _label(res, ref):
    """The layout, plus the options in which ``res`` differs from ``ref``."""
    diff = [f"{k}={v}" for k, v in res.options.items() if ref.options.get(k) != v]
    return f"{res.layout}" + (f" ({', '.join(diff)})" if diff else "")


def _why_best(best, runner):
    st = best.step
    parts = st.components()
    top = max(parts, key=parts.get)
    head = (f"fastest: {st.total:.3g} s/step, {top.replace('_', ' ')} is "
            f"{parts[top] / st.total:.0%} of it")
    if runner is None:
        return head + "; the only layout that fits"
    diff = _parts_diff(runner.step, st)
    k = max(diff, key=diff.get)
    return (f"{head}; next best {_label(runner, best)} is "
            f"{runner.step.total / st.total - 1:.1%} slower, mostly "
            f"{_PART_NAMES[k]} (+{diff[k]:.3g} s)")


def _why_other(res, best):
    diff = _parts_diff(res.step, best.step)
    k = max(diff, key=diff.get)
    return (f"{res.step.total / best.step.total - 1:.1%} slower than "
            f"{_label(best, res)}: mostly {_PART_NAMES[k]} (+{diff[k]:.3g} s)")


def _as_tuple(name, value, check):
    vals = value if isinstance(value, (tuple, list)) else (value,)
    if not vals:
        raise ValueError(f"{name} must be a value or a non-empty tuple of values; "
                         f"got {value!r}")
    return tuple(dict.fromkeys(check(name, v) for v in vals))


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@finite_answer
def rank_layouts(spec, system, n_gpus=None, *, global_batch, micro_batch=1,
                 seq_len=None, zero=1, sequence_parallel=False, recompute="none",
                 virtual=1, mfu=None, dp_overlap=None, tp_overlap=None,
                 bucket_bytes=None, reserve=None, nvls=True, precision="bf16",
                 ep=None, recipe="compiled", cp=1):
    """Enumerate every TP x PP x DP (x EP, x CP) layout of ``n_gpus`` GPUs and rank them.

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
        The cluster (:func:`cluster` scales a preset to more nodes).
    n_gpus : int, optional
        GPUs to use (default: all of the system's).
    global_batch : int
        Sequences per optimizer step.
    micro_batch : int or tuple of int
        Micro-batch size(s) to try.
    seq_len : int, optional
    zero : {0, 1, 2, 3}
        ZeRO stage (default 1: Megatron's distributed optimizer).
    sequence_parallel : bool or tuple of bool
        Value(s) to try (True is only tried where TP > 1). For a mixture-of-experts
        model with TP > 1 sequence parallelism is forced on, whatever is given:
        Megatron Core refuses MoE with tensor parallelism without it
        (``parallelism.memory.moe_sp_reason``), so those candidates are evaluated, and returned,
        with ``sequence_parallel=True`` only.
    recompute : str or tuple of str
        Recomputation mode(s) to try.
    virtual : int or tuple of int
        Virtual pipeline stages to try (only where PP > 1).
    mfu, dp_overlap, tp_overlap, bucket_bytes, reserve, nvls, precision, recipe
        As in :func:`step_time` (``mfu=None``: compute efficiency from each
        candidate's shard shape).
    ep : int or tuple of int, optional
        Expert-parallel degree(s) to try for a mixture-of-experts model (default:
        every divisor of its number of experts); each candidate's EP must divide
        its DP (EP groups are carved out of DP: Megatron Core's layout without MoE
        parallel folding), and appears in
        its ``options``. Dense models take only 1 (the default), and their
        candidates carry no ``ep`` option.
    cp : int or tuple of int
        Context-parallel degree(s) to try (default 1: none); each splits every
        sequence over ``cp`` GPUs (:class:`Layout`), so ``tp * cp * pp`` divides
        ``n_gpus``. Useful for long sequences, where activations do not fit otherwise.

    Returns
    -------
    Ranking
        ``valid``: candidates that run and fit, fastest first, each with a
        one-line ``why``; ``invalid``: the others, each with its ``reasons``
        (a broken divisibility rule, or the memory it would need). No candidate
        raises.

    Notes
    -----
    Candidates: every ``(tp, cp, pp)`` with ``tp * cp * pp`` dividing ``n_gpus`` and
    ``dp = n_gpus / (tp * cp * pp)``, times the option values given (and, for an MoE
    model, every EP degree that divides both dp and the experts). Collective times
    are cached, so 64 GPUs rank in a few milliseconds per option combination.

    Examples
    --------
    >>> r = rank_layouts("13b", "hgx-h200", global_batch=64)
    >>> str(r.best.layout), all(x.step.fits for x in r.valid)
    ('TP1 PP2 DP4', True)
    """
    m = as_model(spec)
    s_ = as_system(system)
    n = s_.n_gpus if n_gpus is None else check_int("n_gpus", n_gpus, low=1,
                                                    high=s_.n_gpus)
    gbatch = check_positive("global_batch", global_batch)
    mbs = _as_tuple("micro_batch", micro_batch, check_positive)
    s = seq_len_of(m, seq_len)
    z = check_zero(zero)
    sps = _as_tuple("sequence_parallel", sequence_parallel, check_flag)
    recs = _as_tuple("recompute", recompute,
                     lambda k, v: check_choice(k, v, RECOMPUTE))
    virts = _as_tuple("virtual", virtual,
                      lambda k, v: check_int(k, v, low=1, high=1_000_000))
    eta, dpo, tpo, bucket, res, nv = step_options(
        s_, mfu=mfu, precision=precision, dp_overlap=dp_overlap, tp_overlap=tp_overlap,
        bucket_bytes=bucket_bytes, reserve=reserve, nvls=nvls)
    check_choice("recipe", recipe, RECIPES)
    cps = _as_tuple("cp", cp, lambda k, v: check_int(k, v, low=1, high=n))
    if ep is None:
        eps = tuple(d for d in _divisors(m.num_experts)) if m.num_experts else (1,)
        explicit = False
    else:
        eps = _as_tuple("ep", ep, lambda k, v: check_int(k, v, low=1, high=n))
        explicit = True
        if not m.num_experts and eps != (1,):
            raise ValueError(f"ep must be 1 for the dense model {m.name!r} (it has "
                             f"no experts); got {ep!r}")
        bad = [e for e in eps if m.num_experts and m.num_experts % e]
        if bad:
            raise ValueError(f"ep must divide the {m.num_experts} experts of "
                             f"{m.name!r}; got {ep!r}")
    gb, wb = assumption("grad_bytes"), assumption("weight_bytes")
    valid, invalid = [], []
    for tp, c in itertools.product(_divisors(n), cps):
        if n % (tp * c):
            continue
        for pp in _divisors(n // (tp * c)):
            dp = n // (tp * c * pp)
            for v in virts:
                if v > 1 and pp == 1:
                    continue
                lay = Layout(tp, pp, dp, v, c)
                # MoE with TP > 1: sequence parallelism on (Megatron Core's rule)
                sp_try = (True,) if m.num_experts and tp > 1 else sps
                for b in mbs:
                    for sp in sp_try:
                        if sp and tp == 1:
                            continue
                        for rc, e in itertools.product(recs, eps):
                            opts = {"micro_batch": b, "sequence_parallel": sp,
                                    "recompute": rc}
                            if m.num_experts:
                                opts["ep"] = e
                            if dp % e:
                                if explicit:
                                    r = (f"EP{e} does not divide DP{dp} (EP groups "
                                         "are made of data-parallel ranks)")
                                    invalid.append(LayoutResult(lay, opts, None, (r,),
                                                                r))
                                continue
                            why = structural_reasons(m, s_, lay, n, gbatch, b, s,
                                                      sp)
                            if why:
                                invalid.append(LayoutResult(lay, opts, None,
                                                            tuple(why), why[0]))
                                continue
                            st = step_result(m, s_, lay, gbatch, b, s, z, sp, rc, eta,
                                       dpo, tpo, bucket, res, nv, gb, wb, precision, e,
                                       recipe)
                            if not st.fits:
                                r = memory_reason(st.memory, s_, res)
                                invalid.append(LayoutResult(lay, opts, st, (r,), r))
                            else:
                                valid.append(LayoutResult(lay, opts, st, (), ""))
    valid.sort(key=lambda r: r.step.total)
    out = []
    for i, r in enumerate(valid):
        if i == 0:
            why = _why_best(r, valid[1] if len(valid) > 1 else None)
        else:
            why = _why_other(r, valid[0])
        out.append(dataclasses.replace(r, why=why, rank=i + 1))
    return Ranking(out, invalid)
