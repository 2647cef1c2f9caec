r"""NCCL's network path on one GPU: every edge of the ring a network step.

Our 1x H200 run ``h200-x1-2026-12-04-net-loopback`` (``measure/run_nccl_net_one_gpu.sh``)
starts ``n`` processes on one GPU under CUDA MPS, each with its own ``NCCL_HOSTID``, so
NCCL takes them for ``n`` nodes of one GPU and joins them with its network transport:
with no RDMA device on the machine, its socket transport over loopback, without
GPUDirect RDMA, on 2 channels. Each ring step is then a network step through NCCL's own
buffers, steps and proxy threads, on no real fabric (no NIC, no switch).

Two things are read from it, per protocol (ours, fitted on our own run):

- the cost of one network step, :math:`\lambda_p`, and a per-call base, from the
  all_gather rings (``n - 1`` steps) of 2 and 4 ranks below 8 KiB:
  :math:`t = t_0 + s\,\lambda_p`;
- one channel's streaming rate :math:`b_p`, from the 2-rank all_gather of 32 MiB.

Everything else is predicted with the network model's own ring
(:func:`gpulab.network.execution.ring_time` on a ring of network edges, the channels of
:func:`~gpulab.network.execution.channels_used`) and checked: the all_reduce rings
(``2(n - 1)`` steps), the middle sizes, and the 8-rank rings, where 8 processes spin
their proxy and socket threads on 16 vCPUs and the times are those of a crowded host
more than of NCCL (they are shown, never fitted).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from .. import measurements
from .._validate import as_number, check_choice, check_int
from .execution import channels_used, ring_time

__all__ = ["LOOPBACK_RUN", "LOOPBACK_PROTOCOLS", "LOOPBACK_RANKS", "LOOPBACK_CHANNELS",
           "loopback_sweeps", "read_ring_sweep",
           "fit_step_latency", "ring_steps", "LoopbackCheck", "loopback_check"]

#: Our 1x H200 run of NCCL's socket transport over loopback, one process per "node".
LOOPBACK_RUN = "h200-x1-2026-12-04-net-loopback"
LOOPBACK_PROTOCOLS = ("LL", "LL128", "Simple")
LOOPBACK_RANKS = (2, 4, 8)
_RUNS = (1, 2)
#: The channels NCCL opened in the run (``nccl_info_2.txt``: "2 coll channels").
LOOPBACK_CHANNELS = 2
_MID = 65536             # the bands: below 64 KiB a time, from 64 KiB a bandwidth


def loopback_sweeps(run=LOOPBACK_RUN, protocols=LOOPBACK_PROTOCOLS, ranks=LOOPBACK_RANKS):
    """The CUDA-graph ring sweeps of the run, every repeat.

    Returns
    -------
    dict
        ``{(protocol, n_ranks, collective): (size_bytes, times)}``: sizes [B] and the
        repeats' times, shape (repeats, sizes) [s].

    >>> sw = loopback_sweeps(protocols=("LL",), ranks=(2,))
    >>> sorted(sw), sw["LL", 2, "all_gather"][1].shape
    ([('LL', 2, 'all_gather'), ('LL', 2, 'all_reduce')], (2, 12))
    """
    protocols = _protocols(protocols)
    ranks = _ranks(ranks)
    out = {}
    for p in protocols:
        for n in ranks:
            per = {}
            for r in _RUNS:
                for (coll, size), t in read_ring_sweep(run, f"graph_{p}_{n}_r{r}.csv")[
                        "time_s"].items():
                    per.setdefault(coll, {}).setdefault(size, []).append(t)
            for coll, v in per.items():
                sizes = np.array(sorted(v), dtype=float)
                if any(len(v[int(s)]) != len(_RUNS) for s in sizes):
                    raise ValueError(f"run: {run} lacks a repeat of {p} {n} {coll}")
                out[p, n, coll] = (sizes, np.array([v[int(s)] for s in sizes]).T)
    return out


def read_ring_sweep(run, filename):
    """One recorded ``measure/nccl_sweep.py`` CSV of a ring run.

    Returns
    -------
    dict
        ``{"n_ranks": int, "time_s": {(collective, size_bytes): time [s]}}``. Where
        tiny sizes round up to one element per rank, the size repeats; its first row
        is kept. Raises ValueError where a row's ``wrong`` count is not 0.

    >>> read_ring_sweep(LOOPBACK_RUN, "graph_LL_2_r1.csv")["n_ranks"]
    2
    """
    text = measurements.raw_capture(run, filename)
    out, ranks = {}, set()
    for row in csv.DictReader(io.StringIO(text)):
        try:
            key = (row["collective"], int(row["size_bytes"]))
            wrong, n, t = int(row["wrong"]), int(row["n_ranks"]), float(row["time_us"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"run/filename: {run}/{filename} is not a ring sweep (columns "
                             "collective, n_ranks, size_bytes, time_us, wrong)") from None
        if wrong:
            raise ValueError(f"run/filename: {run}/{filename} has wrong results at {key}")
        ranks.add(n)
        out.setdefault(key, t * 1e-6)
    if len(ranks) != 1:
        raise ValueError(f"run/filename: {run}/{filename} holds no single ring "
                         f"(ranks {sorted(ranks)})")
    return {"n_ranks": ranks.pop(), "time_s": out}


def _protocols(protocols):
    protocols = (protocols,) if isinstance(protocols, str) else _tuple("protocols",
                                                                       protocols)
    if not protocols:
        raise ValueError("protocols must name at least one of LL, LL128, Simple")
    for p in protocols:
        check_choice("protocols", p, LOOPBACK_PROTOCOLS)
    return protocols


def _tuple(name, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a list; got {value!r}")
    return tuple(value)


def _ranks(ranks, name="ranks"):
    ranks = (ranks,) if isinstance(ranks, int) else _tuple(name, ranks)
    if not ranks or any(isinstance(r, bool) or r not in LOOPBACK_RANKS for r in ranks):
        raise ValueError(f"{name} must be among {LOOPBACK_RANKS}; got {ranks!r}")
    return ranks


def ring_steps(collective, n_ranks):
    """Steps of one ring loop: ``n - 1`` for all_gather, ``2(n - 1)`` for all_reduce.

    >>> ring_steps("all_gather", 4), ring_steps("all_reduce", 4)
    (3, 6)
    """
    check_choice("collective", collective, ("all_gather", "all_reduce"))
    n = check_int("n_ranks", n_ranks, low=2, high=1_000_000)
    return n - 1 if collective == "all_gather" else 2 * (n - 1)


def fit_step_latency(steps, times):
    r"""Least squares :math:`t = t_0 + s\,\lambda` over calls of ``steps`` ring steps.

    Returns ``(t0, lam)`` [s]. Needs at least two distinct step counts.

    >>> t0, lam = fit_step_latency([1, 3, 7], [30e-6, 70e-6, 150e-6])
    >>> round(t0 * 1e6, 3), round(lam * 1e6, 3)
    (10.0, 20.0)
    """
    s = np.asarray(as_number("steps", steps, low=0), dtype=float).reshape(-1)
    t = np.asarray(as_number("times", times, low=0), dtype=float).reshape(-1)
    if s.shape != t.shape:
        raise ValueError(f"steps and times must have the same length; got {s.size} "
                         f"and {t.size}")
    if np.unique(s).size < 2:
        raise ValueError("steps must hold at least two distinct step counts")
    a = np.vstack([np.ones_like(s), s]).T
    t0, lam = np.linalg.lstsq(a, t, rcond=None)[0]
    return float(t0), float(lam)


@dataclass(frozen=True)
class LoopbackCheck:
    """The per-step fit on the loopback run and its check.

    Attributes
    ----------
    base_s, step_s, rate : dict
        Per protocol: the per-call base and one network step [s], one channel's
        streaming rate [B/s, per direction].
    rows : list of dict
        One per protocol, collective, ranks and size: ``measured_s`` (median of the
        repeats), ``predicted_s``, ``error`` (below 64 KiB the time's, predicted /
        measured - 1; from 64 KiB the bandwidth's, measured / predicted - 1: positive
        means the model is optimistic), ``band`` (``"small"`` or ``"mid"``), ``fitted``
        (the point entered a fit), ``crowded`` (8 ranks) and ``spread`` (the repeats'
        slowest over fastest).
    """

    base_s: dict
    step_s: dict
    rate: dict
    rows: list
    small_bytes: float = 8192.0

    def step_points(self):
        """The small calls' time per ring: one point per protocol, collective and
        ranks, the median over the repeats and sizes up to ``small_bytes``, with
        ``steps`` of its ring, ``fitted``/``crowded`` as in :attr:`rows`, the fitted
        line's time ``line_s`` (``base + steps x step``) and ``line_error``
        (``line_s`` / ``time_s`` - 1). [s]
        """
        pts = {}
        for r in self.rows:
            if r["size_bytes"] <= self.small_bytes:
                pts.setdefault((r["protocol"], r["collective"], r["n_ranks"]),
                               []).append(r)
        out = []
        for (p, c, n), v in sorted(pts.items()):
            steps = ring_steps(c, n)
            t = float(np.median([r["measured_s"] for r in v]))
            line = self.base_s[p] + steps * self.step_s[p]
            out.append({"protocol": p, "collective": c, "n_ranks": n, "steps": steps,
                        "time_s": t, "fitted": all(r["fitted"] for r in v),
                        "crowded": n == 8, "line_s": line, "line_error": line / t - 1})
        return out

    def groups(self, held_out_only=True):
        """Median error and worst point per (protocol, collective, ranks, band)."""
        keys = {}
        for r in self.rows:
            if held_out_only and r["fitted"]:
                continue
            keys.setdefault((r["protocol"], r["collective"], r["n_ranks"], r["band"]),
                            []).append(r["error"])
        return [{"protocol": k[0], "collective": k[1], "n_ranks": k[2], "band": k[3],
                 "median_error": float(np.median(v)),
                 "worst_error": float(max(v, key=abs)), "points": len(v)}
                for k, v in sorted(keys.items())]


def loopback_check(fit_ranks=(2, 4), small_bytes=8192, run=LOOPBACK_RUN):
    """Fit one network step per protocol on the all_gather rings of ``fit_ranks`` below
    ``small_bytes``, one channel's rate on the 2-rank all_gather of the largest size,
    and predict every other ring of the run with :func:`ring_time`.

    >>> c = loopback_check()
    >>> {p: round(c.step_s[p] * 1e6) for p in c.step_s}
    {'LL': 25, 'LL128': 30, 'Simple': 33}
    """
    fit_ranks = _ranks(fit_ranks, "fit_ranks")
    if len(set(fit_ranks)) < 2:
        raise ValueError(f"fit_ranks must hold two rank counts or more; got {fit_ranks!r}")
    small = float(as_number("small_bytes", small_bytes, low=8, high=_MID - 1,
                            allow_array=False))
    sweeps = loopback_sweeps(run)
    base, step, rate, rows = {}, {}, {}, []
    for p in LOOPBACK_PROTOCOLS:
        st, t = [], []
        for n in fit_ranks:
            sizes, times = sweeps[p, n, "all_gather"]
            st.append(ring_steps("all_gather", n))
            # the median over sizes of each size's median over the repeats
            t.append(float(np.median(np.median(times[:, sizes <= small], axis=0))))
        base[p], step[p] = fit_step_latency(st, t)
        sizes, times = sweeps[p, 2, "all_gather"]
        t_big = float(np.median(times[:, -1]))
        stream = t_big - base[p] - step[p]
        if stream <= 0:
            raise ValueError(f"run: {run} gives no streaming time for {p} at "
                             f"{int(sizes[-1])} B")
        rate[p] = sizes[-1] / 2 / LOOPBACK_CHANNELS / stream        # each rank sends S/2
        for n in LOOPBACK_RANKS:
            for coll in ("all_gather", "all_reduce"):
                sizes, times = sweeps[p, n, coll]
                meas = np.median(times, axis=0)
                ch = channels_used(sizes, LOOPBACK_CHANNELS, p, n)
                pred = base[p] + ring_time(sizes, ch, n, ring_steps(coll, n), p,
                                           [("net", step[p], rate[p])])
                for i, s in enumerate(sizes):
                    mid = s >= _MID
                    fitted = (coll == "all_gather" and n in fit_ranks
                              and s <= small) or (coll == "all_gather" and n == 2
                                                  and i == sizes.size - 1)
                    rows.append({
                        "protocol": p, "collective": coll, "n_ranks": n,
                        "size_bytes": int(s), "measured_s": float(meas[i]),
                        "predicted_s": float(pred[i]),
                        "error": float(meas[i] / pred[i] - 1 if mid
                                       else pred[i] / meas[i] - 1),
                        "band": "mid" if mid else "small", "fitted": bool(fitted),
                        "crowded": n == 8,
                        "spread": float(times[:, i].max() / times[:, i].min())})
    return LoopbackCheck(base, step, rate, rows, small)
