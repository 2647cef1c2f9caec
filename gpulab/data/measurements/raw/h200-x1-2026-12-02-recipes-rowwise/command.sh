# The command that made layer_recipes_rowwise.csv, run from the repository root on
# 1x H200 SXM (torchao 0.18.0 carried as a wheel in .whl/, installed by the script).
# run 3 (2026-12-02 17:12 UTC): the fit and holdout grids of Llama layers less the check
# and small shapes (those rowwise rows are in ../h200-x1-2026-12-02-recipes-static), FP8
# rowwise only; 230 s of parallel cache warm-up, 250 s of timed runs
bash measure/run_recipes_h200.sh queued-grid 230 250 fp8-rowwise
