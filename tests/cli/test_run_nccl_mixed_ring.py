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


def test_one_gpu_mode_builds_nccl_and_puts_hosts_of_r_ranks_on_gpu_0(tmp_path):
    import tarfile

    from tests.cli.packed_script import TORCHRUN, run_packed, standin_env

    src = tmp_path / "nccl.tar.gz"
    (tmp_path / "srcdir").mkdir()
    (tmp_path / "srcdir" / "Makefile").write_text("")
    with tarfile.open(src, "w:gz") as tar:
        tar.add(tmp_path / "srcdir" / "Makefile", arcname="Makefile")
    prefix = tmp_path / "nccl"
    # make's stand-in records its arguments and leaves a library where NCCL's would be
    make = ("#!/bin/bash\nb=''; for a in \"$@\"; do case $a in BUILDDIR=*) b=${a#BUILDDIR=};; "
            "esac; done\nmkdir -p \"$b/lib\"; echo \"$@\" > \"$b/make_args\"; "
            "touch \"$b/lib/libnccl.so.2\"\n")
    env, out = standin_env(
        tmp_path, {"torchrun": TORCHRUN, "nvidia-smi": "#!/bin/bash\necho H200\n",
                   "nvidia-cuda-mps-control": "#!/bin/bash\ncat >/dev/null\n",
                   "make": make, "nvcc": "#!/bin/bash\n"},
        ("NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_DEBUG", "G", "REPS"),
        CUDA_MPS_PIPE_DIRECTORY=str(tmp_path / "mps"),
        CUDA_MPS_LOG_DIRECTORY=str(tmp_path / "mpslog"),
        R="2", NCCL_SRC=str(src), NCCL_PREFIX=str(prefix))
    raw = tmp_path / "raw"
    run_packed(SCRIPT, (), env, out, "nccl_mixed_ring.tgz", raw)
    args = (prefix / "make_args").read_text()
    assert "src.build" in args and "arch=compute_90,code=sm_90" in args
    assert "ONLY_FUNCS=AllGather * *|" in args
    got = {p.stem: p.read_text() for p in raw.glob("*.csv")}
    want = {"log_mixed_4"}
    for r in (1, 2):
        for p in ("LL", "LL128", "Simple"):
            want |= {f"intra_{p}_r{r}", f"net_{p}_r{r}", f"mixed_{p}_4_r{r}",
                     f"mixed_{p}_8_r{r}", f"net_{p}_4_r{r}", f"net_{p}_8_r{r}"}
    assert set(got) == want
    assert "--nproc_per_node 2 measure/nccl_sweep.py --ranks-per-host 2" \
        in got["intra_LL_r1"]
    assert "--nproc_per_node 8 measure/nccl_sweep.py --ranks-per-host 2" \
        in got["mixed_Simple_8_r2"]
    assert "--nproc_per_node 8 measure/nccl_sweep.py --hosts-on-one-gpu" \
        in got["net_LL128_8_r1"]
    envtxt = (raw / "env.txt").read_text()
    assert "G=2 R=2" in envtxt and "NCCL built in" in envtxt


def test_ranks_per_host_is_checked(monkeypatch):
    spec = importlib.util.spec_from_file_location("nccl_sweep",
                                                  ROOT / "measure" / "nccl_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", os.environ.get("NCCL_NVLS_ENABLE", "1"))
    spec.loader.exec_module(mod)
    import pytest
    for bad in (["--ranks-per-host", "0"], ["--ranks-per-host", "2", "--hosts-on-one-gpu"],
                ["--ranks-per-host", "2", "--gpus-per-host", "2"]):
        with pytest.raises(SystemExit) as err:
            mod.main(bad)
        assert err.value.code == 2
