r"""Point-to-point link models: SerDes arithmetic and the alpha-beta transfer time.

SerDes arithmetic (Chapter "NVLink from the wire up")::

    lane rate [bit/s]         = symbol rate [Bd] x bits per symbol
    link, per direction [B/s] = lane rate x lanes per direction x coding efficiency / 8
    GPU, per direction [B/s]  = link per direction x number of links
    bidirectional             = 2 x per direction (links are full duplex)

Alpha-beta (Hockney) transfer time of ``message_bytes`` over one path:

.. math:: t(S) = \alpha + S / B

with latency :math:`\alpha` [s] and per-direction bandwidth :math:`B` [B/s].

Examples
--------
>>> from gpulab import links, specs
>>> bw = links.nvlink_link_bandwidth(4)           # one NVLink4 link
>>> round(bw.gb_per_s, 3), bw.direction
(25.0, 'per_direction')
>>> links.nvlink_gpu_bandwidth(4).to_bidirectional().gb_per_s
900.0
"""
from __future__ import annotations

from . import specs, units
from ._validate import as_number, check_choice, check_int, finite_answer, finite_result

__all__ = [
    "lane_rate", "link_bandwidth", "gpu_bandwidth",
    "nvlink_link_bandwidth", "nvlink_gpu_bandwidth",
    "transfer_time", "effective_bandwidth", "half_bandwidth_size", "fit_alpha_beta",
]


@finite_answer
def lane_rate(symbol_rate, bits_per_symbol):
    """Compute the raw bit rate of one lane.

    Parameters
    ----------
    symbol_rate : numeric
        Symbols per second (baud). [Bd]
    bits_per_symbol : int
        1 for NRZ, 2 for PAM4, 3 for PAM8 (log2 of the number of levels).

    Returns
    -------
    numeric
        Raw signalling rate. [bit/s]

    Examples
    --------
    >>> lane_rate(53.125e9, 2) / 1e9     # NVLink4 / 100G-class PAM4 lane
    106.25
    """
    symbol_rate = as_number("symbol_rate", symbol_rate, low=0, low_inclusive=False)
    bits_per_symbol = check_int("bits_per_symbol", bits_per_symbol, low=1, high=8)
    return symbol_rate * bits_per_symbol


@finite_answer
def link_bandwidth(symbol_rate, bits_per_symbol, lanes_per_direction,
                   coding_efficiency=1.0):
    r"""Compute the per-direction data bandwidth of one link.

    Parameters
    ----------
    symbol_rate : float
        Symbols per second on one lane. [Bd]
    bits_per_symbol : int
        Bits per symbol (NRZ 1, PAM4 2).
    lanes_per_direction : int
        Lanes (differential pairs) carrying one direction.
    coding_efficiency : float, default 1.0
        Data bits per raw bit after line coding and FEC, in (0, 1]. [-]

    Returns
    -------
    units.Bandwidth
        Per-direction bandwidth of the link.

    Notes
    -----
    .. math:: B_\text{link} = \frac{f_\text{sym}\,b\,L\,\eta}{8}

    Examples
    --------
    >>> link_bandwidth(53.125e9, 2, 2).gb_per_s          # raw, as nvidia-smi shows
    26.5625
    >>> round(link_bandwidth(53.125e9, 2, 2, 16 / 17).gb_per_s, 6)
    25.0
    """
    symbol_rate = as_number("symbol_rate", symbol_rate, low=0, low_inclusive=False,
                            allow_array=False)
    raw = lane_rate(symbol_rate, bits_per_symbol)
    lanes = check_int("lanes_per_direction", lanes_per_direction, low=1, high=64)
    eta = as_number("coding_efficiency", coding_efficiency, low=0, high=1,
                    low_inclusive=False, allow_array=False)
    rate = finite_result(float(raw * units.BIT * lanes * eta), symbol_rate=symbol_rate,
                         bits_per_symbol=bits_per_symbol, lanes_per_direction=lanes)
    return units.Bandwidth(rate, units.PER_DIRECTION)


def gpu_bandwidth(link, n_links):
    """Aggregate ``n_links`` identical links of one GPU.

    Parameters
    ----------
    link : units.Bandwidth
        Bandwidth of one link (either direction convention; it is kept).
    n_links : int
        Number of links, >= 1.

    Returns
    -------
    units.Bandwidth
        The GPU's total, in the same direction convention as ``link``.
    """
    if not isinstance(link, units.Bandwidth):
        raise ValueError(f"link must be a gpulab.units.Bandwidth; got {link!r}")
    n = check_int("n_links", n_links, low=1, high=1024)
    total = finite_result(link.bytes_per_s * n, link=link.bytes_per_s, n_links=n)
    return units.Bandwidth(total, link.direction)


def nvlink_link_bandwidth(generation, *, raw=False):
    """Per-direction bandwidth of one NVLink link of ``generation`` from the SerDes.

    Parameters
    ----------
    generation : int
        NVLink generation, 1-5.
    raw : bool, default False
        If True, leave out the coding efficiency (the line rate that
        ``nvidia-smi nvlink --status`` prints on Hopper).

    Returns
    -------
    units.Bandwidth
        Per direction.

    Examples
    --------
    >>> round(nvlink_link_bandwidth(4, raw=True).gb_per_s, 4)
    26.5625
    """
    g = specs.nvlink(generation)
    return link_bandwidth(g.symbol_rate, g.bits_per_symbol, g.lanes_per_direction,
                          1.0 if raw else g.coding_efficiency)


def nvlink_gpu_bandwidth(generation, n_links=None, *, raw=False):
    """Per-direction NVLink bandwidth of one GPU.

    Parameters
    ----------
    generation : int
        NVLink generation, 1-5.
    n_links : int, optional
        Links used; defaults to the generation's flagship GPU.
    raw : bool
        See :func:`nvlink_link_bandwidth`.

    Examples
    --------
    >>> nvlink_gpu_bandwidth(2).to_bidirectional().gb_per_s
    300.0
    """
    g = specs.nvlink(generation)
    n = g.links_per_gpu if n_links is None else n_links
    return gpu_bandwidth(nvlink_link_bandwidth(generation, raw=raw), n)


def per_direction_rate(bandwidth):
    """A per-direction rate in bytes/s from a plain number or a per-direction
    :class:`gpulab.units.Bandwidth`; a bidirectional figure raises DirectionError.

    >>> per_direction_rate(units.Bandwidth(25e9, units.PER_DIRECTION))
    25000000000.0
    """
    if isinstance(bandwidth, units.Bandwidth):
        if bandwidth.direction != units.PER_DIRECTION:
            raise units.DirectionError(
                "bandwidth must be per direction for a transfer time; got a "
                "bidirectional figure. Call .to_per_direction() first if the link "
                "is symmetric.")
        rate = bandwidth.bytes_per_s
    else:
        rate = bandwidth
    return as_number("bandwidth", rate, low=0, low_inclusive=False)


@finite_answer
def transfer_time(message_bytes, latency, bandwidth):
    r"""Compute the alpha-beta time to move ``message_bytes`` one way.

    Parameters
    ----------
    message_bytes : numeric
        Bytes moved. [B]
    latency : numeric
        Fixed cost per transfer (software, launch, link). [s]
    bandwidth : units.Bandwidth or numeric
        Per-direction bandwidth; a plain number is taken as [B/s, per direction].
        A bidirectional :class:`~gpulab.units.Bandwidth` is refused.

    Returns
    -------
    numeric
        Time. [s]

    Notes
    -----
    .. math:: t = \alpha + S/B

    Examples
    --------
    >>> bw = units.Bandwidth.from_gb_per_s(25, "per_direction")
    >>> transfer_time(1e9, 2e-6, bw)
    0.040002
    """
    s = as_number("message_bytes", message_bytes, low=0)
    a = as_number("latency", latency, low=0)
    b = per_direction_rate(bandwidth)
    return a + s / b


@finite_answer
def effective_bandwidth(message_bytes, latency, bandwidth):
    """Achieved rate ``S / t(S)`` of the alpha-beta model. [B/s, per direction]

    Rises from 0 for tiny messages towards ``bandwidth`` for large ones.

    >>> bw = units.Bandwidth.from_gb_per_s(25, "per_direction")
    >>> effective_bandwidth(50e3, 2e-6, bw) / 1e9        # S = alpha * B: half rate
    12.5
    """
    s = as_number("message_bytes", message_bytes, low=0, low_inclusive=False)
    return s / transfer_time(s, latency, bandwidth)


@finite_answer
def half_bandwidth_size(latency, bandwidth):
    """Message size at which the alpha-beta model reaches half the bandwidth. [B]

    ``n_1/2 = alpha * B``: below it latency dominates, above it bandwidth does.

    >>> bw = units.Bandwidth.from_gb_per_s(450, "per_direction")
    >>> half_bandwidth_size(10e-6, bw) / 1e6
    4.5
    """
    a = as_number("latency", latency, low=0)
    return a * per_direction_rate(bandwidth)


@finite_answer
def fit_alpha_beta(message_bytes, times, *, weighting="relative"):
    r"""Fit the alpha-beta model ``t = alpha + S / B`` to measured transfer times.

    Least squares on the times. ``weighting="relative"`` weights each point by
    ``1 / t`` so small and large messages count alike; ``"absolute"`` fits the
    times themselves, so the large messages (the bandwidth) dominate.

    Parameters
    ----------
    message_bytes : array_like
        Sizes, at least two distinct values > 0. [B]
    times : array_like
        Measured times, same length, > 0. [s]
    weighting : {"relative", "absolute"}
        See above.

    Returns
    -------
    tuple[float, units.Bandwidth]
        ``(latency [s], bandwidth [per direction])``.

    Examples
    --------
    >>> s = [1e3, 1e6, 1e9]
    >>> a, b = fit_alpha_beta(s, [2e-6 + x / 25e9 for x in s])
    >>> round(a * 1e6, 3), round(b.gb_per_s, 3)
    (2.0, 25.0)
    """
    import numpy as np

    s = np.atleast_1d(as_number("message_bytes", message_bytes, low=0,
                                low_inclusive=False))
    t = np.atleast_1d(as_number("times", times, low=0, low_inclusive=False))
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("message_bytes and times must be 1-D and of equal length; "
                         f"got shapes {s.shape} and {t.shape}")
    if np.unique(s).size < 2:
        raise ValueError("message_bytes must hold at least two distinct sizes")
    check_choice("weighting", weighting, ("relative", "absolute"))
    w = 1.0 / t if weighting == "relative" else np.ones_like(t)
    design = np.column_stack([np.ones_like(s), s]) * w[:, None]
    try:
        if not (np.isfinite(design).all() and np.isfinite(t * w).all()):
            raise np.linalg.LinAlgError
        (alpha, inv_b), *_ = np.linalg.lstsq(design, t * w, rcond=None)
    except np.linalg.LinAlgError:
        raise ValueError("message_bytes, times: out of the range a least-squares fit "
                         "can handle (the weighted sizes overflow a float)") from None
    if inv_b <= 0:
        raise ValueError("times do not grow with message_bytes; cannot fit a bandwidth")
    rate = finite_result(1.0 / float(inv_b), message_bytes=message_bytes, times=times)
    return max(float(alpha), 0.0), units.Bandwidth(rate, units.PER_DIRECTION)
