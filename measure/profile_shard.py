#!/usr/bin/env python3
"""Per-kernel GPU time of one compiled layer shard, BF16 and FP8, from the profiler.

Builds the shard of ``measure/layer_recipes.py`` (same module, same recipes: BF16 under
torch.compile, torchao float8 tensorwise under torch.compile, static shapes), runs a few
forward + backward steps under ``torch.profiler`` and writes, per recipe and shape, the
GPU time of every kernel name summed over the profiled steps and divided by their number.
Kernels are put in classes by name (attention, GEMM, other) so the two recipes can be set
side by side.

Usage (GPU machine; torchao carried as a wheel, see run_recipes_h200.sh):
  python3 measure/profile_shard.py --kind gpt --shape 4096,8,8192,1 --shape 4096,8,2048,4 \
      --output kernels.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import layer_recipes as LR  # noqa: E402


def kernel_class(name):
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if "gemm" in n or "sm90_xmma" in n or "cutlass" in n or "nvjet" in n or "mma" in n:
        return "gemm"
    return "other"


def autotuners():
    """Inductor's compiled Triton kernels now alive (CachingAutotuner objects)."""
    import gc
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:                        # an older layout: no metadata
        return []
    return [o for o in gc.get_objects() if isinstance(o, CachingAutotuner)]


def kernel_meta(tuners):
    """Name, launch configuration, registers and spills of each compiled kernel."""
    rows = []
    for k in tuners:
        name = (getattr(k, "inductor_meta", None) or {}).get("kernel_name") \
            or getattr(getattr(k, "fn", None), "__name__", "?")
        for ln in getattr(k, "launchers", None) or []:
            cfg = getattr(ln, "config", None)
            kw = dict(getattr(cfg, "kwargs", {}) or {})
            rows.append({"kernel": name,
                         "config": ";".join(f"{a}={v}" for a, v in sorted(kw.items())),
                         "num_warps": getattr(cfg, "num_warps", ""),
                         "num_stages": getattr(cfg, "num_stages", ""),
                         "n_regs": getattr(ln, "n_regs", ""),
                         "n_spills": getattr(ln, "n_spills", ""),
                         "shared": getattr(ln, "shared", ""),
                         "src": getattr(getattr(k, "fn", None), "src", "")})
    return rows


def profile(kind, recipe, h, t, s, b, steps):
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    torch.manual_seed(0)
    mod = LR.build(torch, kind, h, t, s, False).cuda().to(torch.bfloat16)
    if recipe.startswith("fp8-"):
        mod = convert_to_float8_training(mod, config=Float8LinearConfig.from_recipe_name(
            recipe[len("fp8-"):]))
    torch._dynamo.reset()
    fn = torch.compile(lambda m, x: m(x), dynamic=False)
    x = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(b, s, h, device="cuda", dtype=torch.bfloat16)

    def step():
        for p in mod.parameters():
            p.grad = None
        x.grad = None
        fn(mod, x).backward(g)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(steps):
        step()
    e1.record()
    torch.cuda.synchronize()
    wall = e0.elapsed_time(e1) / steps
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    per = defaultdict(float)
    count = defaultdict(int)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            per[ev.name] += ev.device_time_total if hasattr(ev, "device_time_total") \
                else ev.cuda_time_total
            count[ev.name] += 1
    return wall, {k: (v / steps / 1e3, count[k] // steps) for k, v in per.items()}, \
        autotuners()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="gpt", choices=("gpt", "llama"))
    ap.add_argument("--shape", action="append", required=True,
                    help="h,t,s,b (repeatable)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--recipe", action="append", choices=("bf16-compiled", "fp8-tensorwise", "fp8-rowwise"),
                    help="recipe to run (repeatable; default both)")
    ap.add_argument("--output", required=True)
    ap.add_argument("--meta", help="also write each new Triton kernel's launch config, "
                    "registers and spills to this CSV, and the source of the norm-backward "
                    "persistent kernels beside it")
    args = ap.parse_args(argv)
    seen = set()
    meta_fh = open(args.meta, "w", newline="") if args.meta else None
    meta_w = csv.writer(meta_fh) if meta_fh else None
    if meta_w:
        meta_w.writerow(["kind", "recipe", "hidden", "tp", "seq_len", "micro_batch",
                         "kernel", "config", "num_warps", "num_stages", "n_regs",
                         "n_spills", "shared"])
    with open(args.output, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kind", "recipe", "hidden", "tp", "seq_len", "micro_batch",
                    "step_ms_events", "kernel_class", "kernel", "calls_per_step",
                    "ms_per_step"])
        for shp in args.shape:
            h, t, s, b = (int(v) for v in shp.split(","))
            for recipe in args.recipe or ("bf16-compiled", "fp8-tensorwise"):
                wall, kern, tuners = profile(args.kind, recipe, h, t, s, b, args.steps)
                new = [k for k in tuners if id(k) not in seen]
                seen.update(id(k) for k in tuners)
                if meta_w:
                    for m in kernel_meta(new):
                        meta_w.writerow([args.kind, recipe, h, t, s, b] + [
                            m[c] for c in ("kernel", "config", "num_warps", "num_stages",
                                           "n_regs", "n_spills", "shared")])
                        if "norm_backward" in m["kernel"] and m["kernel"].startswith(
                                "triton_per") and m["src"]:
                            Path(args.meta).with_name(
                                f"src_{args.kind}_{h}_{t}_{s}x{b}_{m['kernel']}.py.txt"
                            ).write_text(m["src"])
                    meta_fh.flush()
                tot = defaultdict(float)
                for name, (ms, calls) in sorted(kern.items(), key=lambda kv: -kv[1][0]):
                    tot[kernel_class(name)] += ms
                    w.writerow([args.kind, recipe, h, t, s, b, round(wall, 4),
                                kernel_class(name), name[:160], calls, round(ms, 5)])
                fh.flush()
                print(f"{args.kind} {recipe} {h}/{t} s{s} b{b}: step {wall:.3f} ms; "
                      + ", ".join(f"{k} {v:.3f}" for k, v in sorted(tot.items())),
                      file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
