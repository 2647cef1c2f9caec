#!/usr/bin/env bash
# 1x H200 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, Triton 3.6.0, power limit 700 W as
# set (default and maximum 700 W), 2026-12-03 08:03 UTC. Run from the repository root on the
# GPU machine; writes power_clock.csv, power_clock.err and smi.csv (nvidia-smi every 100 ms).
OUT=. bash measure/run_power_clock_h200.sh
