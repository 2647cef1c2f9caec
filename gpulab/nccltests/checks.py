"""Checks of a measured sweep: internal consistency (algbw, busbw, time and size
agree) and an audit against the line rate and the latency floor of a system.
"""
from __future__ import annotations

import math

import numpy as np

from .. import collectives, systems, units
from .._validate import as_number, check_choice

from .sweep import Finding, Sweep


# --- checks -----------------------------------------------------------------------------
def _check_sweep(sweep):
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a Sweep (from gpulab.nccltests.read); got "
                         f"{type(sweep).__name__}")


def consistency(sweep):
    """Rows whose printed numbers contradict each other.

    ``algbw_mismatch``: algbw differs from size / time by more than the rounding
    of the printed digits; ``busbw_factor``: busbw differs from algbw x
    :func:`gpulab.collectives.busbw_factor` (needs the collective and rank count);
    ``wrong_results``: #wrong > 0.

    Returns
    -------
    list of Finding
    """
    _check_sweep(sweep)
    out = []
    res = sweep.time_resolution or {}
    n = len(sweep)
    r_t = res.get("time", np.zeros(n))
    r_a = res.get("algbw", np.zeros(n))
    r_b = res.get("busbw", np.zeros(n))
    factor = None
    if sweep.collective in collectives.BUSBW_OPS and sweep.n_ranks:
        factor = collectives.busbw_factor(sweep.collective, sweep.n_ranks)
    for i in range(n):
        s, t = float(sweep.size_bytes[i]), float(sweep.time_s[i])
        a, b = float(sweep.algbw[i]), float(sweep.busbw[i])
        line = None if sweep.lineno is None or not sweep.lineno[i] \
            else int(sweep.lineno[i])
        if math.isnan(t) or t <= 0:
            continue
        calc = s / t
        slack = calc * float(r_t[i]) / t + 1e-9 * calc
        if not math.isnan(a) and abs(a - calc) > 1.01 * (float(r_a[i]) + slack) + 1.0:
            out.append(Finding("algbw_mismatch", i, int(s),
                               f"algbw {a / units.GB:.4g} GB/s but size/time = "
                               f"{calc / units.GB:.4g} GB/s", line))
        if factor is not None and not math.isnan(b):
            want = calc * factor
            if abs(b - want) > 1.01 * (float(r_b[i]) + factor * slack) + 1.0:
                out.append(Finding(
                    "busbw_factor", i, int(s),
                    f"busbw {b / units.GB:.4g} GB/s but algbw x {factor:g} "
                    f"({sweep.collective}, {sweep.n_ranks} ranks) = "
                    f"{want / units.GB:.4g} GB/s", line))
        w = float(sweep.wrong[i])
        if not math.isnan(w) and w > 0:
            out.append(Finding("wrong_results", i, int(s),
                               f"#wrong = {w:g}: results failed validation", line))
    return out


def audit(sweep, system=None, *, transport="p2p", latency_floor=None):
    """:func:`consistency` plus physical limits of ``system``.

    ``above_line_rate``: busbw above the per-direction line rate
    (:func:`gpulab.collectives.fabric_bandwidth`; busbw is what each rank moves
    per second), except all_reduce/reduce on a system with in-switch reduction
    (NVLS busbw may reach ``2(n-1)/n`` x line rate); and all_reduce algbw above
    the line rate, which no algorithm beats: every rank must receive the whole
    reduced buffer. ``below_latency_floor``: a time below ``latency_floor``.

    Parameters
    ----------
    sweep : Sweep
    system : str, systems.System or None
        None skips the line-rate check.
    transport : {"p2p", "shm"}
    latency_floor : float
        [s], default ``audit/latency_floor_s`` of ``data/nccl_model.yaml``
        (2 us: one GPU-to-GPU round trip over NVLink, cuda-samples#230).

    Returns
    -------
    list of Finding

    Examples
    --------
    >>> from gpulab.nccltests import parse
    >>> s = parse('''# Collective test starting: all_reduce_perf
    ... #  size count type redop root  time  algbw  busbw #wrong
    ...  2147483648 536870912 float sum -1 4303.9 498.96 873.18 0
    ... ''')   # a row of the source article's table, claimed on 8x H100 SXM
    >>> s.n_ranks = 8
    >>> [f.kind for f in audit(s, "dgx-h100")]
    ['above_line_rate']
    """
    _check_sweep(sweep)
    check_choice("transport", transport, collectives.TRANSPORTS)
    if latency_floor is None:
        latency_floor = collectives.model_constant("audit/latency_floor_s")
    floor = as_number("latency_floor", latency_floor, low=0, allow_array=False)
    out = consistency(sweep)
    line_rate = None
    nvls = False
    if system is not None:
        system = systems.resolve(system)
        line_rate = collectives.fabric_bandwidth(system, transport).bytes_per_s
        domain = system.scale_up_domain
        if sweep.n_ranks and sweep.n_ranks > domain:
            try:
                line_rate = min(line_rate, collectives.fabric_bandwidth(
                    system, transport, scope="inter").bytes_per_s)
            except ValueError:
                pass
        nvls = bool(getattr(system.nvlink, "nvls", False)) and transport == "p2p"
    for i in range(len(sweep)):
        s = int(sweep.size_bytes[i])
        line = None if sweep.lineno is None or not sweep.lineno[i] \
            else int(sweep.lineno[i])
        t = float(sweep.time_s[i])
        if not math.isnan(t) and t < floor and s > 0:
            out.append(Finding("below_latency_floor", i, s,
                               f"time {t / units.US:.3g} us is below the {floor / units.US:g} "
                               "us floor of any GPU collective", line))
        if line_rate is None:
            continue
        a, b = float(sweep.algbw[i]), float(sweep.busbw[i])
        if sweep.collective == "all_reduce" and not math.isnan(a) and a > line_rate:
            out.append(Finding("above_line_rate", i, s,
                               f"algbw {a / units.GB:.4g} GB/s exceeds the "
                               f"{line_rate / units.GB:.4g} GB/s per-direction line rate "
                               f"of {system.name}: every rank must receive the "
                               "whole reduced buffer", line))
        elif sweep.collective in collectives.BUSBW_OPS and not (
                sweep.collective in ("all_reduce", "reduce") and nvls) \
                and not math.isnan(b) and b > line_rate:
            out.append(Finding("above_line_rate", i, s,
                               f"busbw {b / units.GB:.4g} GB/s exceeds the "
                               f"{line_rate / units.GB:.4g} GB/s per-direction line rate "
                               f"of {system.name}", line))
    return out
