#!/usr/bin/env python3
"""Time of the attention kernels alone, forward and forward + backward, at 2K to 256K tokens.

The layer-shard model charges attention its Narayanan FLOPs (12 T s h / t per layer, forward
+ backward) at one fitted efficiency, fitted on shards of 2048-16384 tokens. The published
long-context runs (32K-256K tokens per sequence, context parallelism) take the model far
beyond that range. This program times the kernels themselves, BF16, head dimension 128, one
sequence, through ``torch.nn.functional.scaled_dot_product_attention`` with the backend
forced:

* ``causal``: a whole causal sequence of ``s`` tokens (what one GPU computes without CP);
* ``block``: a non-causal ``n`` x ``n`` block (one step of a context-parallel ring: a rank's
  query chunk against a KV chunk it received);

for the head shapes of Llama 3 8B at TP1 (32 query heads, 8 KV heads) and Llama 3.1 405B at
TP8 (16 query heads, 1 KV head). KV heads are repeated to the query heads first, as
torchtitan's Llama does before SDPA (not timed).

Usage (GPU machine):
  python3 measure/attention_long.py --output attention_long.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HEAD_DIM = 128
SHAPES = {"llama3-8b-tp1": (32, 8), "llama3-405b-tp8": (16, 1)}
CAUSAL = (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
BLOCKS = (4096, 8192, 16384, 32768, 65536)
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def timed(fn, target_s=0.5, min_reps=3, max_reps=50):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps, total = 0, 0.0
    t_start = time.perf_counter()
    while reps < min_reps or (total < target_s * 1e3 and reps < max_reps):
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        total += e0.elapsed_time(e1)
        reps += 1
        if time.perf_counter() - t_start > 20:
            break
    return total / reps, reps


def one(backend, heads, kv_heads, q_len, k_len, causal):
    q = torch.randn(1, heads, q_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16,
                    requires_grad=True)
    k0 = torch.randn(1, kv_heads, k_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    v0 = torch.randn(1, kv_heads, k_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    rep = heads // kv_heads
    k = k0.repeat_interleave(rep, dim=1).detach().requires_grad_(True)
    v = v0.repeat_interleave(rep, dim=1).detach().requires_grad_(True)
    g = torch.randn(1, heads, q_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)

    def fwd():
        with sdpa_kernel(BACKENDS[backend]), torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwdbwd():
        q.grad = k.grad = v.grad = None
        with sdpa_kernel(BACKENDS[backend]):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

    f_ms, f_reps = timed(fwd)
    fb_ms, fb_reps = timed(fwdbwd)
    # matmul FLOPs actually done: QK^T and PV, 2 x 2 q k d per head; causal halves them;
    # the backward does 2.5x the forward's (dQ, dK, dV and the recomputed scores)
    fwd_flops = 4.0 * q_len * k_len * HEAD_DIM * heads * (0.5 if causal else 1.0)
    return f_ms, fb_ms, fwd_flops, f_reps, fb_reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--backends", default="flash,cudnn")
    ap.add_argument("--deadline", type=float, default=400.0,
                    help="stop starting new cases after this many seconds")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cols = ["backend", "shape", "heads", "kv_heads", "head_dim", "kind", "q_len", "k_len",
            "fwd_ms", "fwd_bwd_ms", "fwd_flops", "fwd_tflops", "fwd_bwd_tflops",
            "reps_fwd", "reps_fwd_bwd", "gpu", "torch"]
    with open(args.output, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        cases = [(kind, n) for kind, ns in (("causal", CAUSAL), ("block", BLOCKS))
                 for n in ns]
        for backend in args.backends.split(","):
            for name, (heads, kvh) in SHAPES.items():
                for kind, n in cases:
                    if time.perf_counter() - t0 > args.deadline:
                        print("deadline reached", file=sys.stderr)
                        return 0
                    try:
                        f_ms, fb_ms, fl, r1, r2 = one(backend, heads, kvh, n, n,
                                                      kind == "causal")
                    except (RuntimeError, torch.OutOfMemoryError) as exc:
                        print(f"{backend} {name} {kind} {n}: {str(exc)[:120]}",
                              file=sys.stderr)
                        torch.cuda.empty_cache()
                        continue
                    w.writerow([backend, name, heads, kvh, HEAD_DIM, kind, n, n,
                                f"{f_ms:.4f}", f"{fb_ms:.4f}", f"{fl:.6g}",
                                f"{fl / f_ms / 1e9:.1f}", f"{3.5 * fl / fb_ms / 1e9:.1f}",
                                r1, r2, torch.cuda.get_device_name(), torch.__version__])
                    fh.flush()
                    print(f"{backend} {name} {kind} {n}: fwd {f_ms:.3f} ms, fwd+bwd "
                          f"{fb_ms:.3f} ms, {3.5 * fl / fb_ms / 1e9:.0f} TFLOP/s",
                          file=sys.stderr)
                    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
