"""Calibration of the collective model: measured sweeps against predictions.

Per-size comparison rows, error summaries per size band, and the fit of a preset's
launch cost and efficiency per collective (:func:`gpulab.collectives.calibrate`)
from measured nccl-tests or ``gpulab.bench`` sweeps, written as a systems YAML that
inherits the preset. ``gpulab compare`` and ``gpulab fit`` are the command-line
front ends; chapters and labs call these functions directly.
"""
from __future__ import annotations

import datetime as _dt
import math

import numpy as np
import yaml

from . import collectives, systems, units

__all__ = ["BANDS", "compare_rows", "band_summary", "fit_sweeps", "system_yaml"]

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
