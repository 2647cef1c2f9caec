"""Input checks shared by every public function (private module).

Every public gpulab function validates its numeric inputs with these helpers, so
bad input always raises :class:`ValueError` naming the parameter and the valid
range, never a ``TypeError`` from deep inside numpy.
"""
from __future__ import annotations

import functools
import inspect
import numbers
from dataclasses import fields, is_dataclass

import numpy as np

__all__ = ["as_number", "check_choice", "check_int", "finite_result", "finite_answer",
           "all_finite", "finite_message"]


def as_number(name, value, *, low=None, high=None, low_inclusive=True,
              high_inclusive=True, allow_array=True, max_ndim=None):
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
    max_ndim : int, optional
        Most dimensions an array may have (1 where the function works on a
        list of sizes).

    Raises
    ------
    ValueError
        If the value is not a real finite number in range.
    """
    rng = _describe_range(low, high, low_inclusive, high_inclusive)
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        raise ValueError(f"{name} must be a real number {rng}; got {value!r}")
    if isinstance(value, numbers.Real):
        try:
            arr = np.asarray(float(value))
        except OverflowError:             # an int beyond a float's range (10**400)
            raise ValueError(f"{name} must be finite {rng}; got {_short(value)} "
                             "(beyond a float's range)") from None
    else:
        if not allow_array:
            raise ValueError(f"{name} must be a single real number {rng}; got {value!r}")
        try:
            arr = np.asarray(value, dtype=float)
        except OverflowError:
            raise ValueError(f"{name} must be finite {rng}; got a value beyond a "
                             "float's range") from None
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number {rng}; got {value!r}") from None
        if arr.dtype == object:
            raise ValueError(f"{name} must be a real number {rng}; got {value!r}")
        if max_ndim is not None and arr.ndim > max_ndim:
            raise ValueError(f"{name} must be a number or a 1-D array {rng}; got a "
                             f"{arr.ndim}-D array of shape {arr.shape}")
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


def _short(value, width=40):
    text = repr(value)
    return text if len(text) <= width else f"{text[:width - 12]}...({len(text)} chars)"


def all_finite(value, _depth=0):
    """True when every number in ``value`` (a number, array, Bandwidth-like
    object with ``bytes_per_s``, dataclass, dict, list or tuple) is finite."""
    if _depth > 6 or value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        return True
    if isinstance(value, numbers.Number):
        return bool(np.isfinite(value)) if isinstance(value, (numbers.Real, complex)) \
            else True
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())
    if is_dataclass(value) and not isinstance(value, type):
        return all(all_finite(getattr(value, f.name), _depth + 1) for f in fields(value))
    if isinstance(value, dict):
        return all(all_finite(v, _depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(all_finite(v, _depth + 1) for v in value)
    if hasattr(value, "bytes_per_s"):
        return all_finite(value.bytes_per_s, _depth + 1)
    return True


def finite_result(value, **inputs):
    """Return ``value`` if every number in it is finite; else raise ValueError
    naming the caller's parameters ``inputs`` (name=value), whose finite values
    made the result overflow a float (e.g. ``message_bytes=1e308``).

    >>> finite_result(2.0, time=1.0)
    2.0
    >>> finite_result(float("inf"), message_bytes=1e308, time=1e-3)
    Traceback (most recent call last):
    ...
    ValueError: message_bytes, time: too large: the result overflows a float (not finite) for message_bytes=1e+308, time=0.001; give smaller values
    """
    if all_finite(value):
        return value
    raise ValueError(_overflow_message(inputs))


def finite_message(**inputs):
    """The message of :func:`finite_result`'s ValueError for ``inputs``."""
    return _overflow_message(inputs)


def _overflow_message(inputs):
    names = ", ".join(inputs) or "the inputs"
    shown = ", ".join(f"{k}={_short(v)}" for k, v in inputs.items())
    return (f"{names}: too large: the result overflows a float (not finite) for "
            f"{shown}; give smaller values")


def _numeric_inputs(bound):
    """The caller's numeric arguments (numbers and arrays of numbers, and
    Bandwidth-like objects), largest first."""
    out = {}
    for k, v in bound.arguments.items():
        if isinstance(v, (bool, np.bool_, str)) or v is None:
            continue
        if hasattr(v, "bytes_per_s"):
            v = v.bytes_per_s
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError, OverflowError):
            if isinstance(v, numbers.Integral):
                out[k] = (float("inf"), v)
            continue
        if arr.size and np.isfinite(arr).all():
            out[k] = (float(np.max(np.abs(arr))), v)
    return {k: v for k, (_, v) in sorted(out.items(), key=lambda kv: -kv[1][0])}


def finite_answer(func):
    """Decorator for a public numeric function: a result that is not finite (a
    float overflow from finite inputs, e.g. ``1e308`` bytes) or an
    ``OverflowError`` becomes a ValueError naming the caller's numeric
    parameters (:func:`finite_result`)."""
    sig = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore",
                         under="ignore"):
            try:
                out = func(*args, **kwargs)
                overflow = not all_finite(out)
            except OverflowError:
                overflow = True
        if not overflow:
            return out
        bound = sig.bind(*args, **kwargs)
        raise ValueError(_overflow_message(_numeric_inputs(bound))) from None

    return wrapper
