"""A measured sweep (:class:`Sweep`), its devices and findings, and :func:`render`,
which writes a sweep back in nccl-tests' text format.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .. import collectives, units
from .._validate import check_int



#: Collective names nccl-tests has binaries for (``<name>_perf``).
COLLECTIVE_NAMES = collectives.BUSBW_OPS + ("gather", "scatter", "hypercube",
                                            "alltoallv")



class NcclTestsParseError(ValueError):
    """Malformed nccl-tests output: ``lineno`` (1-based), the ``line`` and ``source``."""

    def __init__(self, message, lineno=None, line=None, source="<text>"):
        self.reason, self.lineno, self.line, self.source = message, lineno, line, source
        where = source if lineno is None else f"{source}, line {lineno}"
        text = f"{where}: {message}"
        if line is not None:
            text += f": {line[:200]!r}"
        super().__init__(text)


@dataclass(frozen=True)
class Device:
    """One ``#  Rank ...`` line: rank, host, CUDA device index, GPU name."""

    rank: int
    host: str
    device: int
    name: str


@dataclass(frozen=True)
class Finding:
    """A problem :func:`consistency` or :func:`audit` found in one row.

    ``kind`` is one of ``algbw_mismatch``, ``busbw_factor``, ``above_line_rate``,
    ``below_latency_floor``, ``wrong_results``; ``row`` indexes the Sweep's arrays
    and ``lineno`` is the row's line in the source (None for JSON input).
    """

    kind: str
    row: int
    size_bytes: int
    message: str
    lineno: int | None = None


@dataclass(eq=False)
class Sweep:
    """One nccl-tests table (one collective, one run) in SI units.

    Attributes
    ----------
    collective : str or None
        ``all_reduce``, ``all_gather``, ... (None when the input does not say).
    n_ranks : int or None
        Ranks (GPUs) of the run: the header's Rank lines, or the ``nranks`` field.
    devices : tuple of Device
    nccl_version : str or None
        e.g. ``"2.28.3"``.
    size_bytes, count : numpy.ndarray of int
        nccl-tests' ``size`` [B] and ``count`` [elements] (-1 where absent).
    type, redop : numpy.ndarray of str
    root : numpy.ndarray of int
        -1 for rootless collectives.
    time_s, algbw, busbw, wrong : numpy.ndarray of float
        Out-of-place time [s], algbw and busbw [B/s], #wrong (NaN when N/A).
    time_s_inplace, algbw_inplace, busbw_inplace, wrong_inplace : numpy.ndarray
        The in-place columns (NaN where the output has none or prints N/A).
    avg_busbw : float or None
        nccl-tests' ``# Avg bus bandwidth`` trailer. [B/s]
    out_of_bounds : int or None
        ``# Out of bounds values`` count (values that failed nccl-tests' result
        check, summed over the rows; ``N FAILED`` when > 0).
    rank_note : str or None
        Why ``n_ranks`` is None although the header has Rank lines (some ranks
        are missing from it, as in an excerpt).
    source, format : str
        Where it came from and ``"text"``, ``"json"`` or ``"csv"``.
    lineno : numpy.ndarray of int
        1-based source line of each row (0 for JSON).
    config : dict
        Header settings (``nThread``, ``nGpus``, ``minBytes`` ... as printed).
    """

    collective: str | None
    n_ranks: int | None
    devices: tuple
    nccl_version: str | None
    size_bytes: np.ndarray
    count: np.ndarray
    type: np.ndarray
    redop: np.ndarray
    root: np.ndarray
    time_s: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    wrong: np.ndarray
    time_s_inplace: np.ndarray
    algbw_inplace: np.ndarray
    busbw_inplace: np.ndarray
    wrong_inplace: np.ndarray
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    rank_note: str | None = None
    source: str = "<text>"
    format: str = "text"
    lineno: np.ndarray | None = None
    config: dict = field(default_factory=dict)
    time_resolution: dict = field(default_factory=dict, repr=False)

    def __len__(self):
        return int(self.size_bytes.size)

    @property
    def gpus_per_process(self):
        """GPUs one process drove (nccl-tests' ``nGpus``, ``-g``) from the header or
        JSON report, or None when the file does not say; pass it to
        :func:`gpulab.collectives.predict` to model the run as it was made.

        >>> from gpulab.nccltests import parse
        >>> s = parse("# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor)\\n"
        ...           "#  size count type time algbw busbw #wrong\\n"
        ...           " 64 16 float 10.0 0.01 0.01 0\\n", collective="broadcast")
        >>> s.gpus_per_process
        2
        """
        for key in ("nGpus", "ngpus"):
            value = self.config.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                return value
            if isinstance(value, str) and value.strip().isdigit() and int(value) >= 1:
                return int(value)
        return None

    def resolve_ranks(self, n_ranks=None):
        """The rank count to model this sweep with: ``n_ranks`` (the caller's,
        e.g. ``--ranks``) checked against the file, else the file's own count.

        Raises ValueError naming ``n_ranks`` when the file does not say how many
        ranks ran and none is given, or when ``n_ranks`` disagrees with the file
        (another count than its Rank lines, or fewer ranks than the highest rank
        an incomplete header shows).

        >>> from gpulab.nccltests import parse
        >>> s = parse("#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] H100\\n"
        ...           "#  Rank  1 Group  0 Pid 2 on h device  1 [0x02] H100\\n"
        ...           "#  size count type time algbw busbw #wrong\\n"
        ...           " 64 16 float 10.0 0.01 0.01 0\\n", collective="broadcast")
        >>> s.resolve_ranks(), s.resolve_ranks(2)
        (2, 2)
        >>> s.resolve_ranks(8)
        Traceback (most recent call last):
        ...
        ValueError: n_ranks: 8 disagrees with <text>, whose header lists 2 ranks (Rank 0-1)
        """
        if n_ranks is not None:
            n_ranks = check_int("n_ranks", n_ranks, low=1)
        if self.n_ranks is not None:
            if n_ranks is not None and n_ranks != self.n_ranks:
                listed = (f" (Rank 0-{self.n_ranks - 1})" if self.devices else "")
                raise ValueError(f"n_ranks: {n_ranks} disagrees with {self.source}, "
                                 f"whose header lists {self.n_ranks} ranks{listed}")
            return self.n_ranks
        at_least = max((d.rank for d in self.devices), default=-1) + 1
        if n_ranks is None:
            why = self.rank_note or "it has no Rank lines"
            raise ValueError(f"n_ranks: {self.source} does not say how many ranks "
                             f"ran ({why}); give the rank count")
        if n_ranks < at_least:
            raise ValueError(f"n_ranks: {n_ranks} disagrees with {self.source}, "
                             f"whose header shows rank {at_least - 1}, so at least "
                             f"{at_least} ranks ran")
        return n_ranks

    def failed_checks(self):
        """nccl-tests' failed result checks, one sentence each (empty when none).

        A row whose ``#wrong`` is above 0 (out of place or in place) and an
        ``Out of bounds values`` trailer above 0 mean the collective returned
        wrong data: its times are not a valid measurement.

        >>> from gpulab.nccltests import parse
        >>> s = parse("#  size count type time algbw busbw #wrong\\n"
        ...           " 64 16 float 10.0 0.01 0.01 3\\n"
        ...           "# Out of bounds values : 3 FAILED\\n", collective="broadcast")
        >>> s.failed_checks()
        ['64 B out of place: #wrong = 3', 'Out of bounds values : 3 FAILED']
        """
        out = []
        for label, wrong in (("out of place", self.wrong),
                             ("in place", self.wrong_inplace)):
            for i in np.flatnonzero(np.nan_to_num(wrong, nan=0.0) > 0):
                out.append(f"{int(self.size_bytes[i])} B {label}: "
                           f"#wrong = {float(wrong[i]):g}")
        if self.out_of_bounds:
            out.append(f"Out of bounds values : {self.out_of_bounds} FAILED")
        return out

    def to_rows(self):
        """Rows for :func:`gpulab.cli.emit`: times in us, bandwidths in GB/s
        (1e9 B/s), NaN as None."""
        def num(x, digits):
            x = float(x)
            return None if math.isnan(x) else round(x, digits)

        rows = []
        for i in range(len(self)):
            rows.append({
                "size_bytes": int(self.size_bytes[i]), "count": int(self.count[i]),
                "type": str(self.type[i]), "redop": str(self.redop[i]),
                "root": int(self.root[i]),
                "time_us": num(self.time_s[i] / units.US, 3),
                "algbw_GBps": num(self.algbw[i] / units.GB, 4),
                "busbw_GBps": num(self.busbw[i] / units.GB, 4),
                "wrong": num(self.wrong[i], 0),
                "time_us_inplace": num(self.time_s_inplace[i] / units.US, 3),
                "algbw_GBps_inplace": num(self.algbw_inplace[i] / units.GB, 4),
                "busbw_GBps_inplace": num(self.busbw_inplace[i] / units.GB, 4),
                "wrong_inplace": num(self.wrong_inplace[i], 0)})
        return rows


def time_resolution(token):
    """Half the last printed digit of ``token`` (the rounding error bound)."""
    m = re.match(r"^[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$", token)
    if not m:
        return 0.0
    decimals = len(m.group(2) or "")
    exp = int(m.group(3) or 0)
    return 0.5 * 10.0 ** (exp - decimals)


# --- render (the inverse, for round trips and fixtures) ---------------------------------
def _fmt(value, width):
    """nccl-tests' number format (util.cu getFloatStr) for ``value`` in ``width``."""
    if math.isnan(value):
        return "N/A".rjust(width)
    power, v = 0, 1
    while value >= v:
        power += 1
        v *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def render(sweep):
    """nccl-tests' text table of ``sweep`` (current format, with the trailer).

    >>> from gpulab.nccltests import parse
    >>> s = parse("#  size count type time algbw busbw #wrong\\n"
    ...           " 64 16 float 10.0 0.01 0.01 0", collective="broadcast")
    >>> print(render(s).splitlines()[-2][:69])
              64            16     float    none      -1    10.00    0.01
    """
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a Sweep; got {type(sweep).__name__}")
    out = []
    if sweep.collective:
        out.append(f"# Collective test starting: {sweep.collective}_perf")
    out.append("#")
    out.append("# Using devices")
    for d in sweep.devices:
        out.append(f"#  Rank {d.rank:2d} Group  0 Pid {1000 + d.rank:6d} on "
                   f"{d.host:>10s} device {d.device:2d} [0x00] {d.name}")
    out.append("#")
    out.append(f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  "
               f"{'root':>6s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s}  "
               f"{'#wrong':>6s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s}  "
               f"{'#wrong':>6s}")
    for i in range(len(sweep)):
        cells = [f"{int(sweep.size_bytes[i]):12d}", f"{int(sweep.count[i]):12d}",
                 f"{sweep.type[i]:>8s}", f"{sweep.redop[i] or 'none':>6s}",
                 f"{int(sweep.root[i]):6d}"]
        for t, a, b, w in ((sweep.time_s, sweep.algbw, sweep.busbw, sweep.wrong),
                           (sweep.time_s_inplace, sweep.algbw_inplace,
                            sweep.busbw_inplace, sweep.wrong_inplace)):
            cells += [_fmt(float(t[i]) / units.US, 7), _fmt(float(a[i]) / units.GB, 6),
                      _fmt(float(b[i]) / units.GB, 6),
                      "N/A".rjust(6) if math.isnan(w[i]) else f"{w[i]:6g}"]
        out.append("  ".join(cells))
    if sweep.out_of_bounds is not None:
        verdict = "FAILED" if sweep.out_of_bounds else "OK"
        out.append(f"# Out of bounds values : {sweep.out_of_bounds} {verdict}")
    if sweep.avg_busbw is not None:
        out.append(f"# Avg bus bandwidth    : {sweep.avg_busbw / units.GB:g}")
    out.append("#")
    return "\n".join(out) + "\n"
