#!/usr/bin/env bash
# Inductor's mix-order kernel at wide norms: compiled FP8 tensorwise shards of one
# sequence profiled (measure/profile_shard.py --meta: kernel time, launch configuration,
# registers and spills) with the mix-order reduction on (default) and off
# (TORCHINDUCTOR_MIX_ORDER_REDUCTION=0), then held-out shard timings (grid "widenorm" of
# measure/layer_recipes.py). Argument: rms (Llama shards, RMSNorm), ln (GPT shards,
# LayerNorm, and the held-out timings) or quick (a subset of both and the held-out Llama
# timings, for one call of under ten minutes). Rows to $OUT.
set -u
part=${1:?usage: run_mix_order_wide_h200.sh rms|ln|quick}
source measure/torchao_env.sh
P="python3 measure/profile_shard.py --recipe fp8-tensorwise"
args() { for s in "$@"; do printf -- "--shape %s " "$s"; done; }
profile() {  # kind, shapes profiled on and off, shapes profiled on only[, file suffix]
  local kind=$1 both=$2 once=$3 tag=${1}_wide${4:+_$4}
  $P --kind $kind $(args $once $both) --output "$OUT/kernels_mix_on_${tag}.csv" \
    --meta "$OUT/meta_mix_on_${tag}.csv" 2>> "$OUT/wide.err"
  [ -n "$both" ] && TORCHINDUCTOR_MIX_ORDER_REDUCTION=0 $P --kind $kind $(args $both) \
    --output "$OUT/kernels_mix_off_${tag}.csv" \
    --meta "$OUT/meta_mix_off_${tag}.csv" 2>> "$OUT/wide.err"
}
case $part in
  rms) profile llama "7168,8,16384,1 8192,8,32768,1 12288,8,32768,1 16384,8,32768,1" \
         "6144,8,16384,1 8192,8,16384,1" ;;
  ln) profile gpt "12288,8,32768,1 16384,8,32768,1" "8192,8,16384,1 4096,8,8192,1" ;;
  quick) profile llama "7168,8,16384,1 12288,8,32768,1 16384,8,32768,1" "8192,8,16384,1"
         profile gpt "16384,8,32768,1" "8192,8,16384,1" ;;
  spill)  # one process per shape (a second Llama shape in one process failed to profile)
    for h in 6144 7168; do profile llama "" "$h,8,16384,1" "$h"; done
    profile gpt "12288,8,32768,1" "" 12288 ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
if [ "$part" = rms ] || [ "$part" = ln ] || [ "$part" = quick ]; then
  kinds=$([ "$part" = quick ] && echo llama || echo "llama gpt")
  for k in $kinds; do
    python3 measure/layer_recipes.py --kind $k --recipe fp8-tensorwise --static \
      --grid widenorm --output "$OUT/layer_recipes_wide_norm.csv" --deadline 100 \
      2>> "$OUT/wide_timing.err"
  done
  cut -d, -f6,10,14,15,16,19,28 "$OUT/layer_recipes_wide_norm.csv"
fi
grep step "$OUT/wide.err"
grep -h "norm_backward" "$OUT"/meta_mix_*_wide*.csv | grep triton_per | cut -d, -f1-5,7-13
grep -B2 -A12 Traceback "$OUT/wide.err" | tail -40
# the device returns a few files only: everything in one archive as well
tar -czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz .
