OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
# 1x H200 SXM, driver 580.159.04, torch 2.11.0+cu130, NCCL 2.28.9, 2026-12-02.
# gpulab.bench as it is after the move of the GPU path to gpulab/bench/gpu.py
# (versions.txt: the last commit that touched gpulab/bench).
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'
  git log -1 --format=%H -- gpulab/bench; } > $OUT/versions.txt 2>&1
torchrun --nproc_per_node 1 -m gpulab.bench -b 8 -e 64M -f 4 -w 2 -n 5 -o all_reduce,all_gather,reduce_scatter,alltoall,sendrecv,broadcast,reduce --copy h2d,d2h,p2p --output $OUT/smoke.json 2>$OUT/smoke.err | tee $OUT/smoke.txt
