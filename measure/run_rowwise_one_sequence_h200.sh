#!/usr/bin/env bash
# Does torchao's rowwise recipe meet Inductor's mix-order fusion too? Compiled FP8 rowwise
# shards of one sequence (the onesequence grid, a deadline cutting a random subset) and
# one shard profiled with the fusion on and off. Rows to $OUT.
set -u
source measure/torchao_env.sh
python3 measure/layer_recipes.py --kind gpt --recipe fp8-rowwise --static --grid onesequence \
  --output "$OUT/layer_recipes_one_sequence_rowwise.csv" --deadline 60 2> "$OUT/rowwise.err"
python3 measure/layer_recipes.py --kind llama --recipe fp8-rowwise --static --grid onesequence \
  --output "$OUT/layer_recipes_one_sequence_rowwise.csv" --deadline 60 2>> "$OUT/rowwise.err"
for m in 1 0; do
  name=$([ $m = 1 ] && echo on || echo off)
  TORCHINDUCTOR_MIX_ORDER_REDUCTION=$m python3 measure/profile_shard.py --recipe fp8-rowwise \
    --kind gpt --shape 4096,8,8192,1 --output "$OUT/kernels_rowwise_mix_${name}_gpt.csv" \
    2>> "$OUT/rowwise.err"
done
grep -h "step\|queued" "$OUT/rowwise.err"
