#!/usr/bin/env bash
# Attention kernels alone at 2K-256K tokens (measure/attention_long.py), flash and cuDNN
# backends of PyTorch SDPA, with the GPU's SM clock and power sampled every 200 ms beside
# them. Rows to $OUT/attention_long.csv, samples to $OUT/power.csv.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,clocks_throttle_reasons.sw_power_cap \
  --format=csv -lms 200 > "$OUT/power.csv" 2>/dev/null &
smi=$!
python3 "$here/attention_long.py" --output "$OUT/attention_long.csv" --deadline 420 \
  2> "$OUT/attention_long.err"
kill $smi 2>/dev/null
tail -3 "$OUT/attention_long.err"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print(torch.__version__)"
