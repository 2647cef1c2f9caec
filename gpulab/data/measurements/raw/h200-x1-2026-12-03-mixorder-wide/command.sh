#!/usr/bin/env bash
# The command that made this folder, run from the repository root on 1x H200 SXM
# (driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 carried as a wheel in .whl/),
# 2026-12-03 about 13:00 UTC, into an empty $OUT; the files kept here are those that came back
# (see README.md).
timeout 560 bash measure/run_mix_order_wide_h200.sh quick
# meta_mix_on_llama_wide_printed.csv: the fused kernel's line of meta_mix_on_llama_wide.csv
# as the command's last grep printed it (micro_batch column dropped by its cut).
