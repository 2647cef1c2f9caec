"""Unit constants, conversions, the direction-carrying Bandwidth, formatters."""
from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies import (bandwidths, directions, gb_per_s, gbit_per_s, rates, sizes,
                        sizes0)

from gpulab import units
from gpulab.units import Bandwidth, DirectionError

PD, BD = "per_direction", "bidirectional"


# --- constants: analytic oracles ------------------------------------------------------
def test_decimal_and_binary_prefixes():
    assert (units.KB, units.MB, units.GB, units.TB) == (1e3, 1e6, 1e9, 1e12)
    assert (units.KiB, units.MiB, units.GiB, units.TiB) == (1024, 1024**2, 1024**3,
                                                           1024**4)
    assert units.Gbit == 1e9 / 8
    assert units.BIT == 0.125
    assert (units.NS, units.US, units.MS, units.S) == (1e-9, 1e-6, 1e-3, 1.0)
    assert units.TFLOPS == 1e12
    assert units.DIRECTIONS == (PD, BD)


def test_conversion_examples():
    assert units.gbit_per_s_to_bytes_per_s(400) == 50e9          # 400G NIC = 50 GB/s
    assert units.bytes_per_s_to_gbit_per_s(50e9) == 400.0
    assert units.to_gb(units.GiB) == pytest.approx(1.073741824, rel=1e-15)
    assert units.to_gib(80e9) == pytest.approx(74.50580596923828, rel=1e-15)
    assert units.from_gb(2) == 2e9
    assert units.from_gib(2) == 2 * 2**30


# --- round trips (hypothesis) ---------------------------------------------------------
@given(sizes0)
def test_gb_round_trip(n):
    assert units.from_gb(units.to_gb(n)) == pytest.approx(n, rel=1e-12, abs=0)


@given(sizes0)
def test_gib_round_trip(n):
    assert units.from_gib(units.to_gib(n)) == pytest.approx(n, rel=1e-12, abs=0)


@given(gbit_per_s)
def test_gbit_round_trip(g):
    b = units.gbit_per_s_to_bytes_per_s(g)
    assert b == pytest.approx(g * 1e9 / 8, rel=1e-12)
    assert units.bytes_per_s_to_gbit_per_s(b) == pytest.approx(g, rel=1e-12)


@given(sizes)
def test_gib_is_larger_than_gb(n):
    # the same byte count is fewer GiB than GB, by exactly 2**30 / 1e9
    assert units.to_gb(n) / units.to_gib(n) == pytest.approx(2**30 / 1e9, rel=1e-12)


@given(gb_per_s, directions)
def test_bandwidth_views(x, d):
    bw = Bandwidth.from_gb_per_s(x, d)
    assert bw.direction == d
    assert bw.bytes_per_s == pytest.approx(x * 1e9, rel=1e-12)
    assert bw.gb_per_s == pytest.approx(x, rel=1e-12)
    assert bw.gib_per_s == pytest.approx(x * 1e9 / 2**30, rel=1e-12)
    assert bw.gbit_per_s == pytest.approx(x * 8, rel=1e-12)
    assert Bandwidth.from_gbit_per_s(x * 8, d).isclose(bw, rel_tol=1e-12)


# --- Bandwidth: directions ------------------------------------------------------------
@given(bandwidths())
def test_direction_conversions_are_inverse(bw):
    pd, bd = bw.to_per_direction(), bw.to_bidirectional()
    assert (pd.direction, bd.direction) == (PD, BD)
    assert bd.bytes_per_s == pytest.approx(2 * pd.bytes_per_s, rel=1e-15)
    assert pd.to_bidirectional().isclose(bd, rel_tol=1e-15)
    assert bd.to_per_direction().isclose(pd, rel_tol=1e-15)
    # converting to the direction it already has is the identity
    same = bw.to_per_direction() if bw.direction == PD else bw.to_bidirectional()
    assert same == bw


def test_nvlink4_example():
    nv4 = Bandwidth.from_gb_per_s(900, BD)
    assert nv4.to_per_direction().gb_per_s == 450.0
    assert nv4.to_per_direction().to_bidirectional() == nv4


_MIXED_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "div": lambda a, b: a / b,
    "lt": lambda a, b: a < b,
    "gt": lambda a, b: a > b,
    "le": lambda a, b: a <= b,
    "ge": lambda a, b: a >= b,
    "isclose": lambda a, b: a.isclose(b),
}


@pytest.mark.parametrize("op", sorted(_MIXED_OPS))
@pytest.mark.parametrize("first", [PD, BD])
def test_mixing_directions_raises(op, first):
    other = BD if first == PD else PD
    a = Bandwidth.from_gb_per_s(400, first)
    b = Bandwidth.from_gb_per_s(100, other)
    with pytest.raises(DirectionError, match="to_per_direction"):
        _MIXED_OPS[op](a, b)


def test_direction_error_is_a_value_error():
    assert issubclass(DirectionError, ValueError)


@given(rates, rates, directions)
def test_same_direction_arithmetic(x, y, d):
    a, b = Bandwidth(x, d), Bandwidth(y, d)
    s = a + b
    assert s.direction == d and s.bytes_per_s == pytest.approx(x + y, rel=1e-12)
    assert a / b == pytest.approx(x / y, rel=1e-12)
    assert (a < b) == (x < y) and (a > b) == (x > y)
    assert (a <= b) == (x <= y) and (a >= b) == (x >= y)
    hi, lo = (a, b) if x >= y else (b, a)
    diff = hi - lo
    assert diff.direction == d
    assert diff.bytes_per_s == pytest.approx(abs(x - y), rel=1e-9, abs=1e-3)
    k = (a * 3, 3 * a, a / 4)
    assert [v.direction for v in k] == [d] * 3
    assert k[0].bytes_per_s == k[1].bytes_per_s == pytest.approx(3 * x, rel=1e-12)
    assert k[2].bytes_per_s == pytest.approx(x / 4, rel=1e-12)


def test_bandwidth_refuses_plain_numbers_in_arithmetic():
    a = Bandwidth.from_gb_per_s(25, PD)
    for op in (lambda: a + 25e9, lambda: a - 1, lambda: a < 3, lambda: a * a):
        with pytest.raises(ValueError):
            op()
    with pytest.raises(ValueError, match="zero"):
        a / Bandwidth(0, PD)
    with pytest.raises(ValueError, match="divisor"):
        a / 0
    with pytest.raises(ValueError, match="factor"):
        a * -1


def test_negative_difference_is_refused():
    with pytest.raises(ValueError, match="bytes_per_s"):
        Bandwidth(1, PD) - Bandwidth(2, PD)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), None, "1", True,
                                   [1.0, 2.0]])
def test_bandwidth_constructor_validates_value(value):
    with pytest.raises(ValueError, match="bytes_per_s"):
        Bandwidth(value, PD)


@pytest.mark.parametrize("direction",
                         ["per direction", "both", None, 1, "PER_DIRECTION"])
def test_bandwidth_constructor_validates_direction(direction):
    with pytest.raises(ValueError, match="direction"):
        Bandwidth(1e9, direction)


def test_bandwidth_is_frozen():
    bw = Bandwidth(1e9, PD)
    with pytest.raises(AttributeError):
        bw.bytes_per_s = 2e9


# --- formatters -----------------------------------------------------------------------
@pytest.mark.parametrize("n, binary, text", [
    (0, True, "0 B"),
    (512, True, "512 B"),
    (1536, True, "1.5 KiB"),
    (2 * 2**30, True, "2 GiB"),
    (141e9, True, "131 GiB"),
    (2**40, True, "1 TiB"),
    (1536, False, "1.54 KB"),
    (80e9, False, "80 GB"),
    (2 * 2**30, False, "2.15 GB"),
    (3e12, False, "3 TB"),
])
def test_fmt_bytes(n, binary, text):
    assert units.fmt_bytes(n, binary=binary) == text


@pytest.mark.parametrize("t, text", [
    (0, "0 ns"), (5e-9, "5 ns"), (2.5e-6, "2.5 µs"), (0.0123, "12.3 ms"),
    (1.0, "1 s"), (42.0, "42 s"),
])
def test_fmt_time(t, text):
    assert units.fmt_time(t) == text


# any float literal: scientific notation is a separate (xfail) test below
_NUM_UNIT = re.compile(r"^(\d+(?:\.\d+)?(?:e[+-]\d+)?) (\S+)$")


@given(sizes, st.booleans())
def test_fmt_bytes_reads_back(n, binary):
    m = _NUM_UNIT.match(units.fmt_bytes(n, binary=binary))
    assert m, units.fmt_bytes(n, binary=binary)
    table = ({"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40} if binary
             else {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12})
    assert m.group(2) in table
    # 3 significant digits: within half a unit in the third digit (or 0.5 when >= 1000)
    assert float(m.group(1)) * table[m.group(2)] == pytest.approx(n, rel=5e-3)


@pytest.mark.parametrize("call", [lambda: units.fmt_time(0.9996),
                                  lambda: units.fmt_bytes(999.7 * units.KiB),
                                  lambda: units.fmt_bytes(999.7e6, binary=False)])
def test_formatters_never_use_scientific_notation(call):
    assert "e+" not in call()


@pytest.mark.parametrize("bw, unit, text", [
    (Bandwidth.from_gb_per_s(450, PD), "GB/s", "450 GB/s per direction"),
    (Bandwidth.from_gb_per_s(900, BD), "TB/s", "0.9 TB/s bidirectional"),
    (Bandwidth.from_gb_per_s(50, PD), "Gb/s", "400 Gb/s per direction"),
    (Bandwidth(2**30, BD), "GiB/s", "1 GiB/s bidirectional"),
    (Bandwidth(26.5625e9, PD), "GB/s", "26.5625 GB/s per direction"),
    (Bandwidth(450.0135e9, PD), "GB/s", "450.014 GB/s per direction"),
])
def test_fmt_bandwidth(bw, unit, text):
    assert units.fmt_bandwidth(bw, unit=unit) == text


def test_fmt_bandwidth_digits():
    bw = Bandwidth(26.5625e9, PD)
    assert units.fmt_bandwidth(bw, digits=4) == "26.56 GB/s per direction"
    assert units.fmt_bandwidth(bw, digits=2) == "27 GB/s per direction"


@given(bandwidths(), st.sampled_from(["GB/s", "GiB/s", "Gb/s", "TB/s"]))
def test_fmt_bandwidth_always_names_the_direction(bw, unit):
    text = units.fmt_bandwidth(bw, unit=unit)
    word = "per direction" if bw.direction == PD else "bidirectional"
    assert text.endswith(" " + unit + " " + word)
    # str() is the default format, written out here: decimal GB/s, 6 significant
    # digits, the direction in words
    number, rest = str(bw).split(" ", 1)
    assert rest == "GB/s " + word
    assert float(number) == pytest.approx(bw.bytes_per_s / 1e9, rel=5e-6)
    assert ("per direction" in text) != ("bidirectional" in text)


@pytest.mark.parametrize("plain", [450e9, 450, None, "450 GB/s"])
def test_fmt_bandwidth_refuses_plain_numbers(plain):
    with pytest.raises(ValueError, match="bandwidth"):
        units.fmt_bandwidth(plain)


def test_fmt_bandwidth_unit_is_checked():
    with pytest.raises(ValueError, match="unit"):
        units.fmt_bandwidth(Bandwidth(1e9, PD), unit="MB/s")


def test_fmt_rate_has_no_direction():
    assert units.fmt_rate(26.5625e9) == "26.5625 GB/s"
    assert units.fmt_rate(26.5625e9, digits=4) == "26.56 GB/s"
    assert math.isclose(float(units.fmt_rate(1e12, unit="TB/s").split()[0]), 1.0)
