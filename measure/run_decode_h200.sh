#!/usr/bin/env bash
# Decode layer shards under CUDA graphs on 1x H200 SXM (measure/decode_shard.py).
#   bash measure/run_decode_h200.sh [SECONDS] [GRID] [--eager]
# Rows go to $OUT/decode.csv, progress to $OUT/decode.err, versions and clocks to
# $OUT/versions_decode.txt, an nvidia-smi dmon log to $OUT/dmon_decode.txt.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
{ echo "## date -u"; date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nproc; } > "$OUT/versions_decode.txt" 2>&1
nvidia-smi dmon -s pc -d 5 -o T > "$OUT/dmon_decode.txt" 2>&1 &
DMON=$!
python3 "$here/decode_shard.py" --grid "${2:-fit,holdout}" --output "$OUT/decode.csv" \
  --deadline "${1:-330}" ${3:-} 2>> "$OUT/decode.err"
kill $DMON 2>/dev/null; wait $DMON 2>/dev/null
grep -c . "$OUT/decode.csv"; grep -c FAILED "$OUT/decode.err"; grep -m3 FAILED "$OUT/decode.err"
tail -2 "$OUT/decode.err"
