#!/usr/bin/env bash
# Prefill layer shards on 1x H200 SXM (measure/prefill_shard.py), compiled recipe.
#   bash measure/run_prefill_h200.sh [DEADLINE_SECONDS]
# Rows go to $OUT/prefill.csv, progress to $OUT/prefill.err, versions to $OUT/versions.txt.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{ echo "## date -u"; date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nproc; } > "$OUT/versions.txt" 2>&1
nvidia-smi dmon -s pc -d 5 -o T > "$OUT/dmon.txt" 2>&1 &
DMON=$!
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/prefill_shard.py" --grid check --output "$OUT/prefill.csv" \
  --deadline "${1:-420}" 2>> "$OUT/prefill.err"
kill $DMON 2>/dev/null; wait $DMON 2>/dev/null
grep -c . "$OUT/prefill.csv"; grep -h -E "FAILED|deadline|configurations in" "$OUT/prefill.err" | tail -20
