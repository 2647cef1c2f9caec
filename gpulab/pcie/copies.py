"""Copies between host and GPU and between GPUs: the hardware model (one-copy latency +
size / bandwidth, measured with CUDA C++) kept apart from a caller's issue cost per call
in a back-to-back loop (CUDA runtime or PyTorch), and their calibration on our runs.

Units are SI: bytes, seconds, bytes per second (per direction).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import links, measurements, systems, units
from .._validate import as_number, check_choice, finite_answer
from .link import encoded_bandwidth


#: Copy kinds: host to device, device to host, GPU to GPU.
COPY_KINDS = ("h2d", "d2h", "p2p")
#: Host memory kinds for h2d/d2h copies.
MEMORY_KINDS = ("pinned", "pageable")

#: Copy kinds of the hardware model: host to device, device to host, within one GPU,
#: GPU to GPU.
HARDWARE_COPY_KINDS = ("h2d", "d2h", "d2d", "p2p")
#: One direction at a time, or h2d and d2h at the same time (pinned only).
DIRECTIONS = ("one", "both")
#: Callers whose per-call issue cost is modelled: the CUDA runtime
#: (``cudaMemcpyAsync``) and PyTorch (``Tensor.copy_``).
CALLERS = ("cuda", "pytorch")


# --- copy time -------------------------------------------------------------------------
def host_copy_time(message_bytes, latency, bandwidth, *, issue_floor=0.0):
    r"""Time per copy of ``message_bytes``: alpha-beta with an issue floor.

    The floor is the CALLER's per-call issue cost in a back-to-back loop, not the
    hardware; ``issue_floor=0`` leaves the hardware's alpha-beta time.

    Parameters
    ----------
    message_bytes : numeric or array_like
        Bytes per copy. [B]
    latency : numeric or array_like
        Fixed device-side cost per copy (alpha). [s]
    bandwidth : units.Bandwidth or numeric
        Per-direction rate of large copies; a number is [B/s]. A bidirectional
        :class:`~gpulab.units.Bandwidth` is refused.
    issue_floor : numeric or array_like
        Shortest time per copy when copies are issued back to back (host-side
        cost of issuing one copy). 0 gives the plain alpha-beta model. [s]

    Returns
    -------
    numeric or ndarray
        Time per copy. [s]

    Notes
    -----
    .. math:: t(S) = \max\left(t_\text{issue},\; \alpha + S / B\right)

    A benchmark loop queues copies back to back: the host issues copy *k+1*
    while the DMA engine runs copy *k*, so a copy costs whichever is longer.
    Small copies are issue-bound (about 25-28 us per PyTorch ``copy_`` in our
    2x H200 data), large ones bandwidth-bound.

    Examples
    --------
    >>> bw = units.Bandwidth.from_gb_per_s(55.5, "per_direction")
    >>> round(host_copy_time(2**30, 5e-6, bw) * 1e3, 3)        # 1 GiB: ms
    19.352
    >>> host_copy_time(4096, 5e-6, bw, issue_floor=24e-6)       # issue-bound
    2.4e-05
    """
    t = links.transfer_time(message_bytes, latency, bandwidth)
    floor = as_number("issue_floor", issue_floor, low=0)
    out = np.maximum(floor, t)
    return float(out) if np.ndim(out) == 0 else out


def staged_bandwidth(pinned_bandwidth, host_memcpy_bandwidth):
    r"""Rate of a pageable copy staged through a pinned bounce buffer.

    Parameters
    ----------
    pinned_bandwidth : units.Bandwidth or numeric
        DMA rate between the pinned buffer and the GPU, per direction [B/s].
    host_memcpy_bandwidth : units.Bandwidth or numeric
        CPU copy rate between pageable memory and the pinned buffer [B/s].

    Returns
    -------
    units.Bandwidth
        Per direction.

    Notes
    -----
    The driver cannot DMA from pageable memory (pages may move), so it copies
    through a pinned staging buffer with the CPU. With the two steps in series,

    .. math:: \frac{1}{B_\text{pageable}} = \frac{1}{B_\text{pinned}}
              + \frac{1}{B_\text{memcpy}}

    (M. Harris, "How to Optimize Data Transfers in CUDA C/C++", NVIDIA Technical
    Blog, 2012: the driver allocates a temporary pinned array, copies the host
    data into it, then transfers it to the device). Full overlap of the steps would give
    :math:`\min(B_\text{pinned}, B_\text{memcpy})` instead; our 2x H200 data fit the
    series form with a memcpy rate of about 20-30 GB/s, a plausible rate for one
    CPU thread.

    Examples
    --------
    >>> pin = units.Bandwidth.from_gb_per_s(55.5, "per_direction")
    >>> round(staged_bandwidth(pin, 27.1e9).gb_per_s, 2)
    18.21
    """
    b = _rate("pinned_bandwidth", pinned_bandwidth)
    m = _rate("host_memcpy_bandwidth", host_memcpy_bandwidth)
    return units.Bandwidth(1.0 / (1.0 / b + 1.0 / m), units.PER_DIRECTION)


def _rate(name, value):
    """A per-direction rate [B/s] from a Bandwidth or a plain number > 0."""
    if isinstance(value, units.Bandwidth):
        if value.direction != units.PER_DIRECTION:
            raise units.DirectionError(
                f"{name} must be per direction; got a bidirectional figure. Call "
                ".to_per_direction() first if the link is symmetric.")
        value = value.bytes_per_s
    return as_number(name, value, low=0, low_inclusive=False, allow_array=False)


def _nominal(sys, kind):
    """Nominal per-direction rate of the path of a copy kind (efficiency = 1)."""
    if kind == "p2p" and sys.p2p.via == "nvlink":
        return links.nvlink_gpu_bandwidth(sys.nvlink.generation,
                                          sys.nvlink_links_to_peer)
    return encoded_bandwidth(sys.pcie.generation, sys.pcie.lanes)


def _params(kind, memory, system):
    check_choice("kind", kind, COPY_KINDS)
    check_choice("memory", memory, MEMORY_KINDS)
    sys = systems.resolve(system)
    if kind == "p2p":
        if memory != "pinned":
            raise ValueError("memory applies to h2d/d2h copies only; a p2p copy "
                             f"moves device memory (got memory={memory!r})")
        return sys, sys.p2p.params
    return sys, sys.host_copy.params(memory, kind)


def copy_bandwidth(kind="h2d", *, memory="pinned", system="hgx-h200"):
    r"""Large-copy bandwidth of a system, per direction (hardware: large copies are
    bandwidth-bound, so the caller's issue cost does not enter).

    Parameters
    ----------
    kind : {"h2d", "d2h", "p2p"}
        Host to device, device to host, or GPU to GPU.
    memory : {"pinned", "pageable"}
        Host memory of an h2d/d2h copy (must be "pinned" for p2p).
    system : str or systems.System
        Preset name, YAML file path or :class:`~gpulab.systems.System`.

    Returns
    -------
    units.Bandwidth
        Per direction.

    Notes
    -----
    Pinned: :math:`B = \eta \, B_\text{enc}` (PCIe generation and lanes of the
    system). Pageable: :func:`staged_bandwidth` of the pinned rate of the same
    direction and the host memcpy rate. P2P: :math:`\eta` times the nominal rate
    of the path (NVLink links between the two GPUs, or the encoded PCIe rate).

    Examples
    --------
    >>> round(copy_bandwidth("h2d").gb_per_s)
    55
    >>> round(copy_bandwidth("h2d", memory="pageable").gb_per_s)
    19
    >>> round(copy_bandwidth("p2p").gb_per_s)
    398
    """
    sys, prm = _params(kind, memory, system)
    if kind != "p2p" and memory == "pageable":
        pinned = copy_bandwidth(kind, memory="pinned", system=sys)
        return staged_bandwidth(pinned, prm.host_memcpy_bandwidth)
    return _nominal(sys, kind) * prm.efficiency


def copy_time(message_bytes, kind="h2d", *, memory="pinned", system="hgx-h200",
              caller="pytorch", direction="one"):
    r"""Time per copy of ``message_bytes``: the hardware alone, or a caller's loop.

    Parameters
    ----------
    message_bytes : numeric or array_like
        Bytes per copy. [B]
    kind, memory, system
        As in :func:`copy_bandwidth`; with ``caller`` None or "cuda", ``kind`` may
        also be "d2d" (see :func:`copy_latency`).
    caller : {"pytorch", "cuda"} or None
        Which number: ``None``: the HARDWARE time of one isolated copy,
        :func:`copy_latency`. ``"cuda"``: time per copy of ``cudaMemcpyAsync`` calls
        issued back to back (hardware plus the CUDA runtime's issue cost).
        ``"pytorch"`` (the default, kept for existing callers): time per PyTorch
        ``copy_`` issued back to back, the model fitted to our older 2x H200 PyTorch
        run, whose small copies show PyTorch's per-call cost, not the link.
    direction : {"one", "both"}
        "both": pinned h2d and d2h at the same time (``caller`` None or "cuda").

    Returns
    -------
    numeric or ndarray
        Time per copy. [s]

    Notes
    -----
    ``caller="pytorch"``: :func:`host_copy_time` with the system's ``host_copy`` /
    ``p2p`` latency, PyTorch issue floor and :func:`copy_bandwidth`:

    .. math:: t(S) = \max\left(t_\text{issue}^\text{PyTorch},\; \alpha + S / B\right)

    ``caller="cuda"``: the copy engine pipelines queued copies, so each costs its
    hardware gap :math:`g` plus :math:`S/B`, unless the runtime issues them more
    slowly:

    .. math:: t(S) = \max\left(t_\text{issue}^\text{CUDA},\; g + S / B(S)\right)

    ``caller=None``: :math:`\alpha_\text{hw} + S / B(S)` (:func:`copy_latency`;
    :math:`B(S)` has the knee of a pageable copy where the host shows one).

    Examples
    --------
    >>> round(copy_time(2**30, "h2d") * 1e3, 1)                  # ms
    19.4
    >>> round(copy_time(2**30, "h2d", memory="pageable") * 1e3)   # ms
    56
    >>> round(copy_time(4096, "h2d") * 1e6)          # us: PyTorch's per-call cost
    28
    >>> round(copy_time(4096, "h2d", caller=None) * 1e6, 1)      # us: hardware
    4.5
    >>> round(copy_time(4096, "h2d", caller="cuda") * 1e6, 1)    # us: CUDA loop
    2.9
    """
    if caller is not None:
        check_choice("caller", caller, CALLERS)
    if caller is None:
        return copy_latency(message_bytes, kind, memory=memory, system=system,
                            direction=direction)
    if caller == "cuda":
        hw = hardware_copy(kind, memory=memory, system=system, direction=direction)
        t = _hardware_time(message_bytes, hw.pipelined_s, hw)
        out = np.maximum(hw.cuda_issue_s, t)
        return float(out) if np.ndim(out) == 0 else out
    check_choice("direction", direction, ("one",))
    sys, prm = _params(kind, memory, system)
    bw = copy_bandwidth(kind, memory=memory, system=sys)
    return host_copy_time(message_bytes, prm.latency_s, bw,
                          issue_floor=prm.issue_floor_s)


# --- hardware copy model (separate from the caller's issue cost) ---------------------
def hardware_key(kind="h2d", *, memory="pinned", direction="one"):
    """Key of a copy in a system's ``copy_hardware`` section.

    >>> hardware_key("d2h", memory="pageable"), hardware_key("h2d", direction="both")
    ('d2h_pageable', 'h2d_pinned_both')
    >>> hardware_key("p2p")
    'p2p'
    """
    check_choice("kind", kind, HARDWARE_COPY_KINDS)
    check_choice("memory", memory, MEMORY_KINDS)
    check_choice("direction", direction, DIRECTIONS)
    if kind in ("d2d", "p2p"):
        if memory != "pinned" or direction != "one":
            raise ValueError(f"memory and direction apply to h2d/d2h copies only; a "
                             f"{kind} copy moves device memory (got memory={memory!r}, "
                             f"direction={direction!r})")
        return kind
    if direction == "both" and memory != "pinned":
        raise ValueError("direction='both' was measured with pinned memory only; "
                         f"got memory={memory!r}")
    return f"{kind}_{memory}" + ("_both" if direction == "both" else "")


def hardware_copy(kind="h2d", *, memory="pinned", system="hgx-h200", direction="one"):
    """The hardware parameters of a copy kind (:class:`gpulab.systems.HardwareCopy`).

    Parameters
    ----------
    kind : {"h2d", "d2h", "d2d", "p2p"}
    memory : {"pinned", "pageable"}
        Host memory of an h2d/d2h copy.
    system : str or systems.System
        A system with a ``copy_hardware`` section (``h200-x2-measured``,
        ``hgx-h200``, ``hgx-h200-2node``).
    direction : {"one", "both"}
        "both": pinned h2d and d2h at the same time.

    Examples
    --------
    >>> hw = hardware_copy("h2d")
    >>> round(hw.latency_s * 1e6, 2), round(hw.bandwidth.gb_per_s, 1), hw.kind
    (4.39, 54.8, 'measured')
    >>> hardware_copy("p2p").kind          # no 2-GPU C++ run yet
    'assumed'
    """
    key = hardware_key(kind, memory=memory, direction=direction)
    sys = systems.resolve(system)
    if sys.copy_hardware is None or key not in dict(sys.copy_hardware.copies):
        raise ValueError(f"system {sys.name!r} has no hardware copy calibration for "
                         f"{key!r} (a copy_hardware section); use one that has (e.g. "
                         "'hgx-h200'), or caller='pytorch' for the older PyTorch-loop "
                         "model")
    return sys.copy_hardware.params(key)


def copy_latency(message_bytes, kind="h2d", *, memory="pinned", system="hgx-h200",
                 direction="one"):
    r"""HARDWARE time of one isolated copy: latency + size / bandwidth.

    No caller's issue cost: this is the time between CUDA events recorded right
    before and after one ``cudaMemcpyAsync`` on an idle stream (our
    ``measure/copy_latency.cu``, like NVIDIA's nvbandwidth latency test).

    Parameters
    ----------
    message_bytes : numeric or array_like
        Bytes per copy. [B]
    kind, memory, system, direction
        As in :func:`hardware_copy`.

    Returns
    -------
    numeric or ndarray
        Hardware time of one copy. [s]

    Notes
    -----
    .. math:: t(S) = \alpha_\text{hw} + S / B(S)

    with the system's ``copy_hardware`` parameters (fitted by
    :func:`calibrate_copy_hardware` on the median of four sweeps; four other sweeps
    held out, :func:`copy_holdout_errors`). :math:`B(S) = B` except for a pageable
    copy with a knee: :math:`B_k` for :math:`S > S_k` (h2d on our host: the whole copy
    runs at about half the rate above 32 MiB, fitted on this host, not a property of
    the GPU). Single sweeps of small copies differ by 20-30 % from run to run, and
    pageable copies by more than the +-15 % acceptance at every size: the model
    cannot be closer than that spread. d2d copies of 8-16 MiB can run faster than
    the model when source and destination fit in the 50 MB L2 (not modelled).

    Examples
    --------
    >>> round(copy_latency(1024, "h2d") * 1e6, 1)      # us
    4.4
    >>> round(copy_latency(2**30, "h2d") * 1e3, 2)     # ms
    19.59
    >>> round(copy_latency(1024, "p2p") * 1e6, 1)      # us, assumed (see data)
    6.3
    >>> [round(copy_latency(s * 2**20, "h2d", memory="pageable") * 1e3, 2) for s in (32, 64)]
    [2.46, 9.52]
    """
    hw = hardware_copy(kind, memory=memory, system=system, direction=direction)
    return _hardware_time(message_bytes, hw.latency_s, hw)


def _hardware_time(message_bytes, alpha, hw):
    """alpha + S / B(S) with the knee of ``hw`` (if any); inputs checked by
    :func:`gpulab.links.transfer_time`."""
    t = links.transfer_time(message_bytes, alpha, hw.bandwidth)
    if hw.knee_bytes is None:
        return t
    above = links.transfer_time(message_bytes, alpha, hw.bandwidth_above_knee)
    out = np.where(np.asarray(message_bytes, dtype=float) > hw.knee_bytes, above, t)
    return float(out) if np.ndim(out) == 0 else out


def issue_cost(kind="h2d", *, memory="pinned", caller="cuda", system="hgx-h200",
               direction="one"):
    """CALLER's cost: the shortest time per copy call in a back-to-back loop.

    Parameters
    ----------
    kind, memory, system, direction
        As in :func:`hardware_copy`.
    caller : {"cuda", "pytorch"}
        ``cudaMemcpyAsync`` (our CUDA C++ run) or PyTorch ``copy_`` (our older 2x
        H200 PyTorch run; h2d/d2h/p2p, one direction).

    Returns
    -------
    float
        Time per call. [s]

    Examples
    --------
    >>> round(issue_cost("h2d") * 1e6, 1), round(issue_cost("h2d", caller="pytorch") * 1e6)
    (2.6, 28)
    >>> round(issue_cost("p2p", caller="pytorch") * 1e6, 1)
    82.5
    """
    check_choice("caller", caller, CALLERS)
    if caller == "cuda":
        return hardware_copy(kind, memory=memory, system=system,
                             direction=direction).cuda_issue_s
    check_choice("direction", direction, ("one",))
    return _params(kind, memory, system)[1].issue_floor_s


def calibrate_copy_hardware(run=None, *, small_bytes=65536):
    r"""Fit the hardware copy model and the CUDA issue cost to CUDA C++ copy sweeps.

    Parameters
    ----------
    run : measurements.CopyLatencyRun or None
        The data to fit; default: the median per size of the fit sweeps
        (:func:`gpulab.measurements.pooled_copy_latency_run` of
        :data:`~gpulab.measurements.COPY_FIT_SWEEPS`: 2026-12-01 run 1 and 2026-12-02
        r1, r3, r5 on 1x H200 SXM). The other four sweeps are held out
        (:func:`copy_holdout_errors`). One sweep (``measurements.copy_latency_run``)
        can be fitted too.
    small_bytes : int
        Copies up to this size set the latency (their :math:`S/B` is small). [B]

    Returns
    -------
    dict
        Per key of the run (``h2d_pinned``, ..., ``d2d``): ``latency_s``,
        ``pipelined_s``, ``bandwidth_gb_per_s``, ``cuda_issue_s``, and for a pageable
        copy whose rate drops above a size, ``knee_bytes`` and
        ``bandwidth_above_knee_gb_per_s``: the keys of a ``copy_hardware`` section of
        ``systems.yaml``.

    Notes
    -----
    1. Back-to-back times per copy: :func:`calibrate_copy` gives the bandwidth
       :math:`B`, the hardware gap :math:`g` between queued copies (the alpha of
       the bandwidth-bound points) and the CUDA issue cost (the median of the
       issue-bound points).
    2. Hardware latency: :math:`\alpha_\text{hw}` = the median of
       :math:`t_\text{event} - S/B` over copies up to ``small_bytes`` (one isolated
       copy, CUDA events).
    3. Pageable copies only (the driver stages them through pinned buffers with a CPU
       copy, so their rate is the host's): a knee :math:`S_k` where the back-to-back
       rate :math:`S/t` of every larger copy (from 1 MiB) is below that of every
       smaller one and their medians differ by more than 25 %. Then steps 1-2 use the
       copies up to :math:`S_k`, and copies above run at :math:`B_k` = the median of
       :math:`S/(t - g)` above the knee. Fitted on the measured host, not a property of
       the GPU. Our sweeps show it for h2d (between 32 and 64 MiB: no size measured
       in between), not for d2h.

    Examples
    --------
    >>> cal = calibrate_copy_hardware()
    >>> {k: round(v * 1e6, 2) for k, v in cal["h2d_pinned"].items() if k != "bandwidth_gb_per_s"}
    {'latency_s': 4.39, 'pipelined_s': 2.8, 'cuda_issue_s': 2.61}
    >>> round(cal["d2d"]["bandwidth_gb_per_s"])
    2143
    >>> cal["h2d_pageable"]["knee_bytes"] / 2**20, round(cal["h2d_pageable"]["bandwidth_above_knee_gb_per_s"], 1)
    (32.0, 7.0)
    >>> "knee_bytes" in cal["d2h_pageable"]
    False
    """
    from .. import measurements

    if run is None:
        run = measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS)
    if not isinstance(run, measurements.CopyLatencyRun):
        raise ValueError(f"run must be a measurements.CopyLatencyRun or None; got {run!r}")
    small = as_number("small_bytes", small_bytes, low=0, low_inclusive=False,
                      allow_array=False)
    out = {}
    for key, ser in run.series.items():
        s, t_b2b = ser["size_bytes"], ser["b2b_per_copy"]
        knee = _rate_knee(s, t_b2b) if "pageable" in key else None
        below = s <= knee if knee is not None else np.ones(s.shape, bool)
        f = calibrate_copy(s[below], t_b2b[below])
        b = f.bandwidth.bytes_per_s
        sel = below & (s <= small)
        if not np.any(sel):
            raise ValueError(f"small_bytes: no copy of {key} is that small "
                             f"(smallest {s.min():g} B)")
        alpha = float(np.median(ser["latency_event"][sel] - s[sel] / b))
        out[key] = {"latency_s": max(alpha, 0.0), "pipelined_s": max(f.latency, 0.0),
                    "bandwidth_gb_per_s": b / units.GB,
                    "cuda_issue_s": f.issue_floor}
        if knee is not None:
            above = ~below
            rate = s[above] / (t_b2b[above] - out[key]["pipelined_s"])
            out[key]["knee_bytes"] = float(knee)
            out[key]["bandwidth_above_knee_gb_per_s"] = float(np.median(rate)) / units.GB
    return out


def _rate_knee(sizes, times, *, from_bytes=2**20, drop=0.75):
    """The size that best separates faster copies (from ``from_bytes`` up to it) from
    slower ones (above it): every rate above below every rate up to it, the medians
    differing by more than ``1 - drop``; None if there is no such size."""
    rate = sizes / times
    big = np.flatnonzero(sizes >= from_bytes)
    best, best_gap = None, 1.0
    for j in big[1:-2]:                       # at least two sizes on each side
        lo, hi = rate[big[0]:j + 1], rate[j + 1:]
        gap = float(hi.max() / lo.min())      # < 1: cleanly separated
        if gap < best_gap and np.median(hi) < drop * np.median(lo):
            best, best_gap = float(sizes[j]), gap
    return best


#: Size bands of the course's copy acceptance: label, [low, high) bytes, allowed
#: |error|: +-30 % below 64 KiB, +-15 % from 64 KiB.
COPY_BANDS = (("< 64 KiB", 0, 65536, 0.30), ("64 KiB-1 MiB", 65536, 2**20, 0.15),
              ("1-64 MiB", 2**20, 2**26, 0.15), (">= 64 MiB", 2**26, float("inf"), 0.15))


def copy_holdout_errors(run=None, *, system="h200-x2-measured"):
    r"""Error of the hardware model and the CUDA-loop model on held-out sweeps, per
    copy key and size band, beside the sweeps' own run-to-run spread.

    Parameters
    ----------
    run : measurements.CopyLatencyRun, sequence of them, or None
        The held-out sweeps; default: the four of
        :data:`~gpulab.measurements.COPY_HOLDOUT_SWEEPS` (2026-12-01 run 2, 2026-12-02
        r2, r4, r6 on 1x H200 SXM). A sweep the fit used
        (:data:`~gpulab.measurements.COPY_FIT_SWEEPS`) is refused.
    system : str or systems.System
        Where the fitted constants are stored (``copy_hardware``).

    Returns
    -------
    list of dict
        One row per copy key and :data:`COPY_BANDS` band, over every held-out
        single-size point (sizes x sweeps): ``key``, ``band``, ``sizes``, ``points``,
        ``limit_pct`` (the acceptance);
        ``hw_median_pct``, ``hw_max_pct``, ``hw_within_pct`` (:func:`copy_latency`
        against ``latency_event``: median and largest error, and the share of points
        within ``limit_pct``); ``cuda_median_pct``, ``cuda_max_pct``,
        ``cuda_within_pct`` (``copy_time(..., caller="cuda")`` against
        ``b2b_per_copy``); ``noise_median_pct``, ``noise_max_pct``,
        ``noise_within_pct`` and ``cuda_noise_median_pct``, ``cuda_noise_max_pct``:
        the same errors for the fit sweeps' median itself taken as the prediction,
        i.e. the run-to-run spread no fit to those sweeps can beat (NaN where the
        sizes differ from the fit sweeps'). Errors are
        :math:`|t_\text{model}/t_\text{measured} - 1|` in %.

    Examples
    --------
    >>> rows = copy_holdout_errors()
    >>> r = [r for r in rows if r["key"] == "h2d_pinned" and r["band"] == "64 KiB-1 MiB"][0]
    >>> r["points"], round(r["hw_median_pct"]), round(r["hw_max_pct"]), r["limit_pct"]
    (16, 9, 17, 15.0)
    >>> round(r["hw_within_pct"]), round(r["noise_max_pct"])
    (88, 15)
    """
    from .. import measurements

    if run is None:
        held = measurements.copy_latency_sweeps(measurements.COPY_HOLDOUT_SWEEPS)
    elif isinstance(run, measurements.CopyLatencyRun):
        held = (run,)
    elif (isinstance(run, (tuple, list)) and run
          and all(isinstance(r, measurements.CopyLatencyRun) for r in run)):
        held = tuple(run)
    else:
        raise ValueError("run must be a measurements.CopyLatencyRun, a non-empty "
                         f"sequence of them, or None; got {run!r}")
    used = sorted(set(measurements.COPY_FIT_SWEEPS).intersection(
        s for r in held for s in r.sweeps))
    if used:
        raise ValueError(f"run: {used} were used by the fit "
                         "(measurements.COPY_FIT_SWEEPS); hold out only sweeps the fit "
                         "never saw (measurements.COPY_HOLDOUT_SWEEPS)")
    sys = systems.resolve(system)
    ref = measurements.pooled_copy_latency_run(measurements.COPY_FIT_SWEEPS)
    rows = []
    for key in systems.HARDWARE_COPY_KEYS:
        if not all(key in r.series for r in held):
            continue
        kind = key.split("_")[0]
        kw = dict(memory="pageable" if "pageable" in key else "pinned",
                  direction="both" if key.endswith("_both") else "one", system=sys)
        parts = {name: [] for name in ("s", "hw", "cu", "nhw", "ncu")}
        for r in held:
            ser = r.series[key]
            s = ser["size_bytes"]
            parts["s"].append(s)
            parts["hw"].append(_err(copy_latency(s, kind, **kw), ser["latency_event"]))
            parts["cu"].append(_err(copy_time(s, kind, caller="cuda", **kw),
                                    ser["b2b_per_copy"]))
            same = key in ref.series and np.array_equal(ref.series[key]["size_bytes"], s)
            for name, col in (("nhw", "latency_event"), ("ncu", "b2b_per_copy")):
                parts[name].append(_err(ref.series[key][col], ser[col]) if same
                                   else np.full(s.shape, np.nan))
        a = {name: np.concatenate(v) for name, v in parts.items()}
        for label, lo, hi, limit in COPY_BANDS:
            sel = (a["s"] >= lo) & (a["s"] < hi)
            if not np.any(sel):
                continue
            lim = 100 * limit
            row = {"key": key, "band": label,
                   "sizes": int(np.unique(a["s"][sel]).size), "points": int(sel.sum()),
                   "limit_pct": lim}
            for name, pre in (("hw", "hw"), ("cu", "cuda"), ("nhw", "noise"),
                              ("ncu", "cuda_noise")):
                e = a[name][sel]
                row[f"{pre}_median_pct"] = float(np.median(e))
                row[f"{pre}_max_pct"] = float(np.max(e))
                if pre in ("hw", "cuda", "noise"):
                    row[f"{pre}_within_pct"] = float(np.mean(e <= lim) * 100) \
                        if not np.isnan(e).any() else float("nan")
            rows.append(row)
    return rows


def _err(model, measured):
    """|model / measured - 1| in %."""
    return np.abs(np.asarray(model) / np.asarray(measured) - 1.0) * 100


# --- calibration -----------------------------------------------------------------------
@dataclass(frozen=True)
class CopyFit:
    """Result of :func:`calibrate_copy`.

    Attributes
    ----------
    latency : float
        Alpha of the bandwidth-bound copies. [s]
    bandwidth : units.Bandwidth
        Per-direction rate of large copies.
    issue_floor : float
        Median time per copy of the issue-bound (small) copies. [s]
    n_fit : int
        Number of points used for the alpha-beta fit.
    """

    latency: float
    bandwidth: units.Bandwidth
    issue_floor: float
    n_fit: int


@finite_answer
def calibrate_copy(message_bytes, times, *, bandwidth_bound=2.0,
                   weighting="relative"):
    r"""Fit the copy model :func:`host_copy_time` to a measured sweep.

    The issue floor it returns is the measuring program's per-call cost (PyTorch or
    the CUDA runtime), the latency and bandwidth the hardware's.

    Parameters
    ----------
    message_bytes : array_like
        Copy sizes, > 0. [B]
    times : array_like
        Measured time per copy, same length, > 0. [s]
    bandwidth_bound : float
        Points taking at least this multiple of the fastest copy count as
        bandwidth-bound and enter the alpha-beta fit; >= 1.
    weighting : {"relative", "absolute"}
        Passed to :func:`gpulab.links.fit_alpha_beta`.

    Returns
    -------
    CopyFit

    Notes
    -----
    1. Bandwidth-bound points: :math:`t_i \ge k \min_j t_j` (:math:`k` =
       ``bandwidth_bound``). :math:`\alpha, B` =
       :func:`gpulab.links.fit_alpha_beta` on them.
    2. Issue floor :math:`t_\text{issue}` = the median time of the other
       (issue-bound) points; the fastest copy if there are none. The median is
       robust to a single fast or slow outlier among the small copies.

    Examples
    --------
    >>> s = [4096, 65536, 2**20, 2**24, 2**28]
    >>> t = [max(24e-6, 5e-6 + x / 55e9) for x in s]
    >>> fit = calibrate_copy(s, t)
    >>> round(fit.latency * 1e6, 3), round(fit.bandwidth.gb_per_s, 3), fit.n_fit
    (5.0, 55.0, 2)
    """
    s = np.atleast_1d(as_number("message_bytes", message_bytes, low=0,
                                high=2.0 ** 60, low_inclusive=False))   # <= 1 EiB
    t = np.atleast_1d(as_number("times", times, low=0, low_inclusive=False))
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("message_bytes and times must be 1-D and of equal length; "
                         f"got shapes {s.shape} and {t.shape}")
    k = as_number("bandwidth_bound", bandwidth_bound, low=1, allow_array=False)
    check_choice("weighting", weighting, ("relative", "absolute"))
    mask = t >= k * float(t.min())
    floor = float(np.median(t[~mask])) if np.any(~mask) else float(t.min())
    if np.unique(s[mask]).size < 2:
        raise ValueError(f"message_bytes, times: fewer than two sizes take >= bandwidth_bound "
                         f"({k:g}) x the fastest copy; measure larger copies or "
                         "lower bandwidth_bound")
    alpha, bw = links.fit_alpha_beta(s[mask], t[mask], weighting=weighting)
    return CopyFit(latency=alpha, bandwidth=bw, issue_floor=floor,
                   n_fit=int(mask.sum()))


_RUN_KINDS = {("pinned", "h2d"): "h2d_pinned", ("pinned", "d2h"): "d2h_pinned",
              ("pageable", "h2d"): "h2d_pageable", ("pageable", "d2h"): "d2h_pageable",
              ("p2p", None): "p2p"}


def calibrate_copies(run=None, *, system="h200-x2-measured"):
    r"""Calibrate every copy kind of a recorded sweep, as stored in ``systems.yaml``.

    For the PyTorch-loop model (``host_copy`` / ``p2p``): its ``issue_floor_s`` is
    PyTorch ``copy_``'s per-call cost. The hardware apart from the caller is fitted
    by :func:`calibrate_copy_hardware`.

    Parameters
    ----------
    run : measurements.CopyRun or None
        A recorded sweep with kinds ``h2d_pinned``, ``d2h_pinned``,
        ``h2d_pageable``, ``d2h_pageable`` and ``p2p``; default: our 2x H200 run
        (``measurements.copy_bandwidth()``).
    system : str or systems.System
        The measured machine: its PCIe link and NVLink set the nominal rates the
        efficiencies refer to.

    Returns
    -------
    dict
        ``{"pinned": {"h2d": {...}, "d2h": {...}}, "pageable": {...}, "p2p": {...}}``
        with ``latency_s``, ``issue_floor_s`` and ``efficiency`` (pinned, p2p) or
        ``host_memcpy_gb_per_s`` (pageable): the keys of ``systems.yaml``. If the
        run has ``p2p_via_host`` (GPU to pinned host memory to GPU, what a
        transport without P2P does), also ``"p2p_via_host"``, whose efficiency
        refers to the encoded PCIe rate (the ``via: host`` path of a system).

    Notes
    -----
    Pinned and p2p: :func:`calibrate_copy`, then
    :math:`\eta = B_\text{fit} / B_\text{nominal}`. Pageable: :func:`calibrate_copy`
    on the pageable sweep, then the memcpy rate that :func:`staged_bandwidth`
    needs to reproduce the fitted rate from the fitted pinned rate:
    :math:`1/B_\text{memcpy} = 1/B_\text{pageable} - 1/B_\text{pinned}`.

    Examples
    --------
    >>> cal = calibrate_copies()
    >>> round(cal["pinned"]["h2d"]["efficiency"], 2)
    0.88
    >>> round(cal["pageable"]["h2d"]["host_memcpy_gb_per_s"])   # GB/s
    29
    """
    from .. import measurements

    if run is None:
        run = measurements.copy_bandwidth()
    if not isinstance(run, measurements.CopyRun):
        raise ValueError(f"run must be a measurements.CopyRun or None; got {run!r}")
    missing = [k for k in _RUN_KINDS.values() if k not in run.kinds]
    if missing:
        raise ValueError(f"run: missing copy kinds {missing} (has {sorted(run.kinds)})")
    sys = systems.resolve(system)

    def fit(kind):
        return calibrate_copy(run.kinds[kind][0], run.times[kind])

    out = {"pinned": {}, "pageable": {}}
    pinned_fit = {}
    for d in ("h2d", "d2h"):
        f = fit(_RUN_KINDS[("pinned", d)])
        pinned_fit[d] = f
        out["pinned"][d] = {"latency_s": f.latency, "issue_floor_s": f.issue_floor,
                            "efficiency": f.bandwidth / _nominal(sys, d)}
    for d in ("h2d", "d2h"):
        f = fit(_RUN_KINDS[("pageable", d)])
        inv = 1.0 / f.bandwidth.bytes_per_s - 1.0 / pinned_fit[d].bandwidth.bytes_per_s
        if inv <= 0:
            raise ValueError(f"run: pageable {d} copies are not slower than pinned "
                             "ones; cannot derive a host memcpy rate")
        out["pageable"][d] = {"latency_s": f.latency, "issue_floor_s": f.issue_floor,
                              "host_memcpy_gb_per_s": 1.0 / inv / units.GB}
    f = fit("p2p")
    out["p2p"] = {"latency_s": f.latency, "issue_floor_s": f.issue_floor,
                  "efficiency": f.bandwidth / _nominal(sys, "p2p")}
    if "p2p_via_host" in run.kinds:      # GPU -> pinned host -> GPU (no P2P)
        f = fit("p2p_via_host")
        out["p2p_via_host"] = {"latency_s": f.latency, "issue_floor_s": f.issue_floor,
                               "efficiency": f.bandwidth / _nominal(sys, "h2d")}
    return out


@functools.lru_cache(maxsize=None)
def _transport_share_items():
    enc = encoded_bandwidth(5, 16)
    return (("P2P/NVLink", copy_bandwidth("p2p", system="hgx-h200")
             / links.nvlink_gpu_bandwidth(4)),
            ("P2P/PCIe", copy_bandwidth("p2p", system="h100-pcie") / enc),
            ("SHM", measurements.copy_bandwidth().peak("p2p_via_host") / enc))


def transport_shares():
    """Achieved share of a path's line rate per NCCL transport, from the course data.

    ``"P2P/NVLink"``: the ``hgx-h200`` preset's GPU-to-GPU copy (our 2x H200 runs) over
    18 NVLink4 links; ``"P2P/PCIe"``: the ``h100-pcie`` preset's copy over the encoded
    Gen5 x16 rate; ``"SHM"``: our measured GPU -> pinned host -> GPU copies over the
    same rate. Ratios of per-direction bandwidths (dimensionless).

    Returns
    -------
    dict
        Transport name -> share (a new dict per call).

    Examples
    --------
    >>> shares = transport_shares()
    >>> sorted(shares), all(0 < v < 1 for v in shares.values())
    (['P2P/NVLink', 'P2P/PCIe', 'SHM'], True)
    """
    return dict(_transport_share_items())
