#!/usr/bin/env bash
# Power and SM clock of tensor-core work on k of the H200's SMs (measure/power_clock.py),
# BF16 and FP8, with cuBLAS 8192^3 products and the idle board as references; nvidia-smi's
# own 100 ms samples beside it as a second reader. Rows to $OUT/power_clock.csv.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.draw.instant,power.limit,temperature.gpu,clocks_throttle_reasons.sw_power_cap \
  --format=csv -lms 100 > "$OUT/smi.csv" 2>/dev/null &
smi=$!
python3 "$here/power_clock.py" --output "$OUT/power_clock.csv" --deadline 360 \
  2> "$OUT/power_clock.err"
kill $smi 2>/dev/null
cat "$OUT/power_clock.err"
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,power.max_limit,clocks.max.sm --format=csv
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
