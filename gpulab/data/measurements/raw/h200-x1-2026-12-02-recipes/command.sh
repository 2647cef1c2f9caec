OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# 1x H200 SXM 141GB, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 (carried as
# the PyPI wheel torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl
# in .whl/; measure/run_recipes_h200.sh installs it into /tmp/site). Three commands on
# 2026-12-02, each on a freshly started machine; each appended to $OUT/recipes_KIND.csv
# (kept here together as layer_recipes.csv with a `run` column 1-3).
#
# run 1 (07:58-08:07 UTC):
bash measure/run_recipes_h200.sh llama 92
# run 2 (08:10-08:20 UTC; stopped by its 600 s limit during the static check, which
#        wrote no row):
bash measure/run_recipes_h200.sh llama 75 bf16-compiled,fp8-tensorwise,fp8-rowwise
bash measure/run_recipes_h200.sh gpt 55 bf16-compiled,fp8-tensorwise,fp8-rowwise
bash measure/run_recipes_h200.sh gpt 35 bf16-eager
bash measure/run_recipes_h200.sh static 30 llama
# run 3 (08:21-08:27 UTC; stopped by its 350 s limit during the last step, which wrote
#        no row):
export SEED=1
bash measure/run_recipes_h200.sh llama 140 fp8-tensorwise
bash measure/run_recipes_h200.sh gpt 100 fp8-tensorwise
bash measure/run_recipes_h200.sh gpt 45 bf16-compiled
