#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 (wheel carried in
# .whl/), power limit 700 W as set, 2026-12-03 08:21 UTC. Run from the repository root on
# the GPU machine; writes recompute_*.csv, recompute.err and versions.txt.
OUT=. bash measure/run_recompute_h200.sh
