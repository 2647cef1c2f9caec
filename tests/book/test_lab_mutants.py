"""The labs' ✓ checks catch a wrong unit constant.

Each case breaks one constant the labs teach in a copy of gpulab (GiB = 1e9 bytes,
NVLink4 without its 16/17 coding, PCIe Gen3-5 without 128b/130b, Adam with 4 bytes of
state instead of 8, i.e. 8 bytes of optimizer state per parameter instead of 12), puts
that copy first on the kernel's PYTHONPATH and runs the labs that teach the constant
with their solutions filled in (``GPULAB_LAB_SOLUTIONS=1``). A lab whose checks only
compared gpulab with gpulab would pass; these must stop at a failed ✓ check.

Each lab runs until its first failed check, so the whole file takes about a minute.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import gpulab

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(gpulab.__file__).resolve().parent

#: name: (file in the package, text, broken text, labs that must fail)
MUTANTS = {
    "GiB = 1e9": (
        "units.py",
        "KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40",
        "KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 1e9, 2.0**40",
        ("lab01_link_math",)),
    "NVLink4 coding 16/17 -> 1": (
        "data/nvlink.csv",
        "4,H100,2022,PAM4,2,53.125,16/17,",
        "4,H100,2022,PAM4,2,53.125,1,",
        ("lab02_read_your_server", "lab03_ring_allreduce",
         "lab04_accept_a_server")),
    "PCIe 128b/130b -> 1": (
        "data/pcie.csv",
        "128b/130b,128/130,",
        "128b/130b,1,",
        ("lab02_read_your_server", "lab03_ring_allreduce",
         "lab04_accept_a_server")),
    "Adam 12 -> 8 bytes": (
        "data/parallelism_assumptions.yaml",
        "adam_state_bytes:\n  value: 8\n",
        "adam_state_bytes:\n  value: 4\n",
        ("lab05_plan_70b",)),
}


def broken_copy(tmp, file, text, broken):
    """A copy of the gpulab package under ``tmp`` with ``text`` replaced."""
    target = tmp / "gpulab"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    f = target / file
    source = f.read_text(encoding="utf-8")
    assert text in source, f"{file} no longer contains {text!r}: update MUTANTS"
    f.write_text(source.replace(text, broken), encoding="utf-8")
    return target


def run_lab(name):
    """Run one lab with its solutions; return the error text, or None if it passed."""
    path = ROOT / "labs" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_labs_catch_a_broken_constant(mutant, tmp_path, monkeypatch):
    file, text, broken, labs = MUTANTS[mutant]
    copy = broken_copy(tmp_path, file, text, broken)
    path = os.pathsep.join([str(tmp_path)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "1")
    # the kernels will import the broken copy, not the package under test
    where = subprocess.run([sys.executable, "-c", "import gpulab; print(gpulab.__file__)"],
                           capture_output=True, text=True, check=True, cwd=ROOT / "labs")
    assert Path(where.stdout.strip()).resolve().parent == copy.resolve()
    for lab in labs:
        error = run_lab(lab)
        assert error is not None, f"{lab} passed with {mutant}"
        # a failed ✓ check, not a crash of the broken copy
        assert "AssertionError" in error and "Exercise " in error, (lab, error[-800:])
        plain = re.sub(r"\x1b\[[0-9;]*m", "", error)      # no terminal colours
        print(f"{mutant}: {lab}:", re.findall(r"AssertionError: (Exercise .*)", plain)[-1])
