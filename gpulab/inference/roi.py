r"""Buying for inference: the best serving layout of a server at a TPOT target, and
its tokens per second per GPU and per dollar.

A server of ``n`` GPUs serves a model as ``n / (tp x pp)`` independent replicas of a
``tp x pp`` instance. For each layout this module finds the largest batch (of
:data:`BATCHES`) whose time per output token (TPOT, :func:`gpulab.inference.decode_step`)
meets the target and whose weights and KV cache fit in memory, then keeps the layout
with the most tokens per second per GPU. Prices are **inputs** (USD per GPU-hour):

.. math::

    \text{tokens per USD} = \frac{3600\ \mathrm{s/h} \times \text{tokens/s per GPU}}
                                 {\text{price per GPU-hour}}

:data:`EXAMPLE_PRICES` holds illustrative prices, not quotes.

Examples
--------
>>> from gpulab.inference import roi
>>> best = roi.best_layout("llama3-70b", "hgx-h200", tpot_target=0.05, context=4096)
>>> best.meets_target and best.tp * best.pp * best.replicas == 8
True
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import systems
from .._validate import as_number, check_choice, check_int
from ..parallelism import ROI_EXAMPLE_PRICES
from . import published
from .serving import ALLREDUCE, decode_step

__all__ = ["SYSTEMS", "BATCHES", "EXAMPLE_PRICES", "ServingOption", "layout_options",
           "best_layout", "tokens_per_dollar", "buying_table", "published_tpot_checks"]

#: Server presets compared for serving: two NVLink (HGX) servers and two PCIe ones.
SYSTEMS = ("hgx-h200", "dgx-h100", "h100-pcie", "l40s-x8")
#: Batches (sequences decoded together per instance) tried for each layout.
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: ILLUSTRATIVE prices in USD per GPU-hour, not quotes (kind: assumed): the two example
#: prices of the NVLink ROI chapter (``gpulab.parallelism.ROI_EXAMPLE_PRICES``), the
#: NVLink one for the NVLink servers and the PCIe one for the PCIe servers. The L40S
#: server gets the PCIe price too, which overprices it: set your own.
EXAMPLE_PRICES = {s: ROI_EXAMPLE_PRICES["fast" if s in ("hgx-h200", "dgx-h100") else "slow"]
                  for s in SYSTEMS}


@dataclass(frozen=True)
class ServingOption:
    """One layout of a server at a TPOT target (see :func:`layout_options`).

    Attributes
    ----------
    system : str
    tp, pp, replicas : int
        Instance layout and the number of instances on the server.
    batch : int
        Largest batch of :data:`BATCHES` meeting the target (the smallest tried if
        none does). [1]
    allreduce : str
        The TP all-reduce implementation that gave the lowest TPOT.
    tpot : float
        Time per output token. [s]
    tokens_per_s_per_gpu, tokens_per_s_server : float
        Throughput per GPU and of the whole server (all replicas). [tokens/s]
    comm_share : float
        Communication share of the TPOT. [1]
    fits_memory, meets_target : bool
    """

    system: str
    tp: int
    pp: int
    replicas: int
    batch: int
    allreduce: str
    tpot: float
    tokens_per_s_per_gpu: float
    tokens_per_s_server: float
    comm_share: float
    fits_memory: bool
    meets_target: bool

    @property
    def label(self):
        """``"TP4 x2"``-style name: TP/PP degrees and replicas."""
        core = f"TP{self.tp}" + (f" PP{self.pp}" if self.pp > 1 else "")
        return core + (f" x{self.replicas}" if self.replicas > 1 else "")


def _step(model, system, tp, pp, batch, context, precision):
    """Lowest-TPOT all-reduce implementation for one point (None if none applies)."""
    best = None
    for alg in ALLREDUCE:
        try:
            d = decode_step(model, system, tp=tp, pp=pp, batch=batch, context=context,
                            precision=precision, allreduce=alg)
        except ValueError:
            continue
        if best is None or d.tpot < best[1].tpot:
            best = (alg, d)
    return best


@functools.lru_cache(maxsize=256)
def _options(model, system, tpot_target, context, precision):
    s = systems.resolve(system)
    out = []
    for tp in (1, 2, 4, 8):
        for pp in (1, 2, 4, 8):
            if tp * pp > s.n_gpus or s.n_gpus % (tp * pp):
                continue
            pick = None
            for b in BATCHES:
                try:
                    r = _step(model, s, tp, pp, b, context, precision)
                except ValueError:
                    r = None
                if r is None:
                    break
                alg, d = r
                ok = d.fits_memory and d.tpot <= tpot_target
                if pick is None or ok:
                    pick = (b, alg, d, ok)
                if not d.fits_memory or d.tpot > tpot_target:
                    break
            if pick is None:
                continue
            b, alg, d, ok = pick
            reps = s.n_gpus // (tp * pp)
            out.append(ServingOption(
                system=s.name, tp=tp, pp=pp, replicas=reps, batch=b, allreduce=alg,
                tpot=d.tpot, tokens_per_s_per_gpu=d.tokens_per_s_per_gpu,
                tokens_per_s_server=d.tokens_per_s * reps, comm_share=d.comm_share,
                fits_memory=d.fits_memory, meets_target=ok))
    return tuple(out)


def _check(tpot_target, context, precision):
    t = as_number("tpot_target", tpot_target, low=1e-4, high=10.0, allow_array=False)
    c = check_int("context", context, low=1, high=10**7)
    check_choice("precision", precision, ("bf16", "fp8"))
    return float(t), c


def layout_options(model, system, *, tpot_target, context, precision="fp8"):
    """Every TP x PP layout of ``system`` (instances replicated over the server) at its
    best batch for ``tpot_target``.

    Parameters
    ----------
    model : str
        A dense model preset (``"llama3-70b"``, ``"llama3-8b"``).
    system : str
        A server preset, e.g. one of :data:`SYSTEMS`.
    tpot_target : float
        Largest acceptable time per output token, in [1e-4, 10]. [s]
    context : int
        Tokens in each sequence's KV cache, in [1, 1e7].
    precision : {"bf16", "fp8"}
        Weight precision.

    Returns
    -------
    list of ServingOption
        One per layout the model allows (heads and layers divisible), in TP then PP
        order; ``meets_target`` says whether the batch found meets the target and fits.

    Examples
    --------
    >>> opts = layout_options("llama3-8b", "l40s-x8", tpot_target=0.05, context=2048)
    >>> [o.label for o in opts][:3]
    ['TP1 x8', 'TP1 PP2 x4', 'TP1 PP4 x2']
    """
    t, c = _check(tpot_target, context, precision)
    if not isinstance(model, str):
        raise ValueError(f"model must be a preset name; got {model!r}")
    if not isinstance(system, str):
        raise ValueError(f"system must be a preset name; got {system!r}")
    check_choice("system", system, tuple(systems.names()))
    return list(_options(model, system, t, c, precision))


def best_layout(model, system, *, tpot_target, context, precision="fp8"):
    """The option of :func:`layout_options` with the most tokens/s per GPU among those
    meeting the target; if none does, the one with the lowest TPOT
    (``meets_target`` False)."""
    opts = layout_options(model, system, tpot_target=tpot_target, context=context,
                          precision=precision)
    if not opts:
        raise ValueError(f"model {model!r} has no layout on system {system!r}")
    good = [o for o in opts if o.meets_target]
    if good:
        return max(good, key=lambda o: o.tokens_per_s_per_gpu)
    return min(opts, key=lambda o: o.tpot)


def tokens_per_dollar(tokens_per_s_per_gpu, price_per_gpu_hour):
    """Output tokens per USD: ``3600 x tokens/s per GPU / price per GPU-hour``.

    Parameters
    ----------
    tokens_per_s_per_gpu : float
        Throughput per GPU, >= 0. [tokens/s]
    price_per_gpu_hour : float
        Price of one GPU-hour, in (0, 1e4] USD (an input, not a constant).

    Examples
    --------
    >>> tokens_per_dollar(1000.0, 2.0)
    1800000.0
    """
    r = as_number("tokens_per_s_per_gpu", tokens_per_s_per_gpu, low=0,
                  allow_array=False)
    p = as_number("price_per_gpu_hour", price_per_gpu_hour, low=0, high=1e4,
                  low_inclusive=False, allow_array=False)
    return float(3600.0 * r / p)


def buying_table(model, prices, *, tpot_target, context, precision="fp8"):
    """Best layout and tokens per USD of each server in ``prices``.

    Parameters
    ----------
    model : str
        A dense model preset.
    prices : dict
        ``{system preset: USD per GPU-hour}``.
    tpot_target, context, precision
        As in :func:`layout_options`.

    Returns
    -------
    list of dict
        Per system: ``system``, ``option`` (:class:`ServingOption`), ``price``,
        ``tokens_per_usd`` (0 where no layout meets the target), ``meets_target``.

    Examples
    --------
    >>> rows = buying_table("llama3-70b", {"hgx-h200": 3.0, "l40s-x8": 2.25},
    ...                     tpot_target=0.05, context=4096)
    >>> rows[0]["tokens_per_usd"] > rows[1]["tokens_per_usd"]
    True
    """
    if not isinstance(prices, dict) or not prices:
        raise ValueError(f"prices must be a non-empty dict {{system: USD per GPU-hour}}; "
                         f"got {prices!r}")
    out = []
    for system, price in prices.items():
        o = best_layout(model, system, tpot_target=tpot_target, context=context,
                        precision=precision)
        tpd = tokens_per_dollar(o.tokens_per_s_per_gpu, price)
        out.append({"system": system, "option": o, "price": float(price),
                    "tokens_per_usd": tpd if o.meets_target else 0.0,
                    "meets_target": o.meets_target})
    return out


#: Published GPU name -> the server preset that models it.
_TPOT_SYSTEMS = {"H200 SXM 141GB": "hgx-h200", "H100 SXM 80GB": "dgx-h100"}


def published_tpot_checks(software="trtllm", model="llama3-70b", precision="fp8"):
    """The model's TPOT beside AIConfigurator's measured TPOT rows
    (:func:`gpulab.inference.published.end_to_end_rows`, ``aic-silicon-sample``).

    Each row: TP, concurrency (= batch), ``isl``/``osl``; the model runs the same TP,
    ``batch = concurrency`` and ``context = isl + osl / 2`` (the mean KV length of a
    request), with its best all-reduce. Llama-3.1-70B has Llama-3-70B's layer shapes.

    Returns
    -------
    list of dict
        ``gpu``, ``system``, ``tp``, ``concurrency``, ``isl``, ``osl``, ``published``
        and ``model`` TPOT [s], ``error`` (model / published - 1).
    """
    check_choice("software", software, ("trtllm", "vllm"))
    out = []
    for r in published.end_to_end_rows():
        if r["source_id"] != "aic-silicon-sample" or r["metric"] != "tpot_ms" \
                or not r["software"].startswith(software):
            continue
        sysn = _TPOT_SYSTEMS.get(r["gpu"])
        if sysn is None:
            continue
        ctx = int(r["isl"] + r["osl"] // 2)
        pick = _step(model, systems.resolve(sysn), r["tp"], 1, r["concurrency"], ctx,
                     precision)
        if pick is None:
            continue
        want = r["value"] * 1e-3
        out.append({"gpu": r["gpu"], "system": sysn, "tp": r["tp"],
                    "concurrency": r["concurrency"], "isl": r["isl"], "osl": r["osl"],
                    "published": want, "model": pick[1].tpot,
                    "error": pick[1].tpot / want - 1.0,
                    "fits_memory": pick[1].fits_memory})
    return out
