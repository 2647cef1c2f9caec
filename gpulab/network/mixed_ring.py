r"""Lockstep or dataflow: how a ring that mixes fast and slow edges runs.

Our 1x H200 run ``h200-x1-2026-12-04-mixed-ring`` (``measure/run_nccl_mixed_ring.sh``
with ``R=2``, NCCL 2.30.7 built from its source) puts every rank on GPU 0 under CUDA MPS,
in "hosts" of two ranks, each host with its own ``NCCL_HOSTID``. Inside a host NCCL
joins the two ranks with its P2P transport on the one device (``P2P/CUMEM`` in the
run's log; NCCL 2.30 allows two ranks of a host on one GPU with
``NCCL_MULTI_RANK_GPU_ENABLE=1``), between hosts with its socket transport over
loopback (``NET/Socket``, no GPUDirect RDMA). A ring of 2 hosts x 2 ranks then runs
``0 -> 1`` (P2P) ``-> 2`` (network) ``-> 3`` (P2P) ``-> 0`` (network): half its edges
are a few microseconds, half are a network step of tens.

The two forms of :mod:`gpulab.network.execution` disagree on that ring:

* in **lockstep** (:func:`~gpulab.network.execution.ring_time`) every step waits for
  the slowest edge, so the mixed ring takes as long as a ring whose every edge is a
  network edge: time ratio 1;
* as a **dataflow** (:func:`~gpulab.network.execution.ring_dataflow_time`) a piece pays
  the edges it crosses, and only half of them are network edges: the ratio falls
  towards one half as the ring grows.

The check reads the small calls (up to ``small_bytes``, where a piece's transfer is
a small part of a step) of the mixed rings of 4 and 8 ranks, of the all-network rings
of the same sizes (one rank per host) and of the all-P2P ring of 2 ranks (one host).
The ratio needs no model. The two forms' times use one network step and a per-call
base fitted on the all-network all_gather rings of 2 and 4 ranks (ours, as in
:func:`gpulab.network.loopback_check`) and one P2P step from the 2-rank ring (its
all_reduce's two steps less its all_gather's one); the mixed rings are never fitted.
At 8 ranks, 8 processes spin on one GPU and 16 vCPUs: those points are marked
``crowded``.

From 64 KiB (:attr:`MixedRingCheck.mid_rows`) a piece's transfer counts: one channel's
network rate is fitted on the all-network 2-rank all_gather of the largest size (as
:func:`gpulab.network.loopback_check` does), the P2P edge is taken as free, NCCL's 2
channels are shared out by :func:`~gpulab.network.execution.channels_used`, and both
forms predict every mixed ring's mid sizes, again never fitted.

This is NCCL's own ring machinery on both kinds of edge, not NVLink and not a real
fabric; what it decides is the form, not the size of any constant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import as_number
from .execution import channels_used, ring_dataflow_time, ring_time
from .loopback import fit_step_latency, read_ring_sweep, ring_steps

__all__ = ["MIXED_RING_RUN", "MIXED_RING_PROTOCOLS", "MIXED_RING_RANKS",
           "mixed_ring_sweeps", "MixedRingCheck", "mixed_ring_check"]

#: Our 1x H200 run: hosts of two ranks sharing GPU 0, joined by NCCL's network transport.
MIXED_RING_RUN = "h200-x1-2026-12-04-mixed-ring"
MIXED_RING_PROTOCOLS = ("LL", "LL128", "Simple")
#: The mixed rings: 2 and 4 hosts of 2 ranks.
MIXED_RING_RANKS = (4, 8)
_RANKS_PER_HOST = 2
_COLLECTIVES = ("all_gather", "all_reduce")
#: The channels NCCL opened in the run (``a_nccl_log_mixed_4.txt``: "2 coll channels").
_CHANNELS = 2
_MID = 65536
#: The CSV files of the run (two device calls, ``a_`` and ``b_``; ``r1``/``r2`` are the
#: script's repetitions). Where a sweep of a call is missing, it hung or failed there
#: (``a_env.txt``, ``b_env.txt``).
_FILES = (
    "a_intra_LL128_r1", "a_intra_LL128_r2", "a_intra_LL_r1", "a_intra_LL_r2",
    "a_intra_Simple_r1", "a_mixed_LL128_4_r1", "a_mixed_LL128_8_r1", "a_mixed_LL_4_r1",
    "a_mixed_LL_4_r2", "a_mixed_LL_8_r1", "a_mixed_LL_8_r2", "a_mixed_Simple_4_r1",
    "a_mixed_Simple_8_r1", "a_net_LL128_4_r1", "a_net_LL128_r1", "a_net_LL128_r2",
    "a_net_LL_4_r2", "a_net_LL_8_r1", "a_net_LL_r1", "a_net_LL_r2", "a_net_Simple_4_r1",
    "a_net_Simple_8_r1", "a_net_Simple_r1", "b_intra_LL128_r2", "b_intra_LL_r2",
    "b_intra_Simple_r2", "b_mixed_LL128_4_r2", "b_mixed_LL128_8_r2", "b_mixed_LL_4_r2",
    "b_mixed_LL_8_r2", "b_mixed_Simple_4_r2", "b_mixed_Simple_8_r2", "b_net_LL128_8_r2",
    "b_net_LL128_r2", "b_net_LL_4_r2", "b_net_LL_8_r2", "b_net_LL_r2",
    "b_net_Simple_4_r2", "b_net_Simple_8_r2", "b_net_Simple_r2")


def mixed_ring_sweeps(run=MIXED_RING_RUN, call=None):
    """Every sweep of the run, repeats pooled.

    Parameters
    ----------
    run : str
    call : {"a", "b"}, optional
        Only the sweeps of one device call (one machine, minutes apart); default both.

    Returns
    -------
    dict
        ``{(kind, protocol, n_ranks, collective): {size_bytes: [time_s, ...]}}`` with
        ``kind`` ``"intra"`` (2 ranks of one host), ``"net"`` (one rank per host) or
        ``"mixed"`` (hosts of 2 ranks).

    >>> sw = mixed_ring_sweeps()
    >>> len(sw[("mixed", "Simple", 4, "all_gather")][2048])   # two repeats
    2
    >>> ("net", "LL128", 4, "all_gather") in mixed_ring_sweeps(call="b")  # it failed there
    False
    """
    if call not in (None, "a", "b"):
        raise ValueError(f"call must be 'a', 'b' or None; got {call!r}")
    out = {}
    for name in _FILES:
        if call is not None and not name.startswith(call + "_"):
            continue
        kind, protocol = name.split("_")[1:3]
        sweep = read_ring_sweep(run, name + ".csv")
        for (coll, size), t in sweep["time_s"].items():
            out.setdefault((kind, protocol, sweep["n_ranks"], coll), {}).setdefault(
                size, []).append(t)
    return out


@dataclass(frozen=True)
class MixedRingCheck:
    """The mixed rings' small calls against the all-network rings and both forms.

    Attributes
    ----------
    base_s, net_step_s, intra_step_s : dict
        Per protocol: the per-call base and one network step (fitted on the
        all-network rings of 2 and 4 ranks), one P2P step (the 2-rank ring). [s]
    rows : list of dict
        One per protocol, collective and ranks of a mixed ring: ``steps``,
        ``measured_s`` (median over the sizes of each size's median over the
        repeats), ``all_network_s`` (the same for the all-network ring of as many
        ranks), ``ratio`` (mixed / all-network, each device call's own ratio where
        that call ran both rings, the median over such calls: the machine differs
        between calls), ``dataflow_ratio`` (the same ratio as the dataflow form
        predicts it; lockstep predicts 1), ``lockstep_s`` and
        ``dataflow_s`` (the two forms), ``lockstep_error`` and ``dataflow_error``
        (form / measured - 1), ``closer`` (``"dataflow"`` or ``"lockstep"``),
        ``repeats`` and ``crowded`` (8 ranks on one GPU).
    small_bytes : float
    net_rate : dict
        Per protocol: one channel's network rate [B/s, per direction], fitted on the
        all-network 2-rank all_gather of the run's largest size.
    mid_rows : list of dict
        One per protocol, collective, ranks and size from 64 KiB of a mixed ring:
        ``measured_s`` (median over the repeats), ``lockstep_s``, ``dataflow_s``,
        ``lockstep_error`` and ``dataflow_error`` (form / measured - 1) and
        ``crowded``.
    """

    base_s: dict
    net_step_s: dict
    intra_step_s: dict
    rows: list
    small_bytes: float
    net_rate: dict
    mid_rows: list

    def mid_summary(self, include_crowded=False):
        """Per form, the median and the range of its time errors over :attr:`mid_rows`:
        ``{"points", "dataflow": (median, lo, hi), "lockstep": (median, lo, hi)}``."""
        rows = [r for r in self.mid_rows if include_crowded or not r["crowded"]]
        out = {"points": len(rows)}
        for form in ("dataflow", "lockstep"):
            e = [r[f"{form}_error"] for r in rows]
            out[form] = (float(np.median(e)), float(min(e)), float(max(e)))
        return out

    def summary(self, include_crowded=True):
        """How many rings ran below ``ratio`` 0.85, how many ratios sit closer to the
        dataflow's than to lockstep's 1, and how many times to each form:
        ``{"rings", "ratio_below_0.85", "ratio_closer_dataflow", "ratio_min",
        "ratio_max", "closer_dataflow", "median_ratio", "median_dataflow_error",
        "median_lockstep_error"}``."""
        rows = [r for r in self.rows if include_crowded or not r["crowded"]]
        return {"rings": len(rows),
                "ratio_below_0.85": sum(r["ratio"] < 0.85 for r in rows),
                "ratio_closer_dataflow": sum(abs(r["ratio"] - r["dataflow_ratio"])
                                             < abs(r["ratio"] - 1) for r in rows),
                "ratio_min": min(r["ratio"] for r in rows),
                "ratio_max": max(r["ratio"] for r in rows),
                "closer_dataflow": sum(r["closer"] == "dataflow" for r in rows),
                "median_ratio": float(np.median([r["ratio"] for r in rows])),
                "median_dataflow_error": float(np.median([r["dataflow_error"]
                                                          for r in rows])),
                "median_lockstep_error": float(np.median([r["lockstep_error"]
                                                          for r in rows]))}


def _small_time(table, small):
    sizes = [s for s in table if s <= small]
    if not sizes:
        raise ValueError(f"small_bytes: no size of the run is <= {small:g} B")
    return float(np.median([np.median(table[s]) for s in sizes])), \
        min(len(table[s]) for s in sizes)


def mixed_ring_check(small_bytes=2048, run=MIXED_RING_RUN):
    """Measure, fit and compare as the module says.

    Parameters
    ----------
    small_bytes : float
        The largest size read, 16 B to 8 KiB (default 2 KiB: a piece's transfer
        there is well under a microsecond over P2P and about one over the socket).
    run : str
        The run folder under ``gpulab/data/measurements/raw``.

    >>> c = mixed_ring_check()
    >>> s = c.summary(include_crowded=False)          # the rings of 4 ranks
    >>> s["rings"], s["ratio_below_0.85"], s["ratio_closer_dataflow"]
    (6, 6, 6)
    >>> round(s["ratio_min"], 2), round(s["ratio_max"], 2)
    (0.51, 0.67)
    """
    small = float(as_number("small_bytes", small_bytes, low=16, high=8192,
                            allow_array=False))
    calls = [mixed_ring_sweeps(run, c) for c in ("a", "b")]
    sw = {}                             # both calls pooled (mixed_ring_sweeps(run))
    for c in calls:
        for key, table in c.items():
            for size, times in table.items():
                sw.setdefault(key, {}).setdefault(size, []).extend(times)
    base, net_step, intra_step, rows = {}, {}, {}, []
    huge = 1e15                         # B/s: the small calls' transfer is left out
    for p in MIXED_RING_PROTOCOLS:
        steps, times = [], []
        for n in (2, 4):
            steps.append(ring_steps("all_gather", n))
            times.append(_small_time(sw["net", p, n, "all_gather"], small)[0])
        base[p], net_step[p] = fit_step_latency(steps, times)
        one = _small_time(sw["intra", p, 2, "all_gather"], small)[0]
        two = _small_time(sw["intra", p, 2, "all_reduce"], small)[0]
        intra_step[p] = max(two - one, 0.0)
        hops = [("intra", intra_step[p], huge), ("net", net_step[p], huge)]
        for n in MIXED_RING_RANKS:
            for coll in _COLLECTIVES:
                s = ring_steps(coll, n)
                t, reps = _small_time(sw["mixed", p, n, coll], small)
                t_net = _small_time(sw["net", p, n, coll], small)[0]
                ratios = [_small_time(c["mixed", p, n, coll], small)[0]
                          / _small_time(c["net", p, n, coll], small)[0]
                          for c in calls if ("mixed", p, n, coll) in c
                          and ("net", p, n, coll) in c]
                lock = base[p] + float(ring_time(8, 1, n, s, p, hops))
                flow = base[p] + float(ring_dataflow_time(8, 1, n, _RANKS_PER_HOST, s, p,
                                                          hops))
                rows.append({
                    "protocol": p, "collective": coll, "n_ranks": n, "steps": s,
                    "measured_s": t, "all_network_s": t_net,
                    "ratio": float(np.median(ratios)) if ratios else t / t_net,
                    "dataflow_ratio": flow / lock, "lockstep_s": lock, "dataflow_s": flow,
                    "lockstep_error": lock / t - 1, "dataflow_error": flow / t - 1,
                    "closer": "dataflow" if abs(np.log(flow / t)) <= abs(np.log(lock / t))
                    else "lockstep",
                    "repeats": reps, "crowded": n == 8})
    rate, mid = {}, []
    for p in MIXED_RING_PROTOCOLS:
        table = sw["net", p, 2, "all_gather"]
        big = max(table)
        stream = float(np.median(table[big])) - base[p] - net_step[p]
        if stream <= 0:
            raise ValueError(f"run: {run} gives no streaming time for {p} at {big} B")
        rate[p] = big / 2 / _CHANNELS / stream             # each rank sends S/2
        hops = [("intra", intra_step[p], huge), ("net", net_step[p], rate[p])]
        for n in MIXED_RING_RANKS:
            for coll in _COLLECTIVES:
                table = sw["mixed", p, n, coll]
                sizes = np.array(sorted(x for x in table if x >= _MID), dtype=float)
                k = channels_used(sizes, _CHANNELS, p, n)
                st = ring_steps(coll, n)
                lock = base[p] + ring_time(sizes, k, n, st, p, hops)
                flow = base[p] + ring_dataflow_time(sizes, k, n, _RANKS_PER_HOST, st, p,
                                                    hops)
                for i, size in enumerate(sizes):
                    t = float(np.median(table[int(size)]))
                    mid.append({"protocol": p, "collective": coll, "n_ranks": n,
                                "size_bytes": int(size), "measured_s": t,
                                "lockstep_s": float(lock[i]), "dataflow_s": float(flow[i]),
                                "lockstep_error": float(lock[i]) / t - 1,
                                "dataflow_error": float(flow[i]) / t - 1,
                                "crowded": n == 8})
    return MixedRingCheck(base, net_step, intra_step, rows, small, rate, mid)
