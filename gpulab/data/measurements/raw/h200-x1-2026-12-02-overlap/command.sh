#!/usr/bin/env bash
# 1x H200 SXM (141 GB HBM3e, 700 W), driver 580.159.04, PyTorch 2.11.0+cu130, Triton 3.6.0,
# 2026-12-02. Run from the repository root on the GPU machine; OUT is where files land.
OUT=run1 bash measure/run_overlap_h200.sh            # overlap_unthrottled.csv, power_run1.csv
OUT=run2 bash measure/run_overlap_h200.sh --second   # overlap_held.csv, power_run2.csv
