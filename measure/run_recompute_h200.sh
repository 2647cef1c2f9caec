#!/usr/bin/env bash
# What activation recomputation costs a whole model (measure/full_step.py): Llama 3 8B at one
# 8192-token sequence with per-op and full checkpointing (beside the run without), the same
# at 4096 tokens, and the Llama 3 70B shape (8 of its blocks) with full checkpointing, BF16
# and FP8 (torchao tensorwise, compiled blocks). Rows to $OUT/recompute_*.csv.
set -u
source measure/torchao_env.sh
python3 measure/full_step.py --precision bf16,fp8 --ac none,op,full --batch 1 --seq 8192 \
  --output "$OUT/recompute_8b_s8192.csv" 2> "$OUT/recompute.err"
python3 measure/full_step.py --precision bf16,fp8 --ac none,full --batch 1 --seq 4096 \
  --output "$OUT/recompute_8b_s4096.csv" 2>> "$OUT/recompute.err"
python3 measure/full_step.py --shape llama3-70b --layers 8 --precision bf16,fp8 --ac full \
  --batch 1 --seq 8192 --output "$OUT/recompute_70b8.csv" 2>> "$OUT/recompute.err"
tail -5 "$OUT/recompute.err"
cat "$OUT"/recompute_*.csv
