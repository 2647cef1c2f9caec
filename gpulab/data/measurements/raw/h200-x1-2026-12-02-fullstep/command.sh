#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 (wheel in .whl/),
# 2026-12-02 22:50 UTC. Run from the repository root on the GPU machine.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/torchao-*.whl
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv > versions_full.txt
python3 measure/full_step.py --precision bf16,fp8 --ac op,full --batch 2 --seq 8192 --output full_step.csv
# second command, 2026-12-02 22:58 UTC, another freshly started machine: eager blocks, and no
# checkpointing at one sequence per micro-batch
python3 measure/full_step.py --compile off --precision bf16 --ac op --batch 2 --seq 8192 --output full_step_eager.csv
python3 measure/full_step.py --precision bf16,fp8 --ac none --batch 1 --seq 8192 --output full_step_b1.csv
# third command, 2026-12-02 23:04 UTC, another freshly started machine: the Llama 3 70B shape with 8 of
# its 80 blocks (to fit one GPU), one sequence per micro-batch
python3 measure/full_step.py --shape llama3-70b --layers 8 --precision bf16,fp8 --ac op,none --batch 1 --seq 8192 --output full_step_70b8.csv
