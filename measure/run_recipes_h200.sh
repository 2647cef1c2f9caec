#!/usr/bin/env bash
# Layer shards under production execution recipes on 1x H200 SXM (torch.compile,
# torchao float8 training). torchao travels as a wheel in .whl/ (no registry there).
#
#   [SEED=n] bash measure/run_recipes_h200.sh KIND [SECONDS_PER_RECIPE] [RECIPES] [GRID]
#   bash measure/run_recipes_h200.sh static [SECONDS] [KINDS]  # static compiles, check grid
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
{ echo "## date -u"; date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import torchao; print("torchao", torchao.__version__)'
  nproc; } > "$OUT/versions_$tag.txt" 2>&1
nvidia-smi dmon -s pc -d 5 -o T > "$OUT/dmon_$tag.txt" 2>&1 &
DMON=$!
if [ "$kind" = static ]; then
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
