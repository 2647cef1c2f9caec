"""Units: SI inside, explicit conversions at the edges, bandwidths with a direction.

Everything inside gpulab is in SI base units: bytes, seconds and bytes per second.
This module is the only place where unit factors appear.

* Decimal prefixes (``KB``, ``MB``, ``GB``, ``TB``) are powers of 1000: vendors
  quote link and memory bandwidth in GB/s with GB = 1e9 bytes.
* Binary prefixes (``KiB``, ``MiB``, ``GiB``, ``TiB``) are powers of 1024: message
  sizes in nccl-tests and memory capacities in ``nvidia-smi`` (MiB) use them.
* Network and SerDes rates are quoted in bits per second (``Gbit`` = 1e9 bits =
  1.25e8 bytes). 400 Gb/s is 50 GB/s, not 400 GB/s.

A bandwidth figure on a spec sheet is either *per direction* (what one GPU can
send while it also receives the same amount) or *bidirectional* (the sum of both
directions). :class:`Bandwidth` carries that direction with the value; adding or
comparing bandwidths of different directions raises :class:`DirectionError`, and
conversion is explicit (:meth:`Bandwidth.to_per_direction`).

Examples
--------
>>> from gpulab import units
>>> nvlink4 = units.Bandwidth.from_gb_per_s(900, "bidirectional")
>>> nvlink4.to_per_direction().gb_per_s
450.0
>>> units.gbit_per_s_to_bytes_per_s(400) / units.GB   # a 400 Gb/s NIC
50.0
>>> units.fmt_bytes(2 * units.GiB)
'2 GiB'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._validate import as_number, check_choice, check_int, finite_answer, finite_result

__all__ = [
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "BIT", "Gbit",
    "NS", "US", "MS", "S", "TFLOPS",
    "PER_DIRECTION", "BIDIRECTIONAL", "DIRECTIONS",
    "Bandwidth", "DirectionError",
    "gbit_per_s_to_bytes_per_s", "bytes_per_s_to_gbit_per_s",
    "to_gb", "to_gib", "from_gb", "from_gib",
    "fmt_bytes", "fmt_time", "fmt_bandwidth", "fmt_rate",
]

# --- sizes [bytes] -----------------------------------------------------------
B = 1.0
KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
BIT = 1.0 / 8.0            # one bit, in bytes
Gbit = 1e9 * BIT           # one gigabit, in bytes (so Gbit/s -> B/s)

# --- time [seconds] ------------------------------------------------------------
S = 1.0
MS, US, NS = 1e-3, 1e-6, 1e-9

# --- compute [FLOP/s] ----------------------------------------------------------
TFLOPS = 1e12

# --- directions ------------------------------------------------------------------
PER_DIRECTION = "per_direction"
BIDIRECTIONAL = "bidirectional"
DIRECTIONS = (PER_DIRECTION, BIDIRECTIONAL)


class DirectionError(ValueError):
    """Raised when per-direction and bidirectional bandwidths are mixed."""


@dataclass(frozen=True, order=False)
class Bandwidth:
    """A bandwidth in bytes per second that knows its direction.

    Parameters
    ----------
    bytes_per_s : float
        The rate. [B/s]
    direction : {"per_direction", "bidirectional"}
        ``per_direction``: what flows one way while the other way carries the
        same amount (the figure to compare with a transfer or nccl-tests busbw).
        ``bidirectional``: the sum of both directions (spec-sheet totals such as
        "900 GB/s NVLink").

    Notes
    -----
    Links in this course are symmetric (full duplex, the same rate each way), so
    ``bidirectional = 2 * per_direction``; the conversion is explicit on purpose.

    Examples
    --------
    >>> a = Bandwidth.from_gb_per_s(25, "per_direction")
    >>> (a * 18).gb_per_s
    450.0
    >>> a + Bandwidth.from_gb_per_s(50, "bidirectional")
    Traceback (most recent call last):
    ...
    gpulab.units.DirectionError: cannot add a per_direction bandwidth and a bidirectional one; convert one explicitly with to_per_direction() or to_bidirectional()
    """

    bytes_per_s: float
    direction: str

    def __post_init__(self):
        object.__setattr__(self, "bytes_per_s",
                           as_number("bytes_per_s", self.bytes_per_s, low=0,
                                     allow_array=False))
        check_choice("direction", self.direction, DIRECTIONS)

    # construction -------------------------------------------------------------
    @classmethod
    @finite_answer
    def from_gb_per_s(cls, gb_per_s, direction):
        """Build from a figure in GB/s (GB = 1e9 bytes)."""
        gb_per_s = as_number("gb_per_s", gb_per_s, low=0, allow_array=False)
        return cls(finite_result(gb_per_s * GB, gb_per_s=gb_per_s), direction)

    @classmethod
    @finite_answer
    def from_gbit_per_s(cls, gbit_per_s, direction):
        """Build from a figure in Gb/s (gigabits per second)."""
        return cls(gbit_per_s_to_bytes_per_s(
            as_number("gbit_per_s", gbit_per_s, low=0, allow_array=False)), direction)

    # views ----------------------------------------------------------------------
    @property
    def gb_per_s(self):
        """The value in GB/s (1e9 bytes per second), same direction."""
        return self.bytes_per_s / GB

    @property
    def gib_per_s(self):
        """The value in GiB/s (2**30 bytes per second), same direction."""
        return self.bytes_per_s / GiB

    @property
    def gbit_per_s(self):
        """The value in Gb/s (1e9 bits per second), same direction."""
        return bytes_per_s_to_gbit_per_s(self.bytes_per_s)

    def to_per_direction(self):
        """Return the per-direction figure (half of a symmetric bidirectional one)."""
        if self.direction == PER_DIRECTION:
            return self
        return Bandwidth(self.bytes_per_s / 2.0, PER_DIRECTION)

    def to_bidirectional(self):
        """Return the bidirectional total (twice a symmetric per-direction one)."""
        if self.direction == BIDIRECTIONAL:
            return self
        return Bandwidth(self.bytes_per_s * 2.0, BIDIRECTIONAL)

    # arithmetic -----------------------------------------------------------------
    def _same(self, other, op):
        if not isinstance(other, Bandwidth):
            raise ValueError(f"cannot {op} a Bandwidth and a {type(other).__name__}; "
                             "wrap plain numbers with Bandwidth(value, direction)")
        if other.direction != self.direction:
            raise DirectionError(
                f"cannot {op} a {self.direction} bandwidth and a {other.direction} "
                "one; convert one explicitly with to_per_direction() or "
                "to_bidirectional()")
        return other

    def __add__(self, other):
        other = self._same(other, "add")
        return Bandwidth(self.bytes_per_s + other.bytes_per_s, self.direction)

    def __sub__(self, other):
        other = self._same(other, "subtract")
        return Bandwidth(self.bytes_per_s - other.bytes_per_s, self.direction)

    def __mul__(self, k):
        if isinstance(k, Bandwidth):
            raise ValueError("cannot multiply two bandwidths")
        k = as_number("factor", k, low=0, allow_array=False)
        return Bandwidth(finite_result(self.bytes_per_s * k, factor=k,
                                       bandwidth=self.bytes_per_s), self.direction)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Bandwidth):
            other = self._same(other, "divide")
            if other.bytes_per_s == 0:
                raise ValueError("cannot divide by a zero bandwidth")
            return self.bytes_per_s / other.bytes_per_s
        k = as_number("divisor", other, low=0, low_inclusive=False, allow_array=False)
        return Bandwidth(self.bytes_per_s / k, self.direction)

    def _cmp(self, other):
        return self.bytes_per_s, self._same(other, "compare").bytes_per_s

    def __lt__(self, other):
        a, b = self._cmp(other)
        return a < b

    def __le__(self, other):
        a, b = self._cmp(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._cmp(other)
        return a > b

    def __ge__(self, other):
        a, b = self._cmp(other)
        return a >= b

    def isclose(self, other, rel_tol=1e-9):
        """True if both have the same direction and nearly the same value."""
        other = self._same(other, "compare")
        return math.isclose(self.bytes_per_s, other.bytes_per_s, rel_tol=rel_tol)

    def __str__(self):
        return fmt_bandwidth(self)

    def __format__(self, spec):
        return fmt_bandwidth(self) if not spec else format(str(self), spec)


# --- conversions ---------------------------------------------------------------------
@finite_answer
def gbit_per_s_to_bytes_per_s(gbit_per_s):
    """Convert gigabits per second to bytes per second.

    Parameters
    ----------
    gbit_per_s : numeric
        Rate in Gb/s (1e9 bits per second). [Gb/s]

    Returns
    -------
    numeric
        Rate. [B/s]

    Examples
    --------
    >>> gbit_per_s_to_bytes_per_s(100) / GB
    12.5
    """
    return as_number("gbit_per_s", gbit_per_s, low=0) * Gbit


@finite_answer
def bytes_per_s_to_gbit_per_s(bytes_per_s):
    """Convert bytes per second to gigabits per second.

    >>> bytes_per_s_to_gbit_per_s(50 * GB)
    400.0
    """
    return as_number("bytes_per_s", bytes_per_s, low=0) / Gbit


@finite_answer
def to_gb(n_bytes):
    """Express a byte count in GB (1e9 bytes). ``to_gb(GiB)`` is 1.073741824."""
    return as_number("n_bytes", n_bytes, low=0) / GB


@finite_answer
def to_gib(n_bytes):
    """Express a byte count in GiB (2**30 bytes). ``to_gib(80 * GB)`` is 74.5..."""
    return as_number("n_bytes", n_bytes, low=0) / GiB


@finite_answer
def from_gb(gb):
    """Bytes in ``gb`` decimal gigabytes."""
    return as_number("gb", gb, low=0) * GB


@finite_answer
def from_gib(gib):
    """Bytes in ``gib`` binary gibibytes."""
    return as_number("gib", gib, low=0) * GiB


# --- formatters ------------------------------------------------------------------------
_BIN = [("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)]
_DEC = [("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB)]


def _trim(x, digits):
    """Format with ``digits`` significant digits, never in scientific notation."""
    s = f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"
    if "e" in s and abs(x) >= 1:          # e.g. 999.7 at 3 digits -> '1e+03'
        s = f"{float(s):.0f}"
    return s


def fmt_bytes(n_bytes, *, binary=True, digits=3):
    """Format a byte count with a binary (default) or decimal prefix.

    >>> fmt_bytes(1536)
    '1.5 KiB'
    >>> fmt_bytes(80e9, binary=False)
    '80 GB'
    >>> fmt_bytes(141e9)
    '131 GiB'
    """
    n = as_number("n_bytes", n_bytes, low=0, allow_array=False)
    digits = check_int("digits", digits, low=1, high=15)
    for name, factor in (_BIN if binary else _DEC):
        if n >= factor:
            return f"{_trim(n / factor, digits)} {name}"
    return f"{_trim(n, digits)} B"


def fmt_time(seconds, *, digits=3):
    """Format a duration with a readable unit (ns, µs, ms, s).

    >>> fmt_time(2.5e-6)
    '2.5 µs'
    >>> fmt_time(0.0123)
    '12.3 ms'
    """
    t = as_number("seconds", seconds, low=0, allow_array=False)
    digits = check_int("digits", digits, low=1, high=15)
    for name, factor in (("s", S), ("ms", MS), ("µs", US)):
        if t >= factor:
            return f"{_trim(t / factor, digits)} {name}"
    return f"{_trim(t / NS, digits)} ns"


def fmt_bandwidth(bandwidth, *, unit="GB/s", digits=6):
    """Format a :class:`Bandwidth` with its direction spelled out.

    Parameters
    ----------
    bandwidth : Bandwidth
        The value to format (a plain number is refused: it has no direction).
    unit : {"GB/s", "GiB/s", "Gb/s", "TB/s"}
        Display unit.

    Examples
    --------
    >>> fmt_bandwidth(Bandwidth.from_gb_per_s(450, "per_direction"))
    '450 GB/s per direction'
    >>> fmt_bandwidth(Bandwidth.from_gb_per_s(900, "bidirectional"), unit="TB/s")
    '0.9 TB/s bidirectional'
    """
    if not isinstance(bandwidth, Bandwidth):
        raise ValueError("bandwidth must be a gpulab.units.Bandwidth (a plain number "
                         f"has no direction); got {bandwidth!r}")
    factors = {"GB/s": GB, "GiB/s": GiB, "Gb/s": Gbit, "TB/s": TB}
    check_choice("unit", unit, factors)
    check_int("digits", digits, low=1, high=15)
    words = "per direction" if bandwidth.direction == PER_DIRECTION else "bidirectional"
    return f"{fmt_rate(bandwidth.bytes_per_s, unit=unit, digits=digits)} {words}"


def fmt_rate(bytes_per_s, *, unit="GB/s", digits=6):
    """Format a plain rate in bytes/s (no direction word; prefer fmt_bandwidth).

    >>> fmt_rate(26.5625e9)
    '26.5625 GB/s'
    """
    factors = {"GB/s": GB, "GiB/s": GiB, "Gb/s": Gbit, "TB/s": TB}
    check_choice("unit", unit, factors)
    digits = check_int("digits", digits, low=1, high=15)
    v = as_number("bytes_per_s", bytes_per_s, low=0, allow_array=False)
    return f"{_trim(v / factors[unit], digits)} {unit}"
