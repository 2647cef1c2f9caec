"""Tensor parallelism: per-layer compute and TP communication of every usable degree.

The TP explorer and the tensor-parallel chapter both ask the same question: on one
system, for one model and sequence length, what does each TP degree cost per layer?
The answer runs each degree through :func:`gpulab.parallelism.step_time`.
"""
from __future__ import annotations

from .._validate import as_number, check_choice, finite_answer
from .efficiency import PRECISIONS, peak_flops
from .layout import as_system
from .model import as_model, check_flag, check_positive
from .step import step_time

__all__ = ["TP_DEGREES", "tp_degree_rows"]

#: TP degrees tried (those dividing the heads and fitting the system are kept).
TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)


@finite_answer
def tp_degree_rows(model, system, *, seq_len, micro_batch=1,
                   sequence_parallel=False, tp_overlap=0.0, precision="bf16"):
    """Per-layer compute and TP communication of every usable TP degree.

    Each degree ``t`` is run as the layout ``(t, 1, n_gpus // t)`` with the
    distributed optimizer (ZeRO-1) and one micro-batch per GPU per step through
    :func:`gpulab.parallelism.step_time`; the per-layer figures are the step's
    compute, TP communication and exposed TP communication divided by the layers
    (so the compute includes a share of the output layer).

    Parameters
    ----------
    model : str or ModelSpec
        A :func:`gpulab.parallelism.model_names` preset.
    system : str or gpulab.systems.System
        A :func:`gpulab.systems.names` preset.
    seq_len, micro_batch : int
    sequence_parallel : bool
    tp_overlap : float
        Share of the TP communication hidden behind GEMMs, [0, 1].
    precision : {"bf16", "fp8"}
        As in :func:`step_time` (the compute efficiency of each degree's shard
        comes from its shape: a higher degree gives thinner GEMMs).

    Returns
    -------
    rows : list of (label, compute, comm, exposed, note)
        For :func:`gpulab.plotting.plot_tp_degree`. [s]
    steps : dict
        ``{tp: StepTime}``.
    skipped : dict
        ``{tp: reason}`` for the degrees the layout rules refuse.

    Examples
    --------
    >>> rows, steps, skipped = tp_degree_rows("13b", "hgx-h200", seq_len=4096)
    >>> [r[0] for r in rows]
    ['TP1 × DP8', 'TP2 × DP4', 'TP4 × DP2', 'TP8 × DP1']
    """
    spec = as_model(model, "model")
    s = as_system(system)
    seq_len = check_positive("seq_len", seq_len)
    micro_batch = check_positive("micro_batch", micro_batch)
    sequence_parallel = check_flag("sequence_parallel", sequence_parallel)
    tp_overlap = float(as_number("tp_overlap", tp_overlap, low=0, high=1,
                                 allow_array=False))
    check_choice("precision", precision, PRECISIONS)
    peak_flops(s.gpu_spec, precision)
    rows, steps, skipped = [], {}, {}
    for t in TP_DEGREES:
        if t > s.n_gpus:
            break
        dp = s.n_gpus // t
        try:
            st = step_time(spec, s, (t, 1, dp), global_batch=dp * micro_batch,
                           micro_batch=micro_batch, seq_len=seq_len, zero=1,
                           sequence_parallel=sequence_parallel, tp_overlap=tp_overlap,
                           precision=precision)
        except ValueError as exc:
            skipped[t] = str(exc).split(": ", 1)[-1]
            continue
        n = spec.layers
        rows.append((f"TP{t} × DP{dp}", st.compute / n, st.comm.tp / n,
                     st.tp_comm / n, "" if st.fits else "does not fit"))
        steps[t] = st
    return rows, steps, skipped
