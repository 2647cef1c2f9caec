"""``measure/run_nccl_net_one_gpu.sh`` runs end to end here with stand-ins for torchrun,
nvidia-smi and the MPS daemon (no GPU): every sweep is written and packed, each with the
NCCL variables and sweep arguments of its run, every rank told to share GPU 0."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.packed_script import run_torchrun_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "measure" / "run_nccl_net_one_gpu.sh"

def _run(tmp_path, *mode):
    return run_torchrun_script(tmp_path, SCRIPT, mode, "nccl_net_one_gpu.tgz")


def _lines(raw):
    return {p.stem: p.read_text() for p in raw.glob("*.csv")}


def test_graph_mode_times_every_ring_twice_in_graphs(tmp_path):
    got = _lines(_run(tmp_path, "GRAPH"))
    want = {f"graph_{p}_{n}_r{r}" for p in ("LL", "LL128", "Simple") for n in (2, 4, 8)
            for r in (1, 2)}
    assert set(got) == want
    line = got["graph_LL128_4_r2"]
    assert "NCCL_ALGO=Ring NCCL_PROTO=LL128 NCCL_NVLS_ENABLE=0" in line
    assert "--nproc_per_node 4 measure/nccl_sweep.py --hosts-on-one-gpu" in line
    assert "--graph --ops all_gather,all_reduce" in line


def test_default_mode_runs_choices_rings_and_buffers(tmp_path):
    raw = _run(tmp_path)
    got = _lines(raw)
    want = {f"{k}_{n}" for k in ("default", "tuning") for n in (2, 4, 8)}
    want |= {f"ring_{p}_{n}" for p in ("LL", "LL128", "Simple") for n in (2, 4, 8)}
    want |= {f"ring_Simple_4_buff{b}" for b in (1048576, 16777216)}
    assert set(got) == want
    assert "NCCL_DEBUG=INFO" in got["default_8"] and "sendrecv" in got["default_8"]
    assert "NCCL_ALGO= NCCL_PROTO= " in got["default_2"]
    assert "NCCL_BUFFSIZE=1048576" in got["ring_Simple_4_buff1048576"]
    assert all("--graph" not in v for v in got.values())
    env = (raw / "env.txt").read_text()
    assert "MPS started" in env and env.count("rc=0") == len(want)


@pytest.mark.parametrize("mode", ["PROBE"])
def test_probe_mode_is_one_logged_sweep(tmp_path, mode):
    got = _lines(_run(tmp_path, mode))
    assert set(got) == {"probe2"} and "NCCL_DEBUG=INFO" in got["probe2"]
