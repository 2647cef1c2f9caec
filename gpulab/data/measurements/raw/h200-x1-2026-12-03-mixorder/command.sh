#!/usr/bin/env bash
# The commands that made this folder, run from the repository root on 1x H200 SXM
# (driver 580.159.04, PyTorch 2.11.0+cu130, torchao 0.18.0 carried as a wheel in .whl/),
# 2026-12-03 09:30-10:05 UTC, each into an empty $OUT.
#
# 1. kernels_probe_gpt_8192x1.csv, kernels_probe_gpt_2048x4.csv (with the Triton source,
#    of which mix_order_kernel_gpt_4096_8_8192x1.py.txt is the mix-order kernel),
#    kernels_mix_on_gpt.csv, kernels_mix_on_llama.csv:
bash measure/run_fused_norm_h200.sh
#    (files renamed: code_probe_1.csv -> kernels_probe_gpt_8192x1.csv, code_probe_4.csv ->
#    kernels_probe_gpt_2048x4.csv, fused_gpt.csv -> kernels_mix_on_gpt.csv,
#    fused_llama.csv -> kernels_mix_on_llama.csv)
# 2. layer_recipes_one_sequence.csv, inductor_rule.txt, kernels_mix_off_gpt.csv,
#    kernels_mix_off_llama.csv:
bash measure/run_one_sequence_h200.sh
#    (renamed: one_sequence.csv -> layer_recipes_one_sequence.csv, mix_off_gpt.csv ->
#    kernels_mix_off_gpt.csv, mix_off_llama.csv -> kernels_mix_off_llama.csv; the
#    virtual-environment prefix of the source path in inductor_rule.txt removed)
# 3. kernels_mix_{on,off}_{llama_8192,gpt_8192,llama_6144}_16384x1.csv (run as two
#    calls, Llama 8192 first, then GPT 8192 and Llama 6144; the same commands as):
bash measure/run_mix_order_widths_h200.sh
# 4. layer_recipes_one_sequence_rowwise.csv, kernels_rowwise_mix_{on,off}_gpt.csv
#    (10:08 UTC):
bash measure/run_rowwise_one_sequence_h200.sh
