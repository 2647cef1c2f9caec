OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# The commands below are as run: the steps script was then called
# measure/run_issue12_h200.sh; it was later renamed to
# measure/run_layers_and_copies_h200.sh, with the same steps.
# 1x H200 SXM 141GB, driver 580.159.04, 2026-12-01; measure/run_layers_and_copies_h200.sh
# holds the steps. The copy steps it runs are:
#   nvcc -O2 -arch=sm_90 -o copy_latency measure/copy_latency.cu
#   DRV=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
#   timeout 120 ./copy_latency --driver "$DRV" --date $(date -u +%F) > $OUT/copies_run1.csv 2>> $OUT/copies.err
#   ... GEMM check and layer-shard grids (about 4 minutes, see ../h200-x1-2026-12-01-layers/) ...
#   timeout 120 ./copy_latency --driver "$DRV" --date $(date -u +%F) > $OUT/copies_run2.csv 2>> $OUT/copies.err
bash measure/run_issue12_h200.sh copies_holdout
