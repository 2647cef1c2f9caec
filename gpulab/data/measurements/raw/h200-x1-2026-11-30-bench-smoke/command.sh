OUT=${OUT:-./out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'
torchrun --nproc_per_node 1 -m gpulab.bench -b 8 -e 64M -f 4 -w 2 -n 5 -o all_reduce,all_gather,reduce_scatter,alltoall,sendrecv,broadcast,reduce --copy h2d,d2h,p2p --output $OUT/smoke.json 2>$OUT/smoke.err | tee $OUT/smoke.txt
echo rc=$?; tail -5 $OUT/smoke.err
torchrun --nproc_per_node 1 benchmarks/tp_layer.py --shard 2 --output $OUT/tp_layer_shard2_1gpu.csv 2>&1 | tail -8
torchrun --nproc_per_node 1 benchmarks/tp_layer.py --shard 1 --output $OUT/tp_layer_shard1_1gpu.csv 2>&1 | tail -8
