"""The PCIe link: generations, lanes and line encoding, the raw and encoded rates, and
the protocol efficiency of TLPs (payload, headers, framing, DLLP traffic).

Units are SI: bytes, seconds, bytes per second (per direction).
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import specs, units
from .._validate import as_number


_FAMILY = {"8b/10b": "gen1_2", "128b/130b": "gen3_5"}


# --- protocol constants ----------------------------------------------------------------
def protocol_info(name):
    """The full record of a protocol constant: ``{value, meaning, source, accessed}``.

    Parameters
    ----------
    name : str
        Dotted name in ``data/pcie_protocol.yaml``, e.g. ``"flit.tlp_bytes"``.

    Examples
    --------
    >>> protocol_info("lcrc_bytes")["value"]
    4
    """
    rec = specs.assumption_record("pcie", name)
    if not (isinstance(rec, dict) and "value" in rec):
        raise ValueError(f"name must name a constant of pcie_protocol.yaml (a record "
                         f"with a value), not a group; got {name!r}")
    return dict(rec)


def protocol_constant(name):
    """Value of a protocol constant in ``data/pcie_protocol.yaml``.

    >>> protocol_constant("framing_bytes.gen3_5"), protocol_constant("flit.fec_bytes")
    (4, 6)
    """
    value = protocol_info(name)["value"]
    return list(value) if isinstance(value, list) else value


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _check_member(name, value, allowed):
    ok = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    if not ok or int(value) not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; "
                         f"got {value!r}")
    return int(value)


def _lanes(lanes):
    return _check_member("lanes", lanes, protocol_constant("link_widths"))


def _mps(max_payload_bytes):
    return _check_member("max_payload_bytes", max_payload_bytes,
                         protocol_constant("max_payload_bytes"))


def _is_flit(gen):
    return "FLIT" in gen.encoding.upper()


# --- link rates ------------------------------------------------------------------------
def raw_bandwidth(generation, lanes=16):
    r"""Raw rate of a PCIe link, per direction, before line encoding.

    Parameters
    ----------
    generation : int
        PCIe generation, 1-6.
    lanes : int
        Link width: 1, 2, 4, 8, 12, 16 or 32.

    Returns
    -------
    units.Bandwidth
        Per direction.

    Notes
    -----
    .. math:: B_\text{raw} = R \cdot N / 8

    with transfer rate :math:`R` [T/s, one bit per lane per transfer] and
    :math:`N` lanes. Spec sheets often quote the *bidirectional raw* figure:
    NVIDIA's "128 GB/s" for PCIe Gen5 x16 (H100 whitepaper sec. 4.7.3) is
    :math:`2 \times 32\,\text{GT/s} \times 16 / 8`.

    Examples
    --------
    >>> raw_bandwidth(5).gb_per_s
    64.0
    >>> raw_bandwidth(5).to_bidirectional().gb_per_s   # NVIDIA's 128 GB/s
    128.0
    >>> raw_bandwidth(4, lanes=8).gb_per_s
    16.0
    """
    g = specs.pcie(generation)
    n = _lanes(lanes)
    return units.Bandwidth(g.transfer_rate_gt_per_s * 1e9 * n * units.BIT,
                           units.PER_DIRECTION)


def encoded_bandwidth(generation, lanes=16):
    r"""Rate of a PCIe link after line encoding, per direction.

    Parameters
    ----------
    generation : int
        PCIe generation, 1-6.
    lanes : int
        Link width: 1, 2, 4, 8, 12, 16 or 32.

    Returns
    -------
    units.Bandwidth
        Per direction.

    Notes
    -----
    .. math:: B_\text{enc} = R \cdot N \cdot \epsilon_\text{enc} / 8

    :math:`\epsilon_\text{enc}` = 8/10 (Gen1-2), 128/130 (Gen3-5). Gen6 has no
    line encoding (flit mode); its flit overhead is counted in
    :func:`tlp_efficiency`. Gen5 x16: 32e9 x 16 x 128/130 / 8 = 63.0 GB/s per
    direction (source-facts item 24).

    Examples
    --------
    >>> round(encoded_bandwidth(5).gb_per_s, 3)
    63.015
    >>> encoded_bandwidth(1, lanes=1).gb_per_s        # 2.5 GT/s x 8/10 / 8
    0.25
    >>> encoded_bandwidth(6).gb_per_s
    128.0
    """
    g = specs.pcie(generation)
    return raw_bandwidth(generation, lanes) * g.encoding_efficiency


# --- protocol efficiency ---------------------------------------------------------------
def tlp_overhead_bytes(generation=5, *, header_bytes=None, ecrc=False):
    r"""Bytes a TLP adds to its payload on the wire.

    Parameters
    ----------
    generation : int
        PCIe generation, 1-6 (6: flit mode).
    header_bytes : int or None
        TLP header: 12 (3 DW) or 16 (4 DW, 64-bit addresses); default 16 (a
        memory write to a 64-bit address).
    ecrc : bool
        Whether the optional 4-byte end-to-end CRC is present.

    Returns
    -------
    int
        Overhead bytes per TLP. [B]

    Notes
    -----
    Gen1-2: STP (1) + sequence number (2) + header + [ECRC 4] + LCRC (4) + END (1).
    Gen3-5: STP token (4, carries the sequence number) + header + [ECRC] + LCRC (4).
    Both are header + 8 bytes. Flit mode (Gen6): header [+ ECRC] only; framing,
    sequence number and CRC belong to the flit (see :func:`tlp_efficiency`).
    Source: ``data/pcie_protocol.yaml``.

    Examples
    --------
    >>> tlp_overhead_bytes(5, header_bytes=12), tlp_overhead_bytes(2, header_bytes=12)
    (20, 20)
    >>> tlp_overhead_bytes(6)
    16
    """
    g = specs.pcie(generation)
    if header_bytes is None:
        header_bytes = protocol_constant("write_header_bytes")
    h = _check_member("header_bytes", header_bytes, protocol_constant("header_bytes"))
    extra = protocol_constant("ecrc_bytes") if _check_bool("ecrc", ecrc) else 0
    if _is_flit(g):
        return h + extra
    fam = _FAMILY[g.encoding]
    return (protocol_constant(f"framing_bytes.{fam}")
            + protocol_constant(f"sequence_bytes.{fam}")
            + h + extra + protocol_constant("lcrc_bytes"))


def tlp_efficiency(max_payload_bytes=256, *, generation=5, header_bytes=None,
                   ecrc=False, dllp_overhead=None, read_completion=False):
    r"""Share of the encoded link rate that carries payload in a bulk transfer.

    Parameters
    ----------
    max_payload_bytes : int
        Max_Payload_Size: 128, 256, 512, 1024, 2048 or 4096. Every TLP is assumed
        to carry a full payload (bulk copy).
    generation : int
        PCIe generation, 1-6. Generation 6 runs in flit mode.
    header_bytes : int or None
        12 or 16. Default: 16 for memory writes (4-DW header, 64-bit address), 12
        for read completions.
    ecrc : bool
        Whether TLPs carry the optional 4-byte ECRC.
    dllp_overhead : float or None
        Share of link bytes taken by DLLPs (Ack, UpdateFC) and SKP ordered sets,
        in [0, 0.5]. Default from ``data/pcie_protocol.yaml``: 0.03 (Gen1-5), 0 in
        flit mode (the 6-byte DLP of each flit carries that traffic).
    read_completion : bool
        True: the data move as completions of memory reads (a GPU reading host
        memory, i.e. an h2d copy): 3-DW header; ``header_bytes`` must then be 12.

    Returns
    -------
    float
        Efficiency in (0, 1). [-]

    Notes
    -----
    Gen1-5 (Intel AN 456, "Throughput for Posted Writes", plus the DLLP share):

    .. math:: \eta = \frac{P}{P + O_\text{TLP}} \, (1 - d)

    with payload :math:`P`, per-TLP overhead :math:`O_\text{TLP}` =
    :func:`tlp_overhead_bytes` (header + 8 B) and DLLP share :math:`d`.

    Gen6 flit mode: 236 of every 256 flit bytes carry TLPs (the rest: 6 B DLP,
    8 B CRC, 6 B FEC; PCI-SIG 6.0), and a TLP adds only its header:

    .. math:: \eta = \frac{236}{256} \cdot \frac{P}{P + H} \, (1 - d)

    Examples
    --------
    >>> round(tlp_efficiency(256, header_bytes=12, dllp_overhead=0), 4)  # AN 456: 92 %
    0.9275
    >>> [round(tlp_efficiency(p), 4) for p in (128, 256, 512)]
    [0.8168, 0.8869, 0.9266]
    >>> round(tlp_efficiency(256, generation=6), 4)
    0.8676
    """
    p = _mps(max_payload_bytes)
    g = specs.pcie(generation)
    rc = _check_bool("read_completion", read_completion)
    if header_bytes is None:
        h = protocol_constant("completion_header_bytes" if rc
                              else "write_header_bytes")
    else:
        h = _check_member("header_bytes", header_bytes,
                          protocol_constant("header_bytes"))
        ch = protocol_constant("completion_header_bytes")
        if rc and h != ch:
            raise ValueError(f"header_bytes must be {ch} for read completions (a "
                             f"completion header is 3 DW); got {header_bytes!r}")
    flit = _is_flit(g)
    if dllp_overhead is None:
        d = protocol_constant("flit.dllp_overhead" if flit else "dllp_overhead")
    else:
        d = as_number("dllp_overhead", dllp_overhead, low=0, high=0.5,
                      allow_array=False)
    overhead = tlp_overhead_bytes(generation, header_bytes=h, ecrc=ecrc)
    eff = p / (p + overhead) * (1.0 - d)
    if flit:
        eff *= protocol_constant("flit.tlp_bytes") / protocol_constant("flit.flit_bytes")
    return eff


def effective_bandwidth(generation, lanes=16, max_payload_bytes=256, *,
                        header_bytes=None, ecrc=False, dllp_overhead=None,
                        read_completion=False):
    r"""Payload rate of a PCIe link in a bulk transfer, per direction.

    Parameters
    ----------
    generation, lanes
        As in :func:`encoded_bandwidth`.
    max_payload_bytes, header_bytes, ecrc, dllp_overhead, read_completion
        As in :func:`tlp_efficiency`.

    Returns
    -------
    units.Bandwidth
        Per direction.

    Notes
    -----
    .. math:: B_\text{eff} = B_\text{enc} \cdot \eta_\text{TLP}

    This is the protocol ceiling. A DMA engine may reach less (request pacing,
    read latency, completion splitting); compare with :func:`copy_bandwidth`, which
    is fitted to measurements.

    Examples
    --------
    >>> round(effective_bandwidth(5).gb_per_s, 2)           # Gen5 x16, MPS 256
    55.89
    >>> round(effective_bandwidth(5, max_payload_bytes=128).gb_per_s, 2)
    51.47
    """
    enc = encoded_bandwidth(generation, lanes)
    return enc * tlp_efficiency(max_payload_bytes, generation=generation,
                                header_bytes=header_bytes, ecrc=ecrc,
                                dllp_overhead=dllp_overhead,
                                read_completion=read_completion)
