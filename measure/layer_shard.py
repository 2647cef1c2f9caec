#!/usr/bin/env python3
"""Time ONE tensor-parallel shard of a GPT transformer layer on one GPU.

Megatron-style split (Shoeybi et al. 2019) for a TP degree t: the shard holds
a/t heads, the QKV weight h x 3h/t and the first MLP weight h x 4h/t (split by
columns), the attention output weight h/t x h and the second MLP weight
4h/t x h (split by rows). One process, one GPU, no communication (the four
AllReduces of a real TP layer are left out), no activation recomputation, no
dropout. LayerNorms, biases, GeLU (tanh) and both residual adds are included;
causal attention goes through torch.nn.functional.scaled_dot_product_attention
restricted to its flash backend. Tokens per micro-batch = seq_len x micro_batch.

Precisions:
  bf16  everything in bf16 (parameters, activations, GEMMs).
  fp8   the four linear layers' GEMMs in fp8 through torch._scaled_mm with
        per-tensor scales, forward and backward (a custom autograd Function:
        activations and weights in e4m3, output gradients in e5m2 where the
        installed torch allows e5m2 x e4m3, else e4m3; dgrad and wgrad are
        _scaled_mm calls too); fprop uses fast accumulation, dgrad/wgrad do
        not, as Transformer Engine does. Scales are computed once from the
        first (warm-up) pass and then kept, like a delayed-scaling recipe, so
        no amax reduction is timed; each quantisation is an unfused eager
        multiply + cast (Transformer Engine fuses these). Attention, LayerNorm,
        GeLU and the residual adds stay bf16; master weights and their
        gradients are bf16.

Per shape and precision it records (CUDA events, median of --reps timed
repetitions after --warmup untimed ones; more repetitions for fast shapes):
  fwd_ms, fwd_bwd_ms  the whole shard, forward alone (events inside the same
                      repetitions) and forward + backward;
  qkv_ms, attn_ms, proj_ms, fc1_ms, fc2_ms, other_ms
                      each component alone, forward + backward with its own
                      input and output-gradient tensors: the four linear layers
                      (GEMM + bias, plus the fp8 casts in fp8), the attention
                      core (split of the QKV output into heads, flash attention,
                      merge of the heads), and the rest (two LayerNorms, GeLU,
                      two residual adds).
The convenience column flops_narayanan_fwd_bwd = 72*B*s*h^2*(1+s/(6h))/t
(Narayanan et al. 2021 per layer, forward + backward, no recomputation, no
logits; B*s = tokens) is the only derived quantity written.

Usage (on a GPU machine):
  python3 measure/layer_shard.py --grid fit --output layer_fit.csv
  python3 measure/layer_shard.py --grid holdout --output layer_holdout.csv
  python3 measure/layer_shard.py --gemm-peak gemm_peak.csv --grid none
Progress goes to stderr; rows are appended and flushed as they are measured.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import gc
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

COLUMNS = ["gpu", "driver", "torch", "cuda", "date", "precision", "hidden",
           "heads", "tp", "seq_len", "micro_batch", "tokens", "fwd_ms",
           "fwd_bwd_ms", "qkv_ms", "attn_ms", "proj_ms", "fc1_ms", "fc2_ms",
           "other_ms", "reps", "flops_narayanan_fwd_bwd"]

HEAD_DIM = 128


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def narayanan_flops(hidden, tp, seq_len, tokens):
    """72*B*s*h^2*(1+s/(6h))/tp: one layer, fwd+bwd, no recomputation."""
    return 72.0 * tokens * hidden ** 2 * (1.0 + seq_len / (6.0 * hidden)) / tp


# ----------------------------------------------------------------- grids
FIT_HIDDEN = [2048, 4096, 5120, 8192, 12288, 16384, 20480, 25600]
FIT_TP = [1, 2, 4, 8]
FIT_MAIN = [(2048, 1), (2048, 2), (2048, 4), (2048, 8)]     # (seq_len, micro_batch)
FIT_SEQ = [(4096, 1), (8192, 1)]
HOLD_HIDDEN = [3072, 6144, 10240, 14336]
HOLD_TP = [1, 2, 4, 8]
HOLD_TOK = [(3072, 1), (2048, 3), (3072, 4), (4096, 3)]     # 3072, 6144, 12288, 12288


def _ends(v, axis):
    return v in (axis[0], axis[-1])


def grid(name, seq_tp=None):
    """List of (hidden, heads, tp, seq_len, micro_batch), in run order.

    fit: the main grid (seq 2048, micro-batch 1..8) first, corners of the
    (hidden, tp, tokens) box first, then edges, then the interior; then the
    seq-length points (4096 x 1, 8192 x 1) for TP in seq_tp (all by default),
    TP 1 and 8 before 2 and 4. A run cut short by --deadline so loses
    interior and seq-length points first, not the ends of an axis.
    fit_seq: only those seq-length points (for a run split over two calls).
    """
    out = []
    if name in ("fit", "fit_seq"):
        main = []
        toks = [s * b for s, b in FIT_MAIN]
        for h in FIT_HIDDEN:
            for t in FIT_TP:
                if (h // HEAD_DIM) % t:
                    continue
                for s, b in FIT_MAIN:
                    inner = (not _ends(h, FIT_HIDDEN)) + (not _ends(t, FIT_TP)) \
                        + (not _ends(s * b, toks))
                    main.append((inner, h, t, s, b))
        main.sort(key=lambda r: (r[0], r[1], r[2], r[3] * r[4]))
        if name == "fit":
            out += [(h, h // HEAD_DIM, t, s, b) for _, h, t, s, b in main]
        seq_tp = FIT_TP if seq_tp is None else seq_tp
        order = sorted(seq_tp, key=lambda t: (not _ends(t, FIT_TP), t))
        for t in order:
            for h in FIT_HIDDEN:
                if (h // HEAD_DIM) % t:
                    continue
                for s, b in FIT_SEQ:
                    out.append((h, h // HEAD_DIM, t, s, b))
    elif name == "holdout":
        for h in HOLD_HIDDEN:
            for t in HOLD_TP:
                if (h // HEAD_DIM) % t:
                    continue
                for s, b in HOLD_TOK:
                    out.append((h, h // HEAD_DIM, t, s, b))
    elif name == "smoke":
        out = [(2048, 16, 1, 2048, 1), (4096, 32, 8, 2048, 2)]
    elif name == "tiny":                           # CPU logic test only
        out = [(256, 2, 1, 64, 2), (256, 2, 2, 32, 1)]
    elif name != "none":
        raise SystemExit(f"unknown grid {name}")
    return out


# ----------------------------------------------------------------- environment
def driver_version():
    try:
        import pynvml
        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                            "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        return r.stdout.strip().splitlines()[0]
    except Exception:
        return "unknown"


class Bench:
    """Timing with CUDA events (or perf_counter on CPU, for logic tests)."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.cuda = device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def event(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def ms(self, a, b):
        if self.cuda:
            return a.elapsed_time(b)
        return (b - a) * 1e3

    def run(self, step, warmup, reps, target_ms=150.0, max_reps=30):
        """step() -> list of events (first .. last); returns medians of the
        intervals between consecutive events and of first->last, and reps."""
        for _ in range(warmup):
            step(self)
        self.sync()
        # one more untimed pass to size the repetitions
        t0 = time.perf_counter()
        step(self)
        self.sync()
        one = (time.perf_counter() - t0) * 1e3
        n = max(reps, min(max_reps, int(target_ms / max(one, 1e-3))))
        evs = [step(self) for _ in range(n)]
        self.sync()
        parts = list(zip(*[[self.ms(e[i], e[i + 1]) for i in range(len(e) - 1)]
                           for e in evs]))
        total = [self.ms(e[0], e[-1]) for e in evs]
        return [statistics.median(p) for p in parts], statistics.median(total), n


# ----------------------------------------------------------------- fp8
class Fp8:
    """fp8 support of the installed torch, probed once."""

    def __init__(self, torch, device):
        self.torch = torch
        self.ok = False
        self.why = ""
        self.gdtype = None
        self.note = ""
        try:
            self.e4m3 = torch.float8_e4m3fn
            self.e5m2 = torch.float8_e5m2
        except AttributeError as e:
            self.why = f"no float8 dtypes in this torch: {e}"
            return
        self.max = {self.e4m3: float(torch.finfo(self.e4m3).max),
                    self.e5m2: float(torch.finfo(self.e5m2).max)}
        one = torch.ones((), device=device, dtype=torch.float32)

        def mm(a_dt, b_dt, bias, fast):
            a = torch.randn(64, 32, device=device).to(a_dt)
            b = torch.randn(48, 32, device=device).to(b_dt)
            bb = torch.zeros(48, device=device, dtype=torch.bfloat16) if bias else None
            y = torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, bias=bb,
                             out_dtype=torch.bfloat16, use_fast_accum=fast)
            if isinstance(y, tuple):
                y = y[0]
            ref = a.float() @ b.float().t()
            err = (y.float() - ref).abs().max().item()
            if not err <= 1e-2 * ref.abs().max().item() + 1e-2:
                raise RuntimeError(f"wrong result, max error {err}")
            return y

        try:
            mm(self.e4m3, self.e4m3, True, True)
            mm(self.e4m3, self.e4m3, False, False)
        except Exception as e:  # noqa: BLE001
            self.why = f"torch._scaled_mm e4m3 x e4m3 failed: {type(e).__name__}: {e}"
            return
        try:
            mm(self.e5m2, self.e4m3, False, False)
            self.gdtype = self.e5m2
            self.note = "grads e5m2 (dgrad/wgrad e5m2 x e4m3)"
        except Exception as e:  # noqa: BLE001
            self.gdtype = self.e4m3
            self.note = (f"grads e4m3 (e5m2 x e4m3 refused: "
                         f"{type(e).__name__}: {str(e)[:120]})")
        self.ok = True

    def scale_for(self, t, dtype, margin=0.9):
        """Per-tensor scale (fp32, on device) mapping amax to margin*max."""
        amax = t.detach().abs().amax().float().clamp_min(1e-12)
        s = (self.max[dtype] * margin) / amax
        return s, 1.0 / s

    def quant(self, t, scale, dtype):
        return (t * scale).to(dtype)


def make_fp8_fn(torch, fp8):
    bf16 = torch.bfloat16

    class Fp8LinearFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b, st):
            if st.sx is None:                       # first pass: set scales
                st.sx, st.isx = fp8.scale_for(x, fp8.e4m3)
                st.sw, st.isw = fp8.scale_for(w, fp8.e4m3)
            x8 = fp8.quant(x, st.sx, fp8.e4m3)
            w8 = fp8.quant(w, st.sw, fp8.e4m3)
            y = torch._scaled_mm(x8, w8.t(), scale_a=st.isx, scale_b=st.isw,
                                 bias=b, out_dtype=bf16, use_fast_accum=True)
            if isinstance(y, tuple):
                y = y[0]
            ctx.save_for_backward(x8, w8)
            ctx.st = st
            ctx.has_bias = b is not None
            return y

        @staticmethod
        def backward(ctx, g):
            x8, w8 = ctx.saved_tensors
            st = ctx.st
            g = g.contiguous()
            if st.sg is None:
                st.sg, st.isg = fp8.scale_for(g, fp8.gdtype)
            g8 = fp8.quant(g, st.sg, fp8.gdtype)
            w8t = w8.t().contiguous()                # [K, N]
            dx = torch._scaled_mm(g8, w8t.t(), scale_a=st.isg, scale_b=st.isw,
                                  out_dtype=bf16, use_fast_accum=False)
            g8t = g8.t().contiguous()                # [N, M]
            x8t = x8.t().contiguous()                # [K, M]
            dw = torch._scaled_mm(g8t, x8t.t(), scale_a=st.isg, scale_b=st.isx,
                                  out_dtype=bf16, use_fast_accum=False)
            if isinstance(dx, tuple):
                dx, dw = dx[0], dw[0]
            db = g.sum(0) if ctx.has_bias else None
            return dx, dw, db, None

    return Fp8LinearFn


# ----------------------------------------------------------------- the shard
def build(torch, device, h, a, t, s, b, precision, fp8):
    import torch.nn.functional as F
    dt = torch.bfloat16
    hp, fp, ap = h // t, 4 * h // t, a // t
    d = h // a
    T = s * b

    def P(*shape, std=0.02):
        if std:
            w = torch.randn(*shape, device=device, dtype=dt) * std
        else:
            w = torch.zeros(*shape, device=device, dtype=dt)
        return torch.nn.Parameter(w)

    p = {
        "ln1_w": torch.nn.Parameter(torch.ones(h, device=device, dtype=dt)),
        "ln1_b": P(h, std=0),
        "ln2_w": torch.nn.Parameter(torch.ones(h, device=device, dtype=dt)),
        "ln2_b": P(h, std=0),
        "qkv_w": P(3 * hp, h), "qkv_b": P(3 * hp, std=0),
        "proj_w": P(h, hp), "proj_b": P(h, std=0),
        "fc1_w": P(fp, h), "fc1_b": P(fp, std=0),
        "fc2_w": P(h, fp), "fc2_b": P(h, std=0),
    }

    if precision == "fp8":
        Fn = make_fp8_fn(torch, fp8)

        class St:
            sx = isx = sw = isw = sg = isg = None

        states = {}

        def reset():
            # scales are set again from the next (warm-up) pass's tensors
            for k in ("qkv", "proj", "fc1", "fc2"):
                states[k] = St()

        reset()

        def lin(name, x):
            return Fn.apply(x, p[name + "_w"], p[name + "_b"], states[name])
    else:
        def reset():
            pass

        def lin(name, x):
            return F.linear(x, p[name + "_w"], p[name + "_b"])

    def attn_core(qkv):
        # qkv [b*s, 3*hp] (b-major tokens) -> heads -> flash -> [b*s, hp]
        q, k, v = qkv.view(b, s, ap, 3, d).unbind(3)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        return o.transpose(1, 2).reshape(T, hp)

    def ln(x, i):
        return F.layer_norm(x, (h,), p[f"ln{i}_w"], p[f"ln{i}_b"])

    def layer(x):
        y = ln(x, 1)
        ctx = attn_core(lin("qkv", y))
        x2 = x + lin("proj", ctx)
        z = F.gelu(lin("fc1", ln(x2, 2)), approximate="tanh")
        return x2 + lin("fc2", z)

    def rest(x, po, f1, f2):
        # the layer's non-GEMM, non-attention work: 2 LayerNorms, GeLU, 2 adds
        y1 = ln(x, 1)
        x2 = x + po
        y2 = ln(x2, 2)
        gl = F.gelu(f1, approximate="tanh")
        out = x2 + f2
        return [y1, y2, gl, out]

    return p, lin, attn_core, layer, rest, reset


def measure_shape(torch, bench, device, h, a, t, s, b, precision, fp8, args):
    from contextlib import nullcontext
    dt = torch.bfloat16
    T = s * b
    hp, fp = h // t, 4 * h // t
    p, lin, attn_core, layer, rest, reset = build(torch, device, h, a, t, s, b,
                                           precision, fp8)
    params = list(p.values())
    if bench.cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        flash = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)  # noqa: E731
    else:
        flash = nullcontext

    def rnd(*shape, rg=False, std=1.0):
        x = torch.randn(*shape, device=device, dtype=dt) * std
        return x.requires_grad_(rg)

    res = {}
    with flash():
        # whole shard: forward + backward, forward time from the same reps
        x = rnd(T, h, rg=True)
        gout = rnd(T, h)

        def full(bn):
            for q in params:
                q.grad = None
            x.grad = None  # noqa: F821 (deleted after use)
            e0 = bn.event()
            y = layer(x)  # noqa: F821
            e1 = bn.event()
            y.backward(gout)  # noqa: F821
            e2 = bn.event()
            return [e0, e1, e2]

        (fwd, bwd), tot, reps = bench.run(full, args.warmup, args.reps)
        res.update(fwd_ms=fwd, fwd_bwd_ms=tot, reps=reps)
        del x, gout
        for q in params:
            q.grad = None

        def comp(inputs, fn, grads):
            reset()

            def step(bn):
                for q in params:
                    q.grad = None
                for i in inputs:
                    i.grad = None
                e0 = bn.event()
                outs = fn(*inputs)
                if not isinstance(outs, (list, tuple)):
                    outs = [outs]
                torch.autograd.backward(outs, grads)
                e1 = bn.event()
                return [e0, e1]
            _, tm, _ = bench.run(step, args.warmup, args.reps)
            return tm

        # std ~ the scale of each tensor in the layer, for sane fp8 scales
        res["qkv_ms"] = comp([rnd(T, h, rg=True)], lambda i: lin("qkv", i),
                             [rnd(T, 3 * hp)])
        res["attn_ms"] = comp([rnd(T, 3 * hp, rg=True)], attn_core, [rnd(T, hp)])
        res["proj_ms"] = comp([rnd(T, hp, rg=True)], lambda i: lin("proj", i),
                              [rnd(T, h)])
        res["fc1_ms"] = comp([rnd(T, h, rg=True)], lambda i: lin("fc1", i),
                             [rnd(T, fp)])
        res["fc2_ms"] = comp([rnd(T, fp, rg=True, std=0.5)],
                             lambda i: lin("fc2", i), [rnd(T, h)])
        res["other_ms"] = comp(
            [rnd(T, h, rg=True), rnd(T, h, rg=True), rnd(T, fp, rg=True),
             rnd(T, h, rg=True)], rest,
            [rnd(T, h), rnd(T, h), rnd(T, fp), rnd(T, h)])
    return res


def gemm_peak(torch, bench, device, fp8, meta, path, sizes):
    rows = []
    dt = torch.bfloat16
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=dt)
        bm = torch.randn(n, n, device=device, dtype=dt)
        cases = [("bf16", None, lambda: torch.mm(a, bm))]  # noqa: F821
        if fp8 is not None and fp8.ok:
            a8 = a.to(fp8.e4m3)
            b8 = bm.to(fp8.e4m3)
            one = torch.ones((), device=device, dtype=torch.float32)
            for fast in (True, False):
                cases.append(("fp8_e4m3", fast,
                              (lambda f: lambda: torch._scaled_mm(
                                  a8, b8.t(), scale_a=one, scale_b=one,
                                  out_dtype=dt, use_fast_accum=f))(fast)))
        for prec, fast, fn in cases:
            def step(bn, fn=fn):
                e0 = bn.event()
                fn()
                return [e0, bn.event()]
            _, ms, reps = bench.run(step, 3, 10, target_ms=300.0, max_reps=50)
            tf = 2.0 * n ** 3 / (ms * 1e-3) / 1e12
            row = dict(meta, precision=prec, m=n, n=n, k=n,
                       fast_accum="" if fast is None else int(fast),
                       median_ms=round(ms, 5), tflops=round(tf, 1), reps=reps)
            rows.append(row)
            log(f"gemm {prec:9s} fast_accum={row['fast_accum']!s:1s} {n}^3: "
                f"{ms:.3f} ms, {tf:.1f} TFLOP/s ({reps} reps)")
        del a, bm
    cols = list(rows[0])
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="fit",
                    help="fit | fit_seq | holdout | smoke | tiny | none")
    ap.add_argument("--output", default=None, help="CSV, rows appended")
    ap.add_argument("--precisions", default="bf16,fp8")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds from start after which no new shape starts "
                         "(0: none); a shape predicted to end past it is skipped")
    ap.add_argument("--assumed-tflops", type=float, default=550.0,
                    help="throughput assumed when predicting a shape's time")
    ap.add_argument("--seq-tp", default=None,
                    help="fit grid: TP degrees that get the seq 4096/8192 points")
    ap.add_argument("--only", default=None,
                    help="comma list of hidden sizes to keep (debugging)")
    ap.add_argument("--gemm-peak", default=None, help="write the GEMM check here")
    ap.add_argument("--gemm-sizes", default="4096,8192,16384")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--date", default=None)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    import torch
    device = args.device
    bench = Bench(torch, device)
    if bench.cuda:
        gpu = torch.cuda.get_device_name(0).replace(",", " ")
        drv = driver_version()
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        gpu, drv = "cpu", "none"
    date = args.date or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    meta = dict(gpu=gpu, driver=drv, torch=torch.__version__,
                cuda=str(torch.version.cuda), date=date)
    log(f"# {meta}")

    precisions = [q for q in args.precisions.split(",") if q]
    fp8 = None
    if "fp8" in precisions or args.gemm_peak:
        fp8 = Fp8(torch, device)
        if fp8.ok:
            log(f"# fp8 via torch._scaled_mm works; {fp8.note}")
        else:
            log(f"# fp8 NOT available, bf16 only: {fp8.why}")
            precisions = [q for q in precisions if q != "fp8"]

    if args.gemm_peak:
        gemm_peak(torch, bench, device, fp8, meta, args.gemm_peak,
                  [int(v) for v in args.gemm_sizes.split(",") if v])

    seq_tp = None if args.seq_tp is None else [int(v) for v in args.seq_tp.split(",") if v]
    shapes = grid(args.grid, seq_tp)
    if args.only:
        keep = {int(v) for v in args.only.split(",")}
        shapes = [r for r in shapes if r[0] in keep]
    if not shapes:
        return 0
    fh = None
    if args.output:
        new = not os.path.exists(args.output) or os.path.getsize(args.output) == 0
        fh = open(args.output, "a", newline="")
        wr = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            wr.writeheader()
            fh.flush()
    n_total = len(shapes) * len(precisions)
    log(f"# grid {args.grid}: {len(shapes)} shapes x {precisions} = {n_total} rows")
    done = skipped = 0
    for i, (h, a, t, s, b) in enumerate(shapes):
        T = s * b
        flops = narayanan_flops(h, t, s, T)
        for prec in precisions:
            elapsed = time.perf_counter() - t_start
            # ~14 executions of the layer per row (2+5 whole, 2+5 components)
            pred = flops * 14 / (args.assumed_tflops * 1e12 * (1.5 if prec == "fp8" else 1.0)) + 0.3
            tag = f"h={h} a={a} tp={t} s={s} b={b} {prec}"
            if args.deadline and elapsed + pred > args.deadline:
                log(f"SKIP deadline {tag} (elapsed {elapsed:.0f} s, predicted {pred:.1f} s)")
                skipped += 1
                continue
            try:
                t0 = time.perf_counter()
                r = measure_shape(torch, bench, device, h, a, t, s, b, prec, fp8, args)
            except torch.cuda.OutOfMemoryError as e:
                log(f"SKIP OOM {tag}: {str(e)[:200]}")
                skipped += 1
                r = None
            except Exception as e:  # noqa: BLE001
                log(f"FAIL {tag}: {type(e).__name__}: {str(e)[:300]}")
                skipped += 1
                r = None
            gc.collect()
            if bench.cuda:
                torch.cuda.empty_cache()
            if r is None:
                continue
            row = dict(meta, precision=prec, hidden=h, heads=a, tp=t, seq_len=s,
                       micro_batch=b, tokens=T, flops_narayanan_fwd_bwd=f"{flops:.6e}")
            for k, v in r.items():
                row[k] = v if k == "reps" else round(v, 4)
            if fh:
                wr.writerow(row)
                fh.flush()
            done += 1
            peak = 989.4e12 * (2 if prec == "fp8" else 1)
            eff = flops / (r["fwd_bwd_ms"] * 1e-3) / peak
            comp = sum(r[k] for k in ("qkv_ms", "attn_ms", "proj_ms", "fc1_ms",
                                       "fc2_ms", "other_ms"))
            log(f"[{i + 1}/{len(shapes)}] {tag}: fwd {r['fwd_ms']:.3f} ms, "
                f"fwd+bwd {r['fwd_bwd_ms']:.3f} ms (components sum {comp:.3f}), "
                f"eff {eff:.3f}, reps {r['reps']}, {time.perf_counter() - t0:.1f} s, "
                f"at {time.perf_counter() - t_start:.0f} s")
    if fh:
        fh.close()
    log(f"# done: {done} rows written, {skipped} skipped, "
        f"{time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
