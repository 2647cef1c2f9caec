r"""PCI Express: link rates, protocol efficiency and host<->device copy time.

From the wire to a copy benchmark, one step at a time (Chapter "PCIe 5.0 and the
CPU-GPU path")::

    raw, per direction [B/s]       = transfer rate [T/s] x lanes / 8
    encoded, per direction         = raw x line-encoding efficiency (8b/10b, 128b/130b)
    effective, per direction       = encoded x TLP efficiency(payload, header, DLLPs)
    copy time of S bytes           = max(issue floor, alpha + S / (eta x encoded))

Two numbers are kept apart: the HARDWARE time of a copy (:func:`copy_latency`:
one isolated copy, latency + size / bandwidth, fitted to our CUDA C++
``cudaMemcpyAsync`` runs on 1x H200) and the CALLER's per-call issue cost in a
back-to-back loop (:func:`issue_cost`: ~2-3 us for ``cudaMemcpyAsync``, 25-83 us
for PyTorch ``copy_``). :func:`copy_time` gives either (``caller=None | "cuda" |
"pytorch"``). P2P hardware latency is assumed (our d2d copy) until a 2-GPU run.

Every protocol constant (framing, header, CRC and flit sizes, the DLLP share) is
read from ``gpulab/data/pcie_protocol.yaml`` with its source; transfer rates and
encodings from ``gpulab/data/pcie.csv``; measured copy parameters from
``gpulab/data/systems.yaml`` (see :mod:`gpulab.systems`).

Notes
-----
Assumptions of the models in this module:

=================================  ==========================================  ==========================================
Assumption                         Value used                                  Source / why
=================================  ==========================================  ==========================================
Line encoding                      8b/10b (Gen1-2), 128b/130b (Gen3-5),        PCI-SIG base specifications
                                   none in flit mode (Gen6)                    (``pcie.csv``)
Per-TLP overhead, Gen1-5           8 B framing, sequence number and LCRC       PCI-SIG base spec.; Intel AN 456 (5 DW
                                   + 12/16 B header (+ 4 B ECRC)               with a 3-DW header: 256/(256+20) = 92 %)
Per-TLP overhead, Gen6 flit mode   header only; the flit adds 20 B             PCI-SIG 6.0 (256-B flit: 236 B TLP,
                                   (6 DLP + 8 CRC + 6 FEC) per 256 B            6 B DLP, 8 B CRC, 6 B FEC)
DLLPs and SKP ordered sets         3 % of link bytes (Gen1-5), 0 in flit       course default between the 0 % and 100 %
                                   mode                                        DLLP cases of the PLX PEX 8532 data book
Every TLP carries a full payload   payload = Max_Payload_Size                  bulk copies; reads split by the read
                                                                               completion boundary are not modelled
Copy time, PyTorch loop           max(issue floor, alpha + S / B)             fits our 2x H200 PyTorch run within a
                                                                               few % for pinned copies >= 1 MiB
Copy time, hardware                alpha_hw + S / B (one isolated copy)        fitted to our CUDA C++ run 1 on 1x H200;
                                                                               run 2 held out (tests/models/test_copies.py)
Copy time, CUDA loop               max(CUDA issue cost, gap + S / B)           same runs; copies queued on one stream
P2P hardware latency               = our d2d copy latency (assumed)            no 2-GPU C++ run yet
Pageable copies                    staged through a pinned bounce buffer:      CUDA driver behaviour for pageable
                                   1/B = 1/B_pinned + 1/B_memcpy               memory; B_memcpy fitted to our data
=================================  ==========================================  ==========================================

Sources: PCI-SIG PCI Express Base Specifications 1.0a-6.0; Intel AN 456 "PCI
Express High Performance Reference Design", sections "Protocol Overhead" and
"Throughput for Posted Writes"; PLX PEX 8532 data book sec. 8.4.1; NVIDIA H100
Tensor Core GPU Architecture whitepaper sec. 4.7.3 (PCIe Gen5: 128 GB/s total,
64 GB/s per direction); our measurements in
``gpulab/data/measurements/h200_copy_bandwidth.csv``.

Examples
--------
>>> from gpulab import pcie
>>> round(pcie.encoded_bandwidth(5).gb_per_s, 2)        # Gen5 x16, per direction
63.02
>>> pcie.raw_bandwidth(5).to_bidirectional().gb_per_s  # NVIDIA's "128 GB/s"
128.0
>>> round(pcie.tlp_efficiency(256), 4)                  # 256 B payload, 4-DW header
0.8869
>>> round(pcie.effective_bandwidth(5).gb_per_s, 1)
55.9
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import links, specs, systems, units
from ._validate import as_number, check_choice, finite_answer

__all__ = [
    "COPY_KINDS", "MEMORY_KINDS", "CopyFit",
    "protocol_constant", "protocol_info", "raw_bandwidth", "encoded_bandwidth",
    "tlp_overhead_bytes", "tlp_efficiency", "effective_bandwidth",
    "host_copy_time", "staged_bandwidth", "copy_bandwidth", "copy_time",
    "calibrate_copy", "calibrate_copies",
    "HARDWARE_COPY_KINDS", "DIRECTIONS", "CALLERS", "hardware_key",
    "hardware_copy", "copy_latency", "issue_cost", "calibrate_copy_hardware",
    "COPY_BANDS", "copy_holdout_errors",
]

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

    .. math:: t(S) = \max\left(t_\text{issue}^\text{CUDA},\; g + S / B\right)

    ``caller=None``: :math:`\alpha_\text{hw} + S / B` (:func:`copy_latency`).

    Examples
    --------
    >>> round(copy_time(2**30, "h2d") * 1e3, 1)                  # ms
    19.4
    >>> round(copy_time(2**30, "h2d", memory="pageable") * 1e3)   # ms
    56
    >>> round(copy_time(4096, "h2d") * 1e6)          # us: PyTorch's per-call cost
    28
    >>> round(copy_time(4096, "h2d", caller=None) * 1e6, 1)      # us: hardware
    4.0
    >>> round(copy_time(4096, "h2d", caller="cuda") * 1e6, 1)    # us: CUDA loop
    2.7
    """
    if caller is not None:
        check_choice("caller", caller, CALLERS)
    if caller is None:
        return copy_latency(message_bytes, kind, memory=memory, system=system,
                            direction=direction)
    if caller == "cuda":
        hw = hardware_copy(kind, memory=memory, system=system, direction=direction)
        t = links.transfer_time(message_bytes, hw.pipelined_s, hw.bandwidth)
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
    (3.93, 55.5, 'measured')
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
    .. math:: t(S) = lpha_	ext{hw} + S / B

    with the system's ``copy_hardware`` parameters (fitted by
    :func:`calibrate_copy_hardware`). Small pageable copies and large pageable
    copies vary by tens of % from run to run; d2d copies of 4-16 MiB run faster
    than the model when they fit in the 60 MB L2 (not modelled).

    Examples
    --------
    >>> round(copy_latency(1024, "h2d") * 1e6, 1)      # us
    3.9
    >>> round(copy_latency(2**30, "h2d") * 1e3, 2)     # ms
    19.37
    >>> round(copy_latency(1024, "p2p") * 1e6, 1)      # us, assumed (see data)
    5.8
    """
    hw = hardware_copy(kind, memory=memory, system=system, direction=direction)
    return links.transfer_time(message_bytes, hw.latency_s, hw.bandwidth)


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
    (2.5, 28)
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
    r"""Fit the hardware copy model and the CUDA issue cost to a CUDA C++ sweep.

    Parameters
    ----------
    run : measurements.CopyLatencyRun or None
        A sweep of ``measure/copy_latency.cu``; default: run 1 of our 1x H200 SXM
        runs (``measurements.copy_latency_run("copies_run1.csv")``). Run 2 is held
        out (``tests/models/test_copies.py``).
    small_bytes : int
        Copies up to this size set the latency (their :math:`S/B` is small). [B]

    Returns
    -------
    dict
        Per key of the run (``h2d_pinned``, ..., ``d2d``): ``latency_s``,
        ``pipelined_s``, ``bandwidth_gb_per_s``, ``cuda_issue_s``, the keys of a
        ``copy_hardware`` section of ``systems.yaml``.

    Notes
    -----
    1. Back-to-back times per copy: :func:`calibrate_copy` gives the bandwidth
       :math:`B`, the hardware gap :math:`g` between queued copies (the alpha of
       the bandwidth-bound points) and the CUDA issue cost (the median of the
       issue-bound points).
    2. Hardware latency: :math:`lpha_	ext{hw}` = the median of
       :math:`t_	ext{event} - S/B` over copies up to ``small_bytes`` (one isolated
       copy, CUDA events).

    Examples
    --------
    >>> cal = calibrate_copy_hardware()
    >>> {k: round(v * 1e6, 2) for k, v in cal["h2d_pinned"].items() if k != "bandwidth_gb_per_s"}
    {'latency_s': 3.93, 'pipelined_s': 2.65, 'cuda_issue_s': 2.51}
    >>> round(cal["d2d"]["bandwidth_gb_per_s"])
    2143
    """
    from . import measurements

    if run is None:
        run = measurements.copy_latency_run("copies_run1.csv")
    if not isinstance(run, measurements.CopyLatencyRun):
        raise ValueError(f"run must be a measurements.CopyLatencyRun or None; got {run!r}")
    small = as_number("small_bytes", small_bytes, low=0, low_inclusive=False,
                      allow_array=False)
    out = {}
    for key, ser in run.series.items():
        s = ser["size_bytes"]
        f = calibrate_copy(s, ser["b2b_per_copy"])
        b = f.bandwidth.bytes_per_s
        sel = s <= small
        if not np.any(sel):
            raise ValueError(f"small_bytes: no copy of {key} is that small "
                             f"(smallest {s.min():g} B)")
        alpha = float(np.median(ser["latency_event"][sel] - s[sel] / b))
        out[key] = {"latency_s": max(alpha, 0.0), "pipelined_s": max(f.latency, 0.0),
                    "bandwidth_gb_per_s": b / units.GB,
                    "cuda_issue_s": f.issue_floor}
    return out


#: Size bands of the copy acceptance (issue 12): label, [low, high) bytes, allowed
#: |error|: +-30 % below 64 KiB, +-15 % from 64 KiB.
COPY_BANDS = (("< 64 KiB", 0, 65536, 0.30), ("64 KiB-1 MiB", 65536, 2**20, 0.15),
              ("1-64 MiB", 2**20, 2**26, 0.15), (">= 64 MiB", 2**26, float("inf"), 0.15))


def copy_holdout_errors(run=None, *, system="h200-x2-measured"):
    r"""Error of the hardware model and the CUDA-loop model against a held-out run.

    Parameters
    ----------
    run : measurements.CopyLatencyRun or None
        Default: run 2 of our 1x H200 CUDA C++ runs (not used by the fit).
    system : str or systems.System
        Where the fitted constants are stored (``copy_hardware``).

    Returns
    -------
    list of dict
        One row per copy key and :data:`COPY_BANDS` band: ``key``, ``band``,
        ``sizes``, ``hw_median_pct`` / ``hw_max_pct`` (:func:`copy_latency` against
        ``latency_event``), ``cuda_median_pct`` / ``cuda_max_pct`` (``copy_time(...,
        caller="cuda")`` against ``b2b_per_copy``), ``limit_pct`` (the acceptance).
        Errors are :math:`|t_\text{model}/t_\text{measured} - 1|` in %.

    Examples
    --------
    >>> rows = copy_holdout_errors()
    >>> r = [r for r in rows if r["key"] == "h2d_pinned" and r["band"] == ">= 64 MiB"][0]
    >>> r["sizes"], round(r["hw_median_pct"], 1), r["limit_pct"]
    (5, 0.5, 15.0)
    """
    from . import measurements

    if run is None:
        run = measurements.copy_latency_run("copies_run2.csv")
    if not isinstance(run, measurements.CopyLatencyRun):
        raise ValueError(f"run must be a measurements.CopyLatencyRun or None; got {run!r}")
    sys = systems.resolve(system)
    rows = []
    for key in systems.HARDWARE_COPY_KEYS:
        if key not in run.series:
            continue
        ser = run.series[key]
        kind = key.split("_")[0]
        kw = dict(memory="pageable" if "pageable" in key else "pinned",
                  direction="both" if key.endswith("_both") else "one", system=sys)
        s = ser["size_bytes"]
        e_hw = np.abs(copy_latency(s, kind, **kw) / ser["latency_event"] - 1) * 100
        e_cu = np.abs(copy_time(s, kind, caller="cuda", **kw) / ser["b2b_per_copy"]
                      - 1) * 100
        for label, lo, hi, limit in COPY_BANDS:
            sel = (s >= lo) & (s < hi)
            rows.append({"key": key, "band": label, "sizes": int(sel.sum()),
                         "hw_median_pct": float(np.median(e_hw[sel])),
                         "hw_max_pct": float(np.max(e_hw[sel])),
                         "cuda_median_pct": float(np.median(e_cu[sel])),
                         "cuda_max_pct": float(np.max(e_cu[sel])),
                         "limit_pct": 100 * limit})
    return rows


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
    from . import measurements

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
