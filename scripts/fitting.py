"""Least squares and the command line shared by the fit scripts (``fit_layer_recipes.py``,
``fit_decode.py``, ``fit_prefill.py``).

Not part of the gpulab package: the package evaluates fitted constants, the scripts fit
them. Deterministic (fixed step and damping schedule), so a script's ``--check`` run
reproduces its stored constants exactly.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def levenberg_marquardt(theta, residuals, iters=300):
    """Minimise ``sum(residuals(theta) ** 2)`` from ``theta``; the best ``theta`` found.

    Forward-difference Jacobian (step 1e-6), Marquardt's diagonal damping: divided by 3
    after an accepted step, multiplied by 4 after a rejected one; ``iters`` steps.

    >>> fit = levenberg_marquardt(np.array([0.0, 0.0]),
    ...                           lambda th: th[0] + th[1] * np.arange(4.0) - [1, 3, 5, 7])
    >>> [round(float(v), 6) for v in fit]
    [1.0, 2.0]
    """
    theta = np.asarray(theta, dtype=float)
    r = residuals(theta)
    cost, lam = r @ r, 1e-2
    for _ in range(iters):
        jac = np.array([(residuals(theta + e * 1e-6) - r) / 1e-6
                        for e in np.eye(len(theta))]).T
        a, g = jac.T @ jac, jac.T @ r
        step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
        r2 = residuals(theta + step)
        if r2 @ r2 < cost:
            theta, r, cost, lam = theta + step, r2, r2 @ r2, lam / 3
        else:
            lam *= 4
    return theta


def to_theta(constants, names, form):
    """The unconstrained vector of ``constants`` (``{name: value}``) in the order of
    ``names``, each by its transform in ``form``: ``"log"`` (a positive value),
    ``"logit"`` (a fraction in (0, 1)) or ``"p"`` (a power > 1).

    >>> [round(float(v), 6) for v in to_theta({"a": 1.0, "b": 0.5, "c": 2.0}, "abc",
    ...                                        {"a": "log", "b": "logit", "c": "p"})]
    [0.0, 0.0, 0.0]
    """
    out = []
    for n in names:
        v, f = constants[n], form[n]
        out.append(np.log(v) if f == "log" else np.log(v / (1 - v)) if f == "logit"
                   else np.log(v - 1))
    return np.array(out)


def from_theta(theta, names, form):
    """The constants ``{name: value}`` of an unconstrained vector (inverse of
    :func:`to_theta`).

    >>> from_theta([0.0, 0.0, 0.0], "abc", {"a": "log", "b": "logit", "c": "p"})
    {'a': 1.0, 'b': 0.5, 'c': 2.0}
    """
    c = {}
    for n, x in zip(names, theta):
        f = form[n]
        c[n] = float(np.exp(x) if f == "log" else 1 / (1 + np.exp(-x)) if f == "logit"
                     else 1 + np.exp(x))
    return c


def yaml_text(header, doc):
    """A fit script's output file: its comment ``header`` and ``doc`` as YAML."""
    import yaml
    return header + yaml.safe_dump(doc, sort_keys=False, width=100)


def error_summary(errs):
    """``{"n", "mean_abs", "worst"}`` of model / measured - 1 errors (worst: signed)."""
    e = np.array(errs)
    if not len(e):
        return {"n": 0}
    return {"n": int(len(e)), "mean_abs": round(float(np.mean(np.abs(e))), 4),
            "worst": round(float(e[np.argmax(np.abs(e))]), 4)}


def write_or_check(out, render, script, description, argv=None):
    """The fit scripts' command line: write ``render()`` to ``out``, or with ``--check``
    exit 1 if the stored file differs from it. Returns the exit status."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the stored file differs from a fresh fit")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out.name} differs from a fresh fit: run {script}", file=sys.stderr)
            return 1
        print(f"{out.name} reproduces")
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0
