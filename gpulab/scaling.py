r"""Why interconnect matters: compute vs link growth, and N-GPU scaling efficiency.

Two questions of the scaling topic:

1. *How much faster did compute and NVLink get between GPU generations?* Compare
   like with like (dense FP16/BF16 with dense FP16/BF16; per-direction link rate
   with per-direction link rate) with :func:`growth` and :func:`growth_table`.
2. *What does communication do to N-GPU scaling?* With compute time
   :math:`T_c` and communication time :math:`T_m` per step, a fraction
   :math:`o` of which is hidden behind compute,

   .. math:: \eta = \frac{T_c}{T_c + (1-o)\,T_m}, \qquad N_\text{eff} = \eta N

   ("8 GPUs deliver 4" means :math:`\eta = 0.5`: exposed communication as long as
   the compute). :func:`data_parallel_step` fills in :math:`T_c` from FLOPs and
   :math:`T_m` from a ring AllReduce of the gradients over NVLink.

Examples
--------
>>> from gpulab import scaling
>>> round(scaling.growth("V100", "H100", "fp16_dense_flops"), 2)
7.92
>>> scaling.growth("V100", "H100", "nvlink_bandwidth")
3.0
>>> scaling.scaling_efficiency(1.0, 1.0)
0.5
"""
from __future__ import annotations

from dataclasses import dataclass


from . import collectives, links, specs, units
from ._validate import as_number, check_choice, check_int, finite_answer, finite_message, finite_result

__all__ = [
    "METRICS", "gpu_names", "assumption", "assumption_info", "growth", "growth_table", "scaling_efficiency",
    "effective_gpus", "exposed_comm_share", "DPStep", "data_parallel_step",
    "breakeven_tokens_per_gpu",
]

#: Metrics :func:`growth` can compare, with their unit.
METRICS = {
    "fp16_dense_flops": "FLOP/s (dense FP16/BF16 Tensor Core)",
    "fp8_dense_flops": "FLOP/s (dense FP8 Tensor Core)",
    "nvlink_bandwidth": "B/s per direction (all NVLink links of one GPU)",
    "memory_bandwidth": "B/s (HBM)",
    "memory_bytes": "B (HBM capacity)",
}


def assumption(name):
    """Value of a documented model assumption in ``data/assumptions.yaml``
    (:func:`gpulab.specs.assumption` of the ``"course"`` table).

    >>> assumption("nvlink_allreduce_efficiency")
    0.82
    """
    return float(specs.assumption("course", name))


def assumption_info(name):
    """The full record of an assumption: ``{value, kind, meaning, source, accessed}``.

    >>> assumption_info("mfu")["kind"]
    'assumed'
    """
    return dict(specs.assumption_record("course", name))


def gpu_names():
    """GPUs this module models: those with NVLink (its growth table compares NVLink
    generations and its data-parallel step runs over NVLink); PCIe-only cards such
    as the L40S are left out.

    >>> "H100" in gpu_names(), "L40S" in gpu_names()
    (True, False)
    """
    return [n for n in specs.gpu_names() if specs.gpu(n).nvlink_links > 0]


def _gpu(name, param):
    """``specs.gpu(name)`` with the error naming the caller's parameter."""
    names = gpu_names()
    if not isinstance(name, str) or name not in names:
        raise ValueError(f"{param} must be one of {', '.join(map(repr, names))}; "
                         f"got {name!r}")
    return specs.gpu(name)


def _metric(gpu, metric, param="gpu"):
    g = _gpu(gpu, param)
    check_choice("metric", metric, METRICS)
    if metric == "nvlink_bandwidth":
        return links.nvlink_gpu_bandwidth(g.nvlink_generation,
                                          g.nvlink_links).bytes_per_s
    value = getattr(g, metric)
    if value is None:
        raise ValueError(f"metric {metric!r} is not defined for {gpu} "
                         "(it has no FP8 Tensor Cores)")
    return value


def growth(from_gpu, to_gpu, metric):
    """Ratio ``metric(to_gpu) / metric(from_gpu)``, like for like.

    Parameters
    ----------
    from_gpu, to_gpu : str
        GPU names in ``data/gpus.csv`` (e.g. ``"V100"``, ``"H100"``).
    metric : str
        One of :data:`METRICS`.

    Examples
    --------
    >>> round(growth("V100", "B200", "fp16_dense_flops"), 1)
    18.0
    """
    return _metric(to_gpu, metric, "to_gpu") / _metric(from_gpu, metric, "from_gpu")


def growth_table(gpus=None, baseline="V100"):
    """Rows of ``{gpu, metric: ratio to baseline}`` for compute, NVLink and HBM.

    FP8 is left out: the baseline V100 has none, and comparing FP8 with FP16 is the
    apples-to-oranges mistake the course corrects.
    """
    if gpus is None:
        names = gpu_names()
    elif isinstance(gpus, str) or not hasattr(gpus, "__iter__"):
        raise ValueError(f"gpus must be a sequence of GPU names; got {gpus!r}")
    else:
        names = list(gpus)
    if not names:
        raise ValueError("gpus must name at least one GPU")
    for n in names:
        _gpu(n, "gpus")
    _gpu(baseline, "baseline")
    metrics = ("fp16_dense_flops", "nvlink_bandwidth", "memory_bandwidth")
    return [{"gpu": n, **{m: growth(baseline, n, m) for m in metrics}} for n in names]


@finite_answer
def scaling_efficiency(compute_time, comm_time, overlap=0.0):
    r"""Fraction of ideal speed-up kept when communication is partly exposed.

    Parameters
    ----------
    compute_time : numeric
        Compute time of one step on one GPU. [s]
    comm_time : numeric
        Communication time of one step. [s]
    overlap : numeric, default 0
        Fraction of the communication hidden behind compute, in [0, 1].

    Returns
    -------
    numeric
        :math:`\eta = T_c / (T_c + (1-o) T_m)`, in (0, 1].

    Examples
    --------
    >>> scaling_efficiency(3.0, 1.0)
    0.75
    >>> scaling_efficiency(3.0, 1.0, overlap=1.0)
    1.0
    """
    tc = as_number("compute_time", compute_time, low=0, low_inclusive=False)
    tm = as_number("comm_time", comm_time, low=0)
    o = as_number("overlap", overlap, low=0, high=1)
    return tc / (tc + (1.0 - o) * tm)


@finite_answer
def effective_gpus(n_gpus, compute_time, comm_time, overlap=0.0):
    """GPUs' worth of useful work: ``n_gpus * scaling_efficiency(...)``.

    >>> effective_gpus(8, 1.0, 1.0)
    4.0
    """
    n = check_int("n_gpus", n_gpus, low=1, high=1_000_000)
    return n * scaling_efficiency(compute_time, comm_time, overlap)


@finite_answer
def exposed_comm_share(compute_time, comm_time, overlap=0.0):
    """Share of the step spent in exposed communication (``1 - efficiency``)."""
    return 1.0 - scaling_efficiency(compute_time, comm_time, overlap)


@dataclass(frozen=True)
class DPStep:
    """One data-parallel training step, modelled (all times in seconds)."""

    gpu: str
    n_gpus: int
    params: float
    tokens_per_gpu: float
    compute_time: float
    comm_time: float
    exposed_comm_time: float
    step_time: float
    efficiency: float
    effective_gpus: float
    bandwidth: units.Bandwidth


def _effective_nvlink(gpu, link_efficiency):
    g = _gpu(gpu, "gpu")
    eff = assumption("nvlink_allreduce_efficiency") if link_efficiency is None \
        else as_number("link_efficiency", link_efficiency, low=0, high=1,
                       low_inclusive=False, allow_array=False)
    return links.nvlink_gpu_bandwidth(g.nvlink_generation, g.nvlink_links) * eff


@finite_answer
def data_parallel_step(gpu="H100", n_gpus=8, params=7e9, tokens_per_gpu=16384,
                       *, mfu=None, overlap=0.0, latency=None, link_efficiency=None,
                       bandwidth=None):
    r"""Model one data-parallel step: FLOPs for compute, ring AllReduce for gradients.

    Parameters
    ----------
    gpu : str
        GPU name (its dense FP16/BF16 peak and NVLink are used).
    n_gpus : int
        Data-parallel GPUs, >= 1.
    params : float
        Model parameters, > 0.
    tokens_per_gpu : float
        Tokens each GPU processes per step (micro-batch x sequence x accumulation).
    mfu : float, optional
        Model FLOPs utilisation in (0, 1]; default from ``assumptions.yaml``.
    overlap : float
        Fraction of the AllReduce hidden behind the backward pass, in [0, 1].
    latency : float, optional
        Per-step ring latency [s]; default from ``assumptions.yaml``.
    link_efficiency : float, optional
        Achieved fraction of the NVLink line rate; default from ``assumptions.yaml``.
    bandwidth : units.Bandwidth, optional
        Use this per-direction bandwidth instead of the GPU's NVLink (e.g. PCIe).

    Returns
    -------
    DPStep

    Notes
    -----
    .. math::

        T_c = \frac{6 P D}{F \cdot \mathrm{MFU}}, \qquad
        T_m = 2(n-1)\alpha + \frac{2(n-1)}{n}\frac{g P}{B\,e}

    with ``P`` parameters, ``D`` tokens per GPU, ``F`` dense peak, ``g`` gradient
    bytes per parameter, ``B`` per-direction NVLink rate and ``e`` its achieved
    fraction. The 6PD rule counts forward (2PD) and backward (4PD) matmul FLOPs
    (Kaplan et al. 2020).

    Examples
    --------
    >>> s = data_parallel_step("H100", 8, params=7e9, tokens_per_gpu=16384)
    >>> round(s.efficiency, 3)
    0.963
    """
    g = _gpu(gpu, "gpu")
    n = check_int("n_gpus", n_gpus, low=1, high=1_000_000)
    p = as_number("params", params, low=0, low_inclusive=False, allow_array=False)
    d = as_number("tokens_per_gpu", tokens_per_gpu, low=0, low_inclusive=False,
                  allow_array=False)
    m = assumption("mfu") if mfu is None else as_number(
        "mfu", mfu, low=0, high=1, low_inclusive=False, allow_array=False)
    o = as_number("overlap", overlap, low=0, high=1, allow_array=False)
    a = assumption("ring_step_latency_s") if latency is None else as_number(
        "latency", latency, low=0, allow_array=False)
    if bandwidth is None:
        bw = _effective_nvlink(gpu, link_efficiency)
    else:
        if not isinstance(bandwidth, units.Bandwidth):
            raise ValueError("bandwidth must be a gpulab.units.Bandwidth; "
                             f"got {bandwidth!r}")
        bw = bandwidth
    tc = finite_result(6.0 * p * d / (g.fp16_dense_flops * m), params=p,
                       tokens_per_gpu=d, mfu=m)
    if not tc > 0:                       # a subnormal params x tokens underflows
        raise ValueError(f"params x tokens_per_gpu = {p:g} x {d:g} is too small: the "
                         "compute time underflows to 0 s; use a realistic model size "
                         "and batch")
    grad_bytes = finite_result(p * assumption("gradient_bytes_per_param"), params=p)
    try:
        tm = float(collectives.ring_allreduce_time(grad_bytes, n, bw, a))
    except ValueError as exc:          # overflow of the ring time: name our inputs
        if "overflows" not in str(exc):
            raise
        raise ValueError(finite_message(params=p, n_gpus=n, latency=a)) from None
    exposed = (1.0 - o) * tm
    eff = scaling_efficiency(tc, tm, o)
    return DPStep(gpu=gpu, n_gpus=n, params=p, tokens_per_gpu=d, compute_time=tc,
                  comm_time=tm, exposed_comm_time=exposed, step_time=tc + exposed,
                  efficiency=eff, effective_gpus=n * eff, bandwidth=bw)


@finite_answer
def breakeven_tokens_per_gpu(gpu, n_gpus=8, *, mfu=None, link_efficiency=None):
    r"""Tokens per GPU per step at which gradient AllReduce time equals compute time.

    Below this per-GPU batch, an un-overlapped data-parallel step spends more time
    communicating than computing (efficiency < 50%: "8 GPUs deliver 4"). Latency is
    neglected, so the result does not depend on the model size:

    .. math:: D^* = \frac{2(n-1)}{n}\,\frac{g\,F\,\mathrm{MFU}}{6\,B\,e}

    It grows with the compute-to-bandwidth ratio ``F / B`` of the GPU, which is why
    faster compute with slower-growing links raises the bar.

    Examples
    --------
    >>> round(breakeven_tokens_per_gpu("H100") / breakeven_tokens_per_gpu("V100"), 2)
    2.64
    """
    g = _gpu(gpu, "gpu")
    n = check_int("n_gpus", n_gpus, low=2, high=1_000_000)
    m = assumption("mfu") if mfu is None else as_number(
        "mfu", mfu, low=0, high=1, low_inclusive=False, allow_array=False)
    bw = _effective_nvlink(gpu, link_efficiency)
    gbytes = assumption("gradient_bytes_per_param")
    return 2 * (n - 1) / n * gbytes * g.fp16_dense_flops * m / (6 * bw.bytes_per_s)
