#!/usr/bin/env python3
"""Time one tensor-parallel shard of a Llama-style decoder layer in PREFILL (forward only).

``batch`` prompts of ``prompt`` tokens each go through one layer shard at once: RMSNorm,
QKV GEMM, rotary embedding, causal attention of every token over the earlier tokens of its
prompt (``scaled_dot_product_attention(is_causal=True)``, GQA passed as is), output GEMM,
residual, RMSNorm, gate/up GEMM, SiLU x up, down GEMM, residual. The shard of TP degree t
holds heads/t query heads and kv_heads/t KV heads (head dim 128), as in
``measure/decode_shard.py``, whose weight layout, FP8 GEMM path (weights E4M3 with one scale
per tensor, activations cast per tensor on the fly, ``torch._scaled_mm`` with BF16 output)
and compiled pieces (``torch.compile`` with dynamic shapes around attention, as vLLM runs a
layer) this reuses. No communication, no KV-cache write (the cache a prefill leaves is
written by the attention inputs k and v, which stay in HBM here), no sampling.

Timing: ``layers`` copies of the layer (own weights) run back to back after a GPU sleep of
``--queue-ms`` (the host issues the whole stack before the GPU reaches it, as in a model
whose host runs ahead); CUDA events around the stack; ``layer_us`` = median / layers.

Usage (GPU machine):
  python3 measure/prefill_shard.py --grid check --output prefill.csv --deadline 300
Progress goes to stderr; rows are appended as measured.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_shard import (HEAD_DIM, SHAPES, driver_version, log, mm,  # noqa: E402
                          rms, rope, shard_weights)

COLUMNS = ["gpu", "driver", "torch", "date", "recipe", "grid", "shape", "hidden", "heads",
           "kv_heads", "ffn_hidden", "tp", "batch", "prompt", "precision", "layers",
           "layer_us", "spread", "reps", "tokens", "flops_fwd", "attn_backend"]


def grid(name):
    """(shape, tp, batch, prompt, precision) tuples of a grid."""
    if name == "check":
        a = [(s, t, 1, p, q) for s in ("llama3-8b", "llama3-70b") for t in (1, 2, 4, 8)
             for p in (512, 2048, 8192, 32768) for q in ("bf16", "fp8")]
        b = [("h5120-gqa8", t, 1, p, q) for t in (1, 2, 4, 8) for p in (1024, 4096, 16384)
             for q in ("bf16", "fp8")]
        c = [(s, t, 4, 2048, q) for s in ("llama3-8b", "llama3-70b") for t in (2, 8)
             for q in ("bf16", "fp8")]
        return a + b + c
    if name == "smoke":
        return [("llama3-8b", 8, 1, 2048, "bf16"), ("llama3-8b", 8, 1, 2048, "fp8")]
    raise SystemExit(f"--grid: unknown grid {name!r} (check, smoke)")


PIECES = {}


def make_pieces(torch, compiled):
    def before(x, n1, w, s, cos, sin, hq, hk, b, fp8):
        d = HEAD_DIM
        y = mm(torch, rms(torch, x, n1), w, s, fp8)
        q, k, v = y.split([hq * d, hk * d, hk * d], dim=-1)
        n = x.shape[0] // b
        q = rope(torch, q.reshape(b, n, hq, d).transpose(1, 2), cos, sin)
        k = rope(torch, k.reshape(b, n, hk, d).transpose(1, 2), cos, sin)
        return q, k, v.reshape(b, n, hk, d).transpose(1, 2)

    def after(x, o, wo, so, n2, wgu, sgu, wd, sd, fp8):
        x = x + mm(torch, o.transpose(1, 2).reshape(x.shape[0], -1), wo, so, fp8)
        z = mm(torch, rms(torch, x, n2), wgu, sgu, fp8)
        g, u = z.chunk(2, dim=-1)
        return x + mm(torch, torch.nn.functional.silu(g) * u, wd, sd, fp8)
    if compiled:
        before = torch.compile(before, dynamic=True)
        after = torch.compile(after, dynamic=True)
    PIECES["before"], PIECES["after"] = before, after


class Layer:
    def __init__(self, torch, h, heads, kv, f, t, b, n, fp8):
        self.torch, self.fp8, self.b = torch, fp8, b
        d = HEAD_DIM
        self.hq, self.hk = heads // t, kv // t
        dev, bf = "cuda", torch.bfloat16
        self.w, self.scale = shard_weights(torch, h, heads, kv, f, t, fp8)
        self.n1 = torch.ones(h, device=dev, dtype=bf)
        self.n2 = torch.ones(h, device=dev, dtype=bf)
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=dev).float() / d))
        ang = torch.arange(n, device=dev).float()[:, None] * inv[None, :]
        self.cos = torch.cat([ang, ang], dim=-1).cos().to(bf)
        self.sin = torch.cat([ang, ang], dim=-1).sin().to(bf)

    def step(self, x):
        F = self.torch.nn.functional
        sc = self.scale if self.fp8 else {n: None for n in self.w}
        q, k, v = PIECES["before"](x, self.n1, self.w["qkv"], sc["qkv"], self.cos,
                                   self.sin, self.hq, self.hk, self.b, self.fp8)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return PIECES["after"](x, o, self.w["o"], sc["o"], self.n2, self.w["gu"], sc["gu"],
                               self.w["down"], sc["down"], self.fp8)


def run_one(torch, shape, t, b, n, prec, reps, queue_ms):
    h, heads, kv, f = SHAPES[shape]
    fp8 = prec == "fp8"
    layers = 4 if b * n <= 8192 else 2
    stack = [Layer(torch, h, heads, kv, f, t, b, n, fp8) for _ in range(layers)]
    x0 = torch.randn(b * n, h, device="cuda", dtype=torch.bfloat16)
    for _ in range(2):
        x = x0
        for L in stack:
            x = L.step(x)
    torch.cuda.synchronize()
    cycles = int(queue_ms * 1e-3 * 1.98e9)
    ts = []
    t0 = time.time()
    while len(ts) < reps or (len(ts) < 100 and time.time() - t0 < 0.5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        e0.record()
        x = x0
        for L in stack:
            x = L.step(x)
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)           # us
    med = statistics.median(ts)
    d = HEAD_DIM
    wel = ((heads + 2 * kv) * d + heads * d) * h // t + 3 * f * h // t
    flops = 2.0 * b * n * wel + 4.0 * b * n * n * (heads // t) * d    # full attention
    del stack
    return dict(layers=layers, layer_us=f"{med / layers:.3f}",
                spread=f"{(max(ts) - min(ts)) / med:.3f}", reps=len(ts), tokens=b * n,
                flops_fwd=f"{flops:.6e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="check")
    ap.add_argument("--output", required=True)
    ap.add_argument("--deadline", type=float, default=0, help="seconds; 0 = none")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--queue-ms", type=float, default=25.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eager", action="store_true",
                    help="the naive variant: the same operations unfused")
    args = ap.parse_args(argv)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    make_pieces(torch, compiled=not args.eager)
    cfgs = [c for g in args.grid.split(",") for c in grid(g)]
    random.Random(args.seed).shuffle(cfgs)
    new = not os.path.exists(args.output)
    base = dict(gpu=torch.cuda.get_device_name(0), driver=driver_version(),
                torch=torch.__version__, date=datetime.date.today().isoformat(),
                recipe="eager" if args.eager else "compiled", attn_backend="sdpa-causal")
    t_start = time.time()
    done = 0
    with open(args.output, "a", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            wr.writeheader()
        for shape, t, b, n, prec in cfgs:
            if args.deadline and time.time() - t_start > args.deadline:
                log(f"deadline: {done} of {len(cfgs)} configurations done")
                break
            h, heads, kv, f = SHAPES[shape]
            try:
                row = run_one(torch, shape, t, b, n, prec, args.reps, args.queue_ms)
            except Exception as exc:                   # noqa: BLE001
                log(f"FAILED {shape} tp{t} b{b} s{n} {prec}: {type(exc).__name__}: {exc}")
                torch.cuda.empty_cache()
                continue
            wr.writerow(dict(base, grid=args.grid, shape=shape, hidden=h, heads=heads,
                             kv_heads=kv, ffn_hidden=f, tp=t, batch=b, prompt=n,
                             precision=prec, **row))
            fh.flush()
            done += 1
            tf = float(row["flops_fwd"]) / (float(row["layer_us"]) * 1e-6) / 1e12
            log(f"{shape} tp{t} b{b} s{n} {prec}: {row['layer_us']} us/layer "
                f"({tf:.0f} TFLOP/s counted as full attention)")
    log(f"{done} configurations in {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
