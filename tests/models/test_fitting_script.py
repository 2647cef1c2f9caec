"""The least-squares solver shared by the fit scripts (scripts/fitting.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fitting", ROOT / "scripts" / "fitting.py")
fitting = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fitting)


def test_a_line_is_fitted_exactly():
    x = np.arange(6.0)
    fit = fitting.levenberg_marquardt([0.0, 0.0], lambda th: th[0] + th[1] * x - (2 - 3 * x))
    assert np.allclose(fit, [2.0, -3.0], atol=1e-6)


def test_a_power_law_in_log_space_as_the_scripts_fit():
    # t = a * n**b, fitted on log t from a start far away (the scripts' use)
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    t = 3e-5 * n ** 0.7
    fit = fitting.levenberg_marquardt(
        np.log([1e-3, 0.1]),
        lambda th: np.log(np.exp(th[0]) * n ** th[1]) - np.log(t))
    assert np.exp(fit[0]) == pytest.approx(3e-5, rel=1e-6)
    assert fit[1] == pytest.approx(0.7, abs=1e-6)



def test_error_summary_keeps_the_sign_of_the_worst():
    assert fitting.error_summary([0.1, -0.3, 0.2]) == {"n": 3, "mean_abs": 0.2,
                                                       "worst": -0.3}
    assert fitting.error_summary([]) == {"n": 0}


def test_write_or_check_writes_then_checks(tmp_path):
    out = tmp_path / "constants.yaml"
    assert fitting.write_or_check(out, lambda: "a: 1\n", "scripts/x.py", "x", ["--check"]) == 1
    assert fitting.write_or_check(out, lambda: "a: 1\n", "scripts/x.py", "x", []) == 0
    assert out.read_text() == "a: 1\n"
    assert fitting.write_or_check(out, lambda: "a: 1\n", "scripts/x.py", "x", ["--check"]) == 0
    assert fitting.write_or_check(out, lambda: "a: 2\n", "scripts/x.py", "x", ["--check"]) == 1


def test_transforms_round_trip_and_keep_constants_in_range():
    form = {"a": "log", "b": "logit", "c": "p"}
    c = {"a": 3e-6, "b": 0.73, "c": 3.7}
    back = fitting.from_theta(fitting.to_theta(c, "abc", form), "abc", form)
    assert back == pytest.approx(c, rel=1e-12)
    # any real vector maps to a positive value, a fraction in (0, 1) and a power > 1
    far = fitting.from_theta([-50.0, 40.0, -30.0], "abc", form)
    assert far["a"] > 0 and 0 < far["b"] <= 1 and far["c"] > 1
    assert fitting.yaml_text("# h\n", {"x": 1}) == "# h\nx: 1\n"
