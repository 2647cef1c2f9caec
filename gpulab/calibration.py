"""Calibration of the collective model: measured sweeps against predictions.

Per-size comparison rows, error summaries per size band, and the fit of a preset's
launch cost and efficiency per collective (:func:`gpulab.collectives.calibrate`)
from measured nccl-tests or ``gpulab.bench`` sweeps, written as a systems YAML that
inherits the preset. ``gpulab compare`` and ``gpulab fit`` are the command-line
front ends; chapters and labs call these functions directly.
"""
from __future__ import annotations

import csv
import datetime as _dt
import functools
import math
from pathlib import Path

import numpy as np
import yaml

from . import collectives, network, systems, units
from ._validate import check_int

__all__ = ["BANDS", "compare_rows", "band_summary", "fit_sweeps", "system_yaml",
           "public_singlenode_results", "public_singlenode_errors", "quoted_figures"]

_SINGLE = Path(__file__).resolve().parent / "data" / "measurements" / \
    "public_singlenode.csv"

#: Size bands of the summary: (label, lowest size, first size above) [B].
BANDS = (("8 B-32 KiB", 0, 64 * 1024), ("64-512 KiB", 64 * 1024, 1024**2),
         ("1-8 MiB", 1024**2, 16 * 1024**2), ("16 MiB+", 16 * 1024**2, math.inf))


def compare_rows(sweep, prediction):
    """Per-size rows (dicts of numbers) of measured vs predicted; sizes > 0 only."""
    keep = np.flatnonzero(sweep.size_bytes > 0)
    rows = []
    for j, i in enumerate(keep):
        t_m, t_p = float(sweep.time_s[i]), float(prediction.time[j])
        b_m, b_p = float(sweep.busbw[i]), float(prediction.busbw[j])
        rows.append({
            "size_bytes": int(sweep.size_bytes[i]),
            "time_us": t_m / units.US, "model_time_us": t_p / units.US,
            "time_err_pct": (t_p - t_m) / t_m * 100 if t_m > 0 else math.nan,
            "busbw_GBps": b_m / units.GB, "model_busbw_GBps": b_p / units.GB,
            # from the times: printed busbw is rounded to 0.01 GB/s
            "busbw_err_pct": (t_m / t_p - 1) * 100 if t_m > 0 and b_p > 0
            else math.nan,
            "model_algo": f"{prediction.algorithm[j]}/{prediction.protocol[j]}"})
    return rows


def band_summary(rows):
    """Mean |time error| and worst time error (signed, with its size) per band."""
    out = []
    for label, lo, hi in BANDS:
        errs = [(r["time_err_pct"], r["size_bytes"]) for r in rows
                if lo <= r["size_bytes"] < hi and not math.isnan(r["time_err_pct"])]
        if not errs:
            continue
        worst = max(errs, key=lambda e: abs(e[0]))
        out.append({"band": label, "sizes": len(errs),
                    "mean_abs_err_pct": sum(abs(e) for e, _ in errs) / len(errs),
                    "worst_err_pct": worst[0], "worst_at_bytes": worst[1]})
    return out


def fit_sweeps(sweeps, system, transport="p2p", n_ranks=None, gpus_per_process=None):
    """Calibrate each ``(collective, sweep)`` pair; returns ``{collective: entry}``.

    ``entry`` holds ``launch_s``, ``efficiency``, the ranks, the GPUs per process
    and the sweep's sizes (for the residuals). A collective measured in several
    files is fitted on the per-size median of their times. GPUs per process:
    ``gpus_per_process`` if given, else the nccl-tests header's ``nGpus``, else
    every rank of a node (nccl-tests ``-g N``); a gpulab.bench (torchrun) run has
    one process per GPU.
    """
    system = systems.resolve(system)
    by_coll = {}
    for coll, sw in sweeps:
        n = sw.resolve_ranks(n_ranks)
        keep = (sw.size_bytes > 0) & np.isfinite(sw.time_s)
        g = gpus_per_process if gpus_per_process is not None else sw.gpus_per_process
        by_coll.setdefault((coll, n, g), []).append(
            dict(zip(sw.size_bytes[keep].astype(float), sw.time_s[keep])))
    out = {}
    for (coll, n, g), tables in by_coll.items():
        sizes = sorted(set().union(*tables))
        times = [float(np.median([t[s] for t in tables if s in t])) for s in sizes]
        if coll in out:
            raise ValueError(f"{coll} measured with different rank counts or GPUs per "
                             "process; fit one kind of run at a time (--ranks, "
                             "--gpus-per-process)")
        got = collectives.calibrate(coll, sizes, times, n, system, transport=transport,
                                    gpus_per_process=g)
        out[coll] = {**got, "n_ranks": n, "gpus_per_process": g,
                     "sizes": np.array(sizes), "times": np.array(times)}
    return out


def system_yaml(base, name, fits, transport, sources):
    """YAML text of a system inheriting preset ``base`` with the fitted terms."""
    entries = {}
    for coll, f in fits.items():
        e = {"launch_s": float(f"{f['launch_s']:.6g}"),
             "efficiency": float(f"{f['efficiency']:.5f}")}
        if f["n_ranks"] >= 8:
            e["efficiency_8"] = e["efficiency"]
        entries[coll] = e
    today = _dt.date.today().isoformat()
    doc = {"systems": {name: {
        "base": base,
        "description": f"{base} calibrated by gpulab fit on {', '.join(sources)}",
        "source": f"gpulab fit on measured sweeps: {', '.join(sources)}",
        "accessed": today,
        "collective_model": {
            "source": f"gpulab fit ({transport}), {today}: launch_s and efficiency per "
                      "collective from gpulab.collectives.calibrate",
            "transports": {transport: {"collectives": entries}}}}}}
    return ("# Written by gpulab fit. Inherits every field of the preset named in\n"
            "# 'base'; the collective_model section overrides the shared model.\n"
            + yaml.safe_dump(doc, sort_keys=False))


@functools.lru_cache(maxsize=1)
def _single_rows():
    """The data file's rows, numbers as numbers (read once; callers copy)."""
    out = []
    with open(_SINGLE, encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh):
            row = dict(r)
            row["gpus"] = int(row["gpus"])
            row["size_bytes"] = int(row["size_bytes"])
            row["gpus_per_process"] = int(row["gpus_per_process"]) \
                if row["gpus_per_process"] else None
            row["time_us"] = float(row["time_us"])
            row["busbw_gbps"] = float(row["busbw_gbps"]) if row["busbw_gbps"] else None
            out.append(row)
    return tuple(out)


_QUOTED = Path(__file__).parent / "data" / "measurements" / "public" / "quoted_figures.csv"


@functools.lru_cache(maxsize=1)
def _quoted_rows():
    with open(_QUOTED, encoding="utf-8", newline="") as fh:
        return tuple(dict(r, value=float(r["value"])) for r in csv.DictReader(fh))


def quoted_figures():
    """Single published figures the chapters set beside the model
    (``gpulab/data/measurements/public/quoted_figures.csv``: a maintainer's quoted
    busbw, one number of a public run): key -> dict with ``value``, ``unit``,
    ``kind`` (published or spec), ``source``, ``url`` and ``accessed``. Quoted,
    never fitted.

    >>> f = quoted_figures()
    >>> f["h100_nvls_gb"]["value"], f["h100_nvls_gb"]["unit"]
    (480.0, 'GB/s busbw')
    """
    return {r["key"]: dict(r) for r in _quoted_rows()}


def public_singlenode_results():
    """Published single-server nccl-tests rows
    (``gpulab/data/measurements/public_singlenode.csv``), numbers as numbers;
    ``gpus_per_process`` None where the source does not say.

    >>> rows = public_singlenode_results()
    >>> {r["kind"] for r in rows}
    {'published'}
    """
    return [dict(r) for r in _single_rows()]


def _single_predictions(rows):
    """The model's time [s] for each public single-server row, run as it was run:
    its GPUs, process model (one per GPU where unknown), transport, NVLS switch
    and any forced algorithm. Rows run alike share one call of the model (the
    sizes of a sweep as one array)."""
    runs = {}
    for i, row in enumerate(rows):
        n = row["gpus"]
        key = (row["collective"], n, row["system"],
               "shm" if row["transport"] == "shm" else "p2p", row["nvls"] != "off",
               min(row["gpus_per_process"] or 1, n), row["algorithm"] or None)
        runs.setdefault(key, []).append(i)
    out = [0.0] * len(rows)
    for (coll, n, system, transport, nvls, g, algo), idx in runs.items():
        kw = {"algorithm": algo} if algo else {}
        t = collectives.predict(coll, [float(rows[i]["size_bytes"]) for i in idx], n,
                                system, transport=transport, nvls=nvls,
                                gpus_per_process=g, **kw).time
        for i, ti in zip(idx, t):
            out[i] = float(ti)
    return out


def public_singlenode_errors(system=None, gpus=None):
    """The collective model against each public single-server source, per size band
    (:data:`gpulab.network.BANDS`: time below 64 KiB, busbw above; model /
    published - 1).

    Rows on hardware without a preset (``system`` = ``none``) are cited, not
    checked.

    Parameters
    ----------
    system : str, optional
        Only the rows of this system preset (:func:`gpulab.systems.names`);
        default every row.
    gpus : int, optional
        Only the runs on this many GPUs (>= 1); default every count.

    Returns
    -------
    list of dict
        One per (source, system, GPUs, GPUs per process, transport, band) --
        ``transport`` is ``p2p``, ``shm`` or ``unknown`` as the row says, so a source's
        run with NCCL_P2P_DISABLE=1 is its own group -- with ``points``,
        ``nccl_version`` (as the source prints it, comma-separated; empty where it
        prints none), ``median_error``, ``worst_error``, ``within`` (median within the band's
        target), ``points_within`` (share within
        :data:`gpulab.network.POINT_TARGET`) and ``anomalies`` (points left out as
        hiccups of their run: slower than :data:`gpulab.network.ANOMALY_FACTOR` times
        the next larger size of the same sweep).

    Examples
    --------
    >>> e = public_singlenode_errors()
    >>> {r["band"] for r in e} <= {b[0] for b in network.BANDS}
    True
    >>> {r["system"] for r in public_singlenode_errors("hgx-h200")}
    {'hgx-h200'}
    """
    if system is not None and (not isinstance(system, str)
                               or system not in systems.names()):
        raise ValueError(f"system must be None or one of "
                         f"{', '.join(map(repr, systems.names()))}; got {system!r}")
    if gpus is not None:
        gpus = check_int("gpus", gpus, low=1, high=1_000_000)
    return [dict(e) for e in _singlenode_errors(system, gpus)]


@functools.lru_cache(maxsize=64)
def _singlenode_errors(system, gpus):
    """:func:`public_singlenode_errors` after its checks, kept per (system, GPUs): the
    data file is read once, so the table is too (callers get copies)."""
    groups, skipped = {}, {}
    bad = _singlenode_anomalies()
    rows = [(i, row) for i, row in enumerate(_single_rows())
            if row["system"] != "none" and system in (None, row["system"])
            and gpus in (None, row["gpus"])]
    times = _single_predictions([row for i, row in rows if i not in bad])
    times = iter(times)
    for i, row in rows:
        if i in bad:
            for name, low, high, *_ in network.BANDS:
                if low <= row["size_bytes"] < high:
                    key = (row["url"], row["system"], row["gpus"],
                           row["gpus_per_process"], row["transport"], name)
                    skipped[key] = skipped.get(key, 0) + 1
            continue
        t = next(times)
        for name, low, high, metric, target in network.BANDS:
            if not low <= row["size_bytes"] < high:
                continue
            if metric == "time":
                err = t / (row["time_us"] * 1e-6) - 1
            else:
                err = row["time_us"] * 1e-6 / t - 1        # busbw ratio, same sizes
            key = (row["url"], row["system"], row["gpus"], row["gpus_per_process"],
                   row["transport"], name)
            grp = groups.setdefault(key, (target, [], set()))
            grp[1].append(err)
            if row["nccl_version"]:
                grp[2].add(row["nccl_version"])
    out = []
    for (url, system, gpus, g, tr, band), (target, errs, vers) in groups.items():
        e = np.asarray(errs)
        med = float(np.median(e))
        out.append({"url": url, "system": system, "gpus": gpus, "gpus_per_process": g,
                    "transport": tr, "band": band, "points": int(e.size), "median_error": med,
                    "nccl_version": ", ".join(sorted(vers)),
                    "worst_error": float(e[np.argmax(np.abs(e))]),
                    "within": abs(med) <= target,
                    "points_within": float(np.mean(np.abs(e) <= network.POINT_TARGET)),
                    "anomalies": skipped.get((url, system, gpus, g, tr, band), 0)})
    return tuple(out)


_SINGLE_SWEEP_FIELDS = ("url", "system", "gpus", "gpus_per_process", "transport",
                        "nccl_version", "collective", "algorithm", "protocol", "nvls",
                        "in_place")


@functools.lru_cache(maxsize=1)
def _singlenode_anomalies():
    """Indices (in :func:`public_singlenode_results`) of the points slower than
    ``network.ANOMALY_FACTOR`` times the next larger size of the same sweep (the
    data file's, read once)."""
    rows = _single_rows()
    by = {}
    for i, r in enumerate(rows):
        by.setdefault(tuple(r.get(f) for f in _SINGLE_SWEEP_FIELDS), []).append(i)
    out = set()
    for idx in by.values():
        bad = network.nonmonotone([rows[i]["size_bytes"] for i in idx],
                                  [rows[i]["time_us"] for i in idx])
        out |= {idx[j] for j in bad}
    return frozenset(out)
