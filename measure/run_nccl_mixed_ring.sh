#!/bin/bash
# Lockstep or dataflow: how an LL128 or Simple ring that mixes NVLink and network edges runs.
# With G=2 it needs a machine of two GPUs or more (not run yet: only one-GPU machines were
# available); with R=2 (below) it runs on one GPU and ran there on 2026-12-04.
# Hosts of G ranks share the machine's first G GPUs, each host with its own NCCL_HOSTID
# (measure/nccl_sweep.py --gpus-per-host G), so inside a host NCCL joins its ranks over
# NVLink and between hosts through its network transport (sockets over loopback without an
# RDMA device); two hosts' ranks on one GPU share it under MPS. A small all_gather of 4 ranks
# (2 hosts x 2 GPUs) or 8 (4 x 2) then crosses the network 2 or 4 times per piece if the ring
# runs as a dataflow (execution.ring_dataflow_time), but pays a network step at each of its
# 3 or 7 steps in lockstep (execution.ring_time): the two forms differ by about a third at 4
# ranks and by more at 8. The all-NVLink (one host) and all-network (one rank per host) rings
# of the same sizes give each edge's own step time, so the mixed ring is a held-out check.
# Usage: OUT=out G=2 bash measure/run_nccl_mixed_ring.sh; packs $OUT/nccl_mixed_ring.tgz
# (REPS="1" runs the first repetition only, REPS="2" the second).
#
# On a machine of one GPU (R=2): hosts of R ranks all on GPU 0 (nccl_sweep.py
# --ranks-per-host R). Inside a host the ranks share the GPU and NCCL joins them with its
# P2P transport on that one device, which needs NCCL 2.30 or later and
# NCCL_MULTI_RANK_GPU_ENABLE=1 (init.cc 1055-1059 at v2.30.7-1; env.rst: up to 2 ranks
# per GPU); between hosts it is the network transport as above. The intra-host edge is
# then not NVLink, but the question is the same: does a step wait for the slowest edge of
# the ring (lockstep) or only for its own piece (dataflow)? The all-intra ring is named
# intra_*, and all-network rings of 4 and 8 ranks are swept as well, so that a network
# step's cost comes from their slope. With NCCL_SRC=<NCCL source tarball> NCCL is built
# first (measure/build_nccl.sh, into $NCCL_PREFIX, default /tmp/nccl) and preloaded.
#   OUT=out R=2 NCCL_SRC=_nccl/nccl-v2.30.7-1.tar.gz bash measure/run_nccl_mixed_ring.sh
set -u
R=${R:-}
G=${R:-${G:-2}}
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
  echo "G=$G R=$R"
} > "$O/env.txt" 2>&1
cp "$0" "$O/command.sh"
WHERE="--gpus-per-host $G"; INTRA=nvlink
if [ -n "$R" ]; then
  WHERE="--ranks-per-host $R"; INTRA=intra
  export NCCL_MULTI_RANK_GPU_ENABLE=1
  if [ -n "${NCCL_SRC:-}" ]; then
    NCCL_PREFIX=${NCCL_PREFIX:-/tmp/nccl}
    if [ -e "$NCCL_PREFIX/lib/libnccl.so.2" ] || \
       PREFIX=$NCCL_PREFIX bash measure/build_nccl.sh >> "$O/env.txt" 2>&1; then
      export LD_PRELOAD="$NCCL_PREFIX/lib/libnccl.so.2${LD_PRELOAD:+:$LD_PRELOAD}"
    else
      tail -n 30 "$NCCL_PREFIX/build.log" > "$O/build_tail.txt" 2>&1
      echo "NCCL build failed" >> "$O/env.txt"; exit 1
    fi
  fi
  python3 -c "import sys; sys.path.insert(0, 'measure'); import torch, nccl_sweep; \
print('NCCL in use', nccl_sweep.nccl_runtime_version())" >> "$O/env.txt" 2>&1
fi
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
sweep log_mixed_4 $((2 * G)) "$WHERE" NCCL_ALGO=Ring NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET,P2P -- -b 8 -e 8 -w 1 -n 1 --ops all_gather
for r in ${REPS:-1 2}; do
  for p in LL LL128 Simple; do
    sweep ${INTRA}_${p}_r$r $G "$WHERE" NCCL_ALGO=Ring NCCL_PROTO=$p -- "${SIZES[@]}"
    sweep net_${p}_r$r 2 "--hosts-on-one-gpu" NCCL_ALGO=Ring NCCL_PROTO=$p -- "${SIZES[@]}"
    for h in 2 4; do
      sweep mixed_${p}_$((h * G))_r$r $((h * G)) "$WHERE" NCCL_ALGO=Ring \
        NCCL_PROTO=$p -- "${SIZES[@]}"
      if [ -n "$R" ]; then
        sweep net_${p}_$((h * G))_r$r $((h * G)) "--hosts-on-one-gpu" NCCL_ALGO=Ring \
          NCCL_PROTO=$p -- "${SIZES[@]}"
      fi
    done
  done
done
echo quit | nvidia-cuda-mps-control 2>/dev/null
