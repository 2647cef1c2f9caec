#!/bin/bash
# The host's time per call on 2x H200, sampled many times: short sweeps (8 B - 8 MiB, the
# latency-bound sizes) with nccl-tests' default iteration counts (-w 5 -n 20), with defaults,
# with NCCL_P2P_DISABLE=1, and with the process pinned to one CPU core; then three full sweeps
# per transport (8 B - 1 GiB, -n 20). C++ loop (benchmarks/nccl_sweep.cu), system NCCL,
# multicast off. Used to fit the collective model's launch_s on every run we have and to report
# the run-to-run spread.
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-./out}; mkdir -p "$O/f"
NG=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > "$O/f/versions.txt"
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/f/nvcc.log" 2>&1 || exit 1
for r in 1 2 3 4 5 6 7 8; do
  ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -g "$NG" > "$O/f/s_default_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -g "$NG" > "$O/f/s_shm_r$r.csv" 2>/dev/null
  taskset -c 2 ./nccl_sweep -b 8 -e 8388608 -f 2 -w 5 -n 20 -g "$NG" > "$O/f/s_pinned_r$r.csv" 2>/dev/null
  echo "short $r done $(date +%T)"
done
for r in 1 2 3; do
  ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -g "$NG" > "$O/f/full_default_r$r.csv" 2>/dev/null
  NCCL_P2P_DISABLE=1 ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -g "$NG" > "$O/f/full_shm_r$r.csv" 2>/dev/null
  echo "full $r done $(date +%T)"
done
cp benchmarks/device_run_floors.sh "$O/f/command.sh"
tar -C "$O" -czf "$O/floors.tgz" f && rm -rf "$O/f"
