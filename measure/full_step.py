#!/usr/bin/env python3
"""Forward + backward of a whole Llama 3 8B on one GPU, as torchtitan composes it.

A held-out check of the step model at the level of a whole model rather than one layer
shard: Llama 3 8B (32 layers, hidden 4096, 32 query and 8 KV heads of 128, SwiGLU 14336,
vocabulary 128256, RoPE theta 500000, RMSNorm), random weights in BF16, one micro-batch
of ``--batch`` sequences of ``--seq`` tokens, cross-entropy loss on the logits.

Composition, after torchtitan (``parallelize_llama.py``): each transformer block is
wrapped for activation checkpointing (``--ac``: ``none``; ``op``: per-op selective
checkpointing with torchtitan's policy, saving the outputs of aten.mm (every second one
of a block), the flash / efficient attention ops and aten.max; ``full``), then compiled
on its own with ``torch.compile``; in FP8 the linear layers of the blocks are converted
first with torchao's ``convert_to_float8_training`` (tensorwise, the output layer left in
BF16, as torchtitan's ``filter_fqns = ["output"]``). No optimizer step (its time is not
in the model's step either), no data loading, one GPU (no FSDP traffic).

Per configuration: the median time of ``--steps`` steps after ``--warmup`` warm-up steps
(CUDA events), tokens per second, peak memory. Rows go to --output (CSV).

Usage (GPU machine; torchao as a wheel, see run_recipes_h200.sh):
  python3 measure/full_step.py --precision bf16,fp8 --ac op --batch 2 --seq 8192 \
      --output full_step.csv
"""
from __future__ import annotations

import argparse
import csv
import datetime
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

H, LAYERS, HEADS, KV, D, FFN, VOCAB, THETA = 4096, 32, 32, 8, 128, 14336, 128256, 500000.0
#: --shape presets: (hidden, heads, kv heads, ffn): Llama 3 8B and 70B (the 70B run with
#: fewer layers, --layers, to fit one GPU).
SHAPES = {"llama3-8b": (4096, 32, 8, 14336), "llama3-70b": (8192, 64, 8, 28672)}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = nn.RMSNorm(H, eps=1e-5)
        self.ffn_norm = nn.RMSNorm(H, eps=1e-5)
        self.wq = nn.Linear(H, HEADS * D, bias=False)
        self.wk = nn.Linear(H, KV * D, bias=False)
        self.wv = nn.Linear(H, KV * D, bias=False)
        self.wo = nn.Linear(HEADS * D, H, bias=False)
        self.w1 = nn.Linear(H, FFN, bias=False)
        self.w3 = nn.Linear(H, FFN, bias=False)
        self.w2 = nn.Linear(FFN, H, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = self.wq(h).view(b, s, HEADS, D).transpose(1, 2)
        k = self.wk(h).view(b, s, KV, D).transpose(1, 2)
        v = self.wv(h).view(b, s, KV, D).transpose(1, 2)

        def rope(t):
            t1, t2 = t.chunk(2, dim=-1)
            return t * cos + torch.cat([-t2, t1], dim=-1) * sin
        q, k = rope(q), rope(k)
        # torchtitan's Llama repeats the KV heads (repeat_kv) before SDPA
        k = k.repeat_interleave(HEADS // KV, dim=1)
        v = v.repeat_interleave(HEADS // KV, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, HEADS * D))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, H)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.RMSNorm(H, eps=1e-5)
        self.output = nn.Linear(H, VOCAB, bias=False)
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2).float() / D))
        ang = torch.outer(torch.arange(seq).float(), inv)
        ang = torch.cat([ang, ang], dim=-1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))


def op_sac_context():
    """torchtitan's per-op selective checkpointing policy (parallelize_llama.py)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    ops = torch.ops
    save = {ops.aten.mm.default, ops.aten._scaled_dot_product_efficient_attention.default,
            ops.aten._scaled_dot_product_flash_attention.default, ops.aten.max.default}
    if hasattr(ops.aten, "_scaled_dot_product_cudnn_attention"):
        save.add(ops.aten._scaled_dot_product_cudnn_attention.default)

    def ctx():
        counts = {"forward": 0, "recompute": 0}

        def policy(c, func, *args, **kwargs):
            mode = "recompute" if c.is_recompute else "forward"
            if func == ops.aten.mm.default:
                counts[mode] += 1
            keep = func in save and not (func == ops.aten.mm.default
                                         and counts[mode] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
        return create_selective_checkpoint_contexts(policy)
    return ctx


class Wrapped(nn.Module):
    def __init__(self, block, ac):
        super().__init__()
        self.block, self.ac = block, ac
        self.ctx = op_sac_context() if ac == "op" else None

    def forward(self, x, cos, sin):
        from torch.utils.checkpoint import checkpoint
        if self.ac == "none":
            return self.block(x, cos, sin)
        if self.ac == "full":
            return checkpoint(self.block, x, cos, sin, use_reentrant=False,
                              preserve_rng_state=False)
        return checkpoint(self.block, x, cos, sin, use_reentrant=False,
                          context_fn=self.ctx, preserve_rng_state=False)


def build(precision, ac, seq, compiled=True):
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = Llama(seq)
    m = m.to(torch.bfloat16)
    if precision == "fp8":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        cfg = Float8LinearConfig.from_recipe_name("tensorwise")
        convert_to_float8_training(m, config=cfg,
                                   module_filter_fn=lambda mod, fqn: fqn != "output")
    for i, blk in enumerate(m.layers):
        w = Wrapped(blk, ac)
        m.layers[i] = torch.compile(w) if compiled else w
    return m


def run(precision, ac, batch, seq, warmup, steps, compiled=True):
    m = build(precision, ac, seq, compiled)
    tokens = torch.randint(0, VOCAB, (batch, seq), device="cuda")
    labels = torch.randint(0, VOCAB, (batch, seq), device="cuda")

    def step():
        for p in m.parameters():
            p.grad = None
        logits = m(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        loss.backward()

    t0 = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    compile_s = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        step()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    med = statistics.median(times)
    peak = torch.cuda.max_memory_allocated() / 1e9
    m = None  # noqa: F841 - free the model before the next configuration
    torch.cuda.empty_cache()
    return med, min(times), max(times), peak, compile_s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", default="bf16,fp8")
    ap.add_argument("--ac", default="op", help="comma-separated: none, op, full")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--shape", default="llama3-8b", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, default=0,
                    help="transformer blocks (0: the model's own, 32 for the 8B)")
    ap.add_argument("--compile", default="on", choices=("on", "off"),
                    help="off: eager blocks (torchtitan without torch.compile)")
    ap.add_argument("--output", required=True)
    args = ap.parse_args(argv)
    global H, HEADS, KV, FFN, LAYERS
    H, HEADS, KV, FFN = SHAPES[args.shape]
    LAYERS = args.layers or {"llama3-8b": 32, "llama3-70b": 80}[args.shape]
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        import torchao
        meta["torchao"] = torchao.__version__
    except ImportError:
        meta["torchao"] = ""
    fields = list(meta) + ["model", "layers", "precision", "ac", "compiled", "batch",
                           "seq_len", "step_s",
                           "step_min_s", "step_max_s", "tokens_per_s", "peak_gb",
                           "warmup_s", "status"]
    with open(args.output, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for ac in args.ac.split(","):
            for precision in args.precision.split(","):
                row = dict(meta, model=args.shape, layers=LAYERS, precision=precision, ac=ac,
                           compiled=args.compile == "on", batch=args.batch,
                           seq_len=args.seq)
                try:
                    med, lo, hi, peak, comp = run(precision, ac, args.batch, args.seq,
                                                  args.warmup, args.steps,
                                                  args.compile == "on")
                    row.update(step_s=round(med, 5), step_min_s=round(lo, 5),
                               step_max_s=round(hi, 5),
                               tokens_per_s=round(args.batch * args.seq / med, 1),
                               peak_gb=round(peak, 2), warmup_s=round(comp, 1),
                               status="ok")
                    log(f"{precision} ac={ac} compile={args.compile} b={args.batch}: "
                        f"{med * 1e3:.1f} ms/step, "
                        f"{args.batch * args.seq / med:.0f} tokens/s, {peak:.1f} GB, "
                        f"warm-up {comp:.0f} s")
                except Exception as exc:                  # noqa: BLE001 - record it
                    row["status"] = f"FAILED {type(exc).__name__}: {str(exc)[:200]}"
                    log(f"{precision} ac={ac}: {row['status']}")
                    torch.cuda.empty_cache()
                w.writerow(row)
                fh.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
