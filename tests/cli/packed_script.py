"""Run one of the ``measure/`` scripts that pack their results, and unpack them."""
from __future__ import annotations

import os
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


def standin_env(tmp_path, programs, unset=(), **extra):
    """An environment whose PATH starts with stand-in programs (``{name: bash text}``,
    written to ``tmp_path/bin``), with ``OUT`` = ``tmp_path/out`` and the variables in
    ``unset`` removed; ``extra`` adds variables. Returns (env, out)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in programs.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PATH": f"{bin_}:{os.environ['PATH']}", **extra}
    for k in unset:
        env.pop(k, None)
    return env, out


#: torchrun's stand-in: writes, in the --csv file, the NCCL variables and arguments it got
TORCHRUN = """#!/bin/bash
csv=""; prev=""
for a in "$@"; do [ "$prev" = "--csv" ] && csv=$a; prev=$a; done
echo "env NCCL_ALGO=${NCCL_ALGO:-} NCCL_PROTO=${NCCL_PROTO:-} \\
NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-} NCCL_BUFFSIZE=${NCCL_BUFFSIZE:-} \\
NCCL_DEBUG=${NCCL_DEBUG:-} args $*" > "$csv"
"""


def run_torchrun_script(tmp_path, script, args, tgz, unset=()):
    """Run a ``measure/`` script that starts sweeps with torchrun under MPS, with
    stand-ins for torchrun, nvidia-smi and the MPS daemon; returns the unpacked folder."""
    env, out = standin_env(
        tmp_path, {"torchrun": TORCHRUN, "nvidia-smi": "#!/bin/bash\necho H200\n",
                   "nvidia-cuda-mps-control": "#!/bin/bash\ncat >/dev/null\n"},
        ("NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_DEBUG", *unset),
        CUDA_MPS_PIPE_DIRECTORY=str(tmp_path / "mps"),
        CUDA_MPS_LOG_DIRECTORY=str(tmp_path / "mpslog"))
    raw = tmp_path / "raw"
    run_packed(script, args, env, out, tgz, raw)
    return raw
