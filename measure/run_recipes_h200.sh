#!/usr/bin/env bash
# Layer shards under production execution recipes on 1x H200 SXM (torch.compile,
# torchao float8 training). torchao travels as a wheel in .whl/ (no registry there).
#
#   [SEED=n] bash measure/run_recipes_h200.sh KIND [SECONDS_PER_RECIPE] [RECIPES] [GRID]
#   bash measure/run_recipes_h200.sh static [SECONDS] [KINDS]  # static compiles, check grid
#   bash measure/run_recipes_h200.sh queued [SECONDS]  # static compiles, check + small grids,
#        compile caches warmed by parallel processes first, synced and queued timings
#   bash measure/run_recipes_h200.sh queued-grid [SECONDS] [TIMED_SECONDS] [RECIPES]
#        the same for the fit and holdout grids of Llama layers (RECIPES, comma-separated:
#        fp8-tensorwise,bf16-compiled by default; fp8-rowwise for the rowwise variant);
#        GRID_KIND=gpt for GPT layers instead of Llama ones
#
# KIND: llama or gpt. Rows go to $OUT/recipes_KIND.csv, progress to $OUT/recipes_KIND.err,
# versions and clocks to $OUT/versions_KIND.txt. NVLink multicast stays off.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
if ls .whl/torchao-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/torchao-*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
kind=${1:-llama}
per=${2:-100}
recipes=${3:-bf16-eager,bf16-compiled,fp8-tensorwise,fp8-rowwise,fp8-tensorwise-eager}
grid=${4:-fit,holdout}
here=$(cd "$(dirname "$0")" && pwd)
tag=$kind
[ "$kind" = static ] && tag=static
[ "$kind" = queued ] && tag=queued
[ "$kind" = queued-grid ] && tag=queued
{ echo "## date -u"; date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import torchao; print("torchao", torchao.__version__)'
  nproc; } > "$OUT/versions_$tag.txt" 2>&1
nvidia-smi dmon -s pc -d 5 -o T > "$OUT/dmon_$tag.txt" 2>&1 &
DMON=$!
if [ "$kind" = queued ]; then
  # 1) warm Inductor's caches: every compiled (kind, recipe, grid) in parallel processes,
  #    one repetition each, timings discarded (the GPU is shared while they run);
  # 2) time every set alone, one process at a time, compiles served from the caches.
  sets="llama:bf16-compiled:check,small llama:fp8-tensorwise:check,small
        gpt:bf16-compiled:check gpt:fp8-tensorwise:check llama:fp8-rowwise:check,small"
  pids=""
  for st in $sets; do
    IFS=: read -r k r g <<< "$st"
    n=1; [ "$g" = check,small ] && n=3
    for i in $(seq 0 $((n - 1))); do
      python3 "$here/layer_recipes.py" --kind "$k" --recipe "$r" --grid "$g" --static \
        --shard "$i/$n" --reps 1 --target-ms 0 --queue-ms 0 --deadline "${per}" \
        --output "$OUT/warm_${k}_${r}_$i.csv" 2>> "$OUT/warm.err" &
      pids="$pids $!"
    done
  done
  wait $pids
  echo "warm-up done at $(date -u +%T)"; grep -c FAILED "$OUT/warm.err"
  for st in llama:bf16-compiled:check,small llama:fp8-tensorwise:check,small llama:bf16-eager:small \
            gpt:bf16-compiled:check gpt:fp8-tensorwise:check llama:fp8-rowwise:check,small; do
    IFS=: read -r k r g <<< "$st"
    st_flag=--static; [ "$r" = bf16-eager ] && st_flag=
    python3 "$here/layer_recipes.py" --kind "$k" --recipe "$r" --grid "$g" $st_flag \
      --output "$OUT/recipes_queued.csv" --deadline 80 2>> "$OUT/recipes_queued.err"
    tail -1 "$OUT/recipes_queued.err"
  done
elif [ "$kind" = queued-grid ]; then
  # the fit and holdout grids (less the check and small shapes) of Llama layers under
  # static compiles, tensorwise FP8 then BF16; caches warmed as for "queued".
  grid_recipes=${4:-fp8-tensorwise,bf16-compiled}
  pids=""
  for r in ${grid_recipes//,/ }; do
    for i in 0 1 2 3 4 5 6 7; do
      python3 "$here/layer_recipes.py" --kind "${GRID_KIND:-llama}" --recipe "$r" --grid fit,holdout \
        --static --shard "$i/8" --reps 1 --target-ms 0 --queue-ms 0 --deadline "${per}" \
        --skip-grid check,small --output "$OUT/warm.csv" 2>> "$OUT/warm.err" &
      pids="$pids $!"
    done
  done
  wait $pids
  echo "warm-up done at $(date -u +%T)"; grep -c FAILED "$OUT/warm.err"
  for r in ${grid_recipes//,/ }; do
    python3 "$here/layer_recipes.py" --kind "${GRID_KIND:-llama}" --recipe "$r" --grid fit,holdout \
      --static --skip-grid check,small --output "$OUT/recipes_queued.csv" \
      --deadline "${3:-170}" 2>> "$OUT/recipes_queued.err"
    tail -1 "$OUT/recipes_queued.err"
  done
elif [ "$kind" = static ]; then
  for k in ${3:-llama}; do
    for r in bf16-compiled fp8-tensorwise; do
      python3 "$here/layer_recipes.py" --kind $k --recipe $r --grid check --static \
        --output "$OUT/recipes_static.csv" --deadline "$per" 2>> "$OUT/recipes_static.err"
    done
  done
else
  for r in ${recipes//,/ }; do
    python3 "$here/layer_recipes.py" --kind "$kind" --recipe "$r" --grid "$grid" \
      --output "$OUT/recipes_$kind.csv" --deadline "$per" --seed "${SEED:-0}" 2>> "$OUT/recipes_$kind.err"
    tail -2 "$OUT/recipes_$kind.err"
  done
fi
kill $DMON 2>/dev/null; wait $DMON 2>/dev/null
grep -c . "$OUT"/recipes_*.csv
grep -h -E "FAILED|deadline|shapes in" "$OUT"/recipes_*.err | tail -20
