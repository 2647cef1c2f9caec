# Sourced by the measure/run_*_h200.sh scripts that need torchao: $OUT made, torchao
# installed from the wheel carried in .whl/ (the GPU machine has no registry), the
# GPU, driver, power limit and library versions written to $OUT/versions.txt.
OUT=${OUT:-./out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/torchao-*.whl && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv \
  > "$OUT/versions.txt"
python3 -c "import torch, torchao; print(torch.__version__, torchao.__version__)" \
  >> "$OUT/versions.txt"
