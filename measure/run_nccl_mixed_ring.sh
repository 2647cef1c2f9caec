#!/bin/bash
# Lockstep or dataflow: how an LL128 or Simple ring that mixes NVLink and network edges runs.
# Needs a machine of two GPUs or more (not run yet: only one-GPU machines were available).
# Hosts of G ranks share the machine's first G GPUs, each host with its own NCCL_HOSTID
# (measure/nccl_sweep.py --gpus-per-host G), so inside a host NCCL joins its ranks over
# NVLink and between hosts through its network transport (sockets over loopback without an
# RDMA device); two hosts' ranks on one GPU share it under MPS. A small all_gather of 4 ranks
# (2 hosts x 2 GPUs) or 8 (4 x 2) then crosses the network 2 or 4 times per piece if the ring
# runs as a dataflow (execution.ring_dataflow_time), but pays a network step at each of its
# 3 or 7 steps in lockstep (execution.ring_time): the two forms differ by about a third at 4
# ranks and by more at 8. The all-NVLink (one host) and all-network (one rank per host) rings
# of the same sizes give each edge's own step time, so the mixed ring is a held-out check.
# Usage: OUT=out G=2 bash measure/run_nccl_mixed_ring.sh; packs $OUT/nccl_mixed_ring.tgz.
set -u
G=${G:-2}
OUT_DIR=${OUT:-./out}
O="$OUT_DIR/raw"; mkdir -p "$O"
pack() { tar -czf "$OUT_DIR/nccl_mixed_ring.tgz" -C "$O" . && rm -rf "$O"; }
trap pack EXIT
export NCCL_NVLS_ENABLE=0
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"
  ls /sys/class/infiniband 2>&1; nproc; lscpu | grep -i 'model name'
  echo "G=$G"
} > "$O/env.txt" 2>&1
cp "$0" "$O/command.sh"
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d >> "$O/env.txt" 2>&1 && echo "MPS started" >> "$O/env.txt"
sweep() {  # name ranks placement-flag extra-env... -- sweep args
  local name=$1 n=$2 where=$3; shift 3
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  if [ $SECONDS -gt ${DEADLINE:-540} ]; then echo "$name skipped (deadline)" >> "$O/env.txt"; return; fi
  env "${envs[@]}" timeout ${SWEEP_TIMEOUT:-150} torchrun --standalone --nproc_per_node "$n" \
    measure/nccl_sweep.py $where --csv "$O/$name.csv" --label "$name" "$@" \
    > "$O/$name.txt" 2> "$O/$name.err"
  echo "$name rc=$?" >> "$O/env.txt"
}
SIZES=(-b 8 -e 4M -f 4 -w 3 -n 20 --graph --ops all_gather,all_reduce)
# the ring's order and each edge's transport, once per layout
sweep log_mixed_4 $((2 * G)) "--gpus-per-host $G" NCCL_ALGO=Ring NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET -- -b 8 -e 8 -w 1 -n 1 --ops all_gather
for r in 1 2; do
  for p in LL LL128 Simple; do
    sweep nvlink_${p}_r$r $G "--gpus-per-host $G" NCCL_ALGO=Ring NCCL_PROTO=$p -- "${SIZES[@]}"
    sweep net_${p}_r$r 2 "--hosts-on-one-gpu" NCCL_ALGO=Ring NCCL_PROTO=$p -- "${SIZES[@]}"
    for h in 2 4; do
      sweep mixed_${p}_$((h * G))_r$r $((h * G)) "--gpus-per-host $G" NCCL_ALGO=Ring \
        NCCL_PROTO=$p -- "${SIZES[@]}"
    done
  done
done
echo quit | nvidia-cuda-mps-control 2>/dev/null
