"""Public multi-node nccl-tests results and the model's error against them.

``gpulab/data/measurements/public_multinode.csv`` holds published outputs (a vendor's
or a user's run, cited row by row, ``kind = published``). They are used to check the
model, never to set its constants.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
from pathlib import Path

import numpy as np

from .. import systems
from .._validate import as_number, check_choice, check_int
from .cluster import CLUSTER_PRESETS, scale_out
from .data import parse_nics
from .model import RING_FORMS, busbw_factor, collective_times

_CSV = Path(__file__).resolve().parents[1] / "data" / "measurements" / \
    "public_multinode.csv"

#: Size bands of :func:`public_errors`: (name, low, high) [B], and the metric and
#: target of each: the median error per source and band within 20 %, every point
#: within 35 % (time below 64 KiB, busbw above).
BANDS = (("< 64 KiB", 0, 64 * 2**10, "time", 0.20),
         ("64 KiB - 1 GiB", 64 * 2**10, 2**30, "busbw", 0.20),
         (">= 1 GiB", 2**30, float("inf"), "busbw", 0.20))
#: Every single point's error target (fraction), in every band.
POINT_TARGET = 0.35
#: A published point whose time is more than this factor times the time of the next
#: larger size in the same sweep is a hiccup of that run (a collective on more data
#: cannot take less time on a quiet system): :func:`run_anomalies` lists such points
#: and the error tables leave them out, counting them.
ANOMALY_FACTOR = 1.5
_SWEEP_FIELDS = ("url", "system", "nodes", "gpus_per_node", "nics", "fabric",
                 "collective", "algorithm", "gpus_per_process", "nccl_version", "nvls",
                 "protocol", "in_place")


@functools.lru_cache(maxsize=1)
def _rows():
    with open(_CSV, encoding="utf-8", newline="") as fh:
        return tuple(csv.DictReader(fh))


def public_results():
    """The published multi-node results, one dict per row (numbers as floats).

    >>> rows = public_results()
    >>> "aws-p5" in {r["system"] for r in rows}
    True
    """
    return [{k: v for k, v in r.items() if k != "_row"} for r in _results()]


@functools.lru_cache(maxsize=1)
def _results():
    out = []
    for i, r in enumerate(_rows()):
        if r["system"] == "none":          # hardware without a preset: cited, not checked
            continue
        row = dict(r, _row=i)
        for k in ("nodes", "gpus_per_node", "size_bytes"):
            row[k] = int(row[k])
        for k in ("time_us", "busbw_gbps"):
            row[k] = float(row[k]) if row[k] != "" else None
        out.append(row)
    return out


def nonmonotone(sizes, times, factor=ANOMALY_FACTOR):
    """Indices of the points of one sweep slower than ``factor`` times the next larger
    size (sizes need not be sorted; sizes without a time are skipped).

    >>> sorted(nonmonotone([8, 16, 32, 64], [30.0, 31.0, 90.0, 40.0]))
    [2]
    """
    f = as_number("factor", factor, low=1, allow_array=False)
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__len__"):
        raise ValueError(f"sizes must be a sequence of sizes [B]; got {sizes!r}")
    if isinstance(times, (str, bytes)) or not hasattr(times, "__len__") \
            or len(times) != len(sizes):
        raise ValueError(f"times must be a sequence as long as sizes ({len(sizes)}); "
                         f"got {times!r}")
    for i, v in enumerate(sizes):
        as_number(f"sizes[{i}]", v, low=0, allow_array=False)
    for i, v in enumerate(times):
        if v is not None:
            as_number(f"times[{i}]", v, low=0, allow_array=False)
    pts = sorted((float(s), float(t), i) for i, (s, t) in enumerate(zip(sizes, times))
                 if t is not None)
    return {a[2] for a, b in zip(pts, pts[1:]) if b[0] > a[0] and a[1] > f * b[1]}


def _sweeps(rows, fields):
    """Group rows into sweeps: ``{key: [row, ...]}`` with key the values of ``fields``."""
    out = {}
    for r in rows:
        out.setdefault(tuple(r.get(f) for f in fields), []).append(r)
    return out


@functools.lru_cache(maxsize=1)
def _anomaly_ids():
    ids = set()
    for rs in _sweeps(_results(), _SWEEP_FIELDS).values():
        bad = nonmonotone([r["size_bytes"] for r in rs], [r["time_us"] for r in rs])
        ids |= {rs[i]["_row"] for i in bad}
    return ids


def run_anomalies():
    """The published multi-node points that are hiccups of their run (slower than
    :data:`ANOMALY_FACTOR` times the next larger size of the same sweep), left out of
    :func:`public_errors`.

    >>> a = run_anomalies()
    >>> all(r["time_us"] > ANOMALY_FACTOR * r["next_time_us"] for r in a)
    True
    """
    out = []
    for rs in _sweeps(_results(), _SWEEP_FIELDS).values():
        ordered = sorted(rs, key=lambda r: r["size_bytes"])
        for i in sorted(nonmonotone([r["size_bytes"] for r in ordered],
                                    [r["time_us"] for r in ordered])):
            r, nxt = ordered[i], ordered[i + 1]
            out.append({k: r[k] for k in ("url", "system", "nodes", "collective",
                                          "size_bytes", "time_us")}
                       | {"next_size_bytes": nxt["size_bytes"],
                          "next_time_us": nxt["time_us"]})
    return out


def cluster_of(row):
    """The System a public row ran on: its cluster preset scaled to its nodes, with
    its NICs and fabric; fewer GPUs per node than the preset's form a stand-in node
    of that many GPUs (each with its share of the NICs the row names)."""
    g = row["gpus_per_node"]
    base = systems.resolve(row["system"]) if row["system"] not in CLUSTER_PRESETS \
        else None
    if base is not None and g < base.scale_up_domain \
            and base.scale_up_domain > base.gpus_per_node:
        # a partition of an NVLink domain that spans trays (g GPUs of an NVL72 rack):
        # a node of g GPUs with its share of the rack's NICs
        count, rate = parse_nics(row["nics"])
        share = max(1, round(count * g / base.scale_up_domain))
        nv = dataclasses.replace(base.nvlink, domain_gpus=g, peer_links=None)
        node = dataclasses.replace(base, gpus_per_node=g, n_gpus=g, nvlink=nv,
                                   name=f"{base.name} [{g} GPUs per rack]")
        return systems.resolve(scale_out(node, row["nodes"], nics=(share, rate),
                                         fabric=row["fabric"]))
    c = scale_out(row["system"], row["nodes"], nics=row["nics"], fabric=row["fabric"])
    if g < c.gpus_per_node:
        nv = dataclasses.replace(c.nvlink, domain_gpus=g, peer_links=None)
        c = dataclasses.replace(c, gpus_per_node=g, n_gpus=g * row["nodes"], nvlink=nv,
                                name=f"{c.name} [{g} GPU per node]")
    return systems.resolve(c)


def _model(row, ring_form="lockstep"):
    """(time, NCCL tuner's estimate [s], algorithm, ranks) for a public row, with
    the row's forced algorithm (NCCL_ALGO) where it has one and without NVLS where
    the run turned it off (NCCL_NVLS_ENABLE=0)."""
    c = cluster_of(row)
    n = row["nodes"] * row["gpus_per_node"]
    # a run with NCCL_ALGO forced is modelled with that algorithm
    algo = row.get("algorithm") or "auto"
    r = collective_times(row["collective"], [row["size_bytes"]], n, c, algorithm=algo,
                         nvls=row.get("nvls") != "off", ring_form=ring_form)
    return float(r["time"][0]), float(r["estimate"][0]), str(r["algorithm"][0]), n


def predicted(row, ring_form="lockstep"):
    """(time [s], busbw [B/s], algorithm) the model predicts for a public row
    (``ring_form``: as in :func:`collective_times`)."""
    t, _est, algo, n = _model(row, ring_form)
    return t, row["size_bytes"] / t * busbw_factor(row["collective"], n), algo


def _error(row, metric, t, n):
    """model / published - 1 in ``metric`` (time or busbw), or None without data."""
    if metric == "time":
        return None if row["time_us"] is None else t / (row["time_us"] * 1e-6) - 1
    if not row["busbw_gbps"]:
        return None
    bus = row["size_bytes"] / t * busbw_factor(row["collective"], n)
    return bus / (row["busbw_gbps"] * 1e9) - 1


def _preset_filter(system):
    """``system`` of the error tables: None (every row) or a preset name
    (:func:`gpulab.systems.names` or :data:`CLUSTER_PRESETS`)."""
    if system is None:
        return None
    choices = sorted(set(systems.names()) | set(CLUSTER_PRESETS))
    if not isinstance(system, str) or system not in choices:
        raise ValueError(f"system must be None or one of {', '.join(map(repr, choices))}; "
                         f"got {system!r}")
    return system


def _run_key(row):
    """The run a public row belongs to: its page, the run's description on it,
    the preset, and its nodes and GPUs per node."""
    return (row["url"], row["source"], row["system"], row["nodes"], row["gpus_per_node"])


def public_errors(system=None, nodes=None, ring_form="lockstep"):
    """The model's error against each public source, per size band.

    Parameters
    ----------
    system : str, optional
        Only the rows of this preset (a system or cluster preset name); default
        every row. The rows of one preset cost a fraction of the whole table.
    nodes : int, optional
        Only the runs on this many nodes (>= 2); default every count.
    ring_form : {"lockstep", "dataflow"}
        The model (default) or its dataflow variant for LL128 and Simple rings
        (:func:`collective_times`).

    Returns
    -------
    list of dict
        One row per run and band: ``url`` and ``source`` (one page can hold several
        runs: each row's ``source`` names its run), ``system``, ``nodes``,
        ``gpus_per_node``, ``band``, ``points``, ``metric``
        (``"time"`` below 64 KiB, ``"busbw"`` above), ``median_error`` and
        ``worst_error`` (model / published - 1, signed; worst = largest magnitude),
        ``nccl_version`` (the NCCL version(s) the source prints, comma-separated; empty
        where it prints none), ``algorithm`` (the algorithm the run forced with
        NCCL_ALGO; empty where NCCL chose),
        ``target`` (the band's median target, 0.20), ``within`` (median within the
        target), ``points_within`` (the share of points within
        :data:`POINT_TARGET`) and ``estimate_median_error``: the same median for
        NCCL's tuner estimate taken as the time (what this model did before it
        modelled the run), and ``anomalies``: the points of that source and band left
        out as hiccups of the run (:func:`run_anomalies`).

    Examples
    --------
    >>> e = public_errors()
    >>> {r["band"] for r in e} <= {b[0] for b in BANDS}
    True
    >>> {r["system"] for r in public_errors("aws-p5")}
    {'aws-p5'}
    """
    only = _preset_filter(system)
    check_choice("ring_form", ring_form, RING_FORMS)
    if nodes is not None:
        nodes = check_int("nodes", nodes, low=2, high=1_000_000)
    groups = {}
    skipped = {}
    anomalies = _anomaly_ids()
    for row in _results():
        if only not in (None, row["system"]) or nodes not in (None, row["nodes"]):
            continue
        if row["_row"] in anomalies:
            for name, low, high, *_ in BANDS:
                if low <= row["size_bytes"] < high:
                    key = _run_key(row) + (name,)
                    skipped[key] = skipped.get(key, 0) + 1
            continue
        t, est, _algo, n = _model(row, ring_form)
        for name, low, high, metric, target in BANDS:
            if not low <= row["size_bytes"] < high:
                continue
            err = _error(row, metric, t, n)
            if err is None:
                continue
            key = _run_key(row) + (name,)
            g = groups.setdefault(key, (metric, target, [], [], set(), set()))
            g[2].append(err)
            g[3].append(_error(row, metric, est, n))
            if row.get("nccl_version"):
                g[4].add(row["nccl_version"])
            g[5].add(row.get("algorithm") or "")
    out = []
    for (url, source, system, nodes, gpn, band), (metric, target, errs, est, vers,
                                                  algos) in groups.items():
        e = np.asarray(errs)
        worst = float(e[np.argmax(np.abs(e))])
        out.append({"url": url, "source": source, "system": system, "nodes": nodes,
                    "gpus_per_node": gpn, "band": band,
                    "points": int(e.size), "metric": metric,
                    "nccl_version": ", ".join(sorted(vers)),
                    "algorithm": ", ".join(sorted(a for a in algos if a)),
                    "median_error": float(np.median(e)), "worst_error": worst,
                    "target": target,
                    "within": abs(float(np.median(e))) <= target,
                    "points_within": float(np.mean(np.abs(e) <= POINT_TARGET)),
                    "estimate_median_error": float(np.median(est)),
                    "anomalies": skipped.get((url, source, system, nodes, gpn, band), 0)})
    return out

