#!/usr/bin/env python3
"""Time one tensor-parallel shard of a GPT or Llama layer under an execution recipe.

Where ``layer_shard.py`` times eager PyTorch (BF16, and FP8 through per-call, unfused
``torch._scaled_mm`` casts), this script times the recipes that training frameworks
run: ``torch.compile`` (Inductor, default mode, no CUDA graphs) and torchao's float8
training (dynamic scaling, tensorwise or rowwise), as torchtitan composes them.

One shard of one layer, forward + backward, one GPU, no communication (the TP
collectives are left out), no recomputation, no dropout. The shard of TP degree t
(Megatron split, Shoeybi et al. 2019) holds heads/t query heads, kv_heads/t KV heads
(head dim 128), the QKV weight h x (heads + 2 kv_heads) 128 / t, the attention output
weight heads 128 / t x h, fc1 h x f/t (GELU) or h x 2f/t (SwiGLU: gate and up fused) and
fc2 f/t x h.

Layer kinds:
  gpt    LayerNorm, linear layers with biases, multi-head attention, 4h GELU (tanh) MLP.
  llama  RMSNorm, no biases, rotary embedding on q and k, grouped-query attention
         (8 KV heads), SwiGLU MLP of 3.5h (Llama 3 8B/70B's ratio).
Attention: torch.nn.functional.scaled_dot_product_attention, causal, flash backend
only; with GQA the KV heads are passed as they are (enable_gqa) where the flash
backend takes them, else repeated to the query heads (the ``attn`` column says which).

Recipes:
  bf16-eager            everything BF16, eager PyTorch.
  bf16-compiled         the same module under torch.compile.
  fp8-tensorwise        torchao.float8.convert_to_float8_training with the
                        "tensorwise" recipe (dynamic per-tensor scales, e4m3 forward,
                        e5m2 gradients), then torch.compile: the four linear layers'
                        GEMMs in FP8, their casts and amax reductions fused by Inductor;
                        attention, norms and activations BF16; BF16 master weights.
  fp8-rowwise           the same with torchao's "rowwise" recipe (per-row scales,
                        power-of-two, CUTLASS rowwise GEMM).
  fp8-tensorwise-eager  torchao tensorwise without torch.compile: every cast and amax
                        is its own kernel (the unfused variant).

torch.compile runs with dynamic shapes (parameters included), so one compilation
serves the grid; ``--static`` compiles every shape on its own, as a job with one
shape does (use it on a few shapes to check the dynamic numbers).

Per shape: fwd_ms and fwd_bwd_ms, medians of CUDA-event timings over --reps (at least
3, more for fast shapes) after 2 warm-ups (the first also compiles); the peak memory
allocated during the timed steps; for FP8, the relative error of the output against
the BF16 module (same weights). Rows are appended to --output as measured.

Usage (GPU machine; torchao carried as a wheel):
  python3 measure/layer_recipes.py --kind llama --recipe fp8-tensorwise \
      --grid fit,holdout --output rows.csv --deadline 120
Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import random
import statistics
import subprocess
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

HEAD_DIM = 128
KINDS = ("gpt", "llama")
RECIPES = ("bf16-eager", "bf16-compiled", "fp8-tensorwise", "fp8-rowwise",
           "fp8-tensorwise-eager")
COLUMNS = ["gpu", "driver", "torch", "torchao", "date", "kind", "recipe", "compile",
           "grid", "hidden", "heads", "kv_heads", "ffn_hidden", "tp", "seq_len",
           "micro_batch", "tokens", "fwd_ms", "fwd_bwd_ms", "reps", "spread",
           "peak_mem_gib", "first_call_s", "graphs", "attn", "rel_err",
           "flops_fwd_bwd", "fwd_bwd_queued_ms", "cpu_issue_ms", "queue_ms"]

# (hidden, tp, seq_len, micro_batch); heads = hidden / 128
FIT_HIDDEN = [2048, 4096, 8192, 16384]
FIT_TP = [1, 2, 4, 8]
FIT_TOK = [(2048, 1), (2048, 4)]
FIT_LONG = [(4096, 1, 8192, 1), (4096, 8, 8192, 1), (16384, 1, 8192, 1),
            (16384, 8, 8192, 1)]
HOLD_HIDDEN = [3072, 6144, 12288]
HOLD_TP = [1, 2, 4, 8]
HOLD_TOK = [(4096, 1), (2048, 3)]
# held out: 16384 tokens per micro-batch, twice the largest of the fit grid (the token
# count of a whole Llama 3 8B step of 2 x 8192 tokens)
# held out: one sequence per micro-batch, shapes on both sides of Inductor's mix-order
# reduction rule (rows >= max(4096, 2 h), rows x h >= 5 * 2**20, h <= 16384; rows = tokens)
ONE_SEQUENCE = [(2048, 2, 8192, 1), (2048, 4, 16384, 1), (3072, 4, 8192, 1),
                (4096, 1, 8192, 1), (4096, 2, 16384, 1), (4096, 4, 4096, 1),
                (5120, 4, 8192, 1), (5120, 8, 16384, 1), (6144, 8, 16384, 1),
                (8192, 8, 16384, 1)]
# held out: one sequence at wide norms (RMSNorm/LayerNorm widths 7168-12288)
WIDE_NORM = [(7168, 4, 16384, 1), (10240, 8, 32768, 1), (12288, 4, 32768, 1)]
TOKENS_16K = [(4096, 1, 8192, 2), (4096, 1, 2048, 8), (4096, 2, 8192, 2),
              (8192, 1, 8192, 2), (8192, 2, 8192, 2), (8192, 4, 4096, 4)]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def grid(name):
    if name == "fit":
        return [(h, t, s, b) for h in FIT_HIDDEN for t in FIT_TP
                for s, b in FIT_TOK] + FIT_LONG
    if name == "holdout":
        return [(h, t, s, b) for h in HOLD_HIDDEN for t in HOLD_TP
                for s, b in HOLD_TOK]
    if name == "check":                       # a few shapes for --static
        return [(2048, 8, 2048, 1), (4096, 2, 2048, 4), (12288, 1, 4096, 1)]
    if name == "small":                       # held-out shapes with h / tp < 1024
        return [(h, t, s, b) for h in HOLD_HIDDEN for t in HOLD_TP
                for s, b in HOLD_TOK if h // t < 1024]
    if name == "tokens16k":                   # held out: twice the fit grid's tokens
        return list(TOKENS_16K)
    if name == "onesequence":                 # held out: mix-order reduction or not
        return list(ONE_SEQUENCE)
    if name == "widenorm":                    # held out: mix-order kernel at wide norms
        return list(WIDE_NORM)
    if name == "smoke":
        return [(2048, 8, 2048, 1), (4096, 1, 2048, 1)]
    raise SystemExit(f"--grid: unknown grid {name!r} (fit, holdout, check, small, "
                     "tokens16k, onesequence, widenorm, smoke)")


def dims(kind, h):
    heads = h // HEAD_DIM
    if kind == "gpt":
        return heads, heads, 4 * h
    return heads, 8, 7 * h // 2


def shard_flops(kind, h, t, s, b):
    """Matmul FLOPs of the shard, fwd + bwd: 6 T sum(k n) + 12 T s h / t."""
    heads, kv, f = dims(kind, h)
    T = s * b
    hq, hk = heads // t, kv // t
    fc1 = (2 if kind == "llama" else 1) * f // t
    mats = [(h, (hq + 2 * hk) * HEAD_DIM), (hq * HEAD_DIM, h), (h, fc1), (f // t, h)]
    return 6.0 * T * sum(k * n for k, n in mats) + 12.0 * T * s * hq * HEAD_DIM


_CLASSES = {}


def shard_class(torch):
    """One module class for every shape (a new class per shape would make
    torch.compile recompile on the type); head counts are read from the weight
    shapes so that they stay symbolic under dynamic shapes."""
    if "Shard" in _CLASSES:
        return _CLASSES["Shard"]
    nn, F = torch.nn, torch.nn.functional
    d = HEAD_DIM

    class Shard(nn.Module):
        def __init__(self, kind, h, t, s, expand_kv):
            super().__init__()
            heads, kv, f = dims(kind, h)
            hq, hk = heads // t, kv // t
            bias = kind == "gpt"
            self.llama = kind == "llama"
            self.expand_kv = expand_kv
            norm = nn.LayerNorm if kind == "gpt" else nn.RMSNorm
            self.n1, self.n2 = norm(h), norm(h)
            self.qkv = nn.Linear(h, (hq + 2 * hk) * d, bias=bias)
            self.proj = nn.Linear(hq * d, h, bias=bias)
            self.fc1 = nn.Linear(h, (2 if self.llama else 1) * f // t, bias=bias)
            self.fc2 = nn.Linear(f // t, h, bias=bias)
            if self.llama:
                inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2).float() / d))
                ang = torch.outer(torch.arange(s).float(), inv)
                ang = torch.cat([ang, ang], dim=-1)
                self.register_buffer("cos", ang.cos(), persistent=False)
                self.register_buffer("sin", ang.sin(), persistent=False)

        def rope(self, x):
            x1, x2 = x.chunk(2, dim=-1)
            rot = torch.cat([-x2, x1], dim=-1)
            return x * self.cos.to(x.dtype) + rot * self.sin.to(x.dtype)

        def forward(self, x):
            bb, ss, h = x.shape
            hq = self.proj.weight.shape[1] // d
            hk = (self.qkv.weight.shape[0] - hq * d) // (2 * d)
            y = self.qkv(self.n1(x))
            q, k, v = y.split([hq * d, hk * d, hk * d], dim=-1)
            q = q.view(bb, ss, hq, d).transpose(1, 2)
            k = k.view(bb, ss, hk, d).transpose(1, 2)
            v = v.view(bb, ss, hk, d).transpose(1, 2)
            gqa = self.llama
            if self.llama:
                q, k = self.rope(q), self.rope(k)
                if self.expand_kv:
                    k = k.repeat_interleave(hq // hk, dim=1)
                    v = v.repeat_interleave(hq // hk, dim=1)
                    gqa = False
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
            x = x + self.proj(o.transpose(1, 2).reshape(bb, ss, hq * d))
            z = self.fc1(self.n2(x))
            if self.llama:
                g, u = z.chunk(2, dim=-1)
                z = F.silu(g) * u
            else:
                z = F.gelu(z, approximate="tanh")
            return x + self.fc2(z)

    _CLASSES["Shard"] = Shard
    return Shard


def build(torch, kind, h, t, s, expand_kv):
    return shard_class(torch)(kind, h, t, s, expand_kv)


def probe_gqa(torch):
    """True if the flash SDPA backend must get repeated KV heads (no native GQA)."""
    F = torch.nn.functional
    q = torch.randn(1, 8, 256, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 2, 256, 128, device="cuda", dtype=torch.bfloat16)
    try:
        F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        torch.cuda.synchronize()
        return False
    except Exception as e:                     # noqa: BLE001 - any refusal
        log(f"flash SDPA refused enable_gqa ({type(e).__name__}: {e}); repeating KV")
        return True


def sm_clock_hz(torch):
    """Max SM clock in Hz (for torch.cuda._sleep cycles); 1.98 GHz if unknown."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=30).stdout.split()
        return float(out[0]) * 1e6
    except Exception:                          # noqa: BLE001
        return 1.98e9


def driver_version():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                               "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30).stdout.strip().splitlines()[0]
    except Exception:                          # noqa: BLE001
        return ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=KINDS, required=True)
    ap.add_argument("--recipe", choices=RECIPES, required=True)
    ap.add_argument("--grid", default="fit,holdout")
    ap.add_argument("--output", required=True)
    ap.add_argument("--deadline", type=float, default=0, help="seconds; 0 = none")
    ap.add_argument("--static", action="store_true",
                    help="compile each shape with static shapes")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--target-ms", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard", default="0/1",
                    help="i/n: run every n-th shape from the i-th (parallel cache warm-up)")
    ap.add_argument("--skip-grid", default="",
                    help="grids whose shapes are left out (e.g. check,small)")
    ap.add_argument("--queue-ms", type=float, default=25.0,
                    help="GPU sleep queued before each queued-timing step (0 = skip)")
    args = ap.parse_args(argv)
    t_start = time.time()

    import torch
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)
    try:
        torch.backends.cuda.enable_cudnn_sdp(False)
    except AttributeError:
        pass
    compiled = args.recipe in ("bf16-compiled", "fp8-tensorwise", "fp8-rowwise")
    fp8 = args.recipe.startswith("fp8")
    ao_version = ""
    if fp8:
        import torchao
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        ao_version = torchao.__version__
        cfg = Float8LinearConfig.from_recipe_name(
            "rowwise" if args.recipe == "fp8-rowwise" else "tensorwise")
    if compiled:
        import torch._dynamo as dynamo
        for name, val in (("force_parameter_static_shapes", False),
                          ("force_nn_module_property_static_shapes", False),
                          ("recompile_limit", 256), ("cache_size_limit", 256),
                          ("accumulated_recompile_limit", 4096),
                          ("accumulated_cache_size_limit", 4096)):
            if hasattr(dynamo.config, name):
                setattr(dynamo.config, name, val)
    mode = "none" if not compiled else ("static" if args.static else "dynamic")
    expand_kv = probe_gqa(torch) if args.kind == "llama" else False
    attn = "flash" + ("+repeat_kv" if expand_kv else ("+gqa" if args.kind == "llama"
                                                       else ""))
    meta = {"gpu": torch.cuda.get_device_name(0), "driver": driver_version(),
            "torch": torch.__version__, "torchao": ao_version,
            "date": datetime.date.today().isoformat(), "kind": args.kind,
            "recipe": args.recipe, "compile": mode, "attn": attn}
    shapes = []
    for g in args.grid.split(","):
        shapes += [(g, *sh) for sh in grid(g)]
    random.Random(args.seed).shuffle(shapes)   # a deadline cuts a random subset
    try:
        si, sn = (int(v) for v in args.shard.split("/"))
        assert 0 <= si < sn
    except (ValueError, AssertionError):
        raise SystemExit(f"--shard: expected i/n with 0 <= i < n, got {args.shard!r}")
    skip = {sh for g in args.skip_grid.split(",") if g for sh in grid(g)}
    shapes = [sh for sh in shapes if tuple(sh[1:]) not in skip][si::sn]
    new = not os.path.exists(args.output) or os.path.getsize(args.output) == 0
    out = open(args.output, "a", newline="")
    w = csv.DictWriter(out, fieldnames=COLUMNS)
    if new:
        w.writeheader()
    fn = None
    if compiled and not args.static:
        fn = torch.compile(lambda m, x: m(x), dynamic=True)
    done = 0
    for gname, h, t, s, b in shapes:
        mod = x = gout = y = params = ref = run = None
        if args.deadline and time.time() - t_start > args.deadline:
            log(f"deadline: {done} of {len(shapes)} shapes done")
            break
        heads, kv, f = dims(args.kind, h)
        try:
            torch.manual_seed(args.seed)
            mod = build(torch, args.kind, h, t, s, expand_kv).cuda().to(torch.bfloat16)
            x = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16,
                            requires_grad=True)
            gout = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16)
            rel, ref = "", None
            if fp8:
                with torch.no_grad():
                    ref = mod(x).float()
                mod = convert_to_float8_training(mod, config=cfg)
            if compiled and args.static:
                torch._dynamo.reset()          # no automatic dynamic from the last shape
                step_fn = torch.compile(lambda m, x: m(x), dynamic=False)
            elif compiled:
                step_fn = fn
            else:
                step_fn = lambda m, x: m(x)    # noqa: E731
            params = list(mod.parameters())

            def run(ev=None):
                for p in params:
                    p.grad = None
                if x.grad is not None:
                    x.grad = None
                if ev:
                    ev[0].record()
                y = step_fn(mod, x)
                if ev:
                    ev[1].record()
                y.backward(gout)
                if ev:
                    ev[2].record()
                return y

            t0 = time.time()
            y = run()
            torch.cuda.synchronize()
            first = time.time() - t0
            if fp8:
                rel = float((y.float() - ref).norm() / ref.norm())
                del ref
            run()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            fwd, tot = [], []
            while True:
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                run(ev)
                torch.cuda.synchronize()
                fwd.append(ev[0].elapsed_time(ev[1]))
                tot.append(ev[0].elapsed_time(ev[2]))
                if len(tot) >= args.reps and (sum(tot) >= args.target_ms
                                              or len(tot) >= 30):
                    break
            med = statistics.median(tot)
            # Queued timing: a GPU sleep goes first, so the host issues the whole step
            # while the GPU waits; the events then time the kernels back to back, as
            # in a model whose host runs ahead. cpu_issue_ms > queue_ms flags a step
            # whose issue outlasted the sleep (then queued ~ synced).
            qtot, cpu = [], []
            if args.queue_ms > 0:
                cycles = int(args.queue_ms * 1e-3 * sm_clock_hz(torch))
                while len(qtot) < max(args.reps, min(len(tot), 15)):
                    ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                    torch.cuda._sleep(cycles)
                    c0 = time.perf_counter()
                    run(ev)
                    cpu.append((time.perf_counter() - c0) * 1e3)
                    torch.cuda.synchronize()
                    qtot.append(ev[0].elapsed_time(ev[2]))
            graphs = ""
            if compiled:
                from torch._dynamo.utils import counters
                graphs = counters["stats"]["unique_graphs"]
            row = dict(meta, grid=gname, hidden=h, heads=heads, kv_heads=kv,
                       ffn_hidden=f, tp=t, seq_len=s, micro_batch=b, tokens=s * b,
                       fwd_ms=f"{statistics.median(fwd):.4f}", fwd_bwd_ms=f"{med:.4f}",
                       reps=len(tot), spread=f"{(max(tot) - min(tot)) / med:.3f}",
                       peak_mem_gib=f"{torch.cuda.max_memory_allocated() / 2**30:.3f}",
                       first_call_s=f"{first:.2f}", graphs=graphs, rel_err=(
                           f"{rel:.4f}" if rel != "" else ""),
                       flops_fwd_bwd=f"{shard_flops(args.kind, h, t, s, b):.6e}",
                       fwd_bwd_queued_ms=(f"{statistics.median(qtot):.4f}" if qtot
                                          else ""),
                       cpu_issue_ms=f"{statistics.median(cpu):.3f}" if cpu else "",
                       queue_ms=args.queue_ms if qtot else "")
            w.writerow(row)
            out.flush()
            done += 1
            log(f"{args.kind} {args.recipe} h{h} tp{t} s{s}x{b}: {med:.3f} ms "
                f"({shard_flops(args.kind, h, t, s, b) / med / 1e9:.0f} TFLOP/s), "
                f"first {first:.1f} s, graphs {graphs}"
                + (f"; queued {statistics.median(qtot):.3f} ms, host issue "
                   f"{statistics.median(cpu):.2f} ms" if qtot else ""))
        except Exception as e:                 # noqa: BLE001 - record and go on
            log(f"FAILED {args.kind} {args.recipe} h{h} tp{t} s{s}x{b}: "
                f"{type(e).__name__}: {str(e)[:400]}")
        finally:
            mod = x = gout = y = params = ref = run = None   # noqa: F841 - free
            torch.cuda.empty_cache()
    out.close()
    log(f"{args.kind} {args.recipe}: {done} shapes in {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
