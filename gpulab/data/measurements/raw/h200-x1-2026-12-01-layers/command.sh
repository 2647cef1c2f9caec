OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# The commands below are as run: the steps script was then called
# measure/run_issue12_h200.sh; it was later renamed to
# measure/run_layers_and_copies_h200.sh, with the same steps.
# 1x H200 SXM 141GB, driver 580.159.04, 2026-12-01. Two commands, one right after
# the other on the same machine; measure/run_layers_and_copies_h200.sh holds the steps
# (it exports NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 and writes to $OUT).
#
# 1st: copies run 1, GEMM check, held-out grid, fit-grid seq 4096/8192 points at
#      TP 2 and 4, copies run 2. Its layer steps are:
#        python3 measure/layer_shard.py --grid holdout --output $OUT/layer_holdout.csv \
#          --gemm-peak $OUT/gemm_peak.csv --deadline 200 --date $(date -u +%F) 2> $OUT/layer.err
#        python3 measure/layer_shard.py --grid fit_seq --seq-tp 2,4 \
#          --output $OUT/layer_fit_seq_tp24.csv --deadline 110 --date $(date -u +%F) 2>> $OUT/layer.err
#      (layer.err is kept here as layer_call1.err; layer_fit_seq_tp24.csv was
#      appended to layer_fit.csv)
bash measure/run_issue12_h200.sh copies_holdout
# 2nd: the rest of the fit grid:
#        python3 measure/layer_shard.py --grid fit --seq-tp 1,8 --output $OUT/layer_fit.csv \
#          --deadline 530 --date $(date -u +%F) 2> $OUT/layer.err      (kept as layer_fit.err)
bash measure/run_issue12_h200.sh fit 530
