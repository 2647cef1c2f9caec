"""``measure/run_nccl_cluster.sh``, the multi-node run left ready for a cluster, runs end to
end here with stand-ins for the launcher and nccl-tests (no GPU, no MPI): every sweep is
written and packed, each gets the NCCL variables of its run, and the ``gpulab compare``
command it prints for a forced ring runs on what it packed."""
from __future__ import annotations

import io
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from gpulab import cli
from tests.cli.packed_script import run_packed

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "measure" / "run_nccl_cluster.sh"
SAMPLE = ROOT / "tests" / "data" / "nccltests" / "h100_2x8_all_reduce.txt"


@pytest.fixture()
def packed(tmp_path):
    tests = tmp_path / "nccl-tests"
    tests.mkdir()
    for coll in ("all_reduce", "all_gather", "reduce_scatter"):
        stub = tests / f"{coll}_perf"
        # prints the NCCL variables it got, then a real 2 x 8 H100 nccl-tests output
        stub.write_text("#!/bin/bash\n"
                        'echo "# env NCCL_ALGO=${NCCL_ALGO:-} NCCL_PROTO=${NCCL_PROTO:-} '
                        'NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-} NCCL_DEBUG=${NCCL_DEBUG:-} '
                        'args $*"\n'
                        f"cat {shlex.quote(str(SAMPLE))}\n")
        stub.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "NODES": "2", "GPUS": "8",
           "NCCL_TESTS": str(tests), "PRESET": "dgx-h100-spod", "LAUNCH": "env"}
    env.pop("NCCL_ALGO", None)
    env.pop("NCCL_PROTO", None)
    raw = tmp_path / "raw"
    stdout = run_packed(SCRIPT, ["1073741824"], env, out, "nccl_cluster.tgz", raw)
    return raw, stdout


def test_every_sweep_is_packed_with_its_variables(packed):
    raw, stdout = packed
    names = {p.name for p in raw.iterdir()}
    want = {f"default_{c}.txt" for c in ("all_reduce", "all_gather", "reduce_scatter")}
    want |= {"ring_all_reduce.txt", "tree_all_reduce.txt", "debug_all_reduce.txt",
             "versions.txt", "nodes.txt", "compare_commands.txt"}
    want |= {f"ring_{p}_{c}.txt" for p in ("LL", "LL128", "Simple")
             for c in ("all_reduce", "all_gather")}
    assert want <= names, sorted(want - names)
    first = {n: (raw / n).read_text().splitlines()[0] for n in want if n.endswith(".txt")
             and n not in ("versions.txt", "nodes.txt", "compare_commands.txt")}
    assert "NCCL_ALGO= NCCL_PROTO= NCCL_NVLS_ENABLE=0" in first["default_all_reduce.txt"]
    assert "-b 8 -e 1073741824 -f 2 -g 1" in first["default_all_reduce.txt"]
    assert "NCCL_ALGO=Tree NCCL_PROTO= " in first["tree_all_reduce.txt"]
    assert "NCCL_ALGO=Ring NCCL_PROTO=LL128 " in first["ring_LL128_all_gather.txt"]
    assert "NCCL_DEBUG=INFO" in first["debug_all_reduce.txt"]
    assert "rc=0" in stdout


def test_printed_compare_command_runs_on_the_packed_file(packed, monkeypatch):
    raw, stdout = packed
    cmds = (raw / "compare_commands.txt").read_text().splitlines()
    assert len(cmds) == 11 and all(c.startswith("gpulab compare raw/") for c in cmds)
    line = next(c for c in cmds if "ring_LL_all_reduce" in c)
    assert line.endswith("--system dgx-h100-spod --nodes 2 --algorithm ring --protocol LL")
    assert line in stdout
    monkeypatch.chdir(raw.parent)
    buf = io.StringIO()
    assert cli.main(shlex.split(line)[1:], out=buf) == 0
    head = buf.getvalue().splitlines()[0]
    assert "16 ranks" in head and "algorithm ring (forced); protocol LL (forced)" in head


def test_missing_settings_stop_the_script_before_any_run(tmp_path):
    res = subprocess.run(["bash", str(SCRIPT)], env={**os.environ, "OUT": str(tmp_path)},
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "NODES" in res.stderr
