"""Shared pieces of the bad-input tables (value families and the Case row).

``tests/models/test_bad_input.py`` holds the table of the first modules; each later module
keeps its rows in ``tests/bad_input_<module>.py`` with three names: ``MODULES`` (the
modules it covers), ``CASES`` (list of Case) and ``NO_ARGS`` (set of functions with
no parameters). ``test_bad_input.py`` collects them all, so the meta-tests still fail
when a public function or parameter lacks a row.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpulab.units import Bandwidth

NAN, INF = float("nan"), float("inf")
PD = Bandwidth(25e9, "per_direction")
BD = Bandwidth(50e9, "bidirectional")

# Families of bad values -----------------------------------------------------------
WRONG_TYPE = ["1", "abc", None, ["a", "b"], True, False]
NONFINITE = [NAN, INF, -INF]
NONNEG = [-1.0, -1e-300] + NONFINITE + WRONG_TYPE           # >= 0 required
POS = [0, 0.0] + NONNEG                                      # > 0 required
SCALAR_ONLY = [[1.0, 2.0]]                  # an array where a scalar is needed
FRACTION_OPEN = POS + [1.0001, 2]                            # (0, 1]
FRACTION_CLOSED = NONNEG + [1.0001, 2]                       # [0, 1]


# Valid-looking numbers whose result can overflow a float, and a 2-D array.
# test_bad_input.py tries them on every numeric parameter of every row: the
# function must raise ValueError naming the parameter or return a finite answer
# (never inf/nan, OverflowError or IndexError).
HUGE = [10**400, 1e308, -1e308, 1.7e308]
ARRAY_2D = "2-D"          # marker: the row's valid value, stacked twice (2-D)


def INT(low, high=None):
    """Bad values of an integer parameter with range [low, high]."""
    vals = [low - 1, 2.5, "8", None, ["a"], True, NAN, INF, -INF]
    if high is not None:
        vals.append(high + 1)
    return vals


def CHOICE(*extra):
    return ["no-such-thing", "", None, 3, True, ["x"], *extra]


NOT_BANDWIDTH = [None, "450 GB/s per direction", 25e9, True, ["a"]]
RATE = POS + [BD]          # a per-direction rate: Bandwidth or plain number [B/s]


@dataclass
class Case:
    func: object
    valid: dict
    bad: dict                         # param -> list of bad values
    xfail: dict = field(default_factory=dict)     # param -> reason (known bugs)
    exempt: dict = field(default_factory=dict)    # param -> why it is not checked

    @property
    def name(self):
        mod = self.func.__module__.rsplit(".", 1)[-1]
        return f"{mod}.{self.func.__qualname__}"
