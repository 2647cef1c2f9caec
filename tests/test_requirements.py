"""The learner requirements file agrees with requirements.txt and with ``gpulab doctor``.

* every pin of ``requirements-learner.txt`` is the same pin in ``requirements.txt``;
* it names exactly the packages ``gpulab.doctor.REQUIRED_PACKAGES`` checks, and each pin
  satisfies the doctor's minimum version;
* it holds no book-building, browser-test or lint tool.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab import doctor

ROOT = Path(__file__).resolve().parents[1]
LEARNER = ROOT / "requirements-learner.txt"
FULL = ROOT / "requirements.txt"
#: What a learner never needs: book building, browser tests, PDF, lint, test runners.
NOT_FOR_LEARNERS = re.compile(
    r"jupyter-book|sphinx|myst|playwright|pytest|nbval|hypothesis|ruff|pypdf", re.I)


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path):
    return {norm(k): v for k, v in doctor.read_requirements(
        path.read_text(encoding="utf-8")).items()}


def test_learner_pins_are_exact_and_match_requirements_txt():
    learner, full = pins(LEARNER), pins(FULL)
    assert learner, "requirements-learner.txt is empty"
    for name, spec in learner.items():
        assert spec.startswith("=="), f"{name}: pin an exact tested version, got {spec!r}"
        assert full.get(name) == spec, (
            f"{name}{spec} in requirements-learner.txt but "
            f"{full.get(name, 'nothing')} in requirements.txt")


def test_learner_file_is_what_doctor_checks():
    learner = pins(LEARNER)
    required = {norm(k): v for k, v in doctor.REQUIRED_PACKAGES.items()}
    assert set(learner) == set(required)
    for name, minimum in required.items():
        pinned = learner[name][2:]
        assert doctor.check_package(name, minimum, version_of=lambda n: pinned).status \
            == "PASS", f"{name}=={pinned} is below the doctor's minimum {minimum}"


def test_learner_file_has_no_book_or_test_tools():
    bad = [n for n in pins(LEARNER) if NOT_FOR_LEARNERS.search(n)]
    assert bad == []


@pytest.mark.parametrize("text", ["numpy==2.4.6\njupyter-book==1.0.4.post1\n"])
def test_the_tool_filter_can_fail(text, tmp_path):
    # the check above is not vacuous: a book tool in the file is found
    p = tmp_path / "req.txt"
    p.write_text(text, encoding="utf-8")
    assert [n for n in pins(p) if NOT_FOR_LEARNERS.search(n)] == ["jupyter-book"]
