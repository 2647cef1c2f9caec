# The command that made prefill.csv, run from the repository root on 1x H200 SXM
# (2026-12-02 17:26 UTC): a two-configuration smoke run first (not kept), then
bash measure/run_prefill_h200.sh 430
