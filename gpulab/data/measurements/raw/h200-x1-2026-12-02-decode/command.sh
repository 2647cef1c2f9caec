# The two commands that made this folder, run from the repository root on 1x H200 SXM.
# eager variant (2026-12-02 14:2x UTC; the script then had no --eager flag: it ran the
# unfused operations only, as --eager does now)
bash measure/run_decode_h200.sh 330
# compiled (2026-12-02 14:30 UTC, another machine)
bash measure/run_decode_h200.sh 190
