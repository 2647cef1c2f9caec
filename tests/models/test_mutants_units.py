"""Oracles for gpulab.units written to kill the mutants the other unit tests let live.

Every expected value is worked out by hand from the definitions (GB = 1e9 bytes,
GiB = 2**30 bytes, Gb = 1e9 bits = 1.25e8 bytes, bidirectional = 2 × per direction);
none is computed by gpulab. ``make mutation`` (scripts/mutation.py) runs this file for the
``units`` target; ``tests/mutation_equivalents.md`` lists the mutants that no test can kill.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpulab import units
from gpulab.units import Bandwidth, DirectionError

PD, BD = "per_direction", "bidirectional"


def gbps(x, direction=PD):
    return Bandwidth(x * 1e9, direction)


# --- constants ----------------------------------------------------------------------------
def test_byte_and_time_constants():
    assert (units.KB, units.MB, units.GB, units.TB) == (1e3, 1e6, 1e9, 1e12)
    assert (units.KiB, units.MiB, units.GiB, units.TiB) == (1024, 1024**2, 1024**3, 1024**4)
    assert units.Gbit == 1e9 / 8 and units.BIT == 0.125
    assert (units.NS, units.US, units.MS, units.S) == (1e-9, 1e-6, 1e-3, 1.0)


# --- construction and views ---------------------------------------------------------------
def test_views_of_one_bandwidth():
    bw = Bandwidth(53.6870912e9, PD)          # 50 GiB/s = 429.4967296 Gb/s
    assert bw.gb_per_s == pytest.approx(53.6870912, rel=1e-12)
    assert bw.gib_per_s == pytest.approx(50.0, rel=1e-12)
    assert bw.gbit_per_s == pytest.approx(429.4967296, rel=1e-12)
    assert Bandwidth.from_gb_per_s(25, PD).bytes_per_s == 25e9
    assert Bandwidth.from_gbit_per_s(400, BD) == Bandwidth(50e9, BD)


def test_direction_conversions_halve_and_double():
    assert Bandwidth(900e9, BD).to_per_direction() == Bandwidth(450e9, PD)
    assert Bandwidth(450e9, PD).to_bidirectional() == Bandwidth(900e9, BD)
    same = Bandwidth(450e9, PD)
    assert same.to_per_direction() is same
    assert Bandwidth(900e9, BD).to_bidirectional().bytes_per_s == 900e9


def test_conversion_functions():
    assert units.gbit_per_s_to_bytes_per_s(100) == 12.5e9
    assert units.bytes_per_s_to_gbit_per_s(50e9) == 400.0
    assert units.to_gb(2**30) == 1.073741824
    assert units.to_gib(2**31) == 2.0
    assert units.from_gb(3) == 3e9
    assert units.from_gib(2) == 2**31


# --- arithmetic -------------------------------------------------------------------------
def test_add_subtract_multiply_divide():
    assert (gbps(25) + gbps(50)).bytes_per_s == 75e9
    assert (gbps(50) - gbps(20)).bytes_per_s == 30e9
    assert (gbps(50) * 0.5).bytes_per_s == 25e9           # a factor below one is allowed
    assert (0.5 * gbps(50)).bytes_per_s == 25e9
    assert (gbps(50) * 0).bytes_per_s == 0.0
    assert (gbps(50) / 0.5).bytes_per_s == 100e9          # a divisor below one is allowed
    assert gbps(50) / gbps(20) == 2.5
    assert (gbps(50) + gbps(1)).direction == PD
    assert (gbps(50, BD) * 2).direction == BD
    assert (gbps(50, BD) / 2).direction == BD


def test_comparisons_at_equality():
    a, b = gbps(25), gbps(25)
    assert a <= b and a >= b and not a < b and not a > b
    assert gbps(24) < a and a > gbps(24) and not (gbps(26) <= a) and not (gbps(24) >= a)


def test_isclose_default_tolerance_is_one_in_a_billion():
    assert gbps(1).isclose(Bandwidth(1e9 * (1 + 1e-10), PD))
    assert not gbps(1).isclose(Bandwidth(1e9 * (1 + 1e-6), PD))
    assert gbps(1).isclose(Bandwidth(1e9 * (1 + 1e-6), PD), rel_tol=1e-5)


@pytest.mark.parametrize("op, word", [
    (lambda a, b: a + b, "add"), (lambda a, b: a - b, "subtract"),
    (lambda a, b: a / b, "divide"), (lambda a, b: a < b, "compare"),
    (lambda a, b: a.isclose(b), "compare")])
def test_mixing_directions_names_the_operation(op, word):
    with pytest.raises(DirectionError, match=rf"^cannot {word} a per_direction bandwidth and "
                                             r"a bidirectional one; convert one explicitly "
                                             r"with to_per_direction\(\) or "
                                             r"to_bidirectional\(\)$"):
        op(gbps(1), gbps(1, BD))
    if word == "divide":
        return                                     # dividing by a plain number is scaling
    with pytest.raises(ValueError, match=rf"^cannot {word} a Bandwidth and a float; wrap plain "
                                         r"numbers with Bandwidth\(value, direction\)$"):
        op(gbps(1), 1.0)


def test_bad_factors_and_divisors():
    with pytest.raises(ValueError, match="^cannot multiply two bandwidths$"):
        gbps(1) * gbps(1)
    with pytest.raises(ValueError, match="^factor must be a single real number"):
        gbps(1) * np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="^divisor must be a single real number"):
        gbps(1) / np.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"^divisor must be > 0"):
        gbps(1) / 0
    with pytest.raises(ValueError, match="^cannot divide by a zero bandwidth$"):
        gbps(1) / gbps(0)
    with pytest.raises(ValueError, match="^bytes_per_s must be >= 0"):
        Bandwidth(-1.0, PD)
    with pytest.raises(ValueError, match="^bytes_per_s must be a single real number"):
        Bandwidth(np.array([1.0, 2.0]), PD)
    with pytest.raises(ValueError, match="^direction must be one of 'per_direction'"):
        Bandwidth(1.0, "both")
    with pytest.raises(ValueError, match=r"^factor, bandwidth: too large: .* factor=1e\+300, "
                                         r"bandwidth=1e\+300; give smaller values$"):
        Bandwidth(1e300, PD) * 1e300


# --- formatting -----------------------------------------------------------------------
def test_str_and_format():
    bw = gbps(450)
    assert str(bw) == "450 GB/s per direction"
    assert f"{bw}" == "450 GB/s per direction"
    assert f"{bw:>26}" == "    450 GB/s per direction"
    assert f"{gbps(900, BD)}" == "900 GB/s bidirectional"


def test_default_digits_and_prefixes():
    assert units.fmt_bytes(1234567) == "1.18 MiB"                 # binary, 3 digits
    assert units.fmt_bytes(1234567, binary=False) == "1.23 MB"
    assert units.fmt_time(1.23456e-3) == "1.23 ms"                # 3 digits
    assert units.fmt_rate(26.56251234e9) == "26.5625 GB/s"        # 6 digits
    assert units.fmt_bandwidth(Bandwidth(26.56251234e9, PD)) == "26.5625 GB/s per direction"
    assert units.fmt_bandwidth(gbps(900, BD), unit="TB/s") == "0.9 TB/s bidirectional"
    assert units.fmt_bandwidth(gbps(50), unit="Gb/s") == "400 Gb/s per direction"
    assert units.fmt_bandwidth(Bandwidth(2**30, PD), unit="GiB/s") == "1 GiB/s per direction"


@pytest.mark.parametrize("n, text", [
    (1023, "1023 B"), (1024, "1 KiB"), (1024**2, "1 MiB"), (1024**3, "1 GiB"),
    (1024**4, "1 TiB"), (1536, "1.5 KiB"), (0, "0 B")])
def test_fmt_bytes_prefix_boundaries(n, text):
    assert units.fmt_bytes(n) == text


@pytest.mark.parametrize("t, text", [
    (1.0, "1 s"), (1e-3, "1 ms"), (1e-6, "1 µs"), (5e-10, "0.5 ns"), (0.0, "0 ns"),
    (2.5e-6, "2.5 µs")])
def test_fmt_time_unit_boundaries(t, text):
    assert units.fmt_time(t) == text


def test_large_numbers_keep_every_integer_digit():
    # 1234.5 at 3 significant digits: not '1.23e+03' and not '1230'
    assert units.fmt_rate(1234e9, digits=3) == "1234 GB/s"
    assert units.fmt_rate(999.7e9, digits=3) == "1000 GB/s"       # 1e+03 rewritten
    assert units.fmt_bytes(1e15, binary=False) == "1000 TB"
    assert units.fmt_time(12345.0, digits=2) == "12345 s"


def test_digits_are_checked_against_one_and_fifteen():
    for fmt, arg in ((units.fmt_bytes, 1.0), (units.fmt_time, 1.0), (units.fmt_rate, 1.0),
                     (units.fmt_bandwidth, gbps(1))):
        assert fmt(arg, digits=1) and fmt(arg, digits=15)
        for bad in (0, 16):
            with pytest.raises(ValueError, match=r"^digits must be an integer in \[1, 15\]"):
                fmt(arg, digits=bad)
    for fmt in (units.fmt_rate, units.fmt_bandwidth):
        arg = 1.0 if fmt is units.fmt_rate else gbps(1)
        with pytest.raises(ValueError, match="^unit must be one of 'GB/s'"):
            fmt(arg, unit="PB/s")


@pytest.mark.parametrize("fmt, name", [(units.fmt_bytes, "n_bytes"),
                                       (units.fmt_time, "seconds"),
                                       (units.fmt_rate, "bytes_per_s")])
def test_formatters_name_their_value(fmt, name):
    with pytest.raises(ValueError, match=rf"^{name} must be >= 0"):
        fmt(-1.0)
    with pytest.raises(ValueError, match=rf"^{name} must be a single real number"):
        fmt(np.array([1.0, 2.0]))
    assert fmt(0.0)       # zero is allowed


def test_fmt_bandwidth_refuses_plain_numbers():
    with pytest.raises(ValueError, match=r"^bandwidth must be a gpulab\.units\.Bandwidth "
                                         r"\(a plain number has no direction\); got 3\.0$"):
        units.fmt_bandwidth(3.0)
    assert not math.isnan(gbps(1).gb_per_s)
