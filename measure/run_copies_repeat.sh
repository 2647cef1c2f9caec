#!/usr/bin/env bash
# Repeated copy sweeps on one GPU (no other work between them): run-to-run spread of
# measure/copy_latency.cu, so that the copy model can be fitted on some sweeps and checked
# on the others.
#
#   bash measure/run_copies_repeat.sh [SWEEPS] [PAUSE_S]   # default 6 sweeps, 20 s apart
#
# Outputs in $OUT (default ./out): copies_rK.csv (one per sweep), copies.err (build log and
# each sweep's progress), versions.txt (driver, clocks before/after, nvidia-smi dmon log).
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
n=${1:-6}; pause=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
DATE=$(date -u +%F)
{
  echo "## date -u"; date -u
  echo "## nvidia-smi -L"; nvidia-smi -L
  echo "## nvidia-smi"; nvidia-smi
  echo "## nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE"
  nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
  echo "## nvidia-smi -q (PCIe link)"; nvidia-smi -q | grep -A12 "GPU Link Info"
  echo "## nvcc --version"; nvcc --version
  echo "## uname -r, CPU"; uname -r; nproc; grep -m1 'model name' /proc/cpuinfo
} > "$OUT/versions.txt" 2>&1
DMONF=$(mktemp)
nvidia-smi dmon -s pcv -d 5 -o T > "$DMONF" 2>&1 &
DMON=$!
BIN=$(mktemp -d)/copy_latency
{ echo "## nvcc -O2 -arch=sm_90"; nvcc -O2 -arch=sm_90 -o "$BIN" "$here/copy_latency.cu"; echo "nvcc rc=$?"; } > "$OUT/copies.err" 2>&1
for k in $(seq 1 "$n"); do
  echo "## sweep $k $(date -u +%T)" >> "$OUT/copies.err"
  timeout 150 "$BIN" --driver "$DRV" --date "$DATE" > "$OUT/copies_r$k.csv" 2>> "$OUT/copies.err"
  echo "sweep $k rc=$?"
  [ "$k" -lt "$n" ] && sleep "$pause"
done
kill "$DMON" 2>/dev/null; wait "$DMON" 2>/dev/null
{ echo "## nvidia-smi dmon -s pcv -d 5 -o T during the sweeps"; cat "$DMONF"
  echo "## nvidia-smi -q -d CLOCK,PERFORMANCE after the sweeps"
  nvidia-smi -q -d CLOCK,PERFORMANCE; } >> "$OUT/versions.txt" 2>&1
tail -n 2 "$OUT/copies.err"
