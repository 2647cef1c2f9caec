#!/usr/bin/env bash
# Which shapes get Inductor's fused norm-backward + FP8-cast persistent kernel, and what it
# costs: per-kernel profiles (measure/profile_shard.py) of compiled FP8 tensorwise layer
# shards of one sequence (micro-batch 1) across widths and sequence lengths, beside the same
# tokens in 2-4 sequences, and the generated Triton source of the one-sequence and the
# four-sequence shard (TORCH_LOGS=output_code). Rows to $OUT/fused_*.csv.
set -u
source measure/torchao_env.sh
P="python3 measure/profile_shard.py --recipe fp8-tensorwise"
TORCH_LOGS=output_code $P --kind gpt --shape 4096,8,8192,1 --steps 3 \
  --output "$OUT/code_probe_1.csv" 2> "$OUT/output_code_gpt_4096_8_8192x1.txt"
TORCH_LOGS=output_code $P --kind gpt --shape 4096,8,2048,4 --steps 3 \
  --output "$OUT/code_probe_4.csv" 2> "$OUT/output_code_gpt_4096_8_2048x4.txt"
$P --kind gpt --output "$OUT/fused_gpt.csv" \
  --shape 4096,1,8192,1 --shape 4096,2,8192,1 --shape 4096,4,8192,1 \
  --shape 4096,8,4096,1 --shape 4096,8,16384,1 --shape 4096,8,8192,2 --shape 4096,8,4096,2 \
  --shape 2048,8,8192,1 --shape 2048,4,4096,1 --shape 3072,4,4096,1 --shape 6144,8,8192,1 \
  --shape 8192,8,8192,1 --shape 8192,4,4096,1 --shape 16384,8,8192,1 2> "$OUT/fused_gpt.err"
$P --kind llama --output "$OUT/fused_llama.csv" \
  --shape 4096,8,8192,1 --shape 4096,8,16384,1 --shape 4096,4,8192,1 --shape 4096,8,8192,2 \
  --shape 3072,8,4096,1 --shape 8192,8,8192,1 --shape 16384,8,8192,1 2> "$OUT/fused_llama.err"
cat "$OUT"/fused_*.err | grep step
