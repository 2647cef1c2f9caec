"""gpulab.doctor: each check passes here, and fails (or skips) with a clear line when
what it looks for is missing, too old or broken (simulated with its parameters)."""
from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpulab import doctor

ROOT = Path(__file__).resolve().parents[2]


def missing(name):
    raise importlib.metadata.PackageNotFoundError(name)


def block(monkeypatch, *names):
    """Make ``import name`` raise ImportError, as if the package were not installed."""
    for name in names:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, mod)
        monkeypatch.setitem(sys.modules, name, None)


def test_required_checks_pass_here():
    checks = doctor.run_checks(optional=False)
    bad = [doctor.format_check(c) for c in checks if c.status != "PASS"]
    assert bad == []
    assert doctor.passed(checks)
    names = [c.name for c in checks]
    for want in ("python", "package numpy", "package ipywidgets", "widgets model",
                 "widgets front end", "figures", "gpulab data"):
        assert want in names


@pytest.mark.parametrize("version,status", [((3, 11, 0), "PASS"), ((3, 10, 14), "FAIL"),
                                            ((3, 9, 18), "FAIL"), ((3, 12, 1), "PASS"),
                                            ((4, 0, 0), "PASS"), ((2, 7, 18), "FAIL")])
def test_python_version(version, status):
    assert doctor.check_python(version).status == status


def test_min_python_is_requires_python():
    """The doctor accepts exactly the Pythons pyproject.toml's requires-python accepts."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec["project"]["requires-python"].strip())
    assert m, f"requires-python {spec['project']['requires-python']!r}: expected '>=X.Y'"
    assert doctor.MIN_PYTHON == (int(m.group(1)), int(m.group(2)))
    major, minor = doctor.MIN_PYTHON
    assert doctor.check_python((major, minor, 0)).status == "PASS"
    assert doctor.check_python((major, minor - 1, 99)).status == "FAIL"


@pytest.mark.parametrize("found,spec,status", [
    ("1.24.0", ">=1.24", "PASS"), ("1.24", ">=1.24.0", "PASS"), ("1.23.5", ">=1.24", "FAIL"),
    ("2.0.0rc1", ">=1.24", "PASS"), ("10.0", ">=9.1", "PASS"), ("9.10", ">=9.9", "PASS"),
    ("1.0.4.post1", "==1.0.4.post1", "PASS"), ("2.4.5", "==2.4.6", "FAIL"), ("0.1", "", "PASS")])
def test_package_versions(found, spec, status):
    c = doctor.check_package("pkg", spec, version_of=lambda name: found)
    assert c.status == status and c.required
    assert found in c.detail


def test_missing_package_fails_and_says_how_to_fix():
    c = doctor.check_package("numpy", ">=1.24", version_of=missing)
    assert c.status == "FAIL"
    assert "numpy is not installed" in c.detail and "requirements-learner.txt" in c.detail


def test_one_missing_package_fails_the_run():
    def version_of(name):
        return missing(name) if name == "ipywidgets" else importlib.metadata.version(name)
    checks = doctor.run_checks(version_of=version_of, optional=False)
    failed = [c.name for c in checks if c.status == "FAIL"]
    assert failed == ["package ipywidgets"]
    assert not doctor.passed(checks)


def test_widgets_and_figures_fail_without_their_libraries(monkeypatch):
    block(monkeypatch, "ipywidgets", "matplotlib")
    assert doctor.check_widget_model().status == "FAIL"
    assert doctor.check_figures().status == "FAIL"


def test_widget_front_end_looked_for_in_the_given_folders(tmp_path):
    assert doctor.check_widget_frontend([tmp_path]).status == "FAIL"
    ext = tmp_path / "labextensions" / "@jupyter-widgets" / "jupyterlab-manager"
    ext.mkdir(parents=True)
    (ext / "package.json").write_text("{}")
    assert doctor.check_widget_frontend([tmp_path / "x", tmp_path]).status == "PASS"


def test_nvidia_smi_absent_is_a_skip_not_a_failure():
    c = doctor.check_nvidia_smi(which=lambda name: None)
    assert (c.status, c.required) == ("SKIP", False)
    checks = [doctor.check_python((3, 11, 0)), c]
    assert doctor.passed(checks)


def fake_run(stdout, returncode=0, stderr=""):
    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)
    return run


def test_nvidia_smi_lists_gpus():
    out = ("GPU 0: NVIDIA H200 (UUID: GPU-aaaa)\nGPU 1: NVIDIA H200 (UUID: GPU-bbbb)\n")
    c = doctor.check_nvidia_smi(which=lambda n: "/usr/bin/nvidia-smi", run=fake_run(out))
    assert c.status == "PASS" and c.detail == "2 GPU(s): NVIDIA H200"
    broken = doctor.check_nvidia_smi(
        which=lambda n: "/usr/bin/nvidia-smi",
        run=fake_run("", 9, "NVIDIA-SMI has failed because it couldn't communicate "
                            "with the NVIDIA driver."))
    assert broken.status == "FAIL" and not broken.required
    assert "couldn't communicate" in broken.detail


def test_torch_and_nccl_skip_without_torch(monkeypatch):
    block(monkeypatch, "torch")
    assert doctor.check_torch_cuda().status == "SKIP"
    assert doctor.check_nccl().status == "SKIP"


def test_optional_failure_does_not_fail_the_run():
    checks = [doctor.check_python((3, 11, 0)),
              doctor.Check("NCCL", "FAIL", "broken", required=False)]
    assert doctor.passed(checks)
    assert not doctor.passed(checks + [doctor.Check("x", "SKIP", "not run")])


@pytest.mark.parametrize("text", ["numpy<2", "numpy==", "-e .", "numpy == two"])
def test_bad_requirement_lines_are_refused(text):
    with pytest.raises(ValueError, match="requirements: line 1"):
        doctor.read_requirements(text)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="status"):
        doctor.Check("x", "OK", "")
    with pytest.raises(ValueError, match="spec"):
        doctor.check_package("numpy", "~=1.2")
    with pytest.raises(ValueError, match="version"):
        doctor.release("latest")
    with pytest.raises(ValueError, match="packages"):
        doctor.run_checks(packages=["numpy"])


def fake_torch(cuda=True):
    """What torch 2.11 reports on 1x H200 (driver 580, CUDA 13.0, NCCL 2.28.9)."""
    from types import SimpleNamespace as NS
    return NS(__version__="2.11.0+cu130", version=NS(cuda="13.0"),
              cuda=NS(is_available=lambda: cuda, device_count=lambda: 1,
                      get_device_name=lambda i: "NVIDIA H200",
                      nccl=NS(version=lambda: (2, 28, 9))),
              distributed=NS(is_nccl_available=lambda: True))


def test_torch_and_nccl_on_a_gpu_machine(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    t, n = doctor.check_torch_cuda(), doctor.check_nccl()
    assert (t.status, n.status) == ("PASS", "PASS")
    assert t.detail == "torch 2.11.0+cu130, CUDA 13.0, 1 GPU(s): NVIDIA H200"
    assert n.detail == "NCCL 2.28.9"
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False))
    assert doctor.check_torch_cuda().status == "SKIP"
    assert doctor.check_nccl().status == "SKIP"
