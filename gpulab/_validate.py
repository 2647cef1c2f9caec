"""Input checks shared by every public function (private module).

Every public gpulab function validates its numeric inputs with these helpers, so
bad input always raises :class:`ValueError` naming the parameter and the valid
range, never a ``TypeError`` from deep inside numpy.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["as_number", "check_choice", "check_int"]


def as_number(name, value, *, low=None, high=None, low_inclusive=True,
              high_inclusive=True, allow_array=True):
    """Return ``value`` as a float or float array after range checks.

    Parameters
    ----------
    name : str
        Parameter name used in the error message.
    value : numeric or array_like
        Value to check. ``bool`` and non-numeric types are rejected.
    low, high : float, optional
        Bounds of the valid range.
    low_inclusive, high_inclusive : bool
        Whether the bounds themselves are valid.
    allow_array : bool
        Whether array input is accepted (functions broadcast).

    Raises
    ------
    ValueError
        If the value is not a real finite number in range.
    """
    rng = _describe_range(low, high, low_inclusive, high_inclusive)
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        raise ValueError(f"{name} must be a real number {rng}; got {value!r}")
    if isinstance(value, numbers.Real):
        arr = np.asarray(float(value))
    else:
        if not allow_array:
            raise ValueError(f"{name} must be a single real number {rng}; got {value!r}")
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number {rng}; got {value!r}") from None
        if arr.dtype == object:
            raise ValueError(f"{name} must be a real number {rng}; got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite {rng}; got {value!r}")
    if low is not None:
        bad = arr < low if low_inclusive else arr <= low
        if np.any(bad):
            raise ValueError(f"{name} must be {rng}; got {value!r}")
    if high is not None:
        bad = arr > high if high_inclusive else arr >= high
        if np.any(bad):
            raise ValueError(f"{name} must be {rng}; got {value!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_int(name, value, *, low=None, high=None):
    """Return ``value`` as an ``int`` after checking it is an integer in range."""
    rng = _describe_range(low, high, True, True)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, bool) \
                and np.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer {rng}; got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer {rng}; got {value!r}")
    return value


def check_choice(name, value, choices):
    """Return ``value`` if it is one of ``choices``; else raise ValueError."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; "
                         f"got {value!r}")
    return value


def _describe_range(low, high, low_inclusive, high_inclusive):
    if low is None and high is None:
        return "(any finite value)"
    if high is None:
        return f"{'>=' if low_inclusive else '>'} {low:g}"
    if low is None:
        return f"{'<=' if high_inclusive else '<'} {high:g}"
    lb = "[" if low_inclusive else "("
    rb = "]" if high_inclusive else ")"
    return f"in {lb}{low:g}, {high:g}{rb}"
