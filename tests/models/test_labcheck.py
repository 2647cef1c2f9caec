"""gpulab.labcheck: the labs' ✓ checks, skip lines, slips and tables.

The messages are what students read in the labs, so the tests pin them word for word.
A student's first wrong answer of a check gives a hint and no expected value; the second
gives the expected value (the ``students`` tests); strict runs give it at once.
Most tests run strict (``GPULAB_LAB_STRICT=1``, as the course's tests do), so that a
failure is an ``AssertionError`` whose message they read; the ``students`` fixture runs
as a student does: a failure is shown and recorded, and nothing is raised.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpulab import labcheck, units
from gpulab.labcheck import (AGAIN, Accepted, accepted, answer_text, check, check_slips,
                             fail, factor_note, failures, generic_hint, markdown_table,
                             reset_failures, results, show, show_table, size_note,
                             solutions_on, status_line, strict_on, unanswered)

PD, BD = "per_direction", "bidirectional"
GIB_GB = units.GiB / units.GB

#: The named slips: (factor, the reason factor_note gives).
SLIPS = [(2, "per direction vs bidirectional?"),
         (8, "bits vs bytes? (1 byte = 8 bits)"),
         (GIB_GB, "GiB vs GB?"),
         (1e9, "a unit prefix? Answer in the unit asked for."),
         (1e6, "a unit prefix? Answer in the unit asked for.")]


def bw(gb_per_s, direction=PD):
    return units.Bandwidth.from_gb_per_s(gb_per_s, direction)


def failure(*args, **kwargs):
    """The AssertionError message of a failing check(...)."""
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


@pytest.fixture(scope="module", autouse=True)
def strict():
    """Failures raise (GPULAB_LAB_STRICT=1) unless a test runs as ``students``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULAB_LAB_STRICT", "1")
        yield


@pytest.fixture(autouse=True)
def fresh_kernel():
    """Every test starts as a fresh kernel: no check has had a wrong answer yet."""
    reset_failures()
    yield
    reset_failures()


@pytest.fixture
def students(monkeypatch):
    """As a student runs a lab: GPULAB_LAB_SOLUTIONS and GPULAB_LAB_STRICT unset."""
    monkeypatch.delenv("GPULAB_LAB_SOLUTIONS", raising=False)
    monkeypatch.delenv("GPULAB_LAB_STRICT", raising=False)


@pytest.fixture
def course_tests(monkeypatch):
    """As the course's tests run a lab: GPULAB_LAB_SOLUTIONS=1."""
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "1")


# --- import and switches ----------------------------------------------------------------
def test_import_pulls_in_no_notebook_libraries():
    code = ("import sys, gpulab.labcheck; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets', 'IPython') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("value, on", [("1", True), ("0", False), ("", False),
                                       ("true", False), ("yes", False), (" 1", False)])
def test_solutions_on_only_for_exactly_1(monkeypatch, value, on):
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", value)
    assert solutions_on() is on


def test_solutions_on_is_read_at_every_call(monkeypatch):
    monkeypatch.delenv("GPULAB_LAB_SOLUTIONS", raising=False)
    assert solutions_on() is False
    monkeypatch.setenv(labcheck.SOLUTIONS_ENV, "1")
    assert solutions_on() is True


def test_status_line(monkeypatch):
    import gpulab

    monkeypatch.delenv("GPULAB_LAB_SOLUTIONS", raising=False)
    assert status_line() == f"gpulab {gpulab.__version__} | solutions: off"
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "1")
    assert status_line() == f"gpulab {gpulab.__version__} | solutions: on"


# --- show ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, unit, text", [
    (bw(450), "", "450 GB/s per direction"),
    (bw(900, BD), "ignored", "900 GB/s bidirectional"),
    (units.DirectionError("mixed"), "", "DirectionError caught"),
    (ValueError("x"), "s", "ValueError caught"),
    (18, "links", "18 links"),
    (1 / 3, "GB", "0.333333 GB"),
    (2.5e-6, "s", "2.5e-06 s"),
    (123456789.0, "B", "1.23457e+08 B"),
    (np.float64(0.5), "(ratio)", "0.5 (ratio)"),
    (np.int64(7), "", "7"),
    (np.array(0.25), "", "0.25"),
    ("PIX", "", "'PIX'"),
    (True, "", "True"),
    ((8, 2, 2), "", "(8, 2, 2)"),
    (None, "", "None"),
])
def test_show(value, unit, text):
    assert show(value, unit) == text


def test_show_number_without_unit_has_no_trailing_blank():
    assert show(3.0) == "3"


@pytest.mark.parametrize("unit", [None, 5, b"GB"])
def test_show_rejects_a_unit_that_is_not_a_string(unit):
    with pytest.raises(ValueError, match="^unit must be a string"):
        show(1.0, unit)


# --- factor_note ---------------------------------------------------------------------
@pytest.mark.parametrize("k, why", SLIPS)
def test_factor_note_names_each_slip_both_ways(k, why):
    assert factor_note(3.0 * k, 3.0) == f" Your value is {k:.4g}x too large: {why}"
    assert factor_note(3.0 / k, 3.0) == f" Your value is {k:.4g}x too small: {why}"


def test_factor_note_exact_texts():
    assert factor_note(900, 450) == \
        " Your value is 2x too large: per direction vs bidirectional?"
    assert factor_note(50, 400) == \
        " Your value is 8x too small: bits vs bytes? (1 byte = 8 bits)"
    assert factor_note(units.GiB, units.GB) == \
        " Your value is 1.074x too large: GiB vs GB?"
    assert factor_note(4.5e11, 450) == (" Your value is 1e+09x too large: a unit "
                                        "prefix? Answer in the unit asked for.")


def test_factor_note_inverse_and_nothing():
    assert factor_note(4.0, 0.25) == \
        " Your value is the inverse: divided the other way round?"
    assert factor_note(451, 450) == ""
    assert factor_note(3 * 450, 450) == ""
    assert factor_note(0, 450) == ""
    assert factor_note(450, 0) == ""
    assert factor_note(math.nan, 450) == ""


def test_factor_note_tolerance_is_a_tenth_of_a_percent():
    assert factor_note(2 * 450 * (1 + 5e-4), 450) != ""
    assert factor_note(2 * 450 * (1 + 5e-3), 450) == ""


@given(want=st.floats(1e-6, 1e6), k_why=st.sampled_from(SLIPS),
       larger=st.booleans(), wiggle=st.floats(-4e-4, 4e-4))
def test_factor_note_finds_any_slipped_value(want, k_why, larger, wiggle):
    k, why = k_why
    got = want * (k if larger else 1 / k) * (1 + wiggle)
    word = "too large" if larger else "too small"
    assert factor_note(got, want) == f" Your value is {k:.4g}x {word}: {why}"


@given(want=st.floats(1e-3, 1e3), ratio=st.floats(1.2, 1.8) | st.floats(2.2, 7.5))
def test_factor_note_is_silent_for_other_ratios(want, ratio):
    if math.isclose(want * ratio * want, 1, rel_tol=2e-3):
        return  # the inverse, which is a named slip
    assert factor_note(want * ratio, want) == ""


@pytest.mark.parametrize("got, want, name", [(None, 1.0, "got"), ("2", 1.0, "got"),
                                             (True, 1.0, "got"), (1.0, None, "want"),
                                             (1.0, bw(1), "want"), (1.0, [1.0], "want")])
def test_factor_note_rejects_non_numbers(got, want, name):
    with pytest.raises(ValueError, match=f"^{name} must be a real number"):
        factor_note(got, want)


# --- check: passing answers, every kind of expectation ----------------------------------
@pytest.mark.parametrize("value, expected, kwargs, line", [
    (bw(450), bw(450), {}, "✓ 1: 450 GB/s per direction"),
    (bw(900, BD), bw(900.4, BD), {}, "✓ 1: 900 GB/s bidirectional"),
    (units.DirectionError("mixed"), units.DirectionError, {}, "✓ 1: DirectionError caught"),
    (units.DirectionError("mixed"), ValueError, {}, "✓ 1: DirectionError caught"),
    (True, True, {}, "✓ 1: True"),
    (False, False, {}, "✓ 1: False"),
    ("PIX", "PIX", {}, "✓ 1: 'PIX'"),
    ("  p2p/nvlink ", "P2P/NVLink", {}, "✓ 1: '  p2p/nvlink '"),
    (4, 4, {}, "✓ 1: 4"),
    (4.0, 4, {}, "✓ 1: 4"),
    (np.int64(4), 4, {}, "✓ 1: 4"),
    (50.0, 50.0, {"unit": "GB/s"}, "✓ 1: 50 GB/s"),
    (50.04, 50.0, {"unit": "GB/s"}, "✓ 1: 50.04 GB/s"),
    (np.float64(0.88), 0.88, {"unit": "(fraction of spec)"}, "✓ 1: 0.88 (fraction of spec)"),
    ("2.5", 2.5, {}, "✓ 1: '2.5'"),
    (2.5, np.array(2.5), {}, "✓ 1: 2.5"),
    (1.0737418, GIB_GB, {"rel": 1e-6, "unit": "GB"}, "✓ 1: 1.07374 GB"),
])
def test_check_passes_and_prints_the_tick(students, capsys, value, expected, kwargs, line):
    assert check("1", value, expected, **kwargs) is None
    assert capsys.readouterr().out == line + "\n"


def test_check_pass_under_course_tests_too(course_tests, capsys):
    check("8 (generation)", 3, 3)
    assert capsys.readouterr().out == "✓ 8 (generation): 3\n"


# --- check: failing answers --------------------------------------------------------------
def test_bandwidth_in_the_wrong_direction_names_the_conversion():
    msg = failure("1", bw(900, BD), bw(450),
                  hint="units.Bandwidth.from_gb_per_s(900, 'bidirectional') "
                       "then .to_per_direction()")
    assert msg == ("Exercise 1: expected a per_direction figure, got 900 GB/s "
                   "bidirectional (the right value once converted: call "
                   ".to_per_direction())\n"
                   "Hint: units.Bandwidth.from_gb_per_s(900, 'bidirectional') "
                   "then .to_per_direction()")
    assert failure("7", bw(450), bw(900, BD)) == (
        "Exercise 7: expected a bidirectional figure, got 450 GB/s per direction "
        "(the right value once converted: call .to_bidirectional())")


def test_bandwidth_in_the_wrong_direction_and_wrong_value_gives_no_conversion():
    assert failure("1", bw(450, BD), bw(450)) == (
        "Exercise 1: expected a per_direction figure, got 450 GB/s bidirectional")


@given(gb=st.floats(1e-3, 1e4), rel=st.sampled_from([1e-6, 1e-3, 1e-2]))
def test_any_right_bandwidth_in_the_other_direction_gets_the_conversion_hint(gb, rel):
    msg = failure("x", bw(gb).to_bidirectional(), bw(gb), rel=rel)
    assert msg.endswith("(the right value once converted: call .to_per_direction())")


@pytest.mark.parametrize("k, why", SLIPS)
def test_bandwidth_off_by_a_classic_factor_names_it(k, why):
    msg = failure("9", bw(450 * k), bw(450))
    assert msg.startswith("Exercise 9: expected 450 GB/s per direction (within 0.1%), "
                          "got ")
    assert msg.endswith(f". Your value is {k:.4g}x too large: {why}")


def test_bandwidth_off_by_two_exact_text():
    assert failure("8", bw(25), bw(50), hint="4 lanes") == (
        "Exercise 8: expected 50 GB/s per direction (within 0.1%), got 25 GB/s per "
        "direction. Your value is 2x too small: per direction vs bidirectional?\n"
        "Hint: 4 lanes")


def test_bandwidth_expected_but_a_number_given():
    assert failure("2", 450.0, bw(450)) == (
        "Exercise 2: expected a units.Bandwidth (a value with a direction), "
        "got float 450.0")


def test_exception_class_expected():
    assert failure("4", "per_dir + bidir", units.DirectionError,
                   hint="store the exception object itself") == (
        "Exercise 4: expected the DirectionError you caught, got 'per_dir + bidir'\n"
        "Hint: store the exception object itself")
    # the class itself is not the object caught
    assert failure("4", units.DirectionError, units.DirectionError).startswith(
        "Exercise 4: expected the DirectionError you caught, got <class ")


def test_bool_expected():
    assert failure("5", False, True) == "Exercise 5: expected True, got False"
    assert failure("5", (True, "reason"), True) == (
        "Exercise 5: expected True or False, got tuple (True, 'reason') "
        "(a function returning (verdict, reason)? keep the verdict)")
    assert failure("5", 1, True).startswith("Exercise 5: expected True or False, got int 1")


def test_str_expected():
    assert failure("1", "PHB", "NV18") == "Exercise 1: expected 'NV18', got 'PHB'"
    assert failure("3", ("P2P/CUMEM", "why"), "P2P/NVLink") == (
        "Exercise 3: expected a string (str), got tuple ('P2P/CUMEM', 'why') "
        "(a function returning (answer, reason)? keep the answer)")


def test_int_expected_is_exact():
    assert failure("2", 8, 4) == "Exercise 2: expected 4, got 8"
    assert failure("2", 4.001, 4) == "Exercise 2: expected 4, got 4.001"
    assert failure("2", "4", 4) == "Exercise 2: expected 4, got '4'"
    assert failure("2", True, 1) == "Exercise 2: expected 1, got True"
    assert failure("2", np.array([4, 4]), 4) == "Exercise 2: expected 4, got array([4, 4])"


def test_float_expected_messages():
    assert failure("2", 400, 50.0, unit="GB/s",
                   hint="units.Gbit is the number of bytes in one gigabit") == (
        "Exercise 2: expected 50 GB/s (within 0.1%), got 400 GB/s. Your value is 8x "
        "too large: bits vs bytes? (1 byte = 8 bits)\n"
        "Hint: units.Gbit is the number of bytes in one gigabit")
    assert failure("3", 1.0, GIB_GB, rel=1e-6, unit="GB") == (
        "Exercise 3: expected 1.07374 GB (within 0.0001%), got 1 GB. Your value is "
        "1.074x too small: GiB vs GB?")
    assert failure("5", 106.25, 106.25e9, unit="bit/s") == (
        "Exercise 5: expected 1.0625e+11 bit/s (within 0.1%), got 106.25 bit/s. Your "
        "value is 1e+09x too small: a unit prefix? Answer in the unit asked for.")
    assert failure("6", 0.5, 0.6) == "Exercise 6: expected 0.6 (within 0.1%), got 0.5."


def test_float_expected_but_no_number_given():
    assert failure("11", bw(400), 0.88, unit="(fraction of spec)") == (
        "Exercise 11: expected a plain number in (fraction of spec), got Bandwidth "
        f"{bw(400)!r}")
    assert failure("11", "most", 0.88) == (
        "Exercise 11: expected a plain number in SI units, got str 'most'")


def test_no_hint_no_hint_line():
    assert "Hint" not in failure("6", 0.5, 0.6)


@given(expected=st.floats(1e-12, 1e15) | st.floats(-1e15, -1e-12),
       rel=st.sampled_from([1e-9, 1e-6, 1e-3, 1e-2]),
       frac=st.floats(-0.45, 0.45))
def test_float_tolerance_is_relative(expected, rel, frac):
    close = expected * (1 + frac * rel)
    check("t", close, expected, rel=rel)
    far = expected * (1 + 3 * rel + abs(frac) * rel)
    with pytest.raises(AssertionError, match=r"^Exercise t: expected "):
        check("t", far, expected, rel=rel)


# --- check: not attempted -----------------------------------------------------------
@pytest.mark.parametrize("expected", [bw(450), units.DirectionError, True, "PIX", 4, 0.5])
def test_not_attempted_is_skipped_for_students(students, capsys, expected):
    assert check("10 (sum)", None, expected) is None
    assert capsys.readouterr().out == "… exercise 10 (sum): not attempted yet (skipped)\n"


@pytest.mark.parametrize("expected", [bw(450), units.DirectionError, True, "PIX", 4, 0.5])
def test_not_attempted_fails_under_course_tests(course_tests, capsys, expected):
    with pytest.raises(AssertionError) as info:
        check("10 (sum)", None, expected, hint="not shown")
    assert str(info.value) == "Exercise 10 (sum): not answered"
    assert capsys.readouterr().out == ""


def test_solutions_switch_other_than_1_still_skips(monkeypatch, capsys):
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "0")
    check("1", None, 1.0)
    assert "not attempted yet (skipped)" in capsys.readouterr().out


def test_unanswered(students, capsys):
    assert unanswered("2", None) is True
    assert capsys.readouterr().out == "… exercise 2: not attempted yet (skipped)\n"
    assert unanswered("2", print) is False
    assert unanswered("2", 0) is False
    assert unanswered("2", "") is False
    assert capsys.readouterr().out == ""


def test_unanswered_under_course_tests(course_tests):
    with pytest.raises(AssertionError, match=r"^Exercise 1: not answered$"):
        unanswered("1", None)
    assert unanswered("1", 3.0) is False


# --- check: bad arguments ----------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"name": ""}, "^name must be a non-empty string"),
    ({"name": "  "}, "^name must be a non-empty string"),
    ({"name": 3}, "^name must be a non-empty string"),
    ({"rel": 0}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": 1}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": -1e-3}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": 5}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": math.nan}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": True}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": "1e-3"}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": None}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"hint": None}, "^hint must be a string"),
    ({"hint": ["a"]}, "^hint must be a string"),
    ({"unit": 8}, "^unit must be a string"),
    ({"expected": None}, "^expected must be the right answer, not None"),
    ({"expected": [1.0]}, "^expected must be a units.Bandwidth, a class, a bool, a str"),
    ({"expected": (8, 2, 2)}, "^expected must be a units.Bandwidth"),
    ({"expected": np.array([1.0, 2.0])}, "^expected must be a units.Bandwidth"),
    ({"expected": math.inf}, "^expected must be a finite number"),
    ({"expected": math.nan}, "^expected must be a finite number"),
])
@pytest.mark.parametrize("value", [None, 1.0])
def test_check_rejects_bad_arguments(students, capsys, kwargs, match, value):
    args = {"name": "1", "value": value, "expected": 1.0} | kwargs
    with pytest.raises(ValueError, match=match):
        check(**args)
    assert capsys.readouterr().out == ""  # nothing printed, not even a skip line


def test_check_rejects_bad_name_in_unanswered():
    with pytest.raises(ValueError, match="^name must be a non-empty string"):
        unanswered("", None)


# --- check_slips -------------------------------------------------------------------
RING = [(2 ** 22 * 7 / 8, "That is one phase only."),
        (2 ** 22 * 7 / 4 / 4, "That counts elements.")]


def test_check_slips_names_the_first_matching_slip():
    with pytest.raises(AssertionError) as info:
        check_slips("3", 2 ** 22 * 7 / 8, RING)
    assert str(info.value) == "Exercise 3: got 3.67002e+06. That is one phase only."
    with pytest.raises(AssertionError, match=r"^Exercise 3: got 1\.83501e\+06\. That "
                                             r"counts elements\.$"):
        check_slips("3", np.float64(2 ** 22 * 7 / 16), RING)


def test_check_slips_silent_otherwise(capsys):
    for value in (2 ** 22 * 7 / 4, None, bw(450), "abc", [1, 2], 3.67002e6):
        assert check_slips("3", value, RING) is False
    assert check_slips("3", 1.0, []) is False
    assert capsys.readouterr().out == ""


def test_check_slips_tolerance():
    slips = [(100.0, "slip")]
    check_slips("x", 100.001, slips)                 # 1e-5 off: default rel 1e-6
    with pytest.raises(AssertionError):
        check_slips("x", 100.001, slips, rel=1e-4)
    with pytest.raises(AssertionError):
        check_slips("x", 100.00001, slips)


def test_check_slips_numbers_from_strings_and_arrays():
    with pytest.raises(AssertionError, match="^Exercise 4: got 7. n - 1$"):
        check_slips("4", "7", [(7, "n - 1")])
    with pytest.raises(AssertionError, match="^Exercise 4: got 7. n - 1$"):
        check_slips("4", 7, [(np.array(7.0), "n - 1")])


@given(wrong=st.floats(1e-9, 1e12), rel=st.sampled_from([1e-9, 1e-6, 1e-3]),
       frac=st.floats(-0.45, 0.45))
def test_check_slips_catches_values_within_rel(wrong, rel, frac):
    with pytest.raises(AssertionError, match="^Exercise s: got .*\\. why$"):
        check_slips("s", wrong * (1 + frac * rel), [(wrong, "why")], rel=rel)


@pytest.mark.parametrize("kwargs, match", [
    ({"name": ""}, "^name must be a non-empty string"),
    ({"rel": 0}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"rel": 1.0}, r"^rel must be a relative tolerance in \(0, 1\)"),
    ({"slips": 5}, r"^slips must be a list of \(wrong value, why\) pairs"),
    ({"slips": "7"}, r"^slips must be a list of \(wrong value, why\) pairs"),
    ({"slips": {7.0: "why"}}, r"^slips must be a list of \(wrong value, why\) pairs"),
    ({"slips": [(7.0,)]}, r"^slips\[0\] must be a \(wrong value, why\) pair"),
    ({"slips": [(7.0, "ok"), ("7", "why")]}, r"^slips\[1\] must be"),
    ({"slips": [(7.0, None)]}, r"^slips\[0\] must be"),
    ({"slips": [(True, "why")]}, r"^slips\[0\] must be"),
    ({"slips": [7.0]}, r"^slips\[0\] must be"),
])
def test_check_slips_rejects_bad_arguments(kwargs, match):
    args = {"name": "1", "value": 7.0, "slips": [(7.0, "why")]} | kwargs
    with pytest.raises(ValueError, match=match):
        check_slips(**args)


# --- as a student runs a lab: no traceback, nothing raised, outcomes recorded ----------
@pytest.mark.parametrize("env, on", [({}, False), ({"GPULAB_LAB_STRICT": "1"}, True),
                                     ({"GPULAB_LAB_SOLUTIONS": "1"}, True),
                                     ({"GPULAB_LAB_STRICT": "yes"}, False)])
def test_strict_on(students, monkeypatch, env, on):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert strict_on() is on


def test_a_wrong_answer_is_shown_not_raised_for_students(students, capsys):
    assert check("2 (link)", 400.0, 50.0, unit="GB/s", hint="bytes, not bits") is None
    out = capsys.readouterr().out
    assert out == ("✗ Exercise 2 (link): 400 GB/s is not right yet. "
                   "Your value is 8x too large: bits vs bytes? (1 byte = 8 bits)\n"
                   "Hint: bytes, not bits\n" + AGAIN + "\n")
    assert "Traceback" not in out and "labcheck.py" not in out
    status, message = results()["2 (link)"]
    assert status == "fail" and message == out.rstrip("\n")
    assert check("2 (link)", 40.0, 50.0, unit="GB/s", hint="bytes, not bits") is None
    out = capsys.readouterr().out
    assert out == ("✗ Exercise 2 (link): expected 50 GB/s (within 0.1%), got 40 GB/s.\n"
                   "Hint: bytes, not bits\n")
    assert results()["2 (link)"] == ("fail", out.rstrip("\n"))


# --- first wrong answer: a hint; second: the expected value ------------------------------
def shown(capsys, *args, **kwargs):
    check(*args, **kwargs)
    return capsys.readouterr().out


@pytest.mark.parametrize("value, expected, kwargs, secret", [
    (400.0, 50.0, {"unit": "GB/s"}, "50 GB/s"),
    (0.51, 0.8796, {"unit": "(fraction)"}, "0.8796"),
    (bw(400), bw(450), {}, "450 GB/s"),
    ("PHB", "NV18", {}, "NV18"),
    (False, True, {}, "True"),
    (8, 4, {}, "4"),
    (17.9, 24.6, {"unit": "s", "hint": "TP16 across two servers"}, "24.6"),
])
def test_first_wrong_answer_hides_the_expected_value_second_shows_it(
        students, capsys, value, expected, kwargs, secret):
    first = shown(capsys, "5", value, expected, **kwargs)
    assert first.startswith("✗ Exercise 5: ") and "not right yet" in first
    assert secret not in first and "expected" not in first.split("\n")[0]
    assert "\nHint: " in first and first.endswith(AGAIN + "\n")
    assert failures() == {"5": 1}
    second = shown(capsys, "5", value, expected, **kwargs)
    assert second.startswith("✗ Exercise 5: expected ") and secret in second
    assert AGAIN not in second
    assert failures() == {"5": 2}
    third = shown(capsys, "5", value, expected, **kwargs)
    assert third == second                        # from the second on: the same message


def test_first_wrong_answer_uses_the_labs_hint_else_a_generic_one(students, capsys):
    out = shown(capsys, "a", 3.0, 2.0, unit="GB/s", hint="the lab's own hint")
    assert out.split("\n")[1] == "Hint: the lab's own hint"
    out = shown(capsys, "b", 3.0, 2.0, unit="GB/s")
    assert out.split("\n")[1] == ("Hint: answer in GB/s; check the units (GB vs GiB, bits "
                                  "vs bytes, per direction vs bidirectional) and the formula")
    out = shown(capsys, "c", "b", "a")
    assert out == ("✗ Exercise c: 'b' is not right yet.\n"
                   "Hint: reread the question and the output or table it points to\n"
                   + AGAIN + "\n")


def test_first_wrong_answer_names_the_classic_slip_or_how_far_off(students, capsys):
    assert shown(capsys, "g", units.GiB / 1e9, 1.0, unit="GB").split("\n")[0] == (
        "✗ Exercise g: 1.07374 GB is not right yet. Your value is 1.074x too large: "
        "GiB vs GB?")
    assert shown(capsys, "h", bw(900), bw(450)).split("\n")[0] == (
        "✗ Exercise h: 900 GB/s per direction is not right yet. Your value is 2x too "
        "large: per direction vs bidirectional?")
    assert shown(capsys, "i", 0.85, 0.8796).split("\n")[0] == (
        "✗ Exercise i: 0.85 is not right yet. Your value is a little too small (within "
        "10%): check the constants you used and where you rounded.")
    assert shown(capsys, "j", 9, 7).split("\n")[0] == (
        "✗ Exercise j: 9 is not right yet. It is too large.")


@pytest.mark.parametrize("got, want, note", [
    (100 * 8, 100, " Your value is 8x too large: bits vs bytes? (1 byte = 8 bits)"),
    (104, 100, " Your value is a little too large (within 10%): check the constants you "
               "used and where you rounded."),
    (92, 100, " Your value is a little too small (within 10%): check the constants you "
              "used and where you rounded."),
    (150, 100, " Your value is too large, by less than a factor of 2: check the formula "
               "for a missing or extra term or factor."),
    (30, 100, " Your value is too small, by a factor between 2 and 10: check the formula "
              "and the units."),
    (1e5, 100, " Your value is too large by about 1e+03x: check the units and their "
               "prefixes (k, M, G; GB vs GiB; bits vs bytes)."),
    (0, 100, " Your value is zero: did a step of the formula multiply by 0?"),
    (-100, 100, " Your value has the wrong sign: check the order of a difference."),
    (5, 0, ""),
    (math.inf, 100, ""),
])
def test_size_note(got, want, note):
    assert size_note(got, want) == note


@given(want=st.floats(1e-9, 1e9), q=st.floats(1.001, 1e6), larger=st.booleans())
def test_size_note_never_gives_the_expected_value(want, q, larger):
    got = want * q if larger else want / q
    note = size_note(got, want)
    assert note.startswith(" Your value ")
    assert ("too large" in note) == larger or "inverse" in note
    # the only numbers in a note are those of its templates, never the expected value
    bare = re.sub(r"within 10%|factor of 2|between 2 and 10|\(1 byte = 8 bits\)|"
                  r"[\d.]+(?:e\+\d+)?x\b", "", note)
    assert not re.search(r"\d", bare), note


@pytest.mark.parametrize("got, want", [(None, 1.0), (1.0, "2")])
def test_size_note_rejects_non_numbers(got, want):
    with pytest.raises(ValueError, match="must be a real number"):
        size_note(got, want)


@pytest.mark.parametrize("expected, unit, words", [
    (bw(450), "", "direction"), (units.DirectionError, "", "DirectionError"),
    (True, "", "reread"), ("PIX", "", "reread"), (4, "", "count again"),
    (0.5, "", "GB vs GiB"), (0.5, "B", "answer in B;")])
def test_generic_hint_by_kind(expected, unit, words):
    assert words in generic_hint(expected, unit)


def test_a_slip_counts_as_the_first_wrong_answer(students, capsys):
    ring = 2 ** 22 * 7 / 4
    assert check_slips("3", ring / 2, RING) is True
    assert "expected" not in capsys.readouterr().out
    out = shown(capsys, "3", ring * 3, ring, unit="B")
    assert out.startswith("✗ Exercise 3: expected 7.34003e+06 B (within 0.1%)")


def test_a_wrong_kind_of_value_is_named_both_times_and_counts(students, capsys):
    first = shown(capsys, "k", 450.0, bw(450))
    assert first == ("✗ Exercise k: expected a units.Bandwidth (a value with a direction), "
                     "got float 450.0\n")
    assert shown(capsys, "k", bw(400), bw(450)).startswith(
        "✗ Exercise k: expected 450 GB/s per direction")


def test_attempts_are_counted_per_check_and_not_for_skips_or_passes(students, capsys):
    check("p", None, 2.0)
    check("p", 2.0, 2.0)
    check("q", 3.0, 2.0)
    assert failures() == {"q": 1}
    assert "not right yet" in shown(capsys, "p", 3.0, 2.0)      # "p": its first wrong one
    reset_failures("q")
    assert "not right yet" in shown(capsys, "q", 3.0, 2.0)
    with pytest.raises(ValueError, match="^name must be a non-empty string"):
        reset_failures("")


def test_strict_shows_the_expected_value_on_the_first_wrong_answer():
    with pytest.raises(AssertionError, match=r"^Exercise 2: expected 50 GB/s \(within "):
        check("2", 400.0, 50.0, unit="GB/s")


def test_results_keeps_the_last_outcome_per_name(students, capsys):
    check("r", None, 1.0)
    assert results()["r"] == ("skipped", "… exercise r: not attempted yet (skipped)")
    check("r", 2.0, 1.0)
    assert results()["r"][0] == "fail"
    check("r", 1.0, 1.0)
    assert results()["r"] == ("pass", "✓ r: 1")
    results().clear()                      # a copy
    assert "r" in results()


def test_a_wrong_answer_under_strict_raises_and_is_recorded(capsys):
    with pytest.raises(AssertionError, match="^Exercise s1: expected 2, got 3$"):
        check("s1", 3, 2)
    assert results()["s1"] == ("fail", "✗ Exercise s1: expected 2, got 3")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", [None, ...])
def test_not_attempted_reveals_nothing(students, capsys, value):
    check("5", value, 24.6, unit="s", hint="TP16: 24.6 s/step")
    assert check_slips("5", value, [(17.9, "TP8 PP2")]) is False
    assert capsys.readouterr().out == "… exercise 5: not attempted yet (skipped)\n"
    assert unanswered("5", value) is True


def test_a_slip_then_the_general_check_gives_one_message(students, capsys):
    """The labs' pattern: ``if not check_slips(...): check(...)``."""
    for value, line in ((2 ** 22 * 7 / 8, "✗ Exercise 3: got 3.67002e+06. That is one "
                                          "phase only.\n"),
                        (2 ** 22 * 7 / 4, "✓ 3: 7.34003e+06 B\n")):
        if not check_slips("3", value, RING):
            check("3", value, 2 ** 22 * 7 / 4, unit="B", hint="not shown")
        assert capsys.readouterr().out == line


def test_check_slips_for_students_shows_and_returns_true(students, capsys):
    assert check_slips("3", 2 ** 22 * 7 / 8, RING) is True
    assert capsys.readouterr().out == "✗ Exercise 3: got 3.67002e+06. That is one phase only.\n"


def test_fail(students, capsys):
    assert fail("2", "your function raised KeyError: 3", hint="index the chunks") is None
    assert capsys.readouterr().out == ("✗ Exercise 2: your function raised KeyError: 3\n"
                                       "Hint: index the chunks\n")
    assert results()["2"][0] == "fail"
    for kwargs, match in (({"name": ""}, "^name must"), ({"problem": ""}, "^problem must"),
                          ({"hint": None}, "^hint must")):
        with pytest.raises(ValueError, match=match):
            fail(**({"name": "2", "problem": "wrong"} | kwargs))


def test_fail_under_strict_raises():
    with pytest.raises(AssertionError, match="^Exercise 2: wrong\nHint: h$"):
        fail("2", "wrong", hint="h")


def test_in_a_notebook_a_wrong_answer_is_a_red_box_and_run_all_goes_on(tmp_path,
                                                                        monkeypatch):
    """A real kernel, as a student's Run All: no error output, the next cell runs."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for var in ("GPULAB_LAB_STRICT", "GPULAB_LAB_SOLUTIONS"):
        monkeypatch.delenv(var, raising=False)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from gpulab.labcheck import check, results"),
        nbformat.v4.new_code_cell("check('2', 400.0, 50.0, unit='GB/s', hint='8 bits')"),
        nbformat.v4.new_code_cell("print(results()['2'][0])"),
        nbformat.v4.new_code_cell("check('2', 40.0, 50.0, unit='GB/s', hint='8 bits')")])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    wrong, after, again = nb.cells[1].outputs, nb.cells[2].outputs, nb.cells[3].outputs
    assert [o.output_type for o in wrong] == ["display_data"]
    html = wrong[0].data["text/html"]
    assert "✗ Exercise 2: 400 GB/s is not right yet" in html and "<br>Hint: 8 bits" in html
    assert "50 GB/s" not in html
    assert wrong[0].data["text/plain"].startswith("✗ Exercise 2: 400 GB/s is not right")
    assert after[0].text == "fail\n"
    assert [o.output_type for o in again] == ["display_data"]   # the same kernel: 2nd try
    assert again[0].data["text/plain"].startswith("✗ Exercise 2: expected 50 GB/s")


# --- what the checks accept: the answer keys ------------------------------------------
def test_accepted_records_answered_checks_only(students, capsys):
    check("acc-none", None, 24.6, unit="s")
    assert "acc-none" not in accepted()                    # nothing revealed before a try
    check("acc-1", 24.0, np.float64(24.6), rel=1e-2, unit="s")
    check("acc-2", bw(450), bw(450))
    assert accepted()["acc-1"] == Accepted(24.6, 1e-2, "s")
    assert accepted()["acc-2"].text() == "450 GB/s per direction"
    accepted().clear()                                     # a copy
    assert "acc-1" in accepted()


@pytest.mark.parametrize("expected, unit, rel, text", [
    (106.25e9, "bit/s", 1e-3, "106.25 Gbit/s"),
    (400e9, "bit/s", 1e-3, "400 Gbit/s"),
    (bw(450), "", 1e-3, "450 GB/s per direction"),
    (bw(900, BD), "", 1e-3, "900 GB/s bidirectional"),
    (bw(26.5625), "", 1e-3, "26.56 GB/s per direction"),
    (bw(26.5625), "", 1e-6, "26.5625 GB/s per direction"),
    (7340032.0, "B", 1e-9, "7,340,032 B (7 MiB)"),
    (4194304, "B", 1e-3, "4,194,304 B (4 MiB)"),
    (512, "B", 1e-3, "512 B"),
    (24554004.36, "bytes", 1e-2, "24.6 MB"),
    (3.213118222e-05, "s", 1e-12, "32.1312 µs"),
    (0.0096962, "s", 1e-2, "9.7 ms"),
    (2.5, "s", 1e-3, "2.5 s"),
    (1.073741824, "GB", 1e-6, "1.07374 GB"),
    (376.0, "GB/s", 5e-2, "376 GB/s"),
    (0.87728, "(fraction of spec)", 1e-3, "0.87728 (87.7 % of spec)"),
    (0.330404, "(fraction)", 2e-2, "0.33 (33.0 %)"),
    (np.float64(0.7314), "", 1e-3, "0.7314"),
    (7.1179347, "", 1e-3, "7.118"),
    (np.array(4.0), "", 1e-3, "4"),
    (82, "", 1e-3, "82"),
    ("NV18", "", 1e-3, "NV18"),
    (False, "", 1e-3, "False"),
    (units.DirectionError, "", 1e-3, "the DirectionError object caught"),
])
def test_answer_text(expected, unit, rel, text):
    assert answer_text(expected, unit, rel) == text


@given(x=st.floats(1e-9, 1e15), rel=st.sampled_from([5e-2, 1e-2, 1e-3, 1e-4]),
       unit=st.sampled_from(["", "GB/s", "bit/s", "s", "B"]))
def test_answer_text_rounds_within_the_checks_tolerance(x, rel, unit):
    text = answer_text(x, unit, rel)
    assert "e+" not in text or unit == ""                  # prefixes, not exponents
    number = float(text.split()[0].replace(",", ""))
    factor = {"T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3, "m": 1e-3, "µ": 1e-6,
              "n": 1e-9}
    word = text.split()[1] if len(text.split()) > 1 else ""
    if unit in ("bit/s", "B", "s") and word not in (unit, "B"):
        number *= factor[word[0]]
    assert math.isclose(number, x, rel_tol=rel)


@pytest.mark.parametrize("kwargs, match", [
    ({"expected": [1.0]}, "^expected must be a units.Bandwidth"),
    ({"expected": None}, "^expected must be a units.Bandwidth"),
    ({"unit": 3}, "^unit must be a string"),
    ({"rel": 0}, r"^rel must be a relative tolerance in \(0, 1\)"),
])
def test_answer_text_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        answer_text(**({"expected": 1.0} | kwargs))


# --- tables ------------------------------------------------------------------------
def test_markdown_table_of_mappings():
    rows = [{"GPU": 0, "verdict": "PASS", "extra": "ignored"}, {"GPU": 1}]
    assert markdown_table(rows, ("GPU", "verdict")) == (
        "| GPU | verdict |\n|---|---|\n| 0 | PASS |\n| 1 |  |")


def test_markdown_table_of_sequences_with_notes():
    rows = [("GPU0–GPU1", "NV18", "yes [1]"), ["GPU0–GPU2", "SYS", "no [2]"]]
    text = markdown_table(rows, ["pair", "class", "P2P"],
                          notes=["[1] NVLink", "[2] across sockets"])
    assert text.splitlines() == [
        "| pair | class | P2P |", "|---|---|---|",
        "| GPU0–GPU1 | NV18 | yes [1] |", "| GPU0–GPU2 | SYS | no [2] |",
        "", "[1] NVLink  ", "[2] across sockets  "]


def test_markdown_table_keeps_cells_on_one_line():
    text = markdown_table([{"a": "x | y", "b": "two\nlines"}], ("a", "b"))
    assert text.splitlines()[2] == r"| x \| y | two lines |"


def test_markdown_table_of_no_rows():
    assert markdown_table([], ("a",)) == "| a |\n|---|"


@pytest.mark.parametrize("rows, columns, notes, match", [
    ([], (), (), "^columns must be a non-empty sequence of str"),
    ([], "ab", (), "^columns must be a non-empty sequence of str"),
    ([], ("a", 1), (), "^columns must be a non-empty sequence of str"),
    ([], None, (), "^columns must be a non-empty sequence of str"),
    ([("x",)], ("a", "b"), (), r"^rows\[0\] must be a mapping or a sequence of 2 cells"),
    ([{"a": 1}, "ab"], ("a", "b"), (), r"^rows\[1\] must be"),
    ([], ("a",), [3], "^notes must be a string"),
])
def test_markdown_table_rejects_bad_arguments(rows, columns, notes, match):
    with pytest.raises(ValueError, match=match):
        markdown_table(rows, columns, notes=notes)


def test_show_table_displays_the_markdown(monkeypatch):
    ipd = pytest.importorskip("IPython.display")
    shown = []
    monkeypatch.setattr(ipd, "display", shown.append)
    rows = [{"check": "links", "verdict": "PASS"}]
    assert show_table(rows, ("check", "verdict"), notes=["n"]) is None
    assert len(shown) == 1 and isinstance(shown[0], ipd.Markdown)
    assert shown[0].data == markdown_table(rows, ("check", "verdict"), notes=["n"])


def test_show_table_checks_before_importing():
    with pytest.raises(ValueError, match="^columns"):
        show_table([], ())
