#!/bin/bash
# NCCL's protocol choice on 2x H200, for the collective model: NCCL's own tuning table with
# NCCL_P2P_DISABLE=1 (SHM), forced-protocol sweeps over SHM, and the algorithm/protocol NCCL
# logs for every call size (P2P and SHM). C++ loop, system NCCL, multicast off.
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-./out}; mkdir -p "$O"
NG=$(nvidia-smi -L | wc -l)
nvcc -O2 -o ./nccl_sweep benchmarks/nccl_sweep.cu -lnccl > "$O/nvcc.log" 2>&1 || exit 1
NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING ./nccl_sweep -b 8 -e 8 -w 1 -n 1 -g "$NG" \
  > /dev/null 2> "$O/shm_tuning.txt"
for p in LL LL128 Simple; do
  NCCL_P2P_DISABLE=1 NCCL_PROTO=$p ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 5 -n 20 -g "$NG" \
    > "$O/shm_proto_$p.csv" 2> "$O/shm_proto_$p.txt"
  echo "shm $p rc=$?"
done
for t in p2p shm; do
  extra=""; [ $t = shm ] && extra="NCCL_P2P_DISABLE=1"
  env $extra NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,COLL ./nccl_sweep -b 8 -e 1073741824 -f 2 -w 0 -n 1 -g "$NG" \
    > "$O/choice_$t.csv" 2> "$O/choice_$t.log"
  echo "choice $t rc=$?"
done
ls -la "$O"
