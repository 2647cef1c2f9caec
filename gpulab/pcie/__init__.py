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

Two modules: :mod:`.link` (rates, encoding, protocol efficiency) and :mod:`.copies`
(host/device and GPU-to-GPU copies); this package re-exports their public names.
"""
from __future__ import annotations

from .link import (  # noqa: F401
    protocol_info,
    protocol_constant,
    raw_bandwidth,
    encoded_bandwidth,
    tlp_overhead_bytes,
    tlp_efficiency,
    effective_bandwidth,
)
from .copies import (  # noqa: F401
    COPY_KINDS,
    MEMORY_KINDS,
    HARDWARE_COPY_KINDS,
    DIRECTIONS,
    CALLERS,
    host_copy_time,
    staged_bandwidth,
    copy_bandwidth,
    copy_time,
    hardware_key,
    hardware_copy,
    copy_latency,
    issue_cost,
    calibrate_copy_hardware,
    COPY_BANDS,
    copy_holdout_errors,
    CopyFit,
    calibrate_copy,
    calibrate_copies,
    transport_shares,
)

__all__ = [
    "transport_shares",
    "COPY_KINDS",
    "MEMORY_KINDS",
    "CopyFit",
    "protocol_constant",
    "protocol_info",
    "raw_bandwidth",
    "encoded_bandwidth",
    "tlp_overhead_bytes",
    "tlp_efficiency",
    "effective_bandwidth",
    "host_copy_time",
    "staged_bandwidth",
    "copy_bandwidth",
    "copy_time",
    "calibrate_copy",
    "calibrate_copies",
    "HARDWARE_COPY_KINDS",
    "DIRECTIONS",
    "CALLERS",
    "hardware_key",
    "hardware_copy",
    "copy_latency",
    "issue_cost",
    "calibrate_copy_hardware",
    "COPY_BANDS",
    "copy_holdout_errors",
]
