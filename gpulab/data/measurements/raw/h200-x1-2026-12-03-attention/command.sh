#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130 (its bundled cuDNN), power limit
# 700 W as set, 2026-12-03 05:31 UTC. Run from the repository root on the GPU machine;
# writes attention_long.csv and power.csv (nvidia-smi every 200 ms beside the run).
OUT=. bash measure/run_attention_h200.sh
