#!/usr/bin/env bash
# The command that made this folder, run from the repository root on 1x H200 SXM
# (driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 carried as a wheel in .whl/),
# 2026-12-03 about 13:52 UTC, into an empty $OUT; files taken from its all.tgz (the
# Triton sources of the two RMSNorm kernels renamed mix_order_kernel_llama_*.py.txt).
timeout 400 bash measure/run_mix_order_wide_h200.sh spill
