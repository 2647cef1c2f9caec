#!/bin/bash
# Independent check of the final collective model (after its last fit): three rounds of full
# sweeps (8 B - 1 GiB, -w 5 -n 20 as nccl-tests) on a freshly started 2x H200 machine, each with
# one process driving both GPUs (-P 0, like nccl-tests -g 2) and one process per GPU (-P 1, like
# nccl-tests under MPI), with NCCL defaults and with NCCL_P2P_DISABLE=1. None of these runs is used
# by benchmarks/fit_nccl_model.py. C++ loop (benchmarks/nccl_sweep.cu), system NCCL, NVLS off.
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-./out}; mkdir -p "$O/v"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > "$O/v/versions.txt"
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/v/nvcc.log" 2>&1 || { cat "$O/v/nvcc.log"; exit 1; }
for r in 1 2 3; do
  ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -P 0 > "$O/v/g2_r$r.csv" 2>/dev/null
  ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -P 1 > "$O/v/procs_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -P 0 > "$O/v/g2_shm_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -P 1 > "$O/v/procs_shm_r$r.csv" 2>/dev/null
  echo "round $r done $(date +%T)"
done
cp benchmarks/device_run_validate2.sh "$O/v/command.sh"
rm -f "$O/v/nvcc.log"
tar -C "$O" -czf "$O/validate2.tgz" v && rm -rf "$O/v"
