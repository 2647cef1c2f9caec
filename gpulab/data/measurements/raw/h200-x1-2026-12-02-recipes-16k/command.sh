#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 (wheel in .whl/),
# 2026-12-02 23:20 UTC, a freshly started machine. Run from the repository root.
OUT=. bash measure/run_tokens16k_h200.sh     # layer_recipes_16k.csv
