#!/bin/bash
# The measurements a 4- or 8-GPU server would add to the collective model's checks (the
# model is calibrated on 2 GPUs; 4/8-GPU servers are checked only against public runs):
#   - the C++ sweep (measure/nccl_sweep.cu, nccl-tests' definitions) of all_reduce,
#     all_gather and reduce_scatter, 8 B - 8 GiB, with one process for all GPUs (-P 0,
#     nccl-tests -g N) and one process per GPU (-P 1): the small-message floor of each
#     process model on this host, and NCCL's own picks in the middle of the curve;
#   - the same all_reduce sweep with each algorithm and protocol forced (NCCL_ALGO x
#     NCCL_PROTO), so every (algorithm, protocol) the model times can be checked alone;
#   - the same sweep to 64 MiB with the timed calls in CUDA graphs (-G 1, as nccl-tests -G),
#     one process per GPU, at each GPU count, and the LL ring forced: no host launch between
#     calls, so a small call shows the GPUs' own time (a kernel's fixed cost and its steps),
#     which the host's floor hides in every other run (the model's LL latency per step was
#     calibrated on 2 GPUs under that floor; published 4-GPU runs show it too low);
#   - NCCL_DEBUG=INFO of one call per size band (channels NCCL opens, the tuner's table);
#   - topology, NVLink status, versions.
# Run from the repository root on the GPU machine. Everything is written under $OUT/raw
# and packed at the end into one file, $OUT/nccl_server.tgz (the device machine returns
# only a few files per call; unpack with tar -xzf into the raw folder of the run).
# NVLink multicast (NVLS) stays off (NCCL_NVLS_ENABLE=0) unless NVLS=1 is set.
# Usage: OUT=out bash measure/run_nccl_server.sh [MAX_BYTES]     (default 8 GiB)
set -u
OUT_DIR=${OUT:-./out}
O="$OUT_DIR/raw"; mkdir -p "$O"
pack() { tar -czf "$OUT_DIR/nccl_server.tgz" -C "$O" . && rm -rf "$O"; }
trap pack EXIT
export NCCL_NVLS_ENABLE=${NVLS:-0}
MAXB=${1:-8589934592}
NG=$(nvidia-smi -L | wc -l)
if [ "$NG" -lt 2 ]; then echo "needs 2 or more GPUs, found $NG"; exit 2; fi
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv;
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1;
  uname -r; nproc; lscpu | grep -E "Model name|Socket"; } > "$O/versions.txt" 2>&1
nvidia-smi topo -m > "$O/topo-m.txt" 2>&1
nvidia-smi nvlink --status > "$O/nvlink-status.txt" 2>&1
NCCL_INC=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
# PyTorch's NCCL where its wheel carries headers and a linkable library, else the system's
if ! { [ -n "$NCCL_INC" ] && nvcc -O2 -o ./nccl_sweep measure/nccl_sweep.cu -I"$NCCL_INC/include" \
         -L"$NCCL_INC/lib" -l:libnccl.so.2 -Xlinker -rpath="$NCCL_INC/lib" > "$O/nvcc.log" 2>&1; } \
   && ! nvcc -O2 -o ./nccl_sweep measure/nccl_sweep.cu -lnccl >> "$O/nvcc.log" 2>&1; then
  echo "nvcc failed (see nvcc.log)"; exit 1
fi
./nccl_sweep -b 8 -e 8 -w 0 -n 1 -g 1 2>/dev/null | tail -1 | cut -d, -f8 > "$O/nccl_version.txt"
sweep() {  # label, then nccl_sweep arguments
  local label=$1; shift
  ./nccl_sweep -b 8 -e "$MAXB" -f 2 -w 5 -n 20 "$@" > "$O/$label.csv" 2> "$O/$label.txt"
  echo "$label rc=$?"
}
for g in $(seq 2 "$NG"); do                       # every GPU count: 2 .. NG
  [ "$g" -eq 2 ] || [ "$g" -eq 4 ] || [ "$g" -eq "$NG" ] || continue
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((g - 1))) sweep "g${g}_pergpu" -g "$g" -P 1
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((g - 1))) sweep "g${g}_oneforall" -g "$g" -P 0
done
for g in $(seq 2 "$NG"); do                       # the GPUs' own time: CUDA graphs
  [ "$g" -eq 2 ] || [ "$g" -eq 4 ] || [ "$g" -eq "$NG" ] || continue
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((g - 1))) sweep "g${g}_pergpu_graph" -g "$g" -P 1 \
    -e 67108864 -G 1
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((g - 1))) NCCL_ALGO=Ring NCCL_PROTO=LL \
    sweep "g${g}_Ring_LL_graph" -g "$g" -P 1 -e 67108864 -G 1
done
for algo in Ring Tree NVLS; do                    # all GPUs, one process per GPU
  for proto in LL LL128 Simple; do
    [ "$algo" = NVLS ] && [ "$proto" != Simple ] && continue
    [ "$algo" = NVLS ] && [ "${NVLS:-0}" != 1 ] && continue
    NCCL_ALGO=$algo NCCL_PROTO=$proto sweep "g${NG}_${algo}_${proto}" -g "$NG" -P 1
  done
done
# NCCL's channels and tuner table: one call per band (8 B, 1 MiB, 1 GiB)
for b in 8 1048576 1073741824; do
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,COLL ./nccl_sweep -b "$b" -e "$b" -w 1 -n 1 \
    -g "$NG" -P 0 > /dev/null 2> "$O/debug_${b}.txt"
done
echo "done: $(ls "$O" | wc -l) files, packed into $OUT_DIR/nccl_server.tgz"
