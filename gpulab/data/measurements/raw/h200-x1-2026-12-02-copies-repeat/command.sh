OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# 1x H200 SXM 141GB, PCIe Gen5 x16, driver 580.159.04, CUDA 13.0, 2026-12-02.
# Six sweeps of measure/copy_latency.cu (built with nvcc -O2 -arch=sm_90), 20 s apart,
# nothing else running on the GPU:
OUT=$OUT bash measure/run_copies_repeat.sh 6 20
