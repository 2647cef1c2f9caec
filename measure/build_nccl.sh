#!/bin/bash
# Build NCCL from a source tarball of a release tag, for one GPU architecture and only the
# kernels a sweep needs, into $PREFIX (lib/libnccl.so.2, include/nccl.h). The source is not
# part of this repository: make the tarball from NCCL's public repository, e.g.
#   git -C nccl archive --format=tar.gz -o nccl-v2.30.7-1.tar.gz v2.30.7-1 src makefiles Makefile LICENSE.txt
# Usage: NCCL_SRC=nccl-v2.30.7-1.tar.gz PREFIX=/tmp/nccl [ARCH=90] [ONLY_FUNCS=...] \
#          bash measure/build_nccl.sh
# ONLY_FUNCS is NCCL's own filter (src/device/generate.py): the default keeps what
# measure/nccl_sweep.py and torch.distributed call (all_gather, broadcast, send/recv,
# reduce_scatter sum f32, all_reduce of every reduction on f32 and the integer types).
# Prints the seconds the build took; exits non-zero when it failed (make's log in
# $PREFIX/build.log).
set -eu
: "${NCCL_SRC:?NCCL_SRC must name a NCCL source tarball}"
PREFIX=${PREFIX:-/tmp/nccl}
ARCH=${ARCH:-90}
ONLY_FUNCS=${ONLY_FUNCS:-"AllGather * *|Broadcast * *|SendRecv|ReduceScatter Sum f32 * *|AllReduce * (f32|u8|i8|u32|i32|u64|i64) * *"}
NVCC=$(command -v nvcc)
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
mkdir -p "$PREFIX/src"
tar -xzf "$NCCL_SRC" -C "$PREFIX/src"
start=$SECONDS
make -C "$PREFIX/src" -j"$(nproc)" src.build BUILDDIR="$PREFIX" CUDA_HOME="$CUDA_HOME" \
  NVCC_GENCODE="-gencode=arch=compute_$ARCH,code=sm_$ARCH" ONLY_FUNCS="$ONLY_FUNCS" \
  > "$PREFIX/build.log" 2>&1
echo "NCCL built in $((SECONDS - start)) s into $PREFIX"
