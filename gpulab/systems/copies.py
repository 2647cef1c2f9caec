"""Copy parameters of a system: the host<->device and GPU-to-GPU copy calibrations
(``host_copy``, ``p2p``: PyTorch ``copy_`` loops) and the hardware copy section
(``copy_hardware``: one-copy latency, back-to-back gap and bandwidth, apart from the
CUDA runtime's issue cost). Parsed by :mod:`.loader`; used by :mod:`gpulab.pcie`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import units
from .._validate import check_choice

#: Directions of a host copy.
HOST_COPY_DIRECTIONS = ("h2d", "d2h")
#: Host memory kinds of a host copy.
HOST_COPY_MEMORIES = ("pinned", "pageable")


@dataclass(frozen=True)
class CopyParams:
    """Parameters of one copy kind.

    Attributes
    ----------
    latency_s : float
        Fixed cost per copy on the device side (the alpha of alpha-beta). [s]
    issue_floor_s : float
        Shortest time per copy when copies are issued back to back. [s]
    efficiency : float or None
        Large-copy bandwidth / nominal path bandwidth (pinned copies, P2P). [-]
    host_memcpy_bandwidth : units.Bandwidth or None
        Host memcpy rate into or out of the pinned bounce buffer (pageable copies).
    """

    latency_s: float
    issue_floor_s: float
    efficiency: float | None = None
    host_memcpy_bandwidth: units.Bandwidth | None = None


@dataclass(frozen=True)
class HostCopy:
    """Host<->device copy parameters for pinned and pageable memory, both directions."""

    pinned_h2d: CopyParams
    pinned_d2h: CopyParams
    pageable_h2d: CopyParams
    pageable_d2h: CopyParams
    source: str

    def params(self, memory, direction):
        """The :class:`CopyParams` of ``memory`` ("pinned"/"pageable") and
        ``direction`` ("h2d"/"d2h")."""
        check_choice("memory", memory, HOST_COPY_MEMORIES)
        check_choice("direction", direction, HOST_COPY_DIRECTIONS)
        return getattr(self, f"{memory}_{direction}")


#: Keys of a ``copy_hardware`` section: ``<direction>_<memory>[_both]``, ``d2d``, ``p2p``.
HARDWARE_COPY_KEYS = ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable",
                      "h2d_pinned_both", "d2h_pinned_both", "d2d", "p2p")
#: Fields of one ``copy_hardware`` entry (``kind``, ``source`` and the knee pair
#: ``knee_bytes`` / ``bandwidth_above_knee_gb_per_s`` optional).
HARDWARE_COPY_FIELDS = ("latency_s", "pipelined_s", "bandwidth_gb_per_s", "cuda_issue_s",
                        "kind", "source", "knee_bytes", "bandwidth_above_knee_gb_per_s")


@dataclass(frozen=True)
class HardwareCopy:
    """The hardware of one copy kind, apart from the caller's cost of issuing it.

    Attributes
    ----------
    latency_s : float
        Hardware: latency of one isolated copy on an idle stream (the alpha of
        ``alpha + S / B``), GPU-side time between two CUDA events. [s]
    pipelined_s : float
        Hardware: the extra time per copy when copies are queued back to back on one
        stream (the copy engine's gap between queued copies). [s]
    bandwidth : units.Bandwidth
        Hardware: large-copy rate, per direction.
    cuda_issue_s : float
        Caller's cost: the shortest time per ``cudaMemcpyAsync`` call in a
        back-to-back loop (CUDA runtime). [s]
    kind : str
        ``measured`` or ``assumed`` (see ``gpulab/data/README.md``).
    source : str or None
        Where this kind's numbers come from when it differs from the section's.
    knee_bytes : float or None
        Pageable copies only, where the measured host shows one: copies larger than this
        run at ``bandwidth_above_knee`` instead of ``bandwidth`` (the whole copy, not
        only the bytes above the knee). Fitted on the measured host, not a property of
        the GPU. [B]
    bandwidth_above_knee : units.Bandwidth or None
        Per-direction rate of copies larger than ``knee_bytes``.
    """

    latency_s: float
    pipelined_s: float
    bandwidth: units.Bandwidth
    cuda_issue_s: float
    kind: str
    source: str | None = None
    knee_bytes: float | None = None
    bandwidth_above_knee: units.Bandwidth | None = None

    def __post_init__(self):
        if (self.knee_bytes is None) != (self.bandwidth_above_knee is None):
            raise ValueError("knee_bytes and bandwidth_above_knee come together; got "
                             f"knee_bytes={self.knee_bytes!r}, bandwidth_above_knee="
                             f"{self.bandwidth_above_knee!r}")

    def rate(self, message_bytes):
        """Per-direction rate [B/s] of copies of ``message_bytes`` (an array for an
        array): ``bandwidth``, or ``bandwidth_above_knee`` above ``knee_bytes``."""
        s = np.asarray(message_bytes, dtype=float)
        b = self.bandwidth.bytes_per_s
        if self.knee_bytes is None:
            out = np.full(s.shape, b)
        else:
            out = np.where(s > self.knee_bytes, self.bandwidth_above_knee.bytes_per_s, b)
        return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class CopyHardware:
    """``copy_hardware`` section: ``(key, HardwareCopy)`` pairs (keys from
    :data:`HARDWARE_COPY_KEYS`; a tuple, so that a system stays hashable), with the
    section's source, access date and kind."""

    copies: tuple
    source: str
    accessed: str
    kind: str

    def params(self, key):
        """The :class:`HardwareCopy` of ``key`` (one of :data:`HARDWARE_COPY_KEYS`)."""
        check_choice("key", key, HARDWARE_COPY_KEYS)
        found = dict(self.copies)
        if key not in found:
            raise ValueError(f"key {key!r}: not in this copy_hardware section "
                             f"(has {', '.join(found)})")
        return found[key]

