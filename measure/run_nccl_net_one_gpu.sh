#!/bin/bash
# NCCL's network transport measured on one GPU: N processes share GPU 0 under MPS,
# each with its own NCCL_HOSTID, so NCCL takes them for N nodes of one GPU and joins
# them through its network transport (its socket transport over loopback when the
# machine shows no RDMA device). Every hop of the ring is then a network hop, paced by
# NCCL's proxy thread, its steps and its buffers, which is what the network model's
# per-step cost describes. The fabric itself (a loopback) is not a real network's.
# Usage: OUT=out bash measure/run_nccl_net_one_gpu.sh [PROBE|GRAPH]
# (no argument: NCCL's choices with its log, then each protocol's ring, one Python call per
# iteration; GRAPH: the rings with the timed calls in one CUDA graph, no Python launch
# between calls, twice, so that run-to-run spread shows; PROBE: one short logged sweep)
# Everything is packed at the end into $OUT/nccl_net_one_gpu.tgz.
set -u
OUT_DIR=${OUT:-./out}
O="$OUT_DIR/raw"; mkdir -p "$O"
pack() { tar -czf "$OUT_DIR/nccl_net_one_gpu.tgz" -C "$O" . && rm -rf "$O"; }
trap pack EXIT
export NCCL_NVLS_ENABLE=0
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"
  ls /sys/class/infiniband 2>&1; ls /dev/infiniband 2>&1
  nproc; ip -brief addr 2>&1 | head
  which nvidia-cuda-mps-control
} > "$O/env.txt" 2>&1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d >> "$O/env.txt" 2>&1 && echo "MPS started" >> "$O/env.txt"
sweep() {  # name ranks extra-env... -- sweep args
  local name=$1 n=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  if [ $SECONDS -gt ${DEADLINE:-520} ]; then echo "$name skipped (deadline)" >> "$O/env.txt"; return; fi
  env "${envs[@]}" timeout ${SWEEP_TIMEOUT:-150} torchrun --standalone --nproc_per_node "$n" \
    measure/nccl_sweep.py --hosts-on-one-gpu --csv "$O/$name.csv" --label "$name" "$@" \
    > "$O/$name.txt" 2> "$O/$name.err"
  echo "$name rc=$?" >> "$O/env.txt"
}
if [ "${1:-}" = GRAPH ]; then
  for r in 1 2; do
    for n in 2 4 8; do
      for p in LL LL128 Simple; do
        sweep graph_${p}_${n}_r$r $n NCCL_ALGO=Ring NCCL_PROTO=$p -- -b 8 -e 32M -f 4 \
          -w 3 -n 20 --graph --ops all_gather,all_reduce
      done
    done
  done
elif [ "${1:-}" = PROBE ]; then
  sweep probe2 2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,TUNING -- \
    -b 8 -e 64M -f 8 -w 3 -n 10 --ops all_reduce,all_gather
else
  # NCCL's own choices, with its log of channels and tuner table; then the ring forced
  # with each protocol; then Simple with a smaller and a larger buffer (step) size.
  for n in 2 4 8; do
    sweep default_$n $n NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH -- \
      -b 8 -e 32M -f 4 -w 3 -n 10 --ops all_gather,all_reduce,sendrecv
    sweep tuning_$n $n NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- \
      -b 8 -e 32M -f 4 -w 0 -n 1 --ops all_gather,all_reduce
    for p in LL LL128 Simple; do
      sweep ring_${p}_$n $n NCCL_ALGO=Ring NCCL_PROTO=$p -- -b 8 -e 32M -f 4 -w 3 -n 10 \
        --ops all_gather,all_reduce
    done
  done
  for b in 1048576 16777216; do
    sweep ring_Simple_4_buff$b 4 NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_BUFFSIZE=$b -- \
      -b 8 -e 32M -f 4 -w 3 -n 10 --ops all_gather
  done
fi
echo quit | nvidia-cuda-mps-control 2>/dev/null
