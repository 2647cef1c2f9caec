r"""Readers for perftest output (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw`` and
``ib_read_lat`` / ``ib_write_lat``), and the per-rail check of a multi-node acceptance.

perftest (linux-rdma/perftest) prints a banner (``RDMA_Write BW Test``), a settings
block (``Device : mlx5_0``, ``Link type : IB``, ``Number of qps : 1`` ...), the queue
pair addresses, then one row per message size under a column header:

* bandwidth tests: ``#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec]
  MsgRate[Mpps]`` with ``--report_gbits``, else ``[MB/sec]`` (older versions) or
  ``[MiB/sec]`` (newer versions);
* latency tests: ``#bytes #iterations t_min[usec] t_max[usec] t_typical[usec]
  t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]``.

Everything is returned in SI units: bytes, seconds, bytes per second (one direction:
a plain ``ib_write_bw`` writes from client to server only).

=======================================  ==============================================
Assumption                               Source
=======================================  ==============================================
``Gb/sec`` = 1e9 bit/s = 125 000 000 B/s  perftest ``src/perftest_parameters.c``
``MB/sec`` and ``MiB/sec`` = 2**20 B/s    (``format_factor``: ``0x100000`` or
                                          ``125000000``; commit 00b55b6, 2026)
column headers                           perftest ``src/perftest_parameters.h``
                                         (``RESULT_FMT``, ``RESULT_FMT_G``,
                                         ``RESULT_FMT_LAT``)
a rail passes at >= 90 % of its rate     NVIDIA ``Mellanox/ngc_multinode_perf``
                                         (``common.sh``: passing rate 0.9 x port rate)
=======================================  ==============================================

Malformed input raises :class:`~gpulab.nccltests.NcclTestsParseError` (a ValueError)
naming the parameter, the 1-based line and quoting it.

Examples
--------
>>> text = '''                    RDMA_Write BW Test
...  Device         : mlx5_0
...  Link type       : IB
...  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
...  65536      5000             392.38             392.34             0.748336
... '''
>>> r = parse_perftest(text)
>>> r.test, r.device, float(r.bw_average[0]) * 8 / 1e9
('RDMA_Write BW Test', 'mlx5_0', 392.34)
>>> [f.rail for f in check_rails({"mlx5_0": r, "mlx5_1": 150e9 / 8}, 400e9 / 8)]
['mlx5_1']
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import specs
from .sweep import NcclTestsParseError

__all__ = ["PerftestResult", "RailFinding", "parse_perftest", "read_perftest",
           "rail_bandwidth", "check_rails", "PASS_FRACTION", "PUBLIC_OUTPUTS",
           "public_output", "rail_reports"]

#: Recorded public outputs shipped in ``gpulab/data/measurements/public/``.
PUBLIC_OUTPUTS = ("azure_hdr_ib_write_bw.txt", "azure_hdr_ib_read_lat.txt")

#: A rail passes when it reaches this fraction of its line rate (NVIDIA's
#: ngc_multinode_perf uses 0.9 x the port rate as its passing rate).
PASS_FRACTION = 0.9

_UNIT = {"Gb/sec": 125_000_000.0, "MB/sec": float(2 ** 20), "MiB/sec": float(2 ** 20)}
_BW_HEADER = re.compile(r"#bytes\s+#?iterations\s+BW peak\[(Gb/sec|MB/sec|MiB/sec)\]\s+"
                        r"BW average\[(Gb/sec|MB/sec|MiB/sec)\]\s+MsgRate\[Mpps\]")
_LAT_HEADER = re.compile(r"#bytes\s+#?iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+"
                         r"t_typical\[usec\]\s+t_avg\[usec\]")
_SETTING = re.compile(r"([A-Za-z][A-Za-z .*_-]*?)\s*:\s*(\S+)")
_BANNER = re.compile(r"^\s*((?:RDMA_Write|RDMA_Read|Send|Atomic)\b.*\b(?:BW|Latency) Test)\s*$")


@dataclass(frozen=True)
class PerftestResult:
    """One perftest run. ``kind`` is ``"bw"`` or ``"lat"``. Bandwidth runs fill
    ``bw_peak`` and ``bw_average`` (B/s, one direction) and ``msg_rate`` (messages/s);
    latency runs fill ``t_min``, ``t_typical``, ``t_avg`` and ``t_max`` (seconds).
    The other arrays are empty."""

    kind: str
    test: str
    device: str
    link_type: str
    n_qps: int
    size_bytes: np.ndarray
    iterations: np.ndarray
    bw_peak: np.ndarray
    bw_average: np.ndarray
    msg_rate: np.ndarray
    t_min: np.ndarray
    t_typical: np.ndarray
    t_avg: np.ndarray
    t_max: np.ndarray
    source: str = "<text>"


@dataclass(frozen=True)
class RailFinding:
    """A rail below its pass mark: measured and expected B/s and their ratio."""

    rail: str
    measured: float
    expected: float

    @property
    def fraction(self):
        return self.measured / self.expected

    def __str__(self):
        return (f"{self.rail}: {self.measured * 8 / 1e9:.1f} Gb/s, "
                f"{100 * self.fraction:.0f}% of {self.expected * 8 / 1e9:.0f} Gb/s")


def _num(tok, name, lineno, line, source):
    try:
        v = float(tok)
    except ValueError:
        raise NcclTestsParseError(f"text: {name} {tok!r} is not a number", lineno,
                                  line, source) from None
    if not np.isfinite(v) or v < 0:
        raise NcclTestsParseError(f"text: {name} {tok!r} must be finite and >= 0",
                                  lineno, line, source)
    return v


def parse_perftest(text, *, source="<text>"):
    """Read the text output of one perftest bandwidth or latency run.

    Parameters
    ----------
    text : str
        What ``ib_write_bw`` (or ``ib_read_bw``, ``ib_send_bw``, ``ib_read_lat``,
        ``ib_write_lat``, ``ib_send_lat``) printed, client or server side. Lines
        before the banner (shell prompts, launcher logs) and warnings between the
        rows (``Conflicting CPU frequency ...``) are skipped.
    source : str
        A name for error messages (a file name).

    Returns
    -------
    PerftestResult
    """
    if not isinstance(source, str) or not source:
        raise ValueError(f"source must be a non-empty string, got {source!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be perftest output (a non-empty str), got "
                         f"{type(text).__name__} {text!r:.40}")
    test = device = link = ""
    n_qps, kind, unit = 1, None, None
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().lstrip(">").strip()
        m = _BANNER.match(stripped)
        if m and not test:
            test = m.group(1)
            continue
        if kind is None:
            hb, hl = _BW_HEADER.search(stripped), _LAT_HEADER.search(stripped)
            if hb:
                if hb.group(1) != hb.group(2):
                    raise NcclTestsParseError("text: peak and average columns have "
                                              "different units", lineno, line, source)
                kind, unit = "bw", _UNIT[hb.group(1)]
                continue
            if hl:
                kind = "lat"
                continue
            for s in _SETTING.finditer(stripped):    # two settings per line
                key, val = s.group(1).strip(), s.group(2)
                if key == "Device":
                    device = val
                elif key == "Link type":
                    link = val
                elif key == "Number of qps":
                    n_qps = int(_num(val, "Number of qps", lineno, line, source))
            continue
        if not stripped or stripped.startswith("-"):
            if rows:
                break                      # the table ends at the closing rule
            continue
        toks = stripped.split()
        if not toks[0].isdigit():
            continue                       # a warning printed inside the table
        need = 5 if kind == "bw" else 6
        if len(toks) < need:
            raise NcclTestsParseError(f"text: a {kind} row needs at least {need} "
                                      f"columns, found {len(toks)}", lineno, line, source)
        vals = [_num(t, "column", lineno, line, source) for t in toks[:need]]
        if vals[0] <= 0 or vals[1] <= 0:
            raise NcclTestsParseError("text: #bytes and #iterations must be > 0",
                                      lineno, line, source)
        rows.append(vals)
    if kind is None:
        raise NcclTestsParseError("text: no perftest result header (#bytes "
                                  "#iterations BW peak[...] or t_min[usec]) found",
                                  source=source)
    if not rows:
        raise NcclTestsParseError("text: the result table has no rows", source=source)
    a = np.asarray(rows, dtype=float)
    empty = np.empty(0)
    size, iters = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
    if kind == "bw":
        return PerftestResult("bw", test, device, link, n_qps, size, iters,
                              a[:, 2] * unit, a[:, 3] * unit, a[:, 4] * 1e6,
                              empty, empty, empty, empty, source)
    us = 1e-6
    return PerftestResult("lat", test, device, link, n_qps, size, iters, empty, empty,
                          empty, a[:, 2] * us, a[:, 4] * us, a[:, 5] * us, a[:, 3] * us,
                          source)


def read_perftest(path):
    """:func:`parse_perftest` of a file; ``path`` is a str or Path to a text file.
    Lines starting with ``# Source:`` (our provenance note) are skipped."""
    if isinstance(path, bool) or not isinstance(path, (str, Path)) or not str(path):
        raise ValueError(f"path must be the path of a perftest output file, got {path!r}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path {str(p)!r} is not a file")
    text = "\n".join(ln for ln in p.read_text().splitlines()
                     if not ln.startswith("# Source:"))
    return parse_perftest(text, source=p.name)


def rail_bandwidth(result):
    """The rate one rail reached: the largest ``BW average`` of a bandwidth run, B/s
    in one direction (the large-message plateau of a ``-a`` sweep, or the one row of
    a fixed-size run)."""
    if not isinstance(result, PerftestResult) or result.kind != "bw":
        raise ValueError(f"result must be a bandwidth PerftestResult "
                         f"(parse_perftest of ib_write_bw output), got {result!r:.60}")
    return float(np.max(result.bw_average))


def _finite_number(v):
    """``v`` as a finite float, or None (bools, non-numbers, overflow, nan, inf)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if np.isfinite(f) else None


def check_rails(rails, expected, *, fraction=PASS_FRACTION):
    """The rails below ``fraction`` x ``expected``.

    Parameters
    ----------
    rails : dict
        Rail name (``"mlx5_0"``) -> a bandwidth :class:`PerftestResult` or its rate
        in B/s (one direction).
    expected : float
        The rate each rail should reach, B/s in one direction (the NIC's line rate,
        or a model's prediction of what ``ib_write_bw`` reaches).
    fraction : float
        Pass mark in (0, 1]: 0.9 by default (NVIDIA's ngc_multinode_perf).

    Returns
    -------
    list of RailFinding
        One per failing rail, in the order given; empty when all pass.
    """
    if not isinstance(rails, dict) or not rails:
        raise ValueError(f"rails must be a non-empty dict of rail name -> result, "
                         f"got {rails!r:.60}")
    expected = _finite_number(expected)
    if expected is None or expected <= 0:
        raise ValueError("expected must be a finite rate in B/s > 0")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not (0 < fraction <= 1):
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    found = []
    for name, r in rails.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"rails: every key must be a rail name, got {name!r}")
        bw = _finite_number(r)
        if isinstance(r, PerftestResult) and r.kind == "bw":
            bw = rail_bandwidth(r)
        elif bw is None or bw < 0:
            raise ValueError(f"rails[{name!r}] must be a bandwidth PerftestResult or "
                             f"a finite rate in B/s >= 0, got {r!r:.40}")
        if bw < fraction * expected:
            found.append(RailFinding(name, bw, float(expected)))
    return found


def public_output(name):
    """A recorded public perftest output shipped with gpulab, parsed.

    ``name`` is one of :data:`PUBLIC_OUTPUTS` (sources in
    ``gpulab/data/measurements/public/README.md`` and each file's ``# Source:`` line).
    """
    if name not in PUBLIC_OUTPUTS:
        raise ValueError(f"name must be one of {', '.join(PUBLIC_OUTPUTS)}; got {name!r}")
    return parse_perftest(specs.read_data_text(f"measurements/public/{name}"),
                          source=name)


def rail_reports():
    """Public one-number reports of a rail's ``ib_write_bw`` rate
    (``measurements/public/rail_reports.csv``): a list of dicts with ``source``,
    ``url``, ``rail``, ``line_rate`` and ``rate`` (B/s, one direction) and ``note``."""
    text = specs.read_data_text("measurements/public/rail_reports.csv")
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    out = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        out.append({"source": row["source"], "url": row["url"], "rail": row["rail"],
                    "line_rate": float(row["line_rate_gbit"]) * 125_000_000.0,
                    "rate": float(row["gbit_per_s"]) * 125_000_000.0,
                    "note": row["note"]})
    return out
