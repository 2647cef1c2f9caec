#!/bin/bash
# One measurement session on a 2-GPU H200 machine: topology, NVLink status,
# gpulab.bench sweeps (NCCL defaults and NCCL_P2P_DISABLE=1), copy sweeps, the C++
# NCCL sweep on the same machine for comparison, and the TP=2 layer benchmark.
# Writes everything under $OUT. NCCL_NVLS_ENABLE=0 stays set (multicast off).
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
O=${OUT:-./out}; mkdir -p "$O"
NG=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv;
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())';
  uname -r; } > "$O/versions.txt" 2>&1
nvidia-smi topo -m > "$O/topo-m.txt" 2>&1
nvidia-smi nvlink --status > "$O/nvlink-status.txt" 2>&1
COLLS=all_reduce,all_gather,reduce_scatter,alltoall,sendrecv
for rep in 1 2; do
  torchrun --nproc_per_node "$NG" -m gpulab.bench -b 8 -e 1G -f 2 -w 5 -n 20 \
    -o $COLLS --copy h2d,d2h,p2p --label "defaults rep$rep" \
    --output "$O/bench_default_r$rep.json" > "$O/bench_default_r$rep.txt" 2> "$O/bench_default_r$rep.err"
  echo "default rep$rep rc=$?"
done
NCCL_P2P_DISABLE=1 torchrun --nproc_per_node "$NG" -m gpulab.bench -b 8 -e 1G -f 2 -w 5 -n 20 \
  -o $COLLS --label "NCCL_P2P_DISABLE=1" \
  --output "$O/bench_p2p_disable.json" > "$O/bench_p2p_disable.txt" 2> "$O/bench_p2p_disable.err"
echo "p2p_disable rc=$?"
# C++ NCCL sweep (nccl-tests method, no Python in the loop) on the same machine
if nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/nvcc.log" 2>&1; then
  ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -g "$NG" > "$O/c_default.csv" 2> "$O/c_default.txt"
  echo "c sweep rc=$?"
else echo "nvcc failed"; fi
torchrun --nproc_per_node "$NG" benchmarks/tp_layer.py --output "$O/tp_layer.csv" > "$O/tp_layer.txt" 2>&1
echo "tp_layer rc=$?"
ls -la "$O"
