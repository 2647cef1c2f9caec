"""``measure/run_nccl_mixed_ring.sh`` runs end to end here with stand-ins for torchrun,
nvidia-smi and the MPS daemon (no GPU): each ring (all NVLink, all network, mixed on 4
and 8 ranks) with each protocol forced, twice, every sweep with the placement of its
ranks; and ``nccl_sweep.placement`` puts hosts of G ranks on the first G GPUs."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from tests.cli.packed_script import run_torchrun_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "measure" / "run_nccl_mixed_ring.sh"


def _run(tmp_path):
    return run_torchrun_script(tmp_path, SCRIPT, (), "nccl_mixed_ring.tgz", unset=("G",))


def test_every_ring_and_protocol_twice_with_its_placement(tmp_path):
    raw = _run(tmp_path)
    got = {p.stem: p.read_text() for p in raw.glob("*.csv")}
    want = {"log_mixed_4"}
    for r in (1, 2):
        for p in ("LL", "LL128", "Simple"):
            want |= {f"nvlink_{p}_r{r}", f"net_{p}_r{r}", f"mixed_{p}_4_r{r}",
                     f"mixed_{p}_8_r{r}"}
    assert set(got) == want
    assert "NCCL_ALGO=Ring NCCL_PROTO=LL128 NCCL_NVLS_ENABLE=0" in got["mixed_LL128_8_r2"]
    assert "--nproc_per_node 8 measure/nccl_sweep.py --gpus-per-host 2" \
        in got["mixed_LL128_8_r2"]
    assert "--nproc_per_node 2 measure/nccl_sweep.py --gpus-per-host 2" \
        in got["nvlink_Simple_r1"]
    assert "--nproc_per_node 2 measure/nccl_sweep.py --hosts-on-one-gpu" in got["net_LL_r1"]
    assert "--graph --ops all_gather,all_reduce" in got["mixed_Simple_4_r1"]
    assert "NCCL_DEBUG=INFO" in got["log_mixed_4"]
    env = (raw / "env.txt").read_text()
    assert "MPS started" in env and env.count("rc=0") == len(want)
    assert (raw / "command.sh").read_text() == SCRIPT.read_text()


def test_placement_puts_hosts_on_the_first_gpus(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", os.environ.get("NCCL_NVLS_ENABLE", "1"))
    spec = importlib.util.spec_from_file_location("nccl_sweep",
                                                  ROOT / "measure" / "nccl_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)            # sets NCCL_NVLS_ENABLE; monkeypatch restores
    assert [mod.placement(r, 2) for r in range(8)] == \
        [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]
    assert [mod.placement(r, 1) for r in range(3)] == [(0, 0), (1, 0), (2, 0)]
