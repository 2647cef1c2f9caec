#!/usr/bin/env bash
# 1x H200 SXM 141GB, driver 580.159.04, PyTorch 2.11.0+cu130 with its NCCL 2.28.9,
# 16 vCPUs, no RDMA device (NCCL picks its socket transport), CUDA MPS on,
# 2026-12-04 02:38 and 02:55 UTC. Run from the repository root on the GPU machine.
# 1) eager sweeps (one torch.distributed call per iteration, Python between calls):
#    eager_default_{2,4,8}.csv, eager_ring_{LL,LL128,Simple}_{2,4,8}.csv and
#    eager_ring_Simple_4_buff{1048576,16777216}.csv; NCCL's log in nccl_info_2.txt and its
#    choices at 4 ranks in nccl_choices_4.txt
OUT=. bash measure/run_nccl_net_one_gpu.sh
# 2) the rings with the 20 timed calls captured in one CUDA graph, run twice:
#    graph_{LL,LL128,Simple}_{2,4,8}_r{1,2}.csv
DEADLINE=400 SWEEP_TIMEOUT=60 OUT=. bash measure/run_nccl_net_one_gpu.sh GRAPH
