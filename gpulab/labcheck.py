"""Self-checks for the labs: the ✓ check cells, the skip lines and the tables.

Every lab starts with one setup cell::

    import gpulab as gl
    from gpulab.labcheck import check, check_slips, solutions_on, status_line

    gl.plotting.use_book_style()
    SHOW_SOLUTIONS = solutions_on()   # the solution cells test this
    print(status_line())

and each exercise ends with a ✓ check cell that calls :func:`check`. What a student
sees:

* ``✓ name: value`` when the answer is right;
* ``… exercise name: not attempted yet (skipped)`` while the answer is still ``None``
  (or ``...``), and nothing else about the exercise;
* ``✗ Exercise name: ...`` when the answer is wrong. The **first** wrong answer of a
  check gives no expected value: it says what to reconsider, the classic slip (a factor
  of 2, 8, GiB/GB or a unit prefix, see :func:`factor_note`) or else how far off the
  answer is (:func:`size_note`), and a ``Hint:`` line, the lab's own hint or one derived
  from the kind of answer (:func:`generic_hint`). The **second** and later wrong answers
  of the same check, in the same kernel, show what was expected, in which unit and
  direction, and what was given. In a notebook a failure is shown as a red box, with no
  traceback, and nothing is raised: *Run All Cells* goes on to the next exercise and
  the explorers below.

Every check records its outcome (:func:`results`). The course's tests and the answer
keys run *strict* (:func:`strict_on`): ``GPULAB_LAB_SOLUTIONS=1`` (the labs' solution
cells then fill in the answers, :func:`solutions_on`) or ``GPULAB_LAB_STRICT=1``. A
wrong answer then raises an ``AssertionError`` with the full message (the expected
value at once), and an answer left ``None`` is an error instead of a skip. Nothing here imports matplotlib, ipywidgets or
IPython at import time: a failure in a notebook and :func:`show_table` import IPython's
display when they need it.

Examples
--------
>>> from gpulab import units
>>> from gpulab.labcheck import check, show
>>> check("1", units.Bandwidth.from_gb_per_s(450, "per_direction"),
...       units.Bandwidth.from_gb_per_s(900, "bidirectional").to_per_direction())
✓ 1: 450 GB/s per direction
>>> check("2", 400, 50.0, unit="GB/s")
✗ Exercise 2: 400 GB/s is not right yet. Your value is 8x too large: bits vs bytes? (1 byte = 8 bits)
Hint: answer in GB/s; check the units (GB vs GiB, bits vs bytes, per direction vs bidirectional) and the formula
Run this check again after a fix: a second wrong answer shows the expected value.
>>> check("2", 40, 50.0, unit="GB/s")
✗ Exercise 2: expected 50 GB/s (within 0.1%), got 40 GB/s.
>>> results()["2"][0]
'fail'
>>> show(2.5e-6, "s")
'2.5e-06 s'
"""
from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from . import units

__all__ = ["SOLUTIONS_ENV", "STRICT_ENV", "AGAIN", "solutions_on", "strict_on",
           "status_line", "show", "factor_note", "size_note", "generic_hint", "unanswered",
           "check", "check_slips", "fail", "results", "failures", "reset_failures",
           "Accepted", "accepted", "answer_text",
           "markdown_table", "show_table"]

#: The environment variable that switches the labs' solution cells on (value ``"1"``).
SOLUTIONS_ENV = "GPULAB_LAB_SOLUTIONS"
#: The environment variable that makes a failed check raise (value ``"1"``), as
#: ``GPULAB_LAB_SOLUTIONS=1`` does, without the solutions.
STRICT_ENV = "GPULAB_LAB_STRICT"

# The outcome of every check this process ran: {name: (status, message)}, see results().
_RESULTS = {}
# How many wrong answers each check has had in this process (kernel), see failures().
_FAILURES = {}
# What each answered check accepts: {name: Accepted}, see accepted().
_ACCEPTED = {}

#: The last line of a first wrong answer: the expected value comes on the second.
AGAIN = "Run this check again after a fix: a second wrong answer shows the expected value."
# What a generic hint names for numbers and bandwidths.
_UNIT_SLIPS = "GB vs GiB, bits vs bytes, per direction vs bidirectional"

# The slips that factor_note names: (factor, what it usually means).
_PREFIX = "a unit prefix? Answer in the unit asked for."
_SLIPS = ((2, "per direction vs bidirectional?"),
          (8, "bits vs bytes? (1 byte = 8 bits)"),
          (units.GiB / units.GB, "GiB vs GB?"),
          (1e9, _PREFIX),
          (1e6, _PREFIX))
_SLIP_TOL = 1e-3


def solutions_on():
    """Whether the labs' solution cells act: ``GPULAB_LAB_SOLUTIONS=1``.

    Read at every call, so that a test can switch it with ``monkeypatch.setenv``.

    Returns
    -------
    bool
        True only when the variable is exactly ``"1"``.

    Examples
    --------
    >>> import os
    >>> solutions_on() == (os.environ.get("GPULAB_LAB_SOLUTIONS") == "1")
    True
    """
    return os.environ.get(SOLUTIONS_ENV) == "1"


def strict_on():
    """Whether a failed check raises: ``GPULAB_LAB_SOLUTIONS=1`` or ``GPULAB_LAB_STRICT=1``.

    The course's tests (nbval) and the answer keys run strict, so that a failed check
    fails them; a student's notebook is not strict, so that a failed check shows its
    message and *Run All Cells* goes on. Read at every call.

    Returns
    -------
    bool

    Examples
    --------
    >>> import os
    >>> strict_on() == (os.environ.get("GPULAB_LAB_SOLUTIONS") == "1"
    ...                 or os.environ.get("GPULAB_LAB_STRICT") == "1")
    True
    """
    return solutions_on() or os.environ.get(STRICT_ENV) == "1"


def results():
    """The outcome of every check run so far in this kernel, the last one per name.

    Returns
    -------
    dict
        ``{name: (status, message)}``, status one of ``"pass"``, ``"fail"`` and
        ``"skipped"`` (not attempted), message the line the student saw. A copy:
        changing it changes nothing here.

    Examples
    --------
    >>> check("results-demo", 2.0, 2.0)
    ✓ results-demo: 2
    >>> results()["results-demo"]
    ('pass', '✓ results-demo: 2')
    """
    return dict(_RESULTS)


def _record(name, status, message):
    _RESULTS[name] = (status, message)


@dataclass(frozen=True)
class Accepted:
    """What one check accepts: the answer key of an exercise (:func:`accepted`).

    Attributes
    ----------
    expected : object
        The right answer, as :func:`check` received it (a 0-d array as its element).
    rel : float
        The relative tolerance of bandwidths and floats.
    unit : str
        The unit of a plain number, as the check names it ("" for none).
    """

    expected: object
    rel: float
    unit: str

    def text(self):
        """The answer as an answer key prints it (:func:`answer_text`)."""
        return answer_text(self.expected, self.unit, self.rel)


def accepted():
    """What every check that was given an answer in this kernel accepts.

    The answer keys (``make answers``) read it after running a lab with its solutions.
    A check whose answer is still None records nothing, so a student's notebook holds
    no expected value before an attempt.

    Returns
    -------
    dict
        ``{name: Accepted}``, the last check per name (a copy).

    Examples
    --------
    >>> check("accepted-demo", 50.0, 50.0, unit="GB/s")
    ✓ accepted-demo: 50 GB/s
    >>> accepted()["accepted-demo"]
    Accepted(expected=50.0, rel=0.001, unit='GB/s')
    """
    return dict(_ACCEPTED)


def failures():
    """How many wrong answers each check has had in this kernel.

    :func:`check` shows the expected value only from a check's second wrong answer on.

    Returns
    -------
    dict
        ``{name: count}`` of the checks with at least one wrong answer (a copy).

    Examples
    --------
    >>> reset_failures("failures-demo")
    >>> check("failures-demo", 3.0, 2.0)  # doctest: +ELLIPSIS
    ✗ Exercise failures-demo: 3 is not right yet. ...
    >>> failures()["failures-demo"]
    1
    """
    return dict(_FAILURES)


def reset_failures(name=None):
    """Forget the wrong answers of check ``name`` (of every check when None): its next
    wrong answer is a first one again, with a hint and no expected value.

    Parameters
    ----------
    name : str, optional
        The exercise, as the messages name it.

    Raises
    ------
    ValueError
        If ``name`` is neither None nor a non-empty string.
    """
    if name is None:
        _FAILURES.clear()
        return
    _check_str("name", name, empty=False)
    _FAILURES.pop(name, None)


def _in_notebook():
    """True inside a Jupyter kernel (IPython already imported and running one)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _show_failure(text):
    """A failure as the student sees it: a red box in a notebook, else one printed line."""
    line = f"✗ {text}"
    if not _in_notebook():
        print(line)
        return
    import html

    from IPython.display import display  # only here: a notebook-only path

    first, _, rest = text.partition("\n")
    body = f"<b>✗ {html.escape(first)}</b>"
    if rest:
        body += "<br>" + "<br>".join(html.escape(x) for x in rest.split("\n"))
    box = ('<div style="border-left: 4px solid #c62828; background: #fdecea; '
           'color: #5f1111; padding: 6px 10px; margin: 2px 0; white-space: pre-wrap; '
           f'font-family: var(--jp-code-font-family, monospace);">{body}</div>')
    display({"text/html": box, "text/plain": line}, raw=True)


def fail(name, problem, hint=""):
    """Report a wrong answer of exercise ``name``, for checks of a lab's own kind.

    Shows ``✗ Exercise NAME: PROBLEM`` (and a ``Hint:`` line), records it
    (:func:`results`), counts it as a wrong answer of ``name`` (:func:`failures`) and
    returns; under :func:`strict_on` it raises instead. :func:`check_slips` reports
    through it; the problem is shown as given, so a lab's own check decides what it
    reveals.

    Parameters
    ----------
    name : str
        The exercise, as the messages name it ("1", "8 (generation)").
    problem : str
        What is wrong, as a sentence.
    hint : str
        Printed as a last ``Hint:`` line ("" for none).

    Raises
    ------
    AssertionError
        ``Exercise NAME: PROBLEM``, only under :func:`strict_on`.
    ValueError
        If ``name`` is not a non-empty string, or ``problem`` or ``hint`` not a string.

    Examples
    --------
    >>> fail("12", "your function raised ZeroDivisionError: division by zero")
    ✗ Exercise 12: your function raised ZeroDivisionError: division by zero
    """
    _check_str("name", name, empty=False)
    _check_str("problem", problem, empty=False)
    _check_str("hint", hint)
    _report(name, problem, hint)


def _report(name, problem, hint, last=""):
    """Count, record and show (or, strict, raise) one wrong answer."""
    msg = f"Exercise {name}: {problem}"
    if hint:
        msg += f"\nHint: {hint}"
    if last:
        msg += f"\n{last}"
    _FAILURES[name] = _FAILURES.get(name, 0) + 1
    _record(name, "fail", f"✗ {msg}")
    if strict_on():
        raise AssertionError(msg)
    _show_failure(msg)


def _unattempted(value):
    """None, or the ``...`` of a template: not attempted."""
    return value is None or value is Ellipsis


def status_line():
    """The setup cell's status line: gpulab's version and whether solutions are on.

    Returns
    -------
    str
        For example ``"gpulab 0.1.0 | solutions: off"``.

    Examples
    --------
    >>> status_line().startswith("gpulab ")
    True
    """
    from . import __version__  # here, not at import: gpulab may import this module

    return f"gpulab {__version__} | solutions: {'on' if solutions_on() else 'off'}"


def _is_number(x):
    """A real number that is not a bool: int, float, a numpy number or 0-d array."""
    if isinstance(x, bool):
        return False
    if isinstance(x, numbers.Real):
        return True
    # a 0-d numpy array of ints or floats (a model function may return one)
    return getattr(x, "shape", None) == () and getattr(
        getattr(x, "dtype", None), "kind", "") in ("i", "u", "f")


def _scalar(x):
    """A 0-d numpy array's element; anything else as it is."""
    return x[()] if getattr(x, "shape", None) == () else x


def _check_str(name, value, *, empty=True):
    if not isinstance(value, str) or (not empty and not value.strip()):
        what = "a non-empty string" if not empty else "a string"
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return value


def _check_rel(rel):
    if not _is_number(rel) or not 0 < float(rel) < 1:
        raise ValueError(f"rel must be a relative tolerance in (0, 1); got {rel!r}")
    return float(rel)


def show(value, unit=""):
    """A value as the checks print it.

    Parameters
    ----------
    value : object
        A :class:`gpulab.units.Bandwidth` (printed with its direction), an exception
        (its class name and "caught"), a number (6 significant digits) or anything
        else (its ``repr``).
    unit : str
        Appended to numbers and other values (not to bandwidths or exceptions).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``unit`` is not a string.

    Examples
    --------
    >>> from gpulab import units
    >>> show(units.Bandwidth.from_gb_per_s(900, "bidirectional"))
    '900 GB/s bidirectional'
    >>> show(1 / 3, "GB")
    '0.333333 GB'
    >>> show(units.DirectionError("mixed"))
    'DirectionError caught'
    >>> show("PIX")
    "'PIX'"
    """
    _check_str("unit", unit)
    if isinstance(value, units.Bandwidth):
        return units.fmt_bandwidth(value)
    if isinstance(value, BaseException):
        return f"{type(value).__name__} caught"
    if _is_number(value):
        return f"{_scalar(value):.6g} {unit}".rstrip()
    return f"{value!r} {unit}".rstrip()


def factor_note(got, want):
    """Name the classic slip when ``got`` is ``want`` times or over a known factor.

    The factors, each checked both ways ("too large", "too small") within 0.1 %:
    2 (per direction vs bidirectional), 8 (bits vs bytes), GiB/GB = 1.0737...,
    1e9 and 1e6 (a unit prefix); and ``got * want = 1`` (a ratio the wrong way up).

    Parameters
    ----------
    got, want : float
        The given and the expected value, in the same unit.

    Returns
    -------
    str
        ``" Your value is 2x too large: per direction vs bidirectional?"`` and the
        like (with a leading space, to be appended to a sentence), or ``""`` when no
        factor matches or either value is 0.

    Raises
    ------
    ValueError
        If ``got`` or ``want`` is not a real number.

    Examples
    --------
    >>> factor_note(900, 450)
    ' Your value is 2x too large: per direction vs bidirectional?'
    >>> factor_note(50, 400)
    ' Your value is 8x too small: bits vs bytes? (1 byte = 8 bits)'
    >>> factor_note(2.0, 0.5)
    ' Your value is the inverse: divided the other way round?'
    >>> factor_note(451, 450)
    ''
    """
    for name, x in (("got", got), ("want", want)):
        if not _is_number(x):
            raise ValueError(f"{name} must be a real number; got {x!r}")
    got, want = float(got), float(want)
    if not want or not got:
        return ""
    r = got / want
    for k, why in _SLIPS:
        for f, word in ((k, "too large"), (1 / k, "too small")):
            if math.isclose(r, f, rel_tol=_SLIP_TOL):
                return f" Your value is {k:.4g}x {word}: {why}"
    if math.isclose(got * want, 1, rel_tol=_SLIP_TOL):
        return " Your value is the inverse: divided the other way round?"
    return ""


def size_note(got, want):
    """What a first wrong answer learns about a number: the classic slip, or how far off.

    :func:`factor_note` when a known factor matches; else whether the value is too large
    or too small and by roughly how much (within 10 %, under a factor of 2, between 2
    and 10, or about a power of ten), with what to reconsider. It never gives the
    expected value.

    Parameters
    ----------
    got, want : float
        The given and the expected value, in the same unit.

    Returns
    -------
    str
        With a leading space, to be appended to a sentence; ``""`` when ``want`` is 0
        or either value is not finite.

    Raises
    ------
    ValueError
        If ``got`` or ``want`` is not a real number.

    Examples
    --------
    >>> size_note(800, 100)
    ' Your value is 8x too large: bits vs bytes? (1 byte = 8 bits)'
    >>> size_note(103, 100)
    ' Your value is a little too large (within 10%): check the constants you used and where you rounded.'
    >>> size_note(1.3, 1)
    ' Your value is too large, by less than a factor of 2: check the formula for a missing or extra term or factor.'
    >>> size_note(0.25, 1)
    ' Your value is too small, by a factor between 2 and 10: check the formula and the units.'
    >>> size_note(1e-3, 1)
    ' Your value is too small by about 1e+03x: check the units and their prefixes (k, M, G; GB vs GiB; bits vs bytes).'
    """
    note = factor_note(got, want)
    if note:
        return note
    got, want = float(got), float(want)
    if not want or not (math.isfinite(got) and math.isfinite(want)):
        return ""
    if not got:
        return " Your value is zero: did a step of the formula multiply by 0?"
    if (got < 0) != (want < 0):
        return " Your value has the wrong sign: check the order of a difference."
    r = got / want
    word = "too large" if r > 1 else "too small"
    q = max(r, 1 / r)
    if q < 1.1:
        return (f" Your value is a little {word} (within 10%): check the constants "
                "you used and where you rounded.")
    if q < 2:
        return (f" Your value is {word}, by less than a factor of 2: check the formula "
                "for a missing or extra term or factor.")
    if q < 10:
        return (f" Your value is {word}, by a factor between 2 and 10: check the "
                "formula and the units.")
    return (f" Your value is {word} by about {10 ** round(math.log10(q)):.0e}x: check "
            "the units and their prefixes (k, M, G; GB vs GiB; bits vs bytes).")


def generic_hint(expected, unit=""):
    """The hint of a first wrong answer when the lab gives none, from the kind of answer.

    Parameters
    ----------
    expected : object
        The right answer (as :func:`check` takes it); only its kind is used.
    unit : str
        The unit of plain numbers ("" for none).

    Returns
    -------
    str

    Examples
    --------
    >>> generic_hint(50.0, "GB/s")
    'answer in GB/s; check the units (GB vs GiB, bits vs bytes, per direction vs bidirectional) and the formula'
    >>> generic_hint("NV18")
    'reread the question and the output or table it points to'
    """
    _check_str("unit", unit)
    if isinstance(expected, units.Bandwidth):
        return (f"check the units and the direction ({_UNIT_SLIPS}) and the formula; "
                "answer with a units.Bandwidth")
    if isinstance(expected, type):
        return f"store the {expected.__name__} object your except clause caught"
    if isinstance(expected, (bool, str)):
        return "reread the question and the output or table it points to"
    if isinstance(expected, int):
        return "count again, from the question and the output or table it points to"
    where = f"answer in {unit}; " if unit else ""
    return f"{where}check the units ({_UNIT_SLIPS}) and the formula"


# Prefixes of the answer keys: (prefix, factor), largest first.
_SI_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _key_digits(rel):
    """Significant digits an answer key shows for a check of tolerance ``rel``: enough
    to be within it (3 to 6)."""
    return min(6, max(3, math.ceil(-math.log10(rel)) + 1))


def _key_number(x, rel):
    """``x`` rounded for an answer key: its short form (up to 6 digits) when that has
    at most one digit more than ``rel`` needs, else rounded to what ``rel`` needs."""
    d = _key_digits(rel)
    mantissa = f"{x:.6g}".split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    digits = len(mantissa) if len(mantissa) <= d + 1 else d
    value = float(f"{x:.{digits}g}")
    if not 1 <= abs(value) < 1e18:
        return f"{value:.{digits}g}"
    text = f"{value:.{max(0, digits - len(str(int(abs(value)))))}f}"   # no exponent
    return text.rstrip("0").rstrip(".") if "." in text else text


def _prefixed(x, rel, unit, prefixes):
    """``x`` in the largest prefix of ``prefixes`` that keeps it >= 1."""
    for name, factor in prefixes:
        if abs(x) >= factor or factor == prefixes[-1][1]:
            return f"{_key_number(x / factor, rel)} {name}{unit}"
    raise AssertionError("unreachable")


def answer_text(expected, unit="", rel=1e-3):
    """An expected answer as an answer key prints it: a readable unit and rounding.

    Parameters
    ----------
    expected : object
        The right answer, of a kind :func:`check` takes.
    unit : str
        The check's unit of plain numbers: ``"bit/s"``, ``"B"`` (or ``"bytes"``) and
        ``"s"`` get a prefix (``"106.25 Gbit/s"``, ``"7,340,032 B (7 MiB)"``,
        ``"32.1 µs"``); a fraction unit (``"(fraction)"``) adds the percentage; other
        units are kept as they are.
    rel : float
        The check's tolerance, in (0, 1): the rounding keeps the printed value within it
        (at most 6 significant digits).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``unit`` is not a string, ``rel`` not in (0, 1), or ``expected`` of no kind
        :func:`check` takes.

    Examples
    --------
    >>> answer_text(106.25e9, "bit/s")
    '106.25 Gbit/s'
    >>> answer_text(units.Bandwidth(63015384615.38, "per_direction"))
    '63.02 GB/s per direction'
    >>> answer_text(7340032.0, "B", rel=1e-9)
    '7,340,032 B (7 MiB)'
    >>> answer_text(3.2131182e-05, "s", rel=1e-12)
    '32.1312 µs'
    >>> answer_text(0.8792932, "(fraction)")
    '0.8793 (87.9 %)'
    >>> answer_text(units.DirectionError), answer_text("NV18"), answer_text(3)
    ('the DirectionError object caught', 'NV18', '3')
    """
    _check_str("unit", unit)
    rel = _check_rel(rel)
    expected = _scalar(expected)
    if isinstance(expected, units.Bandwidth):
        return (f"{_key_number(expected.bytes_per_s / units.GB, rel)} GB/s "
                + ("per direction" if expected.direction == units.PER_DIRECTION
                   else "bidirectional"))
    if isinstance(expected, type):
        return f"the {expected.__name__} object caught"
    if isinstance(expected, (bool, str)):
        return str(expected)
    if not _is_number(expected):
        raise ValueError("expected must be a units.Bandwidth, a class, a bool, a str or "
                         f"a real number; got {type(expected).__name__} {expected!r}")
    x = float(expected)
    if unit in ("B", "bytes"):
        if x == int(x) and abs(x) < 1e15:
            text = f"{int(x):,} B"
            return text + (f" ({units.fmt_bytes(x)})" if x >= 1024 else "")
        return _prefixed(x, rel, "B", _SI_PREFIXES)
    if unit == "bit/s":
        return _prefixed(x, rel, "bit/s", _SI_PREFIXES)
    if unit == "s":
        return _prefixed(x, rel, "", _TIME_UNITS)
    if isinstance(expected, numbers.Integral) and not unit:
        return str(int(x))
    text = f"{_key_number(x, rel)} {unit}".rstrip()
    if unit.startswith("(fraction") and unit.endswith(")"):
        text = f"{_key_number(x, rel)} ({x * 100:.1f} %{unit[len('(fraction'):-1]})"
    return text


def unanswered(name, value):
    """Handle an answer that is still ``None`` (or ``...``): skip it, or fail under the
    tests.

    For checks of a lab's own kind (a function, a plot) that cannot use
    :func:`check`::

        if unanswered("1", answer_1):
            return

    Parameters
    ----------
    name : str
        The exercise, as the messages name it ("1", "8 (generation)").
    value : object
        The student's answer.

    Returns
    -------
    bool
        True when ``value`` is None or ``...`` and solutions are off: the line
        ``… exercise NAME: not attempted yet (skipped)`` has been printed and the
        check should stop, revealing nothing more. False when there is an answer to
        check.

    Raises
    ------
    AssertionError
        ``Exercise NAME: not answered`` when ``value`` is None and
        ``GPULAB_LAB_SOLUTIONS=1`` (a solution cell did not fill it in).
    ValueError
        If ``name`` is not a non-empty string.

    Examples
    --------
    >>> unanswered("7", 3.5)
    False
    """
    _check_str("name", name, empty=False)
    if not _unattempted(value):
        return False
    if solutions_on():
        _record(name, "fail", f"✗ Exercise {name}: not answered")
        raise AssertionError(f"Exercise {name}: not answered")
    line = f"… exercise {name}: not attempted yet (skipped)"
    _record(name, "skipped", line)
    print(line)
    return True


def _problem(value, expected, rel, unit):
    """What is wrong with ``value`` against ``expected``, or None.

    A pair ``(full, first)``: the full problem, with the expected value, and the one a
    first wrong answer shows, without it (the same text when the full one does not give
    the answer away: a wrong kind of value, a wrong direction).
    """
    if isinstance(expected, type):
        if not isinstance(value, expected):
            text = f"expected the {expected.__name__} you caught, got {value!r}"
            return text, text
        return None
    if isinstance(expected, units.Bandwidth):
        if not isinstance(value, units.Bandwidth):
            text = ("expected a units.Bandwidth (a value with a direction), got "
                    f"{type(value).__name__} {value!r}")
            return text, text
        if value.direction != expected.direction:
            conv = (value.to_per_direction()
                    if expected.direction == units.PER_DIRECTION
                    else value.to_bidirectional())
            problem = f"expected a {expected.direction} figure, got {show(value)}"
            if conv.isclose(expected, rel_tol=rel):
                problem += (" (the right value once converted: call "
                            f".to_{expected.direction}())")
            return problem, problem
        if not value.isclose(expected, rel_tol=rel):
            return (f"expected {show(expected)} (within {rel * 100:g}%), got "
                    f"{show(value)}."
                    + factor_note(value.bytes_per_s, expected.bytes_per_s),
                    f"{show(value)} is not right yet."
                    + size_note(value.bytes_per_s, expected.bytes_per_s))
        return None
    if isinstance(expected, bool):
        if not isinstance(value, bool):
            text = (f"expected True or False, got {type(value).__name__} {value!r} "
                    "(a function returning (verdict, reason)? keep the verdict)")
            return text, text
        if value != expected:
            return f"expected {expected}, got {value}", f"{value} is not right yet."
        return None
    if isinstance(expected, str):
        if not isinstance(value, str):
            text = (f"expected a string (str), got {type(value).__name__} {value!r} "
                    "(a function returning (answer, reason)? keep the answer)")
            return text, text
        if value.strip().casefold() != expected.casefold():
            return f"expected {expected!r}, got {value!r}", f"{value!r} is not right yet."
        return None
    if isinstance(expected, int):
        if not (_is_number(value) and value == expected):
            first = f"{value!r} is not right yet."
            if _is_number(value) and math.isfinite(float(value)):
                first += " It is too large." if value > expected else " It is too small."
            return f"expected {expected!r}, got {value!r}", first
        return None
    try:
        got = float(value)
    except (TypeError, ValueError):
        text = (f"expected a plain number in {unit or 'SI units'}, "
                f"got {type(value).__name__} {value!r}")
        return text, text
    if not math.isclose(got, float(expected), rel_tol=rel):
        return (f"expected {show(float(expected), unit)} (within {rel * 100:g}%), "
                f"got {show(got, unit)}." + factor_note(got, float(expected)),
                f"{show(got, unit)} is not right yet." + size_note(got, float(expected)))
    return None


def check(name, value, expected, rel=1e-3, hint="", unit=""):
    """✓ check of exercise ``name``: compare the answer ``value`` with ``expected``.

    Parameters
    ----------
    name : str
        The exercise, as the messages name it ("1", "10 (sum)").
    value : object
        The student's answer; ``None`` (or ``...``) means not attempted (see
        :func:`unanswered`).
    expected : object
        What the answer must be; its kind decides the comparison:

        * :class:`gpulab.units.Bandwidth`: ``value`` must be a Bandwidth of the same
          direction (a right value in the other direction is named as such, with the
          conversion to call) and equal within ``rel``;
        * a class (an exception class): ``value`` must be an instance (the exception
          object caught);
        * ``bool``: ``value`` must be that bool;
        * ``str``: ``value`` must be a str equal to it, ignoring case and the blanks
          around ``value``;
        * ``int``: ``value`` must be a number equal to it (exactly);
        * any other real number (float, numpy float): ``value`` converted with
          ``float`` must equal it within ``rel``.
    rel : float
        Relative tolerance for bandwidths and floats, in (0, 1).
    hint : str
        Printed as a last ``Hint:`` line of a failure ("" for none).
    unit : str
        The unit of plain numbers, in the messages ("GB/s", "B", "(ratio)").

    Returns
    -------
    None
        The outcome is shown and recorded (:func:`results`), not returned, so that a
        check as a cell's last line displays nothing more.

    Raises
    ------
    AssertionError
        ``Exercise NAME: ...`` under :func:`strict_on` only: when the answer is wrong,
        or not answered while ``GPULAB_LAB_SOLUTIONS=1``.
    ValueError
        If an argument is of the wrong kind: ``name`` not a non-empty string,
        ``expected`` None or of no kind listed above (or a float that is not finite),
        ``rel`` not in (0, 1), ``hint`` or ``unit`` not a string.

    Notes
    -----
    Prints ``✓ NAME: VALUE`` when the answer is right,
    ``… exercise NAME: not attempted yet (skipped)`` when it is None and solutions
    are off, and shows ``✗ Exercise NAME: ...`` when it is wrong.

    A wrong answer is shown in two steps. The first one of check ``name`` in this kernel
    (:func:`failures`) does not give the expected value: it names the given value, the
    classic slip or how far off it is (:func:`size_note`), a ``Hint:`` line (``hint``,
    or :func:`generic_hint` when it is "") and :data:`AGAIN`. From the second one on
    (a :func:`check_slips` match counts) the message gives the expected value, the
    tolerance and the given value, with ``hint`` when there is one. A value of the
    wrong kind or direction is named as such both times (that gives nothing away).
    Under :func:`strict_on` (the course's tests, the answer keys) the first wrong
    answer already raises with the expected value.

    Examples
    --------
    >>> check("3", 2 ** 30 / 1e9, 1.073741824, rel=1e-6, unit="GB")
    ✓ 3: 1.07374 GB
    >>> check("6", "pcie", "PCIe")
    ✓ 6: 'pcie'
    >>> from gpulab import units
    >>> check("1", units.Bandwidth.from_gb_per_s(900, "bidirectional"),
    ...       units.Bandwidth.from_gb_per_s(450, "per_direction"),
    ...       hint="call .to_per_direction()")
    ✗ Exercise 1: expected a per_direction figure, got 900 GB/s bidirectional (the right value once converted: call .to_per_direction())
    Hint: call .to_per_direction()
    >>> check("7", 1.25, 1.5, hint="S / B for each of the two transfers")
    ✗ Exercise 7: 1.25 is not right yet. Your value is too small, by less than a factor of 2: check the formula for a missing or extra term or factor.
    Hint: S / B for each of the two transfers
    Run this check again after a fix: a second wrong answer shows the expected value.
    >>> check("7", 1.75, 1.5, hint="S / B for each of the two transfers")
    ✗ Exercise 7: expected 1.5 (within 0.1%), got 1.75.
    Hint: S / B for each of the two transfers
    """
    _check_str("name", name, empty=False)
    rel = _check_rel(rel)
    _check_str("hint", hint)
    _check_str("unit", unit)
    if expected is None:
        raise ValueError("expected must be the right answer, not None")
    if not isinstance(expected, (type, units.Bandwidth, str)) and not _is_number(expected) \
            and not isinstance(expected, bool):
        raise ValueError("expected must be a units.Bandwidth, a class, a bool, a str or "
                         f"a real number; got {type(expected).__name__} {expected!r}")
    if _is_number(expected) and not isinstance(expected, int) \
            and not math.isfinite(float(expected)):
        raise ValueError(f"expected must be a finite number; got {expected!r}")
    if unanswered(name, value):
        return
    _ACCEPTED[name] = Accepted(_scalar(expected), rel, unit)
    problem = _problem(value, expected, rel, unit)
    if problem:
        full, first = problem
        if strict_on() or _FAILURES.get(name, 0) or first == full:
            _report(name, full, hint)
        else:
            _report(name, first, hint or generic_hint(expected, unit), AGAIN)
        return
    line = f"✓ {name}: {show(value, unit)}"
    _record(name, "pass", line)
    print(line)


def check_slips(name, value, slips, rel=1e-6):
    """Name a known wrong answer before :func:`check` judges it.

    Parameters
    ----------
    name : str
        The exercise, as in :func:`check`.
    value : object
        The student's answer. Anything ``float()`` cannot convert (None, a Bandwidth)
        is left to :func:`check`.
    slips : iterable of (float, str)
        Known wrong values and what each one means ("That is one phase only: ...").
    rel : float
        Relative tolerance of the match, in (0, 1).

    Returns
    -------
    bool
        True when a slip matched: ``✗ Exercise NAME: got VALUE. WHY`` (the first one
        that matches) has been shown through :func:`fail`; the general check should
        then be skipped (``if not check_slips(...): check(...)``), or the student
        would read two messages about one answer. A match counts as a wrong answer
        of ``name`` (:func:`failures`): the next wrong answer that :func:`check`
        judges shows the expected value.

    Raises
    ------
    AssertionError
        ``Exercise NAME: got VALUE. WHY`` for the first slip that matches, under
        :func:`strict_on` only.
    ValueError
        If ``name`` is not a non-empty string, ``rel`` not in (0, 1), or ``slips`` not
        an iterable of (real number, str) pairs.

    Examples
    --------
    >>> check_slips("4", 7.0, [(8.0, "Count the ranks again.")])
    False
    >>> check_slips("4", 8.0, [(8.0, "Count the ranks again.")])
    ✗ Exercise 4: got 8. Count the ranks again.
    True
    """
    _check_str("name", name, empty=False)
    rel = _check_rel(rel)
    slips = _slip_list(slips)
    try:
        got = float(value)
    except (TypeError, ValueError):
        return False
    for wrong, why in slips:
        if math.isclose(got, float(wrong), rel_tol=rel):
            fail(name, f"got {show(got)}. {why}")
            return True
    return False


def _slip_list(slips):
    """``slips`` as a list of (real number, str) pairs, or ValueError."""
    if isinstance(slips, (str, bytes, Mapping)):
        raise ValueError(f"slips must be a list of (wrong value, why) pairs; got {slips!r}")
    try:
        slips = list(slips)
    except TypeError:
        raise ValueError("slips must be a list of (wrong value, why) pairs; "
                         f"got {slips!r}") from None
    for i, slip in enumerate(slips):
        if not (isinstance(slip, (tuple, list)) and len(slip) == 2
                and _is_number(slip[0]) and isinstance(slip[1], str)):
            raise ValueError(f"slips[{i}] must be a (wrong value, why) pair of a real "
                             f"number and a str; got {slip!r}")
    return slips


def _cell(x):
    """One table cell: text without line breaks, pipes escaped."""
    return " ".join(str(x).split("\n")).replace("|", r"\|")


def markdown_table(rows, columns, *, notes=()):
    """A Markdown table of ``rows``, with ``notes`` under it.

    Parameters
    ----------
    rows : iterable of Mapping or Sequence
        A mapping row gives its cells by column name (a missing one is empty); a
        sequence row gives them in column order, one per column.
    columns : sequence of str
        The header, in order.
    notes : iterable of str
        Lines under the table (after a blank line), each ending in a Markdown line
        break, e.g. footnotes ``"[1] reason"``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``columns`` is not a non-empty sequence of strings, a row is neither a
        mapping nor a sequence of ``len(columns)`` cells, or a note is not a string.

    Examples
    --------
    >>> print(markdown_table([{"GPU": 0, "verdict": "PASS"}], ("GPU", "verdict")))
    | GPU | verdict |
    |---|---|
    | 0 | PASS |
    >>> markdown_table([("GPU0-GPU1", "NV18 [1]")], ("pair", "class"),
    ...                notes=["[1] NVLink"]).splitlines()
    ['| pair | class |', '|---|---|', '| GPU0-GPU1 | NV18 [1] |', '', '[1] NVLink  ']
    """
    if isinstance(columns, str) or not isinstance(columns, (tuple, list)) \
            or not columns or not all(isinstance(c, str) for c in columns):
        raise ValueError(f"columns must be a non-empty sequence of str; got {columns!r}")
    lines = ["| " + " | ".join(map(_cell, columns)) + " |", "|---" * len(columns) + "|"]
    for i, row in enumerate(rows):
        if isinstance(row, Mapping):
            cells = [row.get(c, "") for c in columns]
        elif isinstance(row, (tuple, list)) and len(row) == len(columns):
            cells = row
        else:
            raise ValueError(f"rows[{i}] must be a mapping or a sequence of "
                             f"{len(columns)} cells; got {row!r}")
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    notes = [notes] if isinstance(notes, str) else list(notes)
    for note in notes:
        _check_str("notes", note)
    if notes:
        lines += [""] + [f"{note}  " for note in notes]
    return "\n".join(lines)


def show_table(rows, columns, *, notes=()):
    """Display :func:`markdown_table` in the notebook (IPython's ``display``).

    Parameters
    ----------
    rows, columns, notes
        As for :func:`markdown_table`.

    Raises
    ------
    ValueError
        As :func:`markdown_table`.
    """
    text = markdown_table(rows, columns, notes=notes)
    from IPython.display import Markdown, display  # only here: a notebook-only helper

    display(Markdown(text))
