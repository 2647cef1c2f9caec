#!/usr/bin/env bash
# The mix-order kernel's cost at wider norms: compiled FP8 tensorwise shards of one
# 16384-token sequence profiled (measure/profile_shard.py) with Inductor's mix-order
# reduction on (default) and off (TORCHINDUCTOR_MIX_ORDER_REDUCTION=0): Llama (RMSNorm)
# at hidden 8192 and 6144, GPT (LayerNorm) at 8192, all TP8. Rows to $OUT.
set -u
source measure/torchao_env.sh
P="python3 measure/profile_shard.py --recipe fp8-tensorwise"
for m in 1 0; do
  name=$([ $m = 1 ] && echo on || echo off)
  TORCHINDUCTOR_MIX_ORDER_REDUCTION=$m $P --kind llama --shape 8192,8,16384,1 \
    --output "$OUT/kernels_mix_${name}_llama_8192_16384x1.csv" 2>> "$OUT/widths.err"
  TORCHINDUCTOR_MIX_ORDER_REDUCTION=$m $P --kind gpt --shape 8192,8,16384,1 \
    --output "$OUT/kernels_mix_${name}_gpt_8192_16384x1.csv" 2>> "$OUT/widths.err"
  TORCHINDUCTOR_MIX_ORDER_REDUCTION=$m $P --kind llama --shape 6144,8,16384,1 \
    --output "$OUT/kernels_mix_${name}_llama_6144_16384x1.csv" 2>> "$OUT/widths.err"
done
grep step "$OUT/widths.err"
