r"""Collective-communication time models (ring AllReduce for now) and nccl-tests metrics.

The ring AllReduce is a reduce-scatter followed by an all-gather, each made of
``n - 1`` steps in which every rank sends and receives ``S / n`` bytes at once:

.. math:: t_\text{ring}(S, n) = 2(n-1)\,\alpha + \frac{2(n-1)}{n}\,\frac{S}{B}

with ``S`` the full buffer [B], ``n`` ranks, per-step latency :math:`\alpha` [s]
and per-direction bandwidth :math:`B` [B/s] of each rank's link into the ring.

nccl-tests reports ``algbw = S / t`` and ``busbw = algbw * factor`` where the
factor for all_reduce is ``2(n-1)/n`` (nccl-tests ``doc/PERFORMANCE.md``). busbw
is the number to compare with a per-direction link rate.

Examples
--------
>>> from gpulab import collectives, units
>>> bw = units.Bandwidth.from_gb_per_s(370, "per_direction")
>>> t = collectives.ring_allreduce_time(1 * units.GiB, 8, bw, latency=0)
>>> round(collectives.busbw(1 * units.GiB, t, "all_reduce", 8) / 1e9, 6)
370.0
"""
from __future__ import annotations

from ._validate import as_number, check_choice, check_int
from .links import _per_direction_rate

__all__ = ["ring_allreduce_time", "algbw", "busbw", "busbw_factor", "BUSBW_OPS"]

BUSBW_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
             "alltoall", "sendrecv")


def ring_allreduce_time(message_bytes, n_ranks, bandwidth, latency=0.0):
    r"""Compute the ring AllReduce time.

    Parameters
    ----------
    message_bytes : numeric
        Size of the buffer being reduced (nccl-tests' ``size``). [B]
    n_ranks : int
        Ranks in the ring, >= 1.
    bandwidth : units.Bandwidth or numeric
        Per-direction bandwidth of each rank into the ring. [B/s, per direction]
    latency : numeric, default 0
        Latency of one ring step. [s]

    Returns
    -------
    numeric
        Time. [s] (0 for one rank: nothing to reduce.)

    Notes
    -----
    .. math:: t = 2(n-1)\alpha + \frac{2(n-1)}{n}\frac{S}{B}

    ============================  =======================================
    Assumption                    Consequence
    ============================  =======================================
    bandwidth-optimal ring        each rank sends 2(n-1)/n of S
    all links equal, no SHARP     in-switch reduction not modelled here
    no compute cost for the sum   fine for BF16 sums on a GPU
    ============================  =======================================

    Examples
    --------
    >>> ring_allreduce_time(8e9, 2, 400e9)          # 2 ranks: each sends S/2 twice
    0.02
    """
    s = as_number("message_bytes", message_bytes, low=0)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    b = _per_direction_rate(bandwidth)
    a = as_number("latency", latency, low=0)
    steps = 2 * (n - 1)
    return steps * a + steps / n * s / b


def algbw(message_bytes, time):
    """nccl-tests' algorithm bandwidth ``S / t``. [B/s]"""
    s = as_number("message_bytes", message_bytes, low=0)
    t = as_number("time", time, low=0, low_inclusive=False)
    return s / t


def busbw_factor(op, n_ranks):
    """The nccl-tests factor turning algbw into busbw for ``op`` on ``n_ranks``.

    >>> busbw_factor("all_reduce", 8)
    1.75
    """
    check_choice("op", op, BUSBW_OPS)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def busbw(message_bytes, time, op, n_ranks):
    """nccl-tests' bus bandwidth: ``algbw * busbw_factor(op, n)``. [B/s, per direction]"""
    return algbw(message_bytes, time) * busbw_factor(op, n_ranks)

