#!/usr/bin/env bash
# Held-out compiled FP8 layer shards of one sequence per micro-batch (the grid
# "onesequence" of measure/layer_recipes.py: shapes on both sides of Inductor's
# mix-order reduction rule), the Inductor rule as installed (source lines of
# MixOrderReduction.can_fuse), and the profiled one-sequence shard with the mix-order
# fusion turned off (TORCHINDUCTOR_MIX_ORDER_REDUCTION=0). Rows to $OUT.
set -u
source measure/torchao_env.sh
python3 - > "$OUT/inductor_rule.txt" 2>&1 <<'PY'
import inspect, os, torch, torch._inductor.config as c, torch._inductor.scheduler as s
print("torch", torch.__version__)
print("mix_order_reduction default:", c.triton.mix_order_reduction)
lines, start = inspect.getsourcelines(s.MixOrderReduction.can_fuse)
f = inspect.getsourcefile(s.MixOrderReduction)
print(f[f.index("torch/"):], "lines", start, "to", start + len(lines) - 1)
for i, l in enumerate(lines):
    print(start + i, l, end="")
src = inspect.getsource(c).splitlines()
for i, l in enumerate(src, 1):
    if "mix_order_reduction" in l:
        print("config.py", i, l)
PY
TORCHINDUCTOR_MIX_ORDER_REDUCTION=0 python3 -c "import torch._inductor.config as c; print('with env 0:', c.triton.mix_order_reduction)" >> "$OUT/inductor_rule.txt" 2>&1
for kind in llama gpt; do
  python3 measure/layer_recipes.py --kind $kind --recipe fp8-tensorwise --static \
    --grid onesequence --output "$OUT/one_sequence.csv" --deadline 170 2>> "$OUT/one_sequence.err"
done
TORCHINDUCTOR_MIX_ORDER_REDUCTION=0 python3 measure/profile_shard.py --recipe fp8-tensorwise \
  --kind gpt --shape 4096,8,8192,1 --shape 4096,4,8192,1 --output "$OUT/mix_off_gpt.csv" 2> "$OUT/mix_off.err"
TORCHINDUCTOR_MIX_ORDER_REDUCTION=0 python3 measure/profile_shard.py --recipe fp8-tensorwise \
  --kind llama --shape 4096,8,8192,1 --output "$OUT/mix_off_llama.csv" 2>> "$OUT/mix_off.err"
head -8 "$OUT/inductor_rule.txt"; tail -3 "$OUT/inductor_rule.txt"
grep -h "step" "$OUT/mix_off.err"
cut -d, -f6,10,14,15,16,19,28 "$OUT/one_sequence.csv"
