#!/usr/bin/env python3
"""What hiding a TP collective behind a GEMM costs the GEMM, on one GPU.

Frameworks hide tensor-parallel collectives behind the layer's GEMMs (Transformer
Engine's userbuffers: "bulk" and "pipeline" overlaps run the collective's copies in
kernels on a few SMs, ``num_sm``; "ring_exchange" and PyTorch's async TP send chunks
peer to peer with copy-engine copies). The collective then runs beside the GEMM, which
loses SMs and HBM bandwidth to it. Across GPUs that traffic goes over NVLink; on its own
GPU each byte sent is read from HBM and each byte received written to it, which is the
part this script reproduces with a local copy (read + write) running beside the GEMM.

Per GEMM shape (the TP shards of the linear layers of Llama 3 70B at TP4 and Llama 3 8B
at TP8, 8192-token sequences) and precision (BF16 ``torch.mm``; FP8 e4m3
``torch._scaled_mm`` with per-tensor scales, BF16 output, as torchao and Transformer
Engine call it), it times:

* the GEMM alone, whole and split into ``chunks`` equal row blocks (as ring exchange
  and async TP split it, one block per rank);
* the GEMM while a copy runs on another stream: ``ce`` (a device-to-device
  ``copy_``, served by a copy engine) or ``sm-N`` (a Triton copy kernel on N programs,
  one per SM, as userbuffers' ``num_sm``), the copy looping for longer than the GEMMs;
* the copy's own bandwidth alone and beside the GEMM (read + write bytes per second).

And, as evidence for the power limit, 8 s of back-to-back 8192^3 GEMMs in BF16 and FP8
while ``nvidia-smi`` samples power draw and SM clock every 200 ms.

Rows go to --output (CSV), power samples to --power. Progress to stderr.

Usage (GPU machine):
  python3 measure/overlap_contention.py --output overlap.csv --power power.csv
  python3 measure/overlap_contention.py --smoke --output smoke.csv
"""
from __future__ import annotations

import argparse
import csv
import datetime
import statistics
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl

# (name, M tokens, K, N): shards of the linear layers, Llama 3 70B TP4 (h 8192, ffn
# 28672, 8 KV heads of 128) with one 8192-token sequence, and Llama 3 8B TP8 (h 4096,
# ffn 14336) with 12 sequences of 8192 (torchtitan's async-TP benchmark).
SHAPES = [
    ("70b-tp4-qkv", 8192, 8192, (8192 + 2 * 1024) // 4),
    ("70b-tp4-proj", 8192, 8192 // 4, 8192),
    ("70b-tp4-fc1", 8192, 8192, 2 * 28672 // 4),
    ("70b-tp4-fc2", 8192, 28672 // 4, 8192),
    ("8b-tp8-fc1", 12 * 8192, 4096, 2 * 14336 // 8),
    ("8b-tp8-fc2", 12 * 8192, 14336 // 8, 4096),
]
TRAFFIC = ["none", "ce", "sm-2", "sm-8", "sm-16", "sm-24"]
# copy-engine copies held to a rate (read + write GB/s) by GPU sleeps between 16 MiB
# pieces: a peer-to-peer exchange over NVLink4 moves at most ~450 GB/s each way, i.e.
# ~900 GB/s of HBM traffic on each GPU; and SM copies beside GEMMs that leave those SMs
# free (PyTorch's cuBLAS SM carve-out, as Transformer Engine's set_sm_margin does)
TRAFFIC_2 = ["none", "ce-rate-450", "ce-rate-900", "ce-rate-1800", "carve-8", "carve-16",
             "carve-24"]
PIECE = 16 * 2**20
COPY_BYTES = 256 * 2**20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


@triton.jit
def _copy(src, dst, n, per_prog, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * per_prog
    for off in range(0, per_prog, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        mask = idx < n
        tl.store(dst + idx, tl.load(src + idx, mask=mask), mask=mask)


def copier(kind, src, dst, clock_hz=1.5e9):
    if kind == "ce":
        return lambda: dst.copy_(src)
    if kind.startswith("ce-rate-"):
        rate = float(kind.split("-")[2]) * 1e9            # read + write bytes per second
        n = PIECE // src.element_size()
        pieces = [(src[i:i + n], dst[i:i + n]) for i in range(0, src.numel(), n)]
        # a piece moves 2 x 16 MiB; at ~4 TB/s it takes ~8 us; sleep the rest
        gap = max(0.0, 2 * PIECE / rate - 2 * PIECE / 4.0e12)
        cycles = int(gap * clock_hz)

        def run():
            for a, b in pieces:
                b.copy_(a)
                torch.cuda._sleep(cycles)
        return run
    if kind.startswith("carve-"):
        kind = "sm-" + kind.split("-")[1]
    progs = int(kind.split("-")[1])
    n = src.numel()
    per = -(-n // progs)
    per = -(-per // 4096) * 4096
    return lambda: _copy[(progs,)](src, dst, n, per, BLOCK=4096)


def gemm_fn(dtype, m, k, n, chunks):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        blocks = a.chunk(chunks, 0)
        b = w.t()
        return lambda: [torch.mm(x, b) for x in blocks]
    a8 = a.to(torch.float8_e4m3fn)
    b8 = w.to(torch.float8_e4m3fn).t()          # column-major, as _scaled_mm needs
    one = torch.ones((), device="cuda", dtype=torch.float32)
    blocks = a8.chunk(chunks, 0)
    return lambda: [torch._scaled_mm(x, b8, scale_a=one, scale_b=one,
                                     out_dtype=torch.bfloat16) for x in blocks]


def enqueue(fn, n, stream):
    """Issue ``fn`` ``n`` times on ``stream``, each between two timing events; return the
    event pairs (read them after a synchronize)."""
    out = []
    with torch.cuda.stream(stream):
        for _ in range(n):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            fn()
            e1.record(stream)
            out.append((e0, e1))
    return out


def timed(fn, reps, stream=None):
    """Median ms of fn over reps, CUDA events on ``stream``."""
    out = enqueue(fn, reps, stream or torch.cuda.current_stream())
    torch.cuda.synchronize()
    return statistics.median(e0.elapsed_time(e1) for e0, e1 in out)


def beside(gemm, copy, gemm_ms, copy_ms, reps):
    """(GEMM ms while the copy runs, copy ms while the GEMMs run)."""
    ga, cb = torch.cuda.Stream(), torch.cuda.Stream()
    # copies for ~3x the GEMMs' span, so the GEMMs run entirely beside them
    n_copy = max(4, int(3 * reps * gemm_ms / max(copy_ms, 1e-3)) + 1)
    torch.cuda.synchronize()
    ev = enqueue(copy, n_copy, cb)
    # the copies were issued first; the GEMM stream waits ~0.5 ms more on the GPU
    with torch.cuda.stream(ga):
        torch.cuda._sleep(int(1e6))
    g = enqueue(gemm, reps, ga)
    torch.cuda.synchronize()
    gms = statistics.median(e0.elapsed_time(e1) for e0, e1 in g)
    # copies that ran while the GEMMs did: those between the first GEMM start and last end
    t_start, t_end = g[0][0], g[-1][1]
    inside = [e0.elapsed_time(e1) for e0, e1 in ev
              if t_start.elapsed_time(e0) >= 0 and e1.elapsed_time(t_end) >= 0]
    cms = statistics.median(inside) if inside else float("nan")
    return gms, cms, len(inside)


def power_trace(path, seconds):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16).t()
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    fns = {"bf16": lambda: torch.mm(a, b),
           "fp8": lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                           out_dtype=torch.bfloat16)}
    rows = []
    for name, fn in fns.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,power.draw,clocks.sm,clocks.mem,"
             "temperature.gpu,clocks_event_reasons.active", "--format=csv,noheader",
             "-lms", "200"], stdout=subprocess.PIPE, text=True)
        t0 = time.time()
        n = 0
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        while time.time() - t0 < seconds:
            for _ in range(50):
                fn()
            n += 50
            torch.cuda.synchronize()
        e1.record()
        torch.cuda.synchronize()
        smi.terminate()
        out, _ = smi.communicate()
        ms = e0.elapsed_time(e1)
        tflops = 2 * 8192**3 * n / (ms * 1e-3) / 1e12
        log(f"power {name}: {n} GEMMs, {tflops:.0f} TFLOP/s")
        for line in out.strip().splitlines():
            f = [x.strip() for x in line.split(",")]
            if len(f) >= 6:
                rows.append({"dtype": name, "tflops_mean": round(tflops, 1),
                             "timestamp": f[0], "power_w": f[1], "sm_clock_mhz": f[2],
                             "mem_clock_mhz": f[3], "temp_c": f[4],
                             "event_reasons": f[5]})
    if not rows:
        log("power: nvidia-smi gave no samples")
        return
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--power", default="")
    ap.add_argument("--power-seconds", type=float, default=8.0)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--second", action="store_true",
                    help="rate-held copy-engine copies and SM copies beside GEMMs with an "
                         "SM carve-out, instead of the unthrottled copies")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    shapes = SHAPES[:1] if args.smoke else SHAPES
    traffic = ["none", "ce", "sm-16"] if args.smoke else (
        TRAFFIC_2 if args.second else TRAFFIC)
    src = torch.empty(COPY_BYTES // 2, device="cuda", dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__}
    copy_alone = {}
    for kind in traffic[1:]:
        c = copier(kind, src, dst)
        c()
        torch.cuda.synchronize()
        for _ in range(3):
            c()
        copy_alone[kind] = timed(c, 10)
        log(f"copy {kind}: {2 * COPY_BYTES / copy_alone[kind] / 1e6:.0f} GB/s read+write")
    fields = ["date", "gpu", "torch", "triton", "shape", "m", "k", "n", "dtype", "chunks",
              "traffic", "gemm_ms", "gemm_alone_ms", "gemm_carved_alone_ms", "slowdown", "tflops",
              "copy_ms", "copy_alone_ms", "copy_gbps", "copy_alone_gbps", "copies_inside"]
    with open(args.output, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for name, m, k, n in shapes:
            for dtype in ("bf16", "fp8"):
                for chunks in (1, 4, 8):
                    g = gemm_fn(dtype, m, k, n, chunks)
                    for _ in range(3):
                        g()
                    alone = timed(g, args.reps)
                    for kind in traffic:
                        alone_c = float("nan")
                        carve = int(kind.split("-")[1]) if kind.startswith("carve-") else 0
                        if carve and not hasattr(torch._C, "_set_sm_carveout_experimental"):
                            log("no torch._C._set_sm_carveout_experimental: carve rows skipped")
                            continue
                        if carve:
                            torch._C._set_sm_carveout_experimental(carve)
                            g = gemm_fn(dtype, m, k, n, chunks)
                            for _ in range(3):
                                g()
                            alone_c = timed(g, args.reps)
                            gms, cms, inside = beside(g, copier(kind, src, dst), alone_c,
                                                      copy_alone[kind], args.reps)
                            try:
                                torch._C._set_sm_carveout_experimental(None)
                            except TypeError:
                                torch._C._set_sm_carveout_experimental(0)
                            g = gemm_fn(dtype, m, k, n, chunks)
                        elif kind == "none":
                            gms, cms, inside = alone, float("nan"), 0
                        else:
                            gms, cms, inside = beside(g, copier(kind, src, dst), alone,
                                                      copy_alone[kind], args.reps)
                        ca = copy_alone.get(kind, float("nan"))
                        row = dict(meta, shape=name, m=m, k=k, n=n, dtype=dtype,
                                   chunks=chunks, traffic=kind, gemm_ms=round(gms, 4),
                                   gemm_alone_ms=round(alone, 4),
                                   gemm_carved_alone_ms=round(alone_c, 4),
                                   slowdown=round(gms / alone - 1, 4),
                                   tflops=round(2 * m * k * n / (gms * 1e-3) / 1e12, 1),
                                   copy_ms=round(cms, 4), copy_alone_ms=round(ca, 4),
                                   copy_gbps=round(2 * COPY_BYTES / cms / 1e6, 1),
                                   copy_alone_gbps=round(2 * COPY_BYTES / ca / 1e6, 1),
                                   copies_inside=inside)
                        w.writerow(row)
                        fh.flush()
                        log(f"{name} {dtype} x{chunks} {kind}: {gms:.3f} ms "
                            f"({gms / alone - 1:+.1%}), copy {row['copy_gbps']} GB/s")
    if args.power:
        power_trace(args.power, args.power_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
