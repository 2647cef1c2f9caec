"""Run one of the ``measure/`` scripts that pack their results, and unpack them."""
from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_packed(script, args, env, out, tgz, dest, cwd=ROOT):
    """Run ``bash script args`` from ``cwd`` (default: the repository root) with
    ``env`` (whose ``OUT`` is ``out``), check it succeeded, packed ``out/tgz`` and
    removed its raw folder, and unpack the archive into ``dest`` (created). Returns the
    script's stdout."""
    res = subprocess.run(["bash", str(script), *args], env=env, cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    dest.mkdir()
    with tarfile.open(out / tgz) as tar:
        tar.extractall(dest, filter="data")
    assert not (out / "raw").exists()                 # packed, then removed
    return res.stdout
