"""``make wheelhouse`` (air-gapped classroom): what it runs, and that the gpulab wheel it
builds carries the package data the labs read. The full download is not run here."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def dry_run(*args):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    proc = subprocess.run(["make", "-n", "-o", "venv", "wheelhouse", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_wheelhouse_downloads_the_learner_requirements_and_builds_gpulab():
    out = dry_run()
    download = [ln for ln in out.splitlines() if " pip download " in ln]
    assert len(download) == 1
    assert "-r requirements-learner.txt" in download[0]
    assert "--dest _build/wheelhouse" in download[0]
    assert any(" pip wheel " in ln and "--no-deps" in ln and ln.rstrip().endswith(" .")
               for ln in out.splitlines())
    assert "cp requirements-learner.txt _build/wheelhouse/" in out
    assert "_build/wheelhouse/labs/" in out


def test_wheelhouse_passes_platform_options_to_pip():
    out = dry_run("WHEELHOUSE_ARGS=--only-binary=:all: --platform manylinux2014_x86_64")
    download = next(ln for ln in out.splitlines() if " pip download " in ln)
    assert "--platform manylinux2014_x86_64" in download


def test_gpulab_wheel_has_its_data(tmp_path):
    # built from a copy, so that setuptools' build/ folder stays out of the repository
    src = tmp_path / "src"
    src.mkdir()
    shutil.copytree(ROOT / "gpulab", src / "gpulab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / f, src / f)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check",
                           "--wheel-dir", str(tmp_path / "wh"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = (tmp_path / "wh").glob("gpulab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("gpulab/doctor.py", "gpulab/cli/doctor.py", "gpulab/data/gpus.csv",
                   "gpulab/data/systems.yaml"):
        assert needed in names, needed
    assert any(n.startswith("gpulab/data/measurements/raw/") for n in names)
    # every file of the package that git tracks (subpackages, data, raw measurements)
    if shutil.which("git") and (ROOT / ".git").exists():
        tracked = subprocess.run(["git", "ls-files", "gpulab"], cwd=ROOT, text=True,
                                 capture_output=True, timeout=60).stdout.split()
        assert tracked and sorted(set(tracked) - names) == []
