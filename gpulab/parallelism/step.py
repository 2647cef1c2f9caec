"""Step time: compute at an assumed MFU, exposed communication, the pipeline bubble;
:func:`step_time` puts them together.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

from dataclasses import dataclass


from .._validate import check_choice, check_int
from .comm import Communication, comm_parts
from .layout import Layout, as_layout, memory_reason, structural_reasons, as_system
from .memory import TrainingMemory, training_memory
from .model import RECOMPUTE, default_value, check_flag, flops_parts, check_positive, seq_len_of, as_model, check_zero, assumption, flops_per_step


def bubble_fraction(pp, micro_batches, virtual=1):
    r"""Pipeline bubble as a fraction of the ideal (bubble-free) compute time.

    Parameters
    ----------
    pp : int
        Pipeline stages p.
    micro_batches : int
        Micro-batches per step m.
    virtual : int
        Virtual stages per GPU v (interleaved 1F1B).

    Returns
    -------
    float

    Notes
    -----
    .. math:: \frac{t_\text{bubble}}{t_\text{ideal}} = \frac{p-1}{v\,m}

    (Narayanan et al. 2021, sections 2.2.1-2.2.2). As a share of the whole step it
    is :math:`(p-1)/(vm + p - 1)`.

    Examples
    --------
    >>> bubble_fraction(4, 8), bubble_fraction(4, 8, virtual=2), bubble_fraction(1, 1)
    (0.375, 0.1875, 0.0)
    """
    p = check_int("pp", pp, low=1, high=1_000_000)
    m = check_int("micro_batches", micro_batches, low=1, high=10**12)
    v = check_int("virtual", virtual, low=1, high=1_000_000)
    return (p - 1) / (v * m)


# --- step time ---------------------------------------------------------------------
@dataclass(frozen=True)
class StepTime:
    """Time of one training step on the critical path. [s]

    ``compute + tp_comm + pp_comm + dp_comm + bubble == total``: the
    communication terms are what is *exposed* after overlap.

    Attributes
    ----------
    layout : Layout
    compute : float
        GEMM and attention time at the assumed MFU (includes recomputation). [s]
    tp_comm, pp_comm, dp_comm : float
        Exposed communication. [s]
    bubble : float
        Pipeline bubble. [s]
    total : float
        Step time. [s]
    tokens_per_s : float
        Training throughput of the whole layout. [tokens/s]
    mfu : float
        End-to-end model FLOPs utilisation (model FLOPs, no recomputation, over
        ``total x GPUs x peak``).
    micro_batches : int
    memory : TrainingMemory
    fits : bool
        ``memory.total`` within the GPU memory less the reserve.
    comm : Communication
        Communication before overlap.
    notes : tuple of str
    """

    layout: Layout
    compute: float
    tp_comm: float
    pp_comm: float
    dp_comm: float
    bubble: float
    total: float
    tokens_per_s: float
    mfu: float
    micro_batches: int
    memory: TrainingMemory
    fits: bool
    comm: Communication
    notes: tuple

    def components(self):
        """The five parts of :attr:`total` as a dict."""
        return {"compute": self.compute, "tp_comm": self.tp_comm,
                "pp_comm": self.pp_comm, "dp_comm": self.dp_comm,
                "bubble": self.bubble}


def _hidden(t, overlap, budget):
    return min(overlap * t, budget)


def step_result(m, s_, lay, gbatch, b, s, z, sp, recompute, mfu, dpo, tpo, bucket, res,
          nvls, gb, wb):
    mb = gbatch // (lay.dp * b)
    n = lay.n_gpus
    tokens = float(gbatch) * s
    peak = s_.gpu_spec.fp16_dense_flops
    f_layers, f_logits = flops_parts(m, tokens, s, recompute)
    # the slowest stage sets the pace: the last one also computes the logits
    compute = (f_layers / lay.pp + f_logits) / (lay.tp * lay.dp * peak * mfu)
    comm = comm_parts(m, s_, lay, b, mb, s, z, sp, recompute, bucket, nvls, gb, wb)
    tp = comm.tp * (1.0 - tpo)
    pp = comm.pp
    bubble = bubble_fraction(lay.pp, mb, lay.virtual) * (compute + tp)
    # per micro-batch forward and backward time (recomputation is in the backward)
    fwd_share = {"none": 1 / 3, "selective": 1 / 3, "full": 1 / 4}[recompute]
    fwd = compute / mb * fwd_share
    bwd = compute / mb - fwd
    parts, dp = comm.dp_parts, 0.0
    if "all_reduce" in parts:
        dp = parts["all_reduce"] - _hidden(parts["all_reduce"], dpo, bwd)
    elif parts:
        rs, ag = parts["reduce_scatter"], parts["all_gather"]
        if z == 3:
            dp = rs + ag - _hidden(rs + ag, dpo, compute)
        else:
            rs_budget = bwd * (mb if z == 2 else 1)
            dp = rs - _hidden(rs, dpo, rs_budget) + ag - _hidden(ag, dpo, fwd)
    total = compute + tp + pp + dp + bubble
    mem = training_memory(m, lay.tp, lay.pp, lay.dp, micro_batch=b, seq_len=s,
                          zero=z, sequence_parallel=sp, recompute=recompute,
                          micro_batches=mb, virtual=lay.virtual, grad_bytes=gb,
                          weight_bytes=wb)
    fits = memory_reason(mem, s_, res) is None
    model_flops = flops_per_step(m, tokens, seq_len=s)
    notes = list(comm.notes)
    if lay.pp > 1 and mb < lay.pp:
        notes.append(f"only {mb} micro-batches for {lay.pp} stages: the pipeline "
                     "never fills")
    if sp and lay.tp == 1:
        notes.append("sequence parallelism has no effect at TP1")
    if not fits:
        notes.append(memory_reason(mem, s_, res))
    return StepTime(lay, compute, tp, pp, dp, bubble, total, tokens / total,
                    model_flops / (total * n * peak), mb, mem, fits, comm,
                    tuple(notes))


def step_time(spec, system, layout, *, global_batch, micro_batch=1, seq_len=None,
              zero=0, sequence_parallel=False, recompute="none", mfu=None,
              dp_overlap=None, tp_overlap=None, bucket_bytes=None, reserve=None,
              nvls=True):
    r"""Step time, throughput and memory of one layout.

    Parameters
    ----------
    spec : ModelSpec or str
    system : systems.System or str
    layout : Layout or tuple
        ``(tp, pp, dp[, virtual])``.
    global_batch : int
        Sequences per optimizer step; micro-batches per step
        ``m = global_batch / (dp * micro_batch)``.
    micro_batch : int
    seq_len : int, optional
    zero : {0, 1, 2, 3}
    sequence_parallel : bool
    recompute : {"none", "selective", "full"}
    mfu : float, optional
        Fraction of the GPU's dense BF16 peak the compute reaches, in (0, 1]
        (default 0.40, the course's ``mfu`` assumption). Communication and bubble
        come on top, so the end-to-end :attr:`StepTime.mfu` is lower.
    dp_overlap : float, optional
        Fraction of the DP communication allowed to overlap compute, [0, 1]
        (default 1.0: Megatron ``--overlap-grad-reduce``/``--overlap-param-gather``).
    tp_overlap : float, optional
        Fraction of the TP communication hidden behind GEMMs, [0, 1] (default 0;
        Megatron's ``--tp-comm-overlap`` hides part of it).
    bucket_bytes : float, optional
        DP bucket size (default 25 MiB).
    reserve : float, optional
        Share of GPU memory kept free, [0, 1) (default 0.10).
    nvls : bool

    Returns
    -------
    StepTime

    Raises
    ------
    ValueError
        If the layout breaks a divisibility rule (see :func:`validate_layout`); a
        layout that merely does not fit returns ``fits=False``.

    Notes
    -----
    .. math::

        T = \underbrace{\frac{F}{n\,P\,\eta}}_{\text{compute}}
          + (1-o_t)\,t_\text{TP} + t_\text{PP} + t_\text{DP}^\text{exposed}
          + \frac{p-1}{v\,m}\left(\frac{F}{nP\eta} + (1-o_t)\,t_\text{TP}\right)

    with :math:`F` from :func:`flops_per_step`, :math:`n` GPUs of peak :math:`P`
    (dense BF16), MFU :math:`\eta`. With pipelining, the compute term is that of
    the slowest stage, the last one: :math:`(F_\text{layers}/p +
    F_\text{logits})/(t\,d\,P\eta)`. The DP reduction hides behind compute only
    where it can run: plain DP and ZeRO-1 reduce once per step, during the last
    micro-batch's backward pass (and gather parameters during the first forward);
    ZeRO-2 reduces every micro-batch; ZeRO-3 prefetches throughout. Hidden time is
    :math:`\min(o_d\,t, \text{that compute})`.

    ======================================  =====================================
    Assumption                              Source
    ======================================  =====================================
    MFU 0.40 of dense BF16 peak             data/assumptions.yaml ``mfu``
    (Narayanan 2021: 44-52% on A100;        (end-to-end figures, so the compute
    Llama 3: 38-43% on H100)                share here is conservative)
    bubble (p-1)/(v m) of ideal time        Narayanan et al. 2021, sec. 2.2
    TP collectives on the critical path     Shoeybi et al. 2019, sec. 3
    PP sends not overlapped                 Megatron's 1F1B schedule
    last stage also computes the logits     Megatron's default layer split
    (it sets the pace of the pipeline)      (no --account-for-loss-in-pipeline-
                                            split)
    ======================================  =====================================

    Examples
    --------
    >>> st = step_time("13b", "hgx-h200", (8, 1, 1), global_batch=64)
    >>> parts = sum(st.components().values())
    >>> abs(parts - st.total) < 1e-12 * st.total, st.fits
    (True, True)
    """
    m = as_model(spec)
    s_ = as_system(system)
    lay = as_layout(layout)
    gbatch = check_positive("global_batch", global_batch)
    b = check_positive("micro_batch", micro_batch)
    s = seq_len_of(m, seq_len)
    z = check_zero(zero)
    sp = check_flag("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE)
    eta = default_value("mfu", mfu, "mfu", low=0, high=1, low_inclusive=False)
    dpo = default_value("dp_overlap", dp_overlap, "dp_overlap", low=0, high=1)
    tpo = default_value("tp_overlap", tp_overlap, "tp_overlap", low=0, high=1)
    bucket = default_value("dp_bucket_bytes", bucket_bytes, "bucket_bytes", low=1)
    res = default_value("memory_reserve_fraction", reserve, "reserve", low=0, high=1,
                   high_inclusive=False)
    nv = check_flag("nvls", nvls)
    why = structural_reasons(m, s_, lay, lay.n_gpus, gbatch, b, s, sp)
    if why:
        raise ValueError(f"layout {lay} cannot run: {'; '.join(why)}")
    return step_result(m, s_, lay, gbatch, b, s, z, sp, recompute, eta, dpo, tpo, bucket,
                 res, nv, assumption("grad_bytes"), assumption("weight_bytes"))
