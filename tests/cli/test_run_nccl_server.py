"""``measure/run_nccl_server.sh`` runs end to end here with stand-ins for nvcc (which
"builds" a harness that records its arguments and NCCL variables), nvidia-smi (four
GPUs), python3 and lscpu, in a copy of ``measure/``: every sweep it promises is written
and packed, the CUDA-graph sweeps with ``-G 1`` and one process per GPU."""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.packed_script import run_packed, standin_env

ROOT = Path(__file__).resolve().parents[2]

NVCC = """#!/bin/bash
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
cat > "$out" <<'SWEEP'
#!/bin/bash
echo "env CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-} NCCL_ALGO=${NCCL_ALGO:-} \\
NCCL_PROTO=${NCCL_PROTO:-} NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-} args $*"
echo "collective,n_ranks,size_bytes,time_us,algbw_GBps,busbw_GBps,wrong,nccl_version"
echo "all_reduce,1,8,1.0,0,0,0,22809"
SWEEP
chmod +x "$out"
"""
SMI = """#!/bin/bash
if [ "${1:-}" = "-L" ]; then for i in 0 1 2 3; do echo "GPU $i: NVIDIA H200"; done
else echo "H200"; fi
"""


def test_every_sweep_including_the_graph_ones(tmp_path):
    work = tmp_path / "work"
    (work / "measure").mkdir(parents=True)
    for f in ("run_nccl_server.sh", "nccl_sweep.cu"):
        shutil.copy(ROOT / "measure" / f, work / "measure" / f)
    env, out = standin_env(
        tmp_path, {"nvcc": NVCC, "nvidia-smi": SMI, "python3": "#!/bin/bash\nexit 1\n",
                   "lscpu": "#!/bin/bash\necho 'Model name: test CPU'\n"},
        ("NCCL_ALGO", "NCCL_PROTO", "NVLS", "CUDA_VISIBLE_DEVICES"))
    raw = tmp_path / "raw"
    run_packed(work / "measure" / "run_nccl_server.sh", (), env, out, "nccl_server.tgz",
               raw, cwd=work)
    got = {p.stem: p.read_text() for p in raw.glob("*.csv")}
    want = {f"g{g}_{k}" for g in (2, 4) for k in ("pergpu", "oneforall", "pergpu_graph",
                                                  "Ring_LL_graph")}
    want |= {f"g4_{a}_{p}" for a in ("Ring", "Tree") for p in ("LL", "LL128", "Simple")}
    assert set(got) == want
    graph = got["g2_pergpu_graph"]
    assert "CUDA_VISIBLE_DEVICES=0,1 " in graph and "-g 2 -P 1 -e 67108864 -G 1" in graph
    assert "NCCL_NVLS_ENABLE=0" in graph
    ring = got["g4_Ring_LL_graph"]
    assert "NCCL_ALGO=Ring NCCL_PROTO=LL " in ring and "-G 1" in ring
    assert "-G" not in got["g4_pergpu"] and "-P 0" in got["g4_oneforall"]
    assert (raw / "nccl_version.txt").read_text().strip() == "22809"
    assert {p.name for p in raw.glob("debug_*.txt")} == {
        "debug_8.txt", "debug_1048576.txt", "debug_1073741824.txt"}
