"""Time one tensor-parallel transformer layer: compute vs its AllReduces.

Run on a GPU machine, one process per GPU (TP degree = number of processes)::

    torchrun --nproc_per_node 2 measure/tp_layer.py --output tp_layer.csv

Each rank holds a Megatron-style shard of one GPT layer (Shoeybi et al. 2019):
QKV and the first MLP matrix split by columns, the attention output and second
MLP matrix split by rows, so the forward pass needs two AllReduces of the
activations (b x s x h elements, bf16) and the backward pass two more (the
``f``/``g`` operators of the paper). For several model shapes it measures, per
layer and micro-batch (median of ``--iters`` timed repetitions after warm-up):

* ``fwd_compute_ms`` / ``fwd_bwd_compute_ms``: the layer without communication;
* ``allreduce_ms``: one AllReduce of the activation size, alone;
* ``fwd_bwd_ms``: the real layer, forward + backward with its four AllReduces,
  run in sequence as Megatron does without ``--tp-comm-overlap``.

The CSV is written atomically (through gpulab.bench.write_atomic when gpulab is
importable). NCCL_NVLS_ENABLE=0 is kept (NVLink multicast off).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

SHAPES = {  # name: (hidden, heads, ffn multiple)
    "13b": (5120, 40, 4),
    "70b": (8192, 64, 4),
}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, nargs="+", default=[2048, 4096])
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--shard", type=int, default=None,
                   help="split the weights as for this TP degree (default: the "
                        "number of processes); with one GPU, --shard 2 times the "
                        "compute of one rank of TP=2 (its AllReduces are then no-ops)")
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, tp = dist.get_rank(), dist.get_world_size()
    shard = args.shard or tp
    dt = torch.bfloat16

    class _G(torch.autograd.Function):        # all_reduce forward, identity back
        @staticmethod
        def forward(ctx, x):
            if tp > 1:
                dist.all_reduce(x)
                ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class _F(torch.autograd.Function):        # identity forward, all_reduce back
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            g = g.contiguous()
            if tp > 1:
                dist.all_reduce(g)
            return g

    def timed(fn):
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        dist.barrier()
        out = []
        for _ in range(args.iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b))
        t = torch.tensor([statistics.median(out)], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    rows = []
    for name, (h, heads, mult) in SHAPES.items():
        hp, ffn = heads // shard, mult * h // shard
        hd = h // heads
        w_qkv = torch.randn(h, 3 * hp * hd, device="cuda", dtype=dt) * 0.02
        w_o = torch.randn(hp * hd, h, device="cuda", dtype=dt) * 0.02
        w_1 = torch.randn(h, ffn, device="cuda", dtype=dt) * 0.02
        w_2 = torch.randn(ffn, h, device="cuda", dtype=dt) * 0.02
        for w in (w_qkv, w_o, w_1, w_2):
            w.requires_grad_(True)
        for s in args.seq:
            b = args.micro_batch
            x0 = torch.randn(b, s, h, device="cuda", dtype=dt, requires_grad=True)

            def layer(x, comm):
                y = F.layer_norm(x, (h,))
                if comm:
                    y = _F.apply(y)
                q, k, v = (y @ w_qkv).view(b, s, 3, hp, hd).unbind(2)
                a = F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    is_causal=True).transpose(1, 2).reshape(b, s, hp * hd)
                a = a @ w_o
                if comm:
                    a = _G.apply(a)
                x = x + a
                y = F.layer_norm(x, (h,))
                if comm:
                    y = _F.apply(y)
                m = F.gelu(y @ w_1) @ w_2
                if comm:
                    m = _G.apply(m)
                return x + m

            def fwd():
                with torch.no_grad():
                    layer(x0, False)

            def fwd_bwd(comm):
                def run():
                    layer(x0, comm).sum().backward()
                return run

            buf = torch.randn(b * s * h, device="cuda", dtype=dt)

            def ar():
                dist.all_reduce(buf)

            row = {"model": name, "hidden": h, "heads": heads, "seq": s,
                   "micro_batch": b, "tp": shard, "ranks": tp,
                   "allreduce_bytes": b * s * h * 2,
                   "fwd_compute_ms": timed(fwd),
                   "fwd_bwd_compute_ms": timed(fwd_bwd(False)),
                   "allreduce_ms": timed(ar),
                   "fwd_bwd_ms": timed(fwd_bwd(True))}
            if rank == 0:
                print(row, file=sys.stderr, flush=True)
            rows.append(row)
    if rank == 0:
        cols = list(rows[0])
        text = ",".join(cols) + "\n" + "".join(
            ",".join(f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c])
                     for c in cols) + "\n" for r in rows)
        print(text)
        if args.output:
            try:
                from gpulab.bench import write_atomic
            except ImportError:
                write_atomic = None
            if write_atomic:
                write_atomic(args.output, text)
            else:
                with open(args.output, "w") as fh:
                    fh.write(text)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
