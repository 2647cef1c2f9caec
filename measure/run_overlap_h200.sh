#!/usr/bin/env bash
# What a collective running beside a GEMM costs it, on 1x H200 SXM (see
# measure/overlap_contention.py), plus 8 s power/clock traces of BF16 and FP8 GEMMs.
#
#   bash measure/run_overlap_h200.sh [--smoke]
#
# Rows to $OUT/overlap.csv, power samples to $OUT/power.csv, versions to
# $OUT/versions.txt, progress to $OUT/overlap.err.
set -u
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{ echo "## date -u"; date -u; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
  nproc; } > "$OUT/versions.txt" 2>&1
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/overlap_contention.py" --output "$OUT/overlap.csv" --power "$OUT/power.csv" \
  "$@" 2> "$OUT/overlap.err"
rc=$?
tail -5 "$OUT/overlap.err"
exit $rc
