r"""Power-limited clocks: how fast a GH100 runs dense tensor-core work at its board limit.

A Hopper board held at its power limit lowers the SM clock until the power fits. Our H200
(700 W) already runs a cuBLAS 8192^3 BF16 product at about 1.47 GHz, not its 1.98 GHz top
clock (:func:`gpulab.measurements.gemm_power_trace`), and the compute model's efficiencies
were measured on that board, at that clock. An H100 held at 500 W (torchtitan's Grand
Teton hosts) runs the same work slower; the published FLOP/s peaks do not say so.

The model is ours, read from one sweep on our H200
(:func:`gpulab.measurements.power_clock_sweep`): tensor-core tile products keep exactly
:math:`k` SMs busy, so the board's power is

.. math::

    P = P_s + k\,p(f), \qquad p(f) = p_\mathrm{top}\,(f / f_\mathrm{top})^{\alpha}

with :math:`P_s` the power that does not scale with the busy SMs (the idle board, HBM,
the uncore) and :math:`p(f)` one busy SM's power at clock :math:`f`. While few SMs are
busy the board stays under its limit at the top clock and :math:`P` grows linearly in
:math:`k` (that line gives :math:`P_s` and :math:`p_\mathrm{top}`); once the limit is
reached the driver lowers :math:`f` until :math:`P_s + k\,p(f)` equals it, and each such
point gives :math:`p` at its clock (the fit gives :math:`\alpha`). Every other capped point
is held out and its clock predicted.

A board with another limit :math:`P'` running the production GEMM that ran at
:math:`(P_\mathrm{ref}, f_\mathrm{ref})` on ours settles at

.. math::

    f' = f_\mathrm{ref} \left(\frac{P' - P_s}{P_\mathrm{ref} - P_s}\right)^{1/\alpha},
    \quad f' \le f_\mathrm{top},

with :math:`P_\mathrm{ref}` our board's limit (the production GEMM holds it there), and
the compute terms of the step model run :math:`f'/f_\mathrm{ref}` as fast
(:func:`clock_factor`). Assumptions, said where the number is used: the same chip (the
H100 SXM and the H200 are both GH100 with 132 SMs), the same :math:`P_s` on an HBM2e
board as on our HBM3e one, the same :math:`\alpha` for the production GEMM as for the
sweep's kernel, and the whole compute time paced by the GEMM's clock (memory-bound work
is not slowed). Other chips (A100, B200, PCIe cards) are not modelled: factor 1.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from .. import measurements, specs
from .._validate import as_number, check_choice

#: Precisions with a power/clock curve of their own (the sweep's dtypes).
POWER_PRECISIONS = ("bf16", "fp8")
#: A point is under the limit (top clock) when the cap acted in less than this share of
#: its samples, and capped when in more than 1 - this.
_CAP_SHARE = 0.2


_IGNORED = [False]


@contextlib.contextmanager
def ignoring_limits():
    """Within the block, :func:`clock_factor` is 1 for every GPU: the model as it was
    before it knew power limits (for before/after comparisons, e.g.
    ``published_fp8_check(power_limits=False)``).

    >>> h100 = specs.gpu("H100", "SXM5 96GB HBM2e")
    >>> with ignoring_limits():
    ...     clock_factor(h100)
    1.0
    >>> clock_factor(h100) < 1
    True
    """
    before = _IGNORED[0]
    _IGNORED[0] = True
    try:
        yield
    finally:
        _IGNORED[0] = before


def _spec(gpu_spec):
    if not isinstance(gpu_spec, specs.GPUSpec):
        raise ValueError(f"gpu_spec must be a GPU record (gpulab.specs.gpu(...)); "
                         f"got {gpu_spec!r}"[:200])
    return gpu_spec


def _gh100_sxm(gpu_spec):
    return gpu_spec.name in ("H100", "H200") and gpu_spec.nvlink_links == 18 \
        and gpu_spec.power_limit is not None


@functools.lru_cache(maxsize=1)
def power_clock_fit():
    """The power/clock curve of :math:`k` busy SMs on our H200, fitted on the BF16 sweep.

    :math:`P_s` and :math:`p_\\mathrm{top}` come from the points under the limit,
    :math:`\\alpha` from every other capped point; the other capped points are held out.
    The FP8 sweep is recorded but not used: its Triton kernel did not run as a
    tensor-core kernel (about 106 TFLOP/s on all 132 SMs) and never reached the limit.
    :math:`\\alpha` describes the chip's voltage/frequency scaling, so FP8 work uses the
    same :math:`\\alpha` and :math:`P_s`, anchored on its own cuBLAS product (an
    assumption: only the work's switching per clock differs).

    Returns
    -------
    dict
        ``static_w`` (:math:`P_s`), ``sm_top_w`` (:math:`p_\\mathrm{top}`), ``top_mhz``,
        ``alpha``, ``limit_w`` (the board's limit), ``free`` and ``capped`` (the sweep's
        points under and at the limit, each ``(sms, power_w, sm_mhz)``), ``fit`` and
        ``held_out`` (the capped points used for :math:`\\alpha` and those held out),
        ``held_out_error`` (per held-out point, predicted / measured clock - 1),
        ``reference`` (per precision, the cuBLAS 8192^3 product on every SM:
        ``power_w``, ``sm_mhz``, ``tflops``), ``repeat`` (the BF16 points run again at
        the end, ``(sms, power_w, sm_mhz)``) and ``idle_w``.

    Examples
    --------
    >>> f = power_clock_fit()
    >>> 0 < f["static_w"] < f["limit_w"] and 2 < f["alpha"] < 3.5
    True
    """
    rows = measurements.power_clock_sweep()
    spin = sorted((r for r in rows if r["kernel"] == "triton-spin"
                   and r["dtype"] == "bf16"), key=lambda r: r["sms"])
    ref = {r["dtype"]: {"power_w": r["power_w"], "sm_mhz": r["sm_mhz"],
                        "tflops": r["tflops"]}
           for r in rows if r["kernel"] == "cublas-8192"}
    idle = [r["power_w"] for r in rows if r["kernel"] == "idle"]
    top = max(r["sm_mhz"] for r in spin)
    free = [r for r in spin if r["capped_share"] < _CAP_SHARE and r["sm_mhz"] >= top - 30]
    capped = [r for r in spin if r["capped_share"] > 1 - _CAP_SHARE]
    if len(free) < 2 or len(capped) < 3 or set(ref) != set(POWER_PRECISIONS):
        raise ValueError("the power sweep lacks points under or at the limit, or a "
                         "reference GEMM")
    k = np.array([r["sms"] for r in free], dtype=float)
    p = np.array([r["power_w"] for r in free])
    slope, static = np.polyfit(k, p, 1)
    fit, held = capped[::2], capped[1::2]
    x = np.log([r["sm_mhz"] / top for r in fit])
    y = np.log([(r["power_w"] - static) / (r["sms"] * slope) for r in fit])
    alpha = float(np.sum(x * y) / np.sum(x * x))          # through p_top at f_top
    limit = spin[0]["power_limit_w"]

    def clock(sms):
        return top * ((limit - static) / (sms * slope)) ** (1.0 / alpha)

    def pts(rs):
        return [(r["sms"], r["power_w"], r["sm_mhz"]) for r in rs]

    return {"static_w": float(static), "sm_top_w": float(slope), "top_mhz": float(top),
            "alpha": alpha, "limit_w": float(limit), "free": pts(free),
            "capped": pts(capped), "fit": pts(fit), "held_out": pts(held),
            "held_out_error": [float(clock(r["sms"]) / r["sm_mhz"] - 1.0) for r in held],
            "reference": ref,
            "repeat": pts(r for r in rows if r["kernel"] == "triton-spin-repeat"),
            "idle_w": float(np.median(idle)) if idle else float("nan")}


def power_clock_curve(sms, limit_w=None):
    """The fitted board power [W] and SM clock [MHz] with ``sms`` SMs busy on the
    sweep's BF16 work, under a board limit of ``limit_w`` (default: our H200's).

    Parameters
    ----------
    sms : int, float or array_like
        Busy SMs, in (0, 132].
    limit_w : float, optional
        Board power limit [W], above the fitted static power.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Power and clock per entry of ``sms``.

    Examples
    --------
    >>> p, f = power_clock_curve([8, 132])
    >>> bool(f[0] == power_clock_fit()["top_mhz"] and f[1] < f[0] and p[1] <= 700)
    True
    """
    f = power_clock_fit()
    k = np.atleast_1d(as_number("sms", sms, low=0, high=132, low_inclusive=False,
                                max_ndim=1))
    if k.size == 0:
        raise ValueError("sms must hold at least one busy SM count; got an empty list")
    lim = f["limit_w"] if limit_w is None else as_number(
        "limit_w", limit_w, low=f["static_w"], high=2000, low_inclusive=False,
        allow_array=False)
    with np.errstate(over="ignore", divide="ignore"):
        # a tiny busy share overflows the headroom ratio to inf: the clock is then the top
        clock = np.minimum(f["top_mhz"], f["top_mhz"] * (
            (lim - f["static_w"]) / (k * f["sm_top_w"])) ** (1.0 / f["alpha"]))
    power = f["static_w"] + k * f["sm_top_w"] * (clock / f["top_mhz"]) ** f["alpha"]
    return power, clock


def sustained_clock(gpu_spec, precision="bf16"):
    """SM clock [MHz] at which a GH100 SXM board runs the production GEMM at its own
    power limit (the module's equation), or None for other GPUs.

    Examples
    --------
    >>> h200, h100 = specs.gpu("H200"), specs.gpu("H100", "SXM5 96GB HBM2e")
    >>> sustained_clock(h200) == power_clock_fit()["reference"]["bf16"]["sm_mhz"]
    True
    >>> sustained_clock(h100) < sustained_clock(h200)      # 500 W against 700 W
    True
    """
    check_choice("precision", precision, POWER_PRECISIONS)
    if not _gh100_sxm(_spec(gpu_spec)):
        return None
    f = power_clock_fit()
    ref = f["reference"][precision]
    # the reference GEMM held our board at its limit: P_ref is that limit
    head = (gpu_spec.power_limit - f["static_w"]) / (f["limit_w"] - f["static_w"])
    if head <= 0:
        raise ValueError(f"gpu_spec: {gpu_spec.name} {gpu_spec.variant}'s power limit "
                         f"({gpu_spec.power_limit:g} W) is below the static power "
                         f"({f['static_w']:.0f} W)")
    return float(min(f["top_mhz"], ref["sm_mhz"] * head ** (1.0 / f["alpha"])))


def clock_factor(gpu_spec, precision="bf16"):
    """How fast ``gpu_spec`` runs dense compute relative to our 700 W H200, from its
    board power limit: ``sustained_clock(gpu) / sustained_clock(H200)``; 1 for GPUs the
    model does not cover (not a GH100 SXM part, or no power limit in ``gpus.csv``).

    Examples
    --------
    >>> clock_factor(specs.gpu("H100"))                    # 700 W, as our H200
    1.0
    >>> 0.7 < clock_factor(specs.gpu("H100", "SXM5 96GB HBM2e")) < 1.0
    True
    >>> clock_factor(specs.gpu("B200"))
    1.0
    """
    check_choice("precision", precision, POWER_PRECISIONS)
    _spec(gpu_spec)
    if _IGNORED[0]:
        return 1.0
    return _factor(gpu_spec, precision)


@functools.lru_cache(maxsize=64)
def _factor(gpu_spec, precision):
    f = sustained_clock(gpu_spec, precision)
    if f is None:
        return 1.0
    return f / sustained_clock(specs.gpu("H200"), precision)


def power_clock_check():
    """The fit's held-out error, the reference GEMMs and the 500 W H100's clocks.

    Returns
    -------
    dict
        ``alpha``, ``static_w``, ``sm_top_w``, ``held_out`` (points), ``worst_error`` and
        ``median_error`` of the held-out clocks (predicted / measured - 1), and per
        precision (``"bf16"``, ``"fp8"``): the reference GEMM's ``reference_mhz`` and
        ``reference_w``, the 500 W H100's (torchtitan's) ``h100_500w_mhz`` and
        ``h100_500w_factor`` (:func:`clock_factor`).

    Examples
    --------
    >>> c = power_clock_check()
    >>> abs(c["worst_error"]) < 0.05
    True
    """
    h100 = specs.gpu("H100", "SXM5 96GB HBM2e")
    f = power_clock_fit()
    e = np.asarray(f["held_out_error"])
    out = {"alpha": f["alpha"], "static_w": f["static_w"], "sm_top_w": f["sm_top_w"],
           "held_out": int(e.size), "worst_error": float(e[np.argmax(np.abs(e))]),
           "median_error": float(np.median(e))}
    for p in POWER_PRECISIONS:
        out[p] = {"reference_mhz": f["reference"][p]["sm_mhz"],
                  "reference_w": f["reference"][p]["power_w"],
                  "h100_500w_mhz": sustained_clock(h100, p),
                  "h100_500w_factor": clock_factor(h100, p)}
    return out
