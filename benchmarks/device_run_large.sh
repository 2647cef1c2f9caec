#!/bin/bash
# Large messages on 2 GPUs (1-8 GiB), to compare with public nccl-tests figures that are
# quoted at 2-16 GiB: gpulab.bench and the C++ NCCL sweep, NCCL defaults, multicast off.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
O=${OUT:-./out}; mkdir -p "$O"
NG=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; } > "$O/versions.txt"
torchrun --nproc_per_node "$NG" -m gpulab.bench -b 1G -e 8G -f 2 -w 3 -n 10 \
  -o all_reduce,all_gather,reduce_scatter,alltoall,sendrecv --label "large defaults" \
  --output "$O/bench_large.json" > "$O/bench_large.txt" 2> "$O/bench_large.err"
echo "bench rc=$?"
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/nvcc.log" 2>&1 && \
  ./nccl_sweep -b 1073741824 -e 8589934592 -f 2 -w 3 -n 10 -g "$NG" > "$O/c_large.csv" 2> "$O/c_large.txt"
echo "c rc=$?"
cp benchmarks/device_run_large.sh "$O/command.sh"
