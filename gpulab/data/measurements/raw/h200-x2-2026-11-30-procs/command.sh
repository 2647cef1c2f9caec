#!/bin/bash
# Host time per call with one process driving both GPUs (like nccl-tests -g 2) against one
# process per GPU (like nccl-tests built with MPI, -np 2 -g 1), on 2x H200: six interleaved
# short sweeps (8 B - 8 MiB, nccl-tests' default -w 5 -n 20) of each, with NCCL defaults and
# with NCCL_P2P_DISABLE=1. C++ loop (benchmarks/nccl_sweep.cu -P 0|1), system NCCL, NVLS off.
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-./out}; mkdir -p "$O/p"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > "$O/p/versions.txt"
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/p/nvcc.log" 2>&1 || { cat "$O/p/nvcc.log"; exit 1; }
NCCL_DEBUG=INFO ./nccl_sweep -b 8 -e 8 -w 1 -n 1 -P 1 > /dev/null 2> "$O/p/transport_procs.txt"
NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 8 -w 1 -n 1 -P 1 > /dev/null 2> "$O/p/transport_procs_shm.txt"
for r in 1 2 3 4 5 6; do
  ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -P 0 > "$O/p/g2_r$r.csv" 2>/dev/null
  ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -P 1 > "$O/p/procs_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -P 0 > "$O/p/g2_shm_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -P 1 > "$O/p/procs_shm_r$r.csv" 2>/dev/null
  echo "round $r done $(date +%T)"
done
./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -P 1 > "$O/p/procs_full.csv" 2>/dev/null
cp benchmarks/device_run_procs.sh "$O/p/command.sh"
tar -C "$O" -czf "$O/procs.tgz" p && rm -rf "$O/p"
