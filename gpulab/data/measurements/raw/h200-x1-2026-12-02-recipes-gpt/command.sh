# The command that made layer_recipes_gpt.csv, run from the repository root on 1x H200 SXM
# (torchao 0.18.0 carried as a wheel in .whl/, installed by the script).
# run 4 (2026-12-02 18:43 UTC): the fit and holdout grids of GPT layers less the check and
# small shapes (the check shapes are in ../h200-x1-2026-12-02-recipes-static), FP8
# tensorwise then BF16 compiled; 160 s of parallel cache warm-up, 140 s of timed runs each
GRID_KIND=gpt bash measure/run_recipes_h200.sh queued-grid 160 140 fp8-tensorwise,bf16-compiled
