#!/bin/bash
# Fresh collective sweeps on 2x H200 for validating the (already fitted) collective model:
# three C++ NCCL sweeps with defaults and three with NCCL_P2P_DISABLE=1, 8 B - 1 GiB.
# None of these runs is used by benchmarks/fit_nccl_model.py. Multicast off.
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-./out}; mkdir -p "$O"
NG=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; } > "$O/versions.txt"
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/nvcc.log" 2>&1 || exit 1
for r in 1 2 3; do
  ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 50 -g "$NG" > "$O/v_default_r$r.csv" 2> "$O/v_default_r$r.txt"
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -g "$NG" > "$O/v_p2p_disable_r$r.csv" 2> "$O/v_p2p_disable_r$r.txt"
  echo "run $r done"
done
