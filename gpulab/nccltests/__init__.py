r"""Readers for nccl-tests output: the text table, the JSON report and our CSVs.

nccl-tests (``all_reduce_perf`` and friends) prints a commented header (``# nThread
1 nGpus 8 ...``, one ``#  Rank  0 Group  0 Pid ... on host device  0 [0x..] NAME``
line per rank), a column header, one data row per size with out-of-place and
in-place columns, and a trailer (``# Out of bounds values``, ``# Avg bus
bandwidth``). Recent versions also write a JSON report with ``-J FILE.json``
(``src/util.cu``: ``config``, ``devices``, ``results[].out_of_place/in_place``).
Older versions lack the ``Group``, ``root`` or ``redop`` columns and print
``error`` (a float such as ``0e+00``) instead of ``#wrong``; ``-c 0`` prints
``N/A`` there. All of these, and the CSV of ``gpulab predict --format csv`` and of
our own sweeps (``size_bytes,time_us,algbw_GBps,busbw_GBps`` with optional
``collective``, ``n_ranks``, ``wrong``, ``nccl_version``), read into a
:class:`Sweep` with SI units (bytes, seconds, B/s).

Malformed input raises :class:`NcclTestsParseError` (a ValueError) naming the
1-based line and quoting it. Lines that are not part of nccl-tests' output (NCCL
INFO logs, launcher warnings, ``[1,0]<stdout>:`` tags) are skipped.

Notes
-----
nccl-tests (``doc/PERFORMANCE.md``) defines, for size :math:`S`, time :math:`t`
and :math:`n` ranks,

.. math:: \text{algbw} = S / t, \qquad \text{busbw} = \text{algbw}\cdot f(n)

with :math:`f = 2(n-1)/n` for all_reduce, :math:`(n-1)/n` for all_gather,
reduce_scatter and alltoall and 1 otherwise (:func:`gpulab.collectives.busbw_factor`).
:func:`consistency` checks both within the rounding of the printed digits;
:func:`audit` adds physical limits.

=======================================  ============================================
Assumption                               Source
=======================================  ============================================
time in us, algbw/busbw in GB/s (1e9)    nccl-tests src/util.cu (column units)
JSON report layout (version 2)           nccl-tests src/util.cu (jsonOutputInit ...)
ranks = Rank lines of the header         nccl-tests src/util.cu writeDeviceReport
latency floor 2 us (nccl_model.yaml)     GPU-to-GPU P2P latency over NVLink
                                         ~1.8-2.3 us (cuda-samples#230); public
                                         8-GPU Hopper nccl-tests floors 10-16 us
=======================================  ============================================

Examples
--------
>>> text = '''# Collective test starting: all_reduce_perf
... #  Rank  0 Group  0 Pid 1 on node device  0 [0x18] NVIDIA H100 80GB HBM3
... #  Rank  1 Group  0 Pid 2 on node device  1 [0x2a] NVIDIA H100 80GB HBM3
... #       size   count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
...      1048576  262144 float   sum   -1  10.00 104.86 104.86      0    N/A    N/A    N/A    N/A
... # Avg bus bandwidth    : 104.86
... '''
>>> import numpy as np
>>> s = parse(text)
>>> s.collective, s.n_ranks, s.devices[1].name
('all_reduce', 2, 'NVIDIA H100 80GB HBM3')
>>> float(s.time_s[0]), float(s.busbw[0]) / 1e9, bool(np.isnan(s.time_s_inplace[0]))
(1e-05, 104.86, True)
>>> consistency(s)
[]

One module per part: :mod:`.sweep` (the data, :func:`render`), :mod:`.readers` (text,
JSON and CSV), :mod:`.checks` (:func:`consistency`, :func:`audit`) and :mod:`.perftest`
(``ib_write_bw`` / ``ib_read_lat`` output and the per-rail check); this package
re-exports their public names.
"""
from __future__ import annotations

from .sweep import (  # noqa: F401
    COLLECTIVE_NAMES,
    NcclTestsParseError,
    Device,
    Finding,
    Sweep,
    time_resolution,
    render,
)
from .readers import (  # noqa: F401
    parse_json,
    parse_all,
    parse,
    read_all,
    read,
)
from .checks import (  # noqa: F401
    consistency,
    audit,
)
from . import perftest  # noqa: F401
from .perftest import (  # noqa: F401
    PerftestResult,
    RailFinding,
    parse_perftest,
    read_perftest,
    rail_bandwidth,
    check_rails,
    PASS_FRACTION,
    PUBLIC_OUTPUTS,
    public_output,
    rail_reports,
)

__all__ = [
    "NcclTestsParseError",
    "Device",
    "Sweep",
    "Finding",
    "COLLECTIVE_NAMES",
    "parse",
    "parse_all",
    "parse_json",
    "read",
    "read_all",
    "render",
    "consistency",
    "audit",
    "PerftestResult",
    "RailFinding",
    "parse_perftest",
    "read_perftest",
    "rail_bandwidth",
    "check_rails",
    "PASS_FRACTION",
    "PUBLIC_OUTPUTS",
    "public_output",
    "rail_reports",
]
