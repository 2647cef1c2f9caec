#!/usr/bin/env bash
# Measurements on 1x H200 SXM: layer-shard timings and copy latency.
#
#   bash measure/run_layers_and_copies_h200.sh copies_holdout   # copies run 1, GEMM check,
#        held-out layer grid, the fit grid's seq 4096/8192 points at TP 2 and 4
#        (layer_fit_seq_tp24.csv), copies run 2
#   bash measure/run_layers_and_copies_h200.sh fit [DEADLINE_S] # the rest of the fit grid
#
# Outputs go to $OUT (default ./out). NVLink multicast stays off.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
mode=${1:-copies_holdout}
here=$(cd "$(dirname "$0")" && pwd)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
DATE=$(date -u +%F)

versions() {
  echo "## date -u"; date -u
  echo "## nvidia-smi -L"; nvidia-smi -L
  echo "## nvidia-smi"; nvidia-smi
  echo "## nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE"
  nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
  echo "## python3 / torch"
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())'
  echo "## nvcc --version"; nvcc --version
  echo "## uname -r, CPU"; uname -r; nproc; grep -m1 'model name' /proc/cpuinfo
}

DMONF=$(mktemp)
dmon_start() {  # clocks, power, temperature, throttle counters every 5 s
  nvidia-smi dmon -s pcv -d 5 -o T > "$DMONF" 2>&1 &
  DMON=$!
}
dmon_stop() {   # appended to versions.txt
  kill "$DMON" 2>/dev/null; wait "$DMON" 2>/dev/null
  { echo "## nvidia-smi dmon -s pcv -d 5 -o T during the run"; cat "$DMONF"
    echo "## nvidia-smi -q -d CLOCK,PERFORMANCE after the run"
    nvidia-smi -q -d CLOCK,PERFORMANCE; } >> "$OUT/versions.txt" 2>&1
}

case "$mode" in
copies_holdout)
  versions > "$OUT/versions.txt" 2>&1
  dmon_start
  BIN=$(mktemp -d)/copy_latency
  { echo "## nvcc -O2 -arch=sm_90"; nvcc -O2 -arch=sm_90 -o "$BIN" "$here/copy_latency.cu"; echo "nvcc rc=$?"; } > "$OUT/copies.err" 2>&1
  echo "## run 1" >> "$OUT/copies.err"
  timeout 120 "$BIN" --driver "$DRV" --date "$DATE" > "$OUT/copies_run1.csv" 2>> "$OUT/copies.err"
  echo "copies run1 rc=$?"
  python3 "$here/layer_shard.py" --grid holdout --output "$OUT/layer_holdout.csv" \
    --gemm-peak "$OUT/gemm_peak.csv" --deadline 200 --date "$DATE" 2> "$OUT/layer.err"
  echo "holdout rc=$?"
  python3 "$here/layer_shard.py" --grid fit_seq --seq-tp 2,4 --output "$OUT/layer_fit_seq_tp24.csv" \
    --deadline 110 --date "$DATE" 2>> "$OUT/layer.err"
  echo "fit_seq rc=$?"
  echo "## run 2" >> "$OUT/copies.err"
  timeout 120 "$BIN" --driver "$DRV" --date "$DATE" > "$OUT/copies_run2.csv" 2>> "$OUT/copies.err"
  echo "copies run2 rc=$?"
  dmon_stop
  ;;
fit)
  versions > "$OUT/versions.txt" 2>&1
  dmon_start
  python3 "$here/layer_shard.py" --grid fit --seq-tp 1,8 --output "$OUT/layer_fit.csv" \
    --deadline "${2:-540}" --date "$DATE" 2> "$OUT/layer.err"
  echo "fit rc=$?"
  dmon_stop
  ;;
*) echo "unknown mode $mode"; exit 1 ;;
esac
tail -n 3 "$OUT"/*.err   # (was "tail -3" in the 2026-12-01 runs: it only failed this summary, rc 1)
