#!/usr/bin/env python3
"""Time one tensor-parallel shard of a Llama-style decoder layer in DECODE, under CUDA graphs.

One decode step of one layer for a batch of sequences that each hold ``context`` tokens in
the KV cache: every sequence brings one new token. The shard of TP degree t (Megatron
split) holds heads/t query heads and kv_heads/t KV heads (head dim 128), the fused QKV
weight h x (heads + 2 kv_heads) 128 / t, the output weight heads 128 / t x h, the fused
gate/up weight h x 2f/t and the down weight f/t x h. Work per step: RMSNorm, QKV GEMM,
rotary embedding on q and k, the new k and v written into the cache, attention of one query
per sequence over ``context`` keys (``scaled_dot_product_attention``, GQA passed as is),
output GEMM, residual, RMSNorm, gate/up GEMM, SiLU x up, down GEMM, residual. No
communication (the two TP all-reduces per layer are left out), no sampling, no paging.

Precisions: ``bf16`` (weights and activations BF16) and ``fp8`` (weights stored in FP8
E4M3 with one scale per tensor, activations quantised per tensor on the fly, GEMMs through
``torch._scaled_mm`` with BF16 output, as serving engines' FP8 checkpoints run). The KV
cache and attention stay BF16 in both.

Recipes: ``compiled`` (the default; as vLLM runs a layer: ``torch.compile`` with dynamic
shapes on the two pieces between attention calls, so norms, rotary embedding, SiLU x up and
the FP8 activation casts fuse with their neighbours; the KV-cache write and attention run as
their own kernels; CUDA graphs around all) and ``eager`` (the same operations unfused, one
kernel each, under CUDA graphs: the naive variant, ``--eager``).

Timing: ``layers`` copies of the layer (own weights, own KV cache) are captured in ONE CUDA
graph, so the weights stream from HBM as in a model (more bytes than the L2 cache), and the
graph is replayed; ``layer_us`` = median replay time / layers. A device-to-device copy of a
large buffer is timed first (``hbm_copy_GBps``, read + write bytes per second, 1e9).

Usage (GPU machine):
  python3 measure/decode_shard.py --grid fit,holdout --output decode.csv --deadline 400
Progress goes to stderr; rows are appended as measured.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import random
import statistics
import subprocess
import sys
import time

HEAD_DIM = 128
#: name: (hidden, heads, kv_heads, ffn_hidden)
SHAPES = {"llama3-8b": (4096, 32, 8, 14336), "llama3-70b": (8192, 64, 8, 28672),
          "h5120-gqa8": (5120, 40, 8, 27648)}
COLUMNS = ["gpu", "driver", "torch", "date", "recipe", "grid", "shape", "hidden", "heads",
           "kv_heads", "ffn_hidden", "tp", "batch", "context", "precision", "layers",
           "layer_us", "spread", "reps", "weight_bytes", "kv_bytes",
           "attn_backend", "hbm_copy_GBps"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def grid(name):
    """(shape, tp, batch, context, precision) tuples of a grid."""
    if name == "fit":
        return [(s, t, b, c, p) for s in ("llama3-8b", "llama3-70b") for t in (1, 2, 4, 8)
                for b in (1, 8, 32, 128) for c in (2048, 8192, 32768)
                for p in ("bf16", "fp8")]
    if name == "holdout":
        a = [("h5120-gqa8", t, b, c, p) for t in (1, 2, 4, 8) for b in (1, 16, 64, 256)
             for c in (4096, 16384) for p in ("bf16", "fp8")]
        b_ = [("llama3-70b", t, b, c, p) for t in (2, 8) for b in (16, 256)
              for c in (4096, 16384) for p in ("bf16", "fp8")]
        return a + b_
    if name == "smoke":
        return [("llama3-8b", 8, 8, 2048, "bf16"), ("llama3-8b", 8, 8, 2048, "fp8")]
    raise SystemExit(f"--grid: unknown grid {name!r} (fit, holdout, smoke)")


def driver_version():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout.strip().splitlines()[0]
    except Exception:                          # noqa: BLE001
        return ""


def hbm_copy(torch, nbytes=4 << 30, reps=20):
    """Device-to-device copy rate, read + write bytes per second (1e9)."""
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        b.copy_(a)
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e-3)
    del a, b
    return 2 * nbytes / statistics.median(ts) / 1e9


PIECES = {}


def mm(torch, x, w, s, fp8):
    """x @ W: BF16, or FP8 with x cast per tensor on the fly (W stored (n, k), scale s)."""
    if not fp8:
        return x @ w
    xs = (x.abs().amax().float() / 448.0).clamp(min=1e-12)
    xq = (x.float() / xs).to(torch.float8_e4m3fn)
    return torch._scaled_mm(xq, w.t(), scale_a=xs, scale_b=s, out_dtype=torch.bfloat16)


def rms(torch, x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w


def rope(torch, x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def make_pieces(torch, compiled):
    """The two pieces of a layer around attention, compiled or eager."""
    def before(x, n1, w, s, cos, sin, hq, hk, fp8):
        d, b = HEAD_DIM, x.shape[0]
        y = mm(torch, rms(torch, x, n1), w, s, fp8)
        q, k, v = y.split([hq * d, hk * d, hk * d], dim=-1)
        q = rope(torch, q.reshape(b, hq, 1, d), cos, sin)
        k = rope(torch, k.reshape(b, hk, 1, d), cos, sin)
        return q, k, v.reshape(b, hk, 1, d)

    def after(x, o, wo, so, n2, wgu, sgu, wd, sd, fp8):
        b = x.shape[0]
        x = x + mm(torch, o.reshape(b, -1), wo, so, fp8)
        z = mm(torch, rms(torch, x, n2), wgu, sgu, fp8)
        g, u = z.chunk(2, dim=-1)
        return x + mm(torch, torch.nn.functional.silu(g) * u, wd, sd, fp8)
    if compiled:
        before = torch.compile(before, dynamic=True)
        after = torch.compile(after, dynamic=True)
    PIECES["before"], PIECES["after"] = before, after


def shard_weights(torch, h, heads, kv, f, t, fp8):
    """Random weights of one TP shard: ({name: tensor}, {name: FP8 scale}). BF16 weights
    are stored (in, out); FP8 ones (out, in) in E4M3 with one scale per tensor."""
    hq, hk = heads // t, kv // t
    dims = {"qkv": ((hq + 2 * hk) * HEAD_DIM, h), "o": (h, hq * HEAD_DIM),
            "gu": (2 * f // t, h), "down": (h, f // t)}          # (out, in)
    weights, scales = {}, {}
    for name, (n, k) in dims.items():
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * (1.0 / math.sqrt(k))
        if fp8:
            amax = w.abs().max().float()
            s = (amax / 448.0).clamp(min=1e-12)
            weights[name] = (w.float() / s).to(torch.float8_e4m3fn)   # (n, k) row-major
            scales[name] = s
        else:
            weights[name] = w.t().contiguous()                        # (k, n)
        del w
    return weights, scales


class Layer:
    """Weights and KV cache of one decode layer shard, and its step."""

    def __init__(self, torch, h, heads, kv, f, t, b, ctx, fp8):
        self.torch, self.fp8 = torch, fp8
        d = HEAD_DIM
        self.hq, self.hk, self.b, self.ctx = heads // t, kv // t, b, ctx
        dev, bf = "cuda", torch.bfloat16
        self.w, self.scale = shard_weights(torch, h, heads, kv, f, t, fp8)
        self.n1 = torch.ones(h, device=dev, dtype=bf)
        self.n2 = torch.ones(h, device=dev, dtype=bf)
        self.kc = torch.randn(b, self.hk, ctx, d, device=dev, dtype=bf)
        self.vc = torch.randn(b, self.hk, ctx, d, device=dev, dtype=bf)
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=dev).float() / d))
        ang = (ctx - 1) * inv
        self.cos = torch.cat([ang, ang]).cos().to(bf)
        self.sin = torch.cat([ang, ang]).sin().to(bf)
        self.weight_bytes = sum(w.numel() * w.element_size() for w in self.w.values())
        self.kv_bytes = 2 * self.kc.numel() * self.kc.element_size()

    def step(self, x):
        F = self.torch.nn.functional
        sc = self.scale if self.fp8 else {n: None for n in self.w}
        q, k, v = PIECES["before"](x, self.n1, self.w["qkv"], sc["qkv"], self.cos,
                                   self.sin, self.hq, self.hk, self.fp8)
        self.kc[:, :, self.ctx - 1:self.ctx].copy_(k)
        self.vc[:, :, self.ctx - 1:self.ctx].copy_(v)
        o = F.scaled_dot_product_attention(q, self.kc, self.vc, enable_gqa=True)
        return PIECES["after"](x, o, self.w["o"], sc["o"], self.n2, self.w["gu"], sc["gu"],
                               self.w["down"], sc["down"], self.fp8)


def run_one(torch, shape, t, b, ctx, prec, budget_bytes, reps):
    h, heads, kv, f = SHAPES[shape]
    fp8 = prec == "fp8"
    # bytes of one layer shard: weights + KV cache
    wb = (((heads + 2 * kv) * HEAD_DIM + heads * HEAD_DIM) * h + 3 * f * h) // t \
        * (1 if fp8 else 2)
    kvb = 2 * b * (kv // t) * ctx * HEAD_DIM * 2
    per = wb + kvb
    if per > budget_bytes:
        raise MemoryError(f"one layer needs {per / 2**30:.1f} GiB > budget")
    layers = int(min(16, max(2, math.ceil((1 << 30) / per)), budget_bytes // per))
    stack = [Layer(torch, h, heads, kv, f, t, b, ctx, fp8) for _ in range(layers)]
    x0 = torch.randn(b, h, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):                              # warm-up (and compile) outside
            x = x0
            for L in stack:
                x = L.step(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        x = x0
        for L in stack:
            x = L.step(x)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    t0 = time.time()
    while len(ts) < reps or (len(ts) < 200 and time.time() - t0 < 0.3):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)           # us
    med = statistics.median(ts)
    row = dict(layers=layers, layer_us=f"{med / layers:.3f}",
               spread=f"{(max(ts) - min(ts)) / med:.3f}", reps=len(ts),
               weight_bytes=stack[0].weight_bytes, kv_bytes=stack[0].kv_bytes)
    del g, stack
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="fit,holdout")
    ap.add_argument("--output", required=True)
    ap.add_argument("--deadline", type=float, default=0, help="seconds; 0 = none")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--budget-gib", type=float, default=60.0,
                    help="GPU memory for one configuration's layers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eager", action="store_true",
                    help="the unfused variant (one kernel per operation)")
    args = ap.parse_args(argv)
    t_start = time.time()
    import torch
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_mem_efficient_sdp(True)
    torch.backends.cuda.enable_math_sdp(False)
    torch.manual_seed(args.seed)
    make_pieces(torch, not args.eager)
    if not args.eager:
        import torch._dynamo as dynamo
        for name, val in (("recompile_limit", 64), ("cache_size_limit", 64)):
            if hasattr(dynamo.config, name):
                setattr(dynamo.config, name, val)
    bw = hbm_copy(torch)
    log(f"device-to-device copy: {bw:.0f} GB/s (read + write)")
    meta = {"gpu": torch.cuda.get_device_name(0), "driver": driver_version(),
            "torch": torch.__version__, "date": datetime.date.today().isoformat(),
            "recipe": "eager" if args.eager else "compiled",
            "hbm_copy_GBps": f"{bw:.1f}", "attn_backend": "flash or mem-efficient SDPA"}
    cfgs = [(g, *c) for g in args.grid.split(",") for c in grid(g)]
    random.Random(args.seed).shuffle(cfgs)
    new = not os.path.exists(args.output) or os.path.getsize(args.output) == 0
    out = open(args.output, "a", newline="")
    w = csv.DictWriter(out, fieldnames=COLUMNS)
    if new:
        w.writeheader()
    done = 0
    for gname, shape, t, b, ctx, prec in cfgs:
        if args.deadline and time.time() - t_start > args.deadline:
            log(f"deadline: {done} of {len(cfgs)} configurations done")
            break
        h, heads, kv, f = SHAPES[shape]
        try:
            r = run_one(torch, shape, t, b, ctx, prec, args.budget_gib * 2**30, args.reps)
            w.writerow(dict(meta, grid=gname, shape=shape, hidden=h, heads=heads,
                            kv_heads=kv, ffn_hidden=f, tp=t, batch=b, context=ctx,
                            precision=prec, **r))
            out.flush()
            done += 1
            log(f"{shape} tp{t} b{b} ctx{ctx} {prec}: {r['layer_us']} us/layer "
                f"({r['layers']} layers, weights {r['weight_bytes'] / 1e6:.0f} MB, "
                f"KV {r['kv_bytes'] / 1e6:.0f} MB)")
        except Exception as e:                 # noqa: BLE001 - record and go on
            log(f"FAILED {shape} tp{t} b{b} ctx{ctx} {prec}: {type(e).__name__}: "
                f"{str(e)[:300]}")
        finally:
            torch.cuda.empty_cache()
    out.close()
    log(f"{done} configurations in {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
