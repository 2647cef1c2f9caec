"""``gpulab doctor``: passes here (exit 0), fails clearly (exit 1, a FAIL line naming the
package) when a required package is missing; the GPU checks are optional."""
from __future__ import annotations

import importlib.metadata
import io
import json
import re
import subprocess
import sys

import pytest

from gpulab import cli, doctor


def run(*argv):
    out = io.StringIO()
    return cli.main(["doctor", *argv], out=out), out.getvalue()


def test_passes_here_with_one_line_per_check():
    status, text = run("--no-gpu")
    lines = text.splitlines()
    assert status == 0, text
    assert lines[-1].startswith("gpulab doctor: all ") and "passed" in lines[-1]
    for line in lines[:-1]:
        assert line.split()[0] in doctor.STATUSES, line
    assert any(line.startswith("PASS  package ipywidgets") for line in lines)


def test_gpu_checks_are_optional_lines():
    status, text = run()
    gpu = [ln for ln in text.splitlines() if "(optional)" in ln]
    assert [ln.split()[1] for ln in gpu] == ["nvidia-smi", "torch", "NCCL"]
    assert status == 0          # SKIP (no GPU here) or PASS: never a failure


def test_missing_package_fails_clearly(monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "ipywidgets":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(importlib.metadata, "version", version)
    status, text = run("--no-gpu")
    assert status == 1
    assert "FAIL  package ipywidgets" in text and "not installed" in text
    n_required = 1 + len(doctor.REQUIRED_PACKAGES) + 4   # python, packages, 4 more
    assert text.splitlines()[-1] == (f"gpulab doctor: FAILED 1 of {n_required} required "
                                     "checks: package ipywidgets")


def test_requirements_file_with_an_absent_package_exits_1(tmp_path):
    req = tmp_path / "req.txt"
    req.write_text("numpy>=1.24\ngpulab-no-such-package==1.0  # not on this machine\n")
    proc = subprocess.run([sys.executable, "-m", "gpulab", "doctor", "--no-gpu",
                           "--requirements", str(req)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL  package gpulab-no-such-package" in proc.stdout
    assert "PASS  package numpy" in proc.stdout


def test_json_format():
    status, text = run("--no-gpu", "--format", "json")
    data = json.loads(text)
    assert status == 0 and data["passed"] is True
    assert {c["status"] for c in data["checks"]} == {"PASS"}


@pytest.mark.parametrize("content,match", [
    ("numpy<2\n", "--requirements .*line 1"), (b"\xff\xfe", "not UTF-8")])
def test_bad_requirements_file_is_a_usage_error(tmp_path, capsys, content, match):
    req = tmp_path / "req.txt"
    req.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SystemExit) as info:
        cli.main(["doctor", "--requirements", str(req)], out=io.StringIO())
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and len(err.strip().splitlines()) == 1


def test_missing_requirements_file(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        cli.main(["doctor", "--requirements", str(tmp_path / "nope.txt")])
    assert info.value.code == 2
    assert "cannot read" in capsys.readouterr().err
