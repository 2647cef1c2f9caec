"""Is NVLink worth it: speedup, slowdown, cost per token and the break-even price
ratio, and the purchase comparison of an NVLink and a PCIe cluster.

Units are SI: bytes, seconds, FLOP, FLOP/s.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass


from .._validate import as_number, check_choice, check_int, finite_answer
from .chooser import rank_layouts
from .efficiency import PRECISIONS, RECIPES
from .layout import cluster
from .model import model as model_of
from .model import model_names


# --- speedup, slowdown, ROI --------------------------------------------------------
@finite_answer
def speedup(t_fast, t_slow):
    r"""How much faster the fast configuration is: :math:`t_\text{slow}/t_\text{fast}
    - 1`.

    Parameters
    ----------
    t_fast, t_slow : float
        Times of the same work (step times, or 1 / throughput). [s]

    Returns
    -------
    float
        Fractional gain in throughput (0.52 = 52% faster).

    Notes
    -----
    Speedup and slowdown are different numbers for the same pair:
    :math:`(1 + \text{speedup})(1 - \text{slowdown}) = 1`. The source article's
    3.2 vs 2.1 samples/s is a 52% speedup of NVLink, or a 34% slowdown of PCIe,
    never a "34% gain".

    Examples
    --------
    >>> round(speedup(1 / 3.2, 1 / 2.1), 3), round(slowdown(1 / 3.2, 1 / 2.1), 3)
    (0.524, 0.344)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    return s / f - 1.0


@finite_answer
def slowdown(t_fast, t_slow):
    r"""Throughput the slow configuration loses: :math:`1 - t_\text{fast}/t_\text{slow}`.

    Parameters
    ----------
    t_fast, t_slow : float
        Times of the same work. [s]

    Returns
    -------
    float
        Fraction of the fast configuration's throughput lost (0.34 = 34% slower).

    Examples
    --------
    >>> g, s = speedup(2.0, 3.0), slowdown(2.0, 3.0)
    >>> round(g, 4), round(s, 4), round((1 + g) * (1 - s), 12)
    (0.5, 0.3333, 1.0)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    return 1.0 - f / s


@dataclass(frozen=True)
class ROI:
    """NVLink-vs-PCIe comparison of one training project (see :func:`nvlink_roi`).

    Times in seconds, money in the price's currency, throughput in tokens/s.
    """

    speedup: float
    slowdown: float
    tokens_per_s_fast: float
    tokens_per_s_slow: float
    project_s_fast: float
    project_s_slow: float
    time_saved_s: float
    cost_fast: float
    cost_slow: float
    cost_per_mtoken_fast: float
    cost_per_mtoken_slow: float
    savings: float
    breakeven_price_ratio: float


@finite_answer
def nvlink_roi(t_fast, t_slow, *, tokens_per_step, price_fast, price_slow, n_gpus,
               project_tokens):
    r"""Is the faster (NVLink) cluster worth its price for one training project?

    Parameters
    ----------
    t_fast, t_slow : float
        Step times of the fast (e.g. NVLink) and slow (e.g. PCIe) cluster. [s]
    tokens_per_step : float
        Tokens per step (global batch x sequence length), the same on both.
    price_fast, price_slow : float
        Price per GPU-hour of each cluster (any currency, the same for both).
    n_gpus : int
        GPUs in each cluster.
    project_tokens : float
        Tokens to train on.

    Returns
    -------
    ROI

    Notes
    -----
    .. math::

        T_i = \frac{N_\text{tok}}{\text{tokens}_i/\text{s}}, \quad
        C_i = T_i\,[\text{h}] \cdot n \cdot \text{price}_i, \quad
        \frac{\text{price}_\text{fast}}{\text{price}_\text{slow}}\bigg|_\text{break-even}
        = \frac{t_\text{slow}}{t_\text{fast}} = 1 + \text{speedup}

    The fast cluster is cheaper per token whenever its price per GPU-hour is less
    than ``1 + speedup`` times the slow one's; it also finishes
    ``time_saved_s`` earlier (time to market), which this function does not price.

    Examples
    --------
    >>> r = nvlink_roi(1 / 3.2, 1 / 2.1, tokens_per_step=1, price_fast=3.0,
    ...                price_slow=2.0, n_gpus=8, project_tokens=1e6)
    >>> round(r.speedup, 3), round(r.breakeven_price_ratio, 3), r.savings > 0
    (0.524, 1.524, True)
    """
    f = as_number("t_fast", t_fast, low=0, low_inclusive=False, allow_array=False)
    s = as_number("t_slow", t_slow, low=0, low_inclusive=False, allow_array=False)
    tok = as_number("tokens_per_step", tokens_per_step, low=0, low_inclusive=False,
                    allow_array=False)
    pf = as_number("price_fast", price_fast, low=0, allow_array=False)
    ps = as_number("price_slow", price_slow, low=0, allow_array=False)
    n = check_int("n_gpus", n_gpus, low=1, high=10**9)
    proj = as_number("project_tokens", project_tokens, low=0, low_inclusive=False,
                     allow_array=False)
    rf, rs = tok / f, tok / s
    tf, ts = proj / rf, proj / rs
    cf, cs = tf / 3600 * n * pf, ts / 3600 * n * ps
    return ROI(speedup(f, s), slowdown(f, s), rf, rs, tf, ts, ts - tf, cf, cs,
               cf / proj * 1e6, cs / proj * 1e6, cs - cf, s / f)


# --- the NVLink-vs-PCIe purchase comparison ------------------------------------------
#: Systems offered as the fast (NVLink) and the slow (PCIe) side of the comparison.
ROI_FAST_SYSTEMS = ("dgx-h100", "hgx-h200")
ROI_SLOW_SYSTEMS = ("h100-pcie",)
#: Node counts compared (8 GPUs per node).
ROI_NODES = (1, 2, 4, 8)
#: Sequences per optimizer step in every ROI comparison (the same on both sides).
ROI_GLOBAL_BATCH = 512
#: Options the chooser tries on both sides (rank_layouts keywords; ZeRO-1 default).
ROI_SEARCH = {"recompute": ("none", "selective"), "sequence_parallel": (False, True)}
#: ILLUSTRATIVE example prices per GPU-hour [USD], NOT quotes or hardware data:
#: change them to your own offers.
ROI_EXAMPLE_PRICES = {"fast": 3.00, "slow": 2.25}
#: A preset without a network (the PCIe box) borrows this preset's scale-out
#: network when spread over several nodes (an assumption: one 400 Gb/s NIC per GPU).
ROI_NETWORK_FROM = "dgx-h100"


def roi_cluster(system, nodes):
    """``cluster(system, nodes)``; a preset without a network section first borrows
    the network of :data:`ROI_NETWORK_FROM` (an assumption of the purchase
    comparison, so that PCIe servers can form a cluster).

    >>> roi_cluster("h100-pcie", 2).n_gpus
    16
    """
    nodes = check_int("nodes", nodes, low=1, high=100_000)
    return cluster(system, nodes, network_from=ROI_NETWORK_FROM if nodes > 1 else None)


@functools.lru_cache(maxsize=256)
def _best(model, system, nodes, precision, recipe="compiled"):
    """The chooser's best StepTime, or the ValueError saying why nothing fits."""
    r = rank_layouts(model, roi_cluster(system, nodes),
                     global_batch=ROI_GLOBAL_BATCH, precision=precision, recipe=recipe,
                     **ROI_SEARCH)
    if r.best is not None:
        return r.best.step
    least = min((x for x in r.invalid if x.step is not None),
                key=lambda x: x.step.memory.total, default=None)
    why = least.reasons[0] if least is not None else \
        (r.invalid[0].reasons[0] if r.invalid else "no layout")
    return ValueError(f"{model} does not fit on {nodes} node(s) of {system}: "
                      f"{why}; add nodes")


def roi_best_step(model, system, nodes, *, precision="bf16", recipe="compiled"):
    """The fastest layout of ``model`` on ``nodes`` nodes of ``system`` (a StepTime).

    :func:`rank_layouts` with the options :data:`ROI_SEARCH` and global batch
    :data:`ROI_GLOBAL_BATCH` on :func:`roi_cluster`; results are cached, since the
    chooser is deterministic. ``precision``, ``recipe``: as in :func:`step_time`.

    Raises
    ------
    ValueError
        If no layout fits (the message says why the nearest one does not).
    """
    check_choice("model", model, model_names())
    check_choice("system", system, ROI_FAST_SYSTEMS + ROI_SLOW_SYSTEMS)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes not in ROI_NODES:
        raise ValueError(f"nodes must be one of {ROI_NODES}; got {nodes!r}")
    check_choice("precision", precision, PRECISIONS)
    check_choice("recipe", recipe, RECIPES)
    got = _best(model, system, nodes, precision, recipe)
    if isinstance(got, Exception):
        raise ValueError(str(got))
    return got


@finite_answer
def roi_comparison(model, nodes, fast, slow, *, price_fast, price_slow,
                   project_tokens, precision="bf16", recipe="compiled"):
    """NVLink vs PCIe for one training project: both best layouts and the ROI.

    Parameters
    ----------
    model : str
        A :func:`model_names` preset.
    nodes : int
        One of :data:`ROI_NODES` (8 GPUs each).
    fast, slow : str
        One of :data:`ROI_FAST_SYSTEMS` and :data:`ROI_SLOW_SYSTEMS`.
    price_fast, price_slow : float
        Price per GPU-hour of each system, [0, 1000]. [USD]
    project_tokens : float
        Tokens the project trains on, [1e9, 1e13].
    precision : {"bf16", "fp8"}
        As in :func:`step_time`, on both systems.
    recipe : {"compiled", "compiled-rowwise", "eager"}
        As in :func:`step_time`.

    Returns
    -------
    roi : ROI
        :func:`nvlink_roi` of the two step times.
    steps : tuple of StepTime
        The fast and the slow system's best layouts.

    Examples
    --------
    >>> roi, (sf, ss) = roi_comparison("13b", 1, "hgx-h200", "h100-pcie",
    ...                                price_fast=3.0, price_slow=2.25,
    ...                                project_tokens=100e9)
    >>> bool(roi.speedup > 0), sf.total < ss.total
    (True, True)
    """
    check_choice("fast", fast, ROI_FAST_SYSTEMS)
    check_choice("slow", slow, ROI_SLOW_SYSTEMS)
    sf = roi_best_step(model, fast, nodes, precision=precision, recipe=recipe)
    ss = roi_best_step(model, slow, nodes, precision=precision, recipe=recipe)
    spec = model_of(model)
    roi = nvlink_roi(sf.total, ss.total,
                     tokens_per_step=ROI_GLOBAL_BATCH * spec.seq_len,
                     price_fast=price_fast, price_slow=price_slow,
                     n_gpus=roi_cluster(fast, nodes).n_gpus,
                     project_tokens=project_tokens)
    return roi, (sf, ss)
