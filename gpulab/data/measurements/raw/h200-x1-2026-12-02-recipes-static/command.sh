# The two commands that made layer_recipes_static.csv, run from the repository root on
# 1x H200 SXM (torchao 0.18.0 carried as a wheel in .whl/, installed by the script).
# run 1 (2026-12-02 13:58 UTC): check and small grids, Llama and GPT, BF16 compiled,
# FP8 tensorwise and rowwise, BF16 eager on the small grid
bash measure/run_recipes_h200.sh queued 200
# run 2 (2026-12-02 14:09 UTC, another machine): the fit and holdout grids of Llama
# layers less the shapes of run 1, FP8 tensorwise then BF16 compiled; 195 s of parallel
# cache warm-up, 165 s of timed runs per recipe (the deadline cut the rest)
bash measure/run_recipes_h200.sh queued-grid 195 165
