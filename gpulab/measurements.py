"""Recorded measurements from real GPUs (``gpulab/data/measurements``) and readers.

Nothing here needs a GPU: the data were recorded on real hardware and committed with
their provenance (see ``gpulab/data/measurements/README.md``).

Examples
--------
>>> from gpulab import measurements
>>> run = measurements.copy_bandwidth("h200_copy_bandwidth")
>>> run.machine
'2x H200 SXM 141GB, NVLink4 (NV18), PCIe Gen5 x16'
>>> sorted(run.kinds)[:5]
['d2h_pageable', 'd2h_pinned', 'h2d_pageable', 'h2d_pinned', 'p2p']
>>> run.peak("p2p_bidir").direction
'bidirectional'
>>> status = measurements.parse_nvlink_status(
...     measurements.raw_capture("h200-x2-2026-11-30", "nvlink-status.txt"))
>>> len(status[0]), status[0][0] / 1e9
(18, 26.562)
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

import numpy as np

from . import specs, units
from ._validate import check_int

__all__ = ["CopyRun", "copy_bandwidth", "CopyLatencyRun", "copy_latency_run",
           "COPY_LATENCY_RUN", "COPY_REPEAT_RUN", "COPY_FIT_SWEEPS", "COPY_HOLDOUT_SWEEPS",
           "copy_latency_sweeps", "pooled_copy_latency_run", "raw_capture", "parse_nvlink_status",
           "check_nvlink_status", "NVLinkStatus",
           "NVLinkStatusParseError", "PooledSweep", "FIT_RUNS", "HOLDOUT_RUNS", "PROCS_RUNS",
           "CHECK_RUNS",
           "collective_run", "pool_runs", "parse_nccl_choices", "OVERLAP_RUN",
           "gemm_power_trace", "KERNELS_RUN", "kernel_profile", "FULL_STEP_RUN",
           "full_step_runs", "FULL_STEP_FILES", "ATTENTION_RUN", "attention_kernels",
           "attention_power_trace", "POWER_RUN", "power_clock_sweep", "RECOMPUTE_RUN",
           "RECOMPUTE_FILES"]

#: Our 1x H200 run of GEMMs beside copies and of back-to-back GEMMs under nvidia-smi.
OVERLAP_RUN = "h200-x1-2026-12-02-overlap"
#: Our per-kernel profiles of compiled layer shards on 1x H200.
KERNELS_RUN = "h200-x1-2026-12-02-kernels"
#: Our forward + backward steps of a whole Llama 3 8B on 1x H200.
FULL_STEP_RUN = "h200-x1-2026-12-02-fullstep"
#: Our attention kernels alone (flash and cuDNN, 2K-256K tokens) on 1x H200.
ATTENTION_RUN = "h200-x1-2026-12-03-attention"
#: Our sweep of tensor-core work on k of the H200's SMs under its power limit.
POWER_RUN = "h200-x1-2026-12-03-power"
#: Our whole-model runs with and without activation checkpointing (what recomputation costs).
RECOMPUTE_RUN = "h200-x1-2026-12-03-recompute"
#: Its files: Llama 3 8B at one sequence of 8192 and of 4096 tokens (none / per-op / full;
#: none / full), and the Llama 3 70B shape with 8 blocks, full checkpointing.
RECOMPUTE_FILES = ("recompute_8b_s8192.csv", "recompute_8b_s4096.csv", "recompute_70b8.csv")


@dataclass(frozen=True)
class CopyRun:
    """One recorded copy-bandwidth sweep.

    Attributes
    ----------
    machine, driver, torch, date : str
        Provenance.
    kinds : dict[str, tuple[np.ndarray, np.ndarray]]
        For each copy kind, ``(size_bytes, bandwidth)`` arrays: sizes [B] and
        achieved bandwidth [B/s, per direction].
    times : dict[str, np.ndarray]
        For each copy kind, the recorded time of one copy [s], same order.
    """

    machine: str
    driver: str
    torch: str
    date: str
    kinds: dict = field(default_factory=dict)
    times: dict = field(default_factory=dict)

    def peak(self, kind):
        """Highest measured bandwidth of ``kind``.

        Per direction, except for ``*_bidir`` kinds, which count the bytes of both
        directions and so return a bidirectional figure.
        """
        if kind not in self.kinds:
            raise ValueError(f"kind must be one of {sorted(self.kinds)}; got {kind!r}")
        direction = units.BIDIRECTIONAL if kind.endswith("_bidir") \
            else units.PER_DIRECTION
        return units.Bandwidth(float(np.max(self.kinds[kind][1])), direction)


def copy_bandwidth(name="h200_copy_bandwidth"):
    """Load a recorded copy-bandwidth sweep ``measurements/<name>.csv``."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_\-]+", name):
        raise ValueError(f"name must be a measurement file stem; got {name!r}")
    text = specs.read_data_text(f"measurements/{name}.csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise ValueError(f"name {name!r}: the measurement file is empty")
    kinds: dict[str, list] = {}
    for r in rows:
        kinds.setdefault(r["kind"], []).append(
            (float(r["size_bytes"]), float(r["bandwidth_GBps"]) * units.GB,
             float(r["time_us"]) * units.US))
    arrays, times = {}, {}
    for k, pts in kinds.items():
        pts.sort()
        a = np.array(pts)
        arrays[k] = (a[:, 0], a[:, 1])
        times[k] = a[:, 2]
    r0 = rows[0]
    return CopyRun(machine=r0["machine"], driver=r0["driver"], torch=r0["torch"],
                   date=r0["date"], kinds=arrays, times=times)


#: Our CUDA C++ copy runs (``measure/copy_latency.cu``, cudaMemcpyAsync) on
#: 1x H200 SXM: two sweeps on 2026-12-01 (``copies_run1.csv``, ``copies_run2.csv``) ...
COPY_LATENCY_RUN = "h200-x1-2026-12-01-copies"
#: ... and six sweeps in a row on 2026-12-02 (``copies_r1.csv`` ... ``copies_r6.csv``;
#: perhaps another physical machine: small-copy floors 0.5-1 us higher).
COPY_REPEAT_RUN = "h200-x1-2026-12-02-copies-repeat"
#: The sweeps the hardware copy model is fitted on (the median per size over them):
#: 2026-12-01 run 1 and 2026-12-02 r1, r3, r5. Fixed before any fit was compared with
#: the held-out sweeps; ``(raw run folder, file)`` pairs.
COPY_FIT_SWEEPS = ((COPY_LATENCY_RUN, "copies_run1.csv"),
                   (COPY_REPEAT_RUN, "copies_r1.csv"),
                   (COPY_REPEAT_RUN, "copies_r3.csv"),
                   (COPY_REPEAT_RUN, "copies_r5.csv"))
#: The held-out sweeps, never used by the fit: 2026-12-01 run 2 and 2026-12-02 r2, r4, r6.
COPY_HOLDOUT_SWEEPS = ((COPY_LATENCY_RUN, "copies_run2.csv"),
                       (COPY_REPEAT_RUN, "copies_r2.csv"),
                       (COPY_REPEAT_RUN, "copies_r4.csv"),
                       (COPY_REPEAT_RUN, "copies_r6.csv"))
#: Measured columns of a :class:`CopyLatencyRun` series (times [s]).
_COPY_COLUMNS = ("latency_event", "latency_wall", "b2b_per_copy")


@dataclass(frozen=True)
class CopyLatencyRun:
    """One CUDA C++ copy sweep (``measure/copy_latency.cu``), or the median of several.

    Attributes
    ----------
    gpu, driver, cuda_runtime, date : str
        Provenance (of the first sweep when pooled).
    series : dict[str, dict[str, np.ndarray]]
        Per copy key (``h2d_pinned``, ``d2h_pageable``, ``h2d_pinned_both``, ``d2d``,
        ... as in :data:`gpulab.systems.HARDWARE_COPY_KEYS`), arrays sorted by size:
        ``size_bytes`` [B]; ``latency_event`` (one isolated copy, CUDA events) [s];
        ``latency_wall`` (host clock from the call to the stream's end) [s];
        ``b2b_per_copy`` (copies queued back to back, time per copy) [s].
    sweeps : tuple of (str, str)
        The ``(raw run folder, file)`` of each sweep behind these numbers: one for a
        loaded sweep, several for :func:`pooled_copy_latency_run`.
    """

    gpu: str
    driver: str
    cuda_runtime: str
    date: str
    series: dict = field(default_factory=dict)
    sweeps: tuple = ()


def copy_latency_run(filename="copies_run1.csv", run=COPY_LATENCY_RUN):
    """Load one sweep of ``measure/copy_latency.cu`` from ``measurements/raw/<run>/``.

    Parameters
    ----------
    filename : str
        A sweep of the run folder, e.g. ``copies_run1.csv``, or ``copies_r1.csv`` ...
        ``copies_r6.csv`` of :data:`COPY_REPEAT_RUN`. Which sweeps the model is fitted
        on and which are held out: :data:`COPY_FIT_SWEEPS`, :data:`COPY_HOLDOUT_SWEEPS`.
    run : str
        The raw run folder.

    Returns
    -------
    CopyLatencyRun

    Examples
    --------
    >>> r = copy_latency_run()
    >>> sorted(r.series)[:3], r.driver, r.sweeps
    (['d2d', 'd2h_pageable', 'd2h_pinned'], '580.159.04', (('h200-x1-2026-12-01-copies', 'copies_run1.csv'),))
    >>> round(float(r.series["h2d_pinned"]["latency_event"][0]) * 1e6, 3)   # 4 B, us
    3.744
    """
    rows = list(csv.DictReader(io.StringIO(raw_capture(run, filename))))
    if not rows or "latency_event_us" not in rows[0]:
        raise ValueError(f"filename {filename!r}: not a copy_latency.cu sweep")
    pts: dict[str, list] = {}
    for r in rows:
        key = "d2d" if r["kind"] == "d2d" else f"{r['kind']}_{r['memory']}"
        if r["direction"] == "both":
            key += "_both"
        pts.setdefault(key, []).append(
            (float(r["size_bytes"]), float(r["latency_event_us"]) * units.US,
             float(r["latency_wall_us"]) * units.US,
             float(r["b2b_per_copy_us"]) * units.US))
    series = {}
    for key, p in pts.items():
        a = np.array(sorted(p))
        series[key] = {"size_bytes": a[:, 0], "latency_event": a[:, 1],
                       "latency_wall": a[:, 2], "b2b_per_copy": a[:, 3]}
    r0 = rows[0]
    return CopyLatencyRun(gpu=r0["gpu"], driver=r0["driver"],
                          cuda_runtime=r0["cuda_runtime"], date=r0["date"],
                          series=series, sweeps=((run, filename),))


def _sweep_list(sweeps):
    """``sweeps`` as a tuple of ``(run, filename)`` pairs, or a ValueError."""
    if isinstance(sweeps, (str, bytes)) or not hasattr(sweeps, "__iter__"):
        raise ValueError("sweeps must be a sequence of (run folder, file) pairs, e.g. "
                         f"measurements.COPY_FIT_SWEEPS; got {sweeps!r}")
    out = tuple(sweeps)
    if not out or not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in out):
        raise ValueError("sweeps must be a non-empty sequence of (run folder, file) "
                         f"pairs, e.g. measurements.COPY_FIT_SWEEPS; got {sweeps!r}")
    out = tuple((p[0], p[1]) for p in out)
    if len(set(out)) != len(out):
        raise ValueError(f"sweeps: a sweep is listed twice; got {out!r}")
    return out


def copy_latency_sweeps(sweeps=COPY_HOLDOUT_SWEEPS):
    """Load several sweeps of ``measure/copy_latency.cu``.

    Parameters
    ----------
    sweeps : sequence of (str, str)
        ``(raw run folder, file)`` pairs; default :data:`COPY_HOLDOUT_SWEEPS`.

    Returns
    -------
    tuple of CopyLatencyRun

    Examples
    --------
    >>> [r.sweeps[0][1] for r in copy_latency_sweeps()]
    ['copies_run2.csv', 'copies_r2.csv', 'copies_r4.csv', 'copies_r6.csv']
    """
    out = []
    for r, f in _sweep_list(sweeps):
        try:
            out.append(copy_latency_run(f, run=r))
        except ValueError as e:
            raise ValueError(f"sweeps: cannot load {(r, f)!r}: {e}") from None
    return tuple(out)


def pooled_copy_latency_run(sweeps=COPY_FIT_SWEEPS):
    """The median per copy key and size over several sweeps (what the model is fitted on).

    Parameters
    ----------
    sweeps : sequence of (str, str)
        ``(raw run folder, file)`` pairs; default :data:`COPY_FIT_SWEEPS`. All must
        have the same copy keys and sizes.

    Returns
    -------
    CopyLatencyRun
        ``latency_event``, ``latency_wall`` and ``b2b_per_copy`` are the medians over
        the sweeps (of an even number of sweeps: the mean of the middle two);
        ``sweeps`` names them all.

    Examples
    --------
    >>> p = pooled_copy_latency_run()
    >>> len(p.sweeps), round(float(p.series["h2d_pinned"]["latency_event"][0]) * 1e6, 3)
    (4, 4.008)
    """
    runs = copy_latency_sweeps(sweeps)
    first = runs[0]
    series = {}
    for key, ser in first.series.items():
        for r in runs[1:]:
            if key not in r.series or not np.array_equal(r.series[key]["size_bytes"],
                                                         ser["size_bytes"]):
                raise ValueError(f"sweeps: {r.sweeps[0]} does not have the copy sizes of "
                                 f"{first.sweeps[0]} for {key!r}; cannot pool them")
        series[key] = {"size_bytes": ser["size_bytes"].copy()}
        for col in _COPY_COLUMNS:
            series[key][col] = np.median([r.series[key][col] for r in runs], axis=0)
    return CopyLatencyRun(gpu=first.gpu, driver=first.driver,
                          cuda_runtime=first.cuda_runtime, date=first.date,
                          series=series, sweeps=tuple(s for r in runs for s in r.sweeps))


def raw_capture(run, filename):
    """Return the text of a raw capture, e.g. ``("h200-x2-2026-11-30", "topo-m.txt")``."""
    for label, v in (("run", run), ("filename", filename)):
        if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", v) \
                or v.startswith("."):
            raise ValueError(f"{label} must be a plain file or folder name; got {v!r}")
    try:
        return specs.read_data_text(f"measurements/raw/{run}/{filename}")
    except ValueError:
        raise ValueError(f"run/filename: no raw capture {filename!r} in run {run!r} "
                         "under gpulab/data/measurements/raw") from None


class NVLinkStatusParseError(ValueError):
    """Raised for text that is not ``nvidia-smi nvlink --status`` output."""


_GPU_RE = re.compile(r"^GPU (\d+): (.+)$")
_LINK_RE = re.compile(r"^\s*Link (\d+): (?:([0-9]+(?:\.[0-9]+)?) GB/s|<inactive>)\s*$")


def parse_nvlink_status(text):
    """Parse ``nvidia-smi nvlink --status`` output.

    Parameters
    ----------
    text : str
        The command's output.

    Returns
    -------
    dict[int, list[float]]
        For each GPU index, the rate of each link in link order
        [B/s, per direction, as nvidia-smi reports it]; inactive links are 0.

    Raises
    ------
    NVLinkStatusParseError
        Naming the first line that is neither a GPU header nor a link line.
    """
    return _parse_nvlink(text)[0]


def _parse_nvlink(text):
    """``({gpu: rates}, {gpu: name})`` of ``nvidia-smi nvlink --status`` output."""
    if not isinstance(text, str):
        raise NVLinkStatusParseError(f"text must be a str; got {type(text).__name__}")
    out: dict[int, list[float]] = {}
    names: dict[int, str] = {}
    current = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _GPU_RE.match(line.strip())
        if m:
            current = int(m.group(1))
            if current in out:
                raise NVLinkStatusParseError(
                    f"line {lineno}: GPU {current} listed twice: {line!r}")
            out[current] = []
            names[current] = re.sub(r"\s*\(UUID:.*$", "", m.group(2)).strip()
            continue
        m = _LINK_RE.match(line)
        if m and current is not None:
            if int(m.group(1)) != len(out[current]):
                raise NVLinkStatusParseError(
                    f"line {lineno}: expected link {len(out[current])}, got {line!r}")
            rate = float(m.group(2)) * units.GB if m.group(2) else 0.0
            out[current].append(rate)
            continue
        raise NVLinkStatusParseError(
            f"line {lineno}: not a GPU header or link line: {line!r}")
    if not out:
        raise NVLinkStatusParseError("line 1: no 'GPU n:' header found")
    return out, names


@dataclass(frozen=True)
class NVLinkStatus:
    """What :func:`check_nvlink_status` read and what is missing.

    Attributes
    ----------
    gpus : list of dict
        Per GPU in the capture's order: ``gpu`` (index), ``name`` (as printed),
        ``links_listed``, ``links_active``, ``links_expected`` (the spec's links
        per GPU, None when the name is not a known SXM GPU), ``per_link`` and
        ``sum_per_direction`` (active links' rates [B/s, per direction]).
    problems : list of str
        One sentence per problem: a GPU with fewer links than its generation
        has, fewer than another GPU of the capture, inactive links, a capture
        that ends inside a GPU's list, GPU indices missing. Empty when the
        capture shows every link up.
    """

    gpus: list
    problems: list


def _expected_links(name):
    """Links per GPU of the spec GPU named in an nvidia-smi name, or None (unknown
    name; PCIe cards, whose NVLink bridges vary)."""
    if "pcie" in name.lower():
        return None, None
    for known in specs.gpu_names():
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(known)}(?![0-9])", name):
            return known, specs.gpu(known).nvlink_links
    return None, None


def check_nvlink_status(text, *, n_gpus=None):
    """Read ``nvidia-smi nvlink --status`` output and say what is missing.

    Parameters
    ----------
    text : str
        The command's output.
    n_gpus : int, optional
        GPUs the machine has; indices 0..n_gpus-1 absent from the capture are
        reported. Without it only gaps in the indices are.

    Returns
    -------
    NVLinkStatus

    Each GPU's links are compared with the links per GPU of its generation
    (:func:`gpulab.specs.gpu`, when the name shows a known SXM GPU) and with the
    other GPUs of the capture; a last GPU with fewer links than expected (or than
    the others) means the capture ends inside its list.

    Examples
    --------
    >>> cut = "GPU 0: NVIDIA H200 (UUID: x)\\n Link 0: 26.562 GB/s\\n Link 1: 26.562 GB/s\\n"
    >>> for p in check_nvlink_status(cut, n_gpus=2).problems:
    ...     print(p)
    GPU 0 (NVIDIA H200): 2 of 18 links listed (H200: 18 NVLink links per GPU)
    the capture ends inside GPU 0's link list (2 links listed, 18 expected): cut off?
    GPU 1 missing (n_gpus = 2)
    """
    rates, names = _parse_nvlink(text)
    if n_gpus is not None:
        n_gpus = check_int("n_gpus", n_gpus, low=1, high=1024)
    gpus, problems = [], []
    most = max(len(r) for r in rates.values())
    for gpu, r in rates.items():
        known, expected = _expected_links(names[gpu])
        active = [x for x in r if x > 0]
        gpus.append({"gpu": gpu, "name": names[gpu], "links_listed": len(r),
                     "links_active": len(active), "links_expected": expected,
                     "per_link": active[0] if active else None,
                     "sum_per_direction": float(sum(active))})
        label = f"GPU {gpu} ({names[gpu]})"
        if expected is not None and len(r) < expected:
            problems.append(f"{label}: {len(r)} of {expected} links listed ({known}: "
                            f"{expected} NVLink links per GPU)")
        elif len(r) < most:
            problems.append(f"{label}: {len(r)} links listed, fewer than the {most} "
                            "of another GPU in the capture")
        if len(active) < len(r):
            problems.append(f"{label}: {len(r) - len(active)} of {len(r)} links "
                            "inactive")
    last = list(rates)[-1]
    want = max(most, gpus[-1]["links_expected"] or 0)
    if len(rates[last]) < want:
        problems.append(f"the capture ends inside GPU {last}'s link list "
                        f"({len(rates[last])} links listed, {want} expected): cut off?")
    top = max(rates) + 1 if n_gpus is None else max(n_gpus, max(rates) + 1)
    missing = [g for g in range(top) if g not in rates]
    if missing:
        why = f"n_gpus = {n_gpus}" if n_gpus is not None else "indices skip them"
        problems.append(f"GPU {', '.join(map(str, missing))} missing ({why})")
    return NVLinkStatus(gpus, problems)


#: Our C++ NCCL sweeps on 2x H200 (measure/nccl_sweep.cu, nccl-tests' method),
#: as ``(run folder, file)`` per transport. FIT_RUNS: every default and
#: ``NCCL_P2P_DISABLE=1`` sweep before the floor study (four recordings), from which
#: the collective model is calibrated; HOLDOUT_RUNS: the floor study, recorded later
#: on a freshly started machine (short 8 B-8 MiB sweeps, some with the process pinned
#: to one core, and three full sweeps), kept out of the fit to check it.
FIT_RUNS = {
    "p2p": (("h200-x2-2026-11-30-nccl-c", "c_default.csv"),
            ("h200-x2-2026-11-30-bench", "c_default.csv"))
    + tuple(("h200-x2-2026-11-30-nccl-c-repeat", f"c_default_r{r}.csv") for r in (1, 2, 3))
    + tuple(("h200-x2-2026-11-30-validate", f"v_default_r{r}.csv") for r in (1, 2, 3)),
    "shm": (("h200-x2-2026-11-30-nccl-c", "c_p2p_disable.csv"),)
    + tuple(("h200-x2-2026-11-30-nccl-c-repeat", f"c_p2p_disable_r{r}.csv")
            for r in (1, 2, 3))
    + tuple(("h200-x2-2026-11-30-validate", f"v_p2p_disable_r{r}.csv") for r in (1, 2, 3)),
}
HOLDOUT_RUNS = {
    "p2p": tuple(("h200-x2-2026-11-30-floors", f"{k}_r{r}.csv")
                 for k, n in (("s_default", 8), ("s_pinned", 8), ("full_default", 3))
                 for r in range(1, n + 1)),
    "shm": tuple(("h200-x2-2026-11-30-floors", f"{k}_r{r}.csv")
                 for k, n in (("s_shm", 8), ("full_shm", 3)) for r in range(1, n + 1)),
}


#: One process per GPU (``nccl_sweep -P 1``, like nccl-tests under MPI) on 2x H200:
#: the host's time per call without the second GPU's launches.
PROCS_RUNS = {
    "p2p": tuple(("h200-x2-2026-11-30-procs", f"procs_r{r}.csv") for r in range(1, 7))
    + (("h200-x2-2026-11-30-procs", "procs_full.csv"),),
    "shm": tuple(("h200-x2-2026-11-30-procs", f"procs_shm_r{r}.csv") for r in range(1, 7)),
}


#: A second independent check, recorded after the model's last fit on another freshly
#: started 2x H200 machine: three full sweeps each per transport and process layout,
#: keyed by (transport, GPUs per process).
CHECK_RUNS = {
    (tr, g): tuple(("h200-x2-2026-11-30-validate2",
                    f"{'g2' if g == 2 else 'procs'}{'_shm' if tr == 'shm' else ''}_r{r}.csv")
                   for r in (1, 2, 3))
    for tr in ("p2p", "shm") for g in (2, 1)}


def collective_run(run, filename):
    """One recorded C++ collective sweep: ``{collective: {size_bytes: time_s}}``."""
    out = {}
    text = raw_capture(run, filename)
    for r in csv.DictReader(io.StringIO(text)):
        try:
            out.setdefault(r["collective"], {})[int(r["size_bytes"])] = \
                float(r["time_us"]) * 1e-6
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"run/filename: {run}/{filename} is not a collective sweep "
                             "(columns collective, size_bytes, time_us)") from None
    return out


@dataclass(frozen=True)
class PooledSweep:
    """Many runs of one collective, pooled size by size.

    Attributes
    ----------
    collective : str
    size_bytes : np.ndarray
        nccl-tests' size. [B]
    lo, hi : np.ndarray
        10th and 90th percentile of the runs' times, transients left out. [s]
    center : np.ndarray
        ``2 lo hi / (lo + hi)``: the one time whose worst relative error against
        ``lo`` and ``hi`` is smallest (``lo (1 + d) = hi (1 - d)``). [s]
    median : np.ndarray
        Plain median of the runs. [s]
    times : np.ndarray
        Every run's time, shape (runs, sizes); NaN where a run lacks a size. [s]
    """

    collective: str
    size_bytes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    center: np.ndarray
    median: np.ndarray
    times: np.ndarray


def pool_runs(runs):
    """Pool collective sweeps (``(run, file)`` pairs, e.g. :data:`FIT_RUNS` ``["p2p"]``).

    Returns
    -------
    dict[str, PooledSweep]
        Per collective, over the sizes that any run has.

    Notes
    -----
    The host's time per call on our 2x H200 machines is bimodal from run to run
    (about 13 us or about 20 us, at every size up to ~1 MiB), so neither one run nor
    a median of a few is a fair target for one model curve; ``center`` is. Times
    above twice the median of the runs at that size are transients (a hiccup of
    the shared machine, 4-7x the usual time), not a mode: ``lo``, ``hi`` and
    ``center`` leave them out; ``times`` keeps them.
    """
    why = "runs must be a non-empty sequence of (run, filename) pairs of recorded sweeps"
    if isinstance(runs, (str, bytes)) or not hasattr(runs, "__iter__"):
        raise ValueError(f"{why}; got {runs!r}")
    runs = tuple(runs)
    if not runs or not all(isinstance(r, (tuple, list)) and len(r) == 2
                           and all(isinstance(x, str) for x in r) for r in runs):
        raise ValueError(f"{why}; got {runs!r}")
    try:
        data = [collective_run(*r) for r in runs]
    except ValueError as exc:
        raise ValueError(f"runs: {exc}") from None
    out = {}
    for coll in data[0]:
        sizes = np.array(sorted({s for d in data for s in d.get(coll, {})}), dtype=float)
        times = np.array([[d.get(coll, {}).get(int(s), np.nan) for s in sizes]
                          for d in data])
        med = np.nanmedian(times, axis=0)
        kept = np.where(times > 2 * med, np.nan, times)     # transients, not modes
        lo, hi = np.nanpercentile(kept, [10, 90], axis=0)
        out[coll] = PooledSweep(coll, sizes, lo, hi, 2 * lo * hi / (lo + hi), med, times)
    return out


#: One line of NCCL's INFO log (NCCL_DEBUG_SUBSYS=COLL or TUNING,COLL) per call:
#: ``AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}``.
_CHOICE_RE = re.compile(r"\b(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) "
                        r"channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
_NCCL_OPS = {"AllReduce": "all_reduce", "AllGather": "all_gather",
             "ReduceScatter": "reduce_scatter", "Broadcast": "broadcast",
             "Reduce": "reduce"}


def parse_nccl_choices(text, collective="all_reduce"):
    """What NCCL chose for each call of ``collective``, from its INFO log.

    Parameters
    ----------
    text : str
        NCCL's log with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL`` (one line per call).
    collective : str
        One of ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``,
        ``reduce``.

    Returns
    -------
    dict
        ``{size_bytes: (algorithm, protocol, channels)}``, algorithm as ``"Ring"``,
        ``"Tree"``, ``"Nvls"``..., protocol ``"LL"``, ``"LL128"`` or ``"Simple"``;
        the last line wins where a size was logged more than once.

    Raises
    ------
    ValueError
        If ``text`` is not a str or holds no choice line for ``collective``.

    Examples
    --------
    >>> log = "x NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}"
    >>> parse_nccl_choices(log)
    {8: ('Ring', 'LL', 2)}
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be the log as a str; got {type(text).__name__}")
    if collective not in _NCCL_OPS.values():
        raise ValueError(f"collective must be one of {', '.join(_NCCL_OPS.values())}; "
                         f"got {collective!r}")
    out = {}
    for m in _CHOICE_RE.finditer(text):
        if _NCCL_OPS.get(m[1]) == collective:
            proto = {"SIMPLE": "Simple"}.get(m[4], m[4])
            out[int(m[2])] = (m[3].title(), proto, int(m[6]) - int(m[5]) + 1)
    if not out:
        raise ValueError(f"text holds no NCCL choice line for {collective} "
                         "(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL)")
    return out



def _columns_table(text, need, problem):
    """The rows of CSV ``text`` (dicts), or ValueError ``problem`` (it names the parameter)
    with the required columns when any of ``need`` is missing."""
    reader = csv.DictReader(io.StringIO(text))
    if not set(need) <= set(reader.fieldnames or ()):
        raise ValueError(f"{problem} (columns {sorted(need)})")
    return list(reader)


def gemm_power_trace(filename="power_run1.csv", run=OVERLAP_RUN):
    """Power draw and SM clock of back-to-back 8192^3 GEMMs on our H200, per precision.

    ``measure/overlap_contention.py`` runs BF16 ``torch.mm`` and FP8 ``torch._scaled_mm``
    for 8 s each while ``nvidia-smi`` samples every 200 ms; the first two samples of
    each (the clock still falling from its maximum) are left out of the medians.

    Parameters
    ----------
    filename : str
        ``"power_run1.csv"`` or ``"power_run2.csv"`` (two runs on two machines).
    run : str
        The raw-run folder.

    Returns
    -------
    dict
        ``{"bf16": d, "fp8": d}`` with ``d`` a dict: ``tflops`` (sustained dense
        TFLOP/s over the 8 s), ``power_w`` and ``sm_clock_mhz`` (medians),
        ``sm_clock_max_mhz`` (the highest sample), ``samples`` and
        ``power_capped`` (every sample's clock-event reasons include the software power
        cap, bit 0x4); and ``"power_limit_w"``: the GPU's power limit as ``nvidia-smi``
        reported it before the run (``versions.txt`` of the run).

    Examples
    --------
    >>> t = gemm_power_trace()
    >>> t["bf16"]["power_w"] > 680, t["bf16"]["sm_clock_mhz"] < 1600, t["bf16"]["power_capped"]
    (True, True, True)
    >>> t["power_limit_w"]
    700.0
    """
    text = raw_capture(run, filename)
    by = {}
    for r in _columns_table(text, ("dtype", "tflops_mean", "power_w", "sm_clock_mhz",
                                   "event_reasons"),
                            f"filename: {filename!r} is not a power trace"):
        by.setdefault(r["dtype"], []).append(r)
    if set(by) != {"bf16", "fp8"}:
        raise ValueError(f"filename: {filename!r} is not a power trace of bf16 and fp8")
    out = {}
    for dtype, rows in by.items():
        steady = rows[2:]
        power = [float(r["power_w"].split()[0]) for r in steady]
        clock = [float(r["sm_clock_mhz"].split()[0]) for r in steady]
        out[dtype] = {"tflops": float(rows[0]["tflops_mean"]),
                      "power_w": float(np.median(power)),
                      "sm_clock_mhz": float(np.median(clock)),
                      "sm_clock_max_mhz": max(float(r["sm_clock_mhz"].split()[0])
                                              for r in rows),
                      "samples": len(steady),
                      "power_capped": all(int(r["event_reasons"], 16) & 0x4
                                          for r in rows)}
    limit = re.search(r",\s*([0-9.]+) W,", raw_capture(run, "versions.txt"))
    out["power_limit_w"] = float(limit.group(1)) if limit else float("nan")
    return out


def kernel_profile(filename="kernels_gpt.csv", run=KERNELS_RUN):
    """Per-kernel GPU time of compiled layer shards (``measure/profile_shard.py``).

    Parameters
    ----------
    filename : str
        ``"kernels_gpt.csv"`` or ``"kernels_llama.csv"``.
    run : str
        The raw-run folder.

    Returns
    -------
    dict
        ``{(recipe, seq_len, micro_batch): d}`` with ``d``: ``step_ms`` (CUDA events),
        ``attention_ms``, ``gemm_ms``, ``other_ms`` (kernel time per step by class) and
        ``top_other`` (``(kernel name, ms)`` of the longest kernel of class other).

    Examples
    --------
    >>> p = kernel_profile()
    >>> one, four = p[("fp8-tensorwise", 8192, 1)], p[("fp8-tensorwise", 2048, 4)]
    >>> one["other_ms"] > four["other_ms"] + 0.3, abs(one["gemm_ms"] - four["gemm_ms"]) < 0.05
    (True, True)
    """
    text = raw_capture(run, filename)
    out = {}
    for r in _columns_table(text, ("recipe", "seq_len", "micro_batch", "step_ms_events",
                                   "kernel_class", "kernel", "ms_per_step"),
                            f"filename: {filename!r} is not a kernel profile"):
        key = (r["recipe"], int(r["seq_len"]), int(r["micro_batch"]))
        d = out.setdefault(key, {"step_ms": float(r["step_ms_events"]),
                                 "attention_ms": 0.0, "gemm_ms": 0.0, "other_ms": 0.0,
                                 "top_other": ("", 0.0)})
        ms = float(r["ms_per_step"])
        d[f"{r['kernel_class']}_ms"] += ms
        if r["kernel_class"] == "other" and ms > d["top_other"][1]:
            d["top_other"] = (r["kernel"], ms)
    return out


#: The files of :data:`FULL_STEP_RUN`, in the order they were recorded.
def attention_kernels(run=ATTENTION_RUN):
    """Forward and forward + backward time of attention kernels alone on our H200.

    ``measure/attention_long.py``: PyTorch SDPA in BF16, head dimension 128, one sequence,
    backend forced (``"flash"`` or ``"cudnn"``), a causal sequence (``"causal"``) or a
    non-causal block (``"block"``, one step of a context-parallel ring).

    Parameters
    ----------
    run : str
        The raw-run folder.

    Returns
    -------
    dict
        ``{(backend, shape, kind, q_len): d}``, ``shape`` ``"llama3-8b-tp1"`` (32 query
        heads, 8 KV heads) or ``"llama3-405b-tp8"`` (16 and 1), with ``d``: ``fwd_s``,
        ``fwd_bwd_s`` [s], ``heads``, ``kv_heads``, ``k_len`` and ``fwd_bwd_tflops``
        (FLOPs as executed, the backward 2.5x the forward).

    Examples
    --------
    >>> k = attention_kernels()
    >>> flash = k[("flash", "llama3-8b-tp1", "causal", 131072)]
    >>> cudnn = k[("cudnn", "llama3-8b-tp1", "causal", 131072)]
    >>> 300 < flash["fwd_bwd_tflops"] < 350, 0.5 < cudnn["fwd_bwd_s"] / flash["fwd_bwd_s"] < 0.7
    (True, True)
    """
    out = {}
    for r in _columns_table(raw_capture(run, "attention_long.csv"),
                            ("backend", "shape", "heads", "kv_heads", "kind", "q_len",
                             "k_len", "fwd_ms", "fwd_bwd_ms", "fwd_bwd_tflops"),
                            f"run: {run!r} holds no attention kernel table"):
        out[(r["backend"], r["shape"], r["kind"], int(r["q_len"]))] = {
            "fwd_s": float(r["fwd_ms"]) / 1e3, "fwd_bwd_s": float(r["fwd_bwd_ms"]) / 1e3,
            "heads": int(r["heads"]), "kv_heads": int(r["kv_heads"]),
            "k_len": int(r["k_len"]), "fwd_bwd_tflops": float(r["fwd_bwd_tflops"])}
    return out


def attention_power_trace(run=ATTENTION_RUN, busy_w=600.0):
    """Power and SM clock of our H200 while the attention kernels of
    :func:`attention_kernels` ran (``nvidia-smi`` every 200 ms beside the run).

    Parameters
    ----------
    run : str
        The raw-run folder.
    busy_w : float
        Samples drawing more than this are counted as busy, (0, 2000]. [W]

    Returns
    -------
    dict
        ``samples`` (all), ``busy`` (drawing more than ``busy_w``), ``capped`` (the
        software power cap acting), ``power_limit_w``, ``max_power_w`` and, over the busy
        samples, ``sm_clock_min_mhz``, ``sm_clock_median_mhz``, ``sm_clock_max_mhz``.

    Examples
    --------
    >>> p = attention_power_trace()
    >>> p["power_limit_w"], p["capped"] > p["samples"] / 2, p["max_power_w"] <= 705
    (700.0, True, True)
    """
    ok = isinstance(busy_w, (int, float, np.integer, np.floating)) and \
        not isinstance(busy_w, bool) and 0 < busy_w <= 2000
    if not ok:
        raise ValueError(f"busy_w must be a number of watts in (0, 2000]; got {busy_w!r}")
    w_min = float(busy_w)
    text = raw_capture(run, "power.csv")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or "power.draw [W]" not in [c.strip() for c in rows[0]]:
        raise ValueError(f"run: {run!r} holds no nvidia-smi power trace (power.csv)")
    samples = []
    for r in rows[1:]:
        try:
            samples.append((float(r[1].split()[0]), float(r[2].split()[0]),
                            float(r[3].split()[0]), r[4].strip() == "Active"))
        except (IndexError, ValueError):
            continue
    busy = [s for s in samples if s[1] > w_min]
    if not busy:
        raise ValueError(f"busy_w: no sample of {run!r} draws more than {w_min} W")
    clocks = [s[0] for s in busy]
    return {"samples": len(samples), "busy": len(busy),
            "capped": sum(s[3] for s in samples),
            "power_limit_w": max(s[2] for s in samples),
            "max_power_w": max(s[1] for s in samples),
            "sm_clock_min_mhz": min(clocks),
            "sm_clock_median_mhz": float(np.median(clocks)),
            "sm_clock_max_mhz": max(clocks)}


def power_clock_sweep(run=POWER_RUN):
    """Board power and SM clock of tensor-core work on ``k`` of our H200's SMs
    (``measure/power_clock.py``): a persistent Triton kernel keeps exactly ``k`` SMs busy
    with BF16 or FP8 tile products for 3 s while NVML is read every 20 ms; medians over
    the second half. Also cuBLAS 8192^3 products on every SM and the idle board.

    Returns
    -------
    list of dict
        One per row: ``kernel`` (``"idle"``, ``"triton-spin"``, ``"cublas-8192"``,
        ``"triton-spin-repeat"``), ``dtype`` (``"bf16"``, ``"fp8"`` or ``""``), ``sms``,
        ``power_w``, ``sm_mhz``, ``capped_share`` (share of samples with the software
        power cap acting), ``tflops``, ``power_limit_w`` and ``max_sm_mhz``.

    Examples
    --------
    >>> rows = power_clock_sweep()
    >>> {r["power_limit_w"] for r in rows}
    {700.0}
    """
    text = raw_capture(run, "power_clock.csv")
    need = ("kernel", "dtype", "sms", "power_w", "sm_mhz", "capped_share", "tflops",
            "power_limit_w", "max_sm_mhz")
    out = []
    for r in _columns_table(text, need, f"run: {run!r} holds no power/clock sweep"):
        row = {"kernel": r["kernel"], "dtype": r["dtype"], "sms": int(r["sms"])}
        for k in need[3:]:
            row[k] = float(r[k])
        out.append(row)
    return out


FULL_STEP_FILES = ("full_step.csv", "full_step_eager.csv", "full_step_b1.csv",
                   "full_step_70b8.csv")


def full_step_runs(filenames=FULL_STEP_FILES, run=FULL_STEP_RUN):
    """Forward + backward of a whole model on one GPU (``measure/full_step.py``).

    Parameters
    ----------
    filenames : tuple of str
        Files of the run (a file without a ``compiled`` column ran compiled blocks).
    run : str
        The raw-run folder.

    Returns
    -------
    list of dict
        One per configuration that ran: ``model``, ``layers`` (the blocks run, where the
        file says; None: the model's own), ``precision``, ``ac`` (torchtitan's
        activation checkpointing: ``"op"`` per-op selective, ``"full"``, ``"none"``),
        ``compiled`` (blocks under torch.compile), ``batch``, ``seq_len``, ``step_s``
        (median), ``tokens_per_s``, ``peak_gb``, ``gpu``, ``torch``, ``torchao``.

    Examples
    --------
    >>> r = {(x["precision"], x["ac"], x["compiled"]): x for x in full_step_runs()}
    >>> r[("fp8", "op", True)]["tokens_per_s"] > r[("bf16", "op", True)]["tokens_per_s"]
    True
    >>> r[("bf16", "op", False)]["tokens_per_s"] < r[("bf16", "op", True)]["tokens_per_s"]
    True
    """
    if isinstance(filenames, str) or not isinstance(filenames, (tuple, list)) \
            or not filenames:
        raise ValueError(f"filenames must be a non-empty tuple of file names; "
                         f"got {filenames!r}")
    out = []
    for filename in filenames:
        if not isinstance(filename, str):
            raise ValueError(f"filenames: {filename!r} is not a file name")
        out.extend(_full_step_file(run, filename))
    return out


def _full_step_file(run, filename):
    try:
        text = raw_capture(run, filename)
    except ValueError as exc:        # name both parameters: either may be wrong
        raise ValueError(f"filenames/run: {exc}") from None
    rows = _columns_table(text, ("model", "precision", "ac", "batch", "seq_len",
                                 "step_s", "tokens_per_s", "status"),
                          f"filenames: {filename!r} is not a whole-model step run")
    out = []
    for r in rows:
        if r["status"] != "ok":
            continue
        out.append({"model": r["model"],
                    "layers": int(r["layers"]) if r.get("layers") else None,
                    "precision": r["precision"], "ac": r["ac"],
                    "compiled": r.get("compiled", "True") in ("True", "true", "1"),
                    "batch": int(r["batch"]), "seq_len": int(r["seq_len"]),
                    "step_s": float(r["step_s"]), "tokens_per_s": float(r["tokens_per_s"]),
                    "peak_gb": float(r["peak_gb"]), "gpu": r["gpu"], "torch": r["torch"],
                    "torchao": r["torchao"]})
    return out
