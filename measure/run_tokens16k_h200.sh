#!/usr/bin/env bash
# Held-out layer shards with 16384 tokens per micro-batch (grid tokens16k of
# measure/layer_recipes.py), BF16 compiled and FP8 tensorwise, static compiles: Inductor's
# caches warmed by parallel processes first, then each recipe timed alone (synced and
# queued). torchao travels as a wheel in .whl/. Rows to $OUT/layer_recipes_16k.csv.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/torchao-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/torchao-*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
here=$(cd "$(dirname "$0")" && pwd)
pids=""
for r in bf16-compiled fp8-tensorwise; do
  for i in 0 1 2; do
    python3 "$here/layer_recipes.py" --kind llama --recipe "$r" --grid tokens16k --static \
      --shard "$i/3" --reps 1 --target-ms 0 --queue-ms 0 --output "$OUT/warm.csv" \
      2>> "$OUT/warm.err" &
    pids="$pids $!"
  done
done
wait $pids
echo "warm-up done at $(date -u +%T)"
for r in bf16-compiled fp8-tensorwise; do
  python3 "$here/layer_recipes.py" --kind llama --recipe "$r" --grid tokens16k --static \
    --output "$OUT/layer_recipes_16k.csv" --deadline 200 2>> "$OUT/recipes_16k.err"
  tail -1 "$OUT/recipes_16k.err"
done
