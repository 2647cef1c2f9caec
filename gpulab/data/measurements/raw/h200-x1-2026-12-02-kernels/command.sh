#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 (wheel in .whl/),
# 2026-12-02 22:31 UTC. Run from the repository root on the GPU machine.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/torchao-*.whl
export PYTHONPATH=/tmp/site
python3 measure/profile_shard.py --kind gpt --shape 4096,8,8192,1 --shape 4096,8,2048,4 --output kernels_gpt.csv
python3 measure/profile_shard.py --kind llama --shape 4096,8,8192,1 --shape 4096,8,2048,4 --output kernels_llama.csv
