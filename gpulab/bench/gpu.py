"""GPU side of :mod:`gpulab.bench` (imported only once torch and CUDA are present).

Tested on real GPUs only (see ``gpulab/data/measurements/README.md``); the pure
parts it calls (sizes, counts, expected values, formatting, writing) are unit
tested in ``tests/test_bench.py``.
"""
from __future__ import annotations

import os
import subprocess

from ..collectives import busbw_factor
from . import core as B

_TORCH_DTYPES = {"float": "float32", "half": "float16", "bfloat16": "bfloat16",
                 "double": "float64", "int32": "int32"}


def _driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.split()
        return out[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _nccl_version(torch):
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _combine(torch, dist, value, how, rank, world):
    t = torch.tensor([value], dtype=torch.float64, device="cuda")
    if how == 0:
        dist.broadcast(t, 0)
    elif how == 1:
        dist.all_reduce(t)
        t /= world
    else:
        dist.all_reduce(t, op=dist.ReduceOp.MIN if how == 2 else dist.ReduceOp.MAX)
    return float(t.item())


class _Op:
    """Buffers and one call of a collective, out of place or in place."""

    def __init__(self, torch, dist, coll, count, dtype, rank, world, in_place):
        self.torch, self.dist, self.coll = torch, dist, coll
        self.rank, self.world, self.in_place = rank, world, in_place
        per = count // world
        dev = "cuda"
        full = torch.empty(count, dtype=dtype, device=dev)
        if coll == "all_gather":
            self.out = full
            self.inp = full.narrow(0, rank * per, per) if in_place else \
                torch.empty(per, dtype=dtype, device=dev)
        elif coll == "reduce_scatter":
            self.inp = full
            self.out = full.narrow(0, rank * per, per) if in_place else \
                torch.empty(per, dtype=dtype, device=dev)
        elif coll in ("alltoall", "sendrecv"):
            self.inp, self.out = full, torch.empty(count, dtype=dtype, device=dev)
        else:                                   # all_reduce, broadcast, reduce
            self.inp = self.out = full
        self.per = per
        self.nxt, self.prv = (rank + 1) % world, (rank - 1) % world

    def fill(self):
        self.inp.fill_(self.rank + 1)

    def __call__(self):
        d, c = self.dist, self.coll
        if c == "all_reduce":
            d.all_reduce(self.out)
        elif c == "broadcast":
            d.broadcast(self.out, 0)
        elif c == "reduce":
            d.reduce(self.out, 0)
        elif c == "all_gather":
            d.all_gather_into_tensor(self.out, self.inp)
        elif c == "reduce_scatter":
            d.reduce_scatter_tensor(self.out, self.inp)
        elif c == "alltoall":
            d.all_to_all_single(self.out, self.inp)
        else:
            if self.world == 1:
                self.out.copy_(self.inp)
                return
            for r in d.batch_isend_irecv([d.P2POp(d.isend, self.inp, self.nxt),
                                          d.P2POp(d.irecv, self.out, self.prv)]):
                r.wait()

    def wrong(self):
        """Elements that differ from the expected result (call after fill + call)."""
        torch = self.torch
        want = B.expected_values(self.coll, self.rank, self.world)
        if isinstance(want, list):             # per-chunk values
            ref = torch.tensor(want, dtype=self.out.dtype, device=self.out.device)
            ref = ref.repeat_interleave(self.per)
            return int((self.out[:ref.numel()] != ref).sum().item())
        return int((self.out != want).sum().item())


def _time_op(torch, dist, op, warmup, iters):
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    start = B.clock()
    for _ in range(iters):
        op()
    torch.cuda.synchronize()
    return (B.clock() - start) / iters


def _copy_sweep(torch, kind, sizes, warmup, iters):
    rows = []
    for size in sizes:
        if kind == "p2p":
            if torch.cuda.device_count() < 2:
                B.log("p2p copy needs two visible GPUs; skipped")
                return rows
            src = torch.empty(size, dtype=torch.uint8, device="cuda:0")
            dst = torch.empty(size, dtype=torch.uint8, device="cuda:1")
        elif kind == "h2d":
            src = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            dst = torch.empty(size, dtype=torch.uint8, device="cuda:0")
        else:
            src = torch.empty(size, dtype=torch.uint8, device="cuda:0")
            dst = torch.empty(size, dtype=torch.uint8, pin_memory=True)

        def op(src=src, dst=dst):
            dst.copy_(src, non_blocking=True)
        for _ in range(warmup):
            op()
        torch.cuda.synchronize()
        start = B.clock()
        for _ in range(iters):
            op()
        torch.cuda.synchronize()
        t = (B.clock() - start) / iters
        rows.append({"kind": kind, "size_bytes": size, "time_us": t * 1e6,
                     "bandwidth_GBps": size / t / 1e9,
                     "direction": "per_direction"})
    return rows


def run(args, sizes, torch, dist):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")    # our machines: multicast off
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = getattr(torch, _TORCH_DTYPES[args.datatype])
    dev = {"rank": rank, "pid": os.getpid(), "host": B.host(), "device": local,
           "bus_id": torch.cuda.get_device_properties(local).pci_bus_id
           if hasattr(torch.cuda.get_device_properties(local), "pci_bus_id")
           else f"{local}", "name": torch.cuda.get_device_name(local)}
    devices = [None] * world
    dist.all_gather_object(devices, dev)
    meta = {"tool": "gpulab.bench", "date": B.now(), "n_ranks": world,
            "min_bytes": sizes[0], "max_bytes": sizes[-1],
            "step": (f"{args.stepbytes}(bytes)" if args.stepbytes
                     else f"{args.stepfactor}(factor)"),
            "warmup": args.warmup_iters, "iters": args.iters, "check": args.check,
            "average": args.average, "datatype": args.datatype,
            "devices": devices, "nccl_version": _nccl_version(torch),
            "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
            "driver": _driver() if rank == 0 else "",
            "env": {k: v for k, v in sorted(os.environ.items())
                    if k.startswith("NCCL_")}, "label": args.label}
    if rank == 0:
        print(B.format_header(meta), flush=True)
    results, copies = [], []
    for coll in args.collectives:
        if rank == 0:
            note = (" (torch runs it in place only: both column groups are in-place "
                    "runs)" if coll in B.IN_PLACE_ONLY else "")
            print(f"#\n# Collective test starting: {coll}_perf{note}", flush=True)
            print(B.table_head(coll), flush=True)
        for size in sizes:
            count = B.element_count(coll, size, world, args.datatype)
            nbytes = count * B.DTYPES[args.datatype]
            row = {"collective": coll, "n_ranks": world, "size_bytes": nbytes,
                   "count": count, "type": args.datatype}
            for prefix, in_place in (("", coll in B.IN_PLACE_ONLY),
                                     ("inplace_", True)):
                if prefix and coll in B.NO_IN_PLACE:
                    row.update({f"{prefix}{k}": None for k in
                                ("time_us", "algbw_GBps", "busbw_GBps", "wrong")})
                    continue
                op = _Op(torch, dist, coll, count, dtype, rank, world, in_place)
                wrong = 0
                if args.check:
                    op.fill()
                    op()
                    torch.cuda.synchronize()
                    wrong = op.wrong()
                t = _time_op(torch, dist, op, args.warmup_iters, args.iters)
                t = _combine(torch, dist, t, args.average, rank, world)
                w = torch.tensor([wrong], device="cuda")
                dist.all_reduce(w)
                algbw = nbytes / t / 1e9
                row.update({f"{prefix}time_us": t * 1e6, f"{prefix}algbw_GBps": algbw,
                            f"{prefix}busbw_GBps": algbw * busbw_factor(coll, world),
                            f"{prefix}wrong": int(w.item())})
                del op
            if rank == 0:
                print(B.format_row(row), flush=True)
                B.log(f"{coll} {nbytes} B done")
            results.append(row)
    if args.copy:
        if rank == 0:
            for kind in args.copy:
                B.log(f"copy sweep {kind}")
                copies += _copy_sweep(torch, kind, sizes, args.warmup_iters,
                                      args.iters)
        dist.barrier()
    if rank == 0:
        print("# Out of bounds values : "
              f"{sum(r['wrong'] + (r['inplace_wrong'] or 0) for r in results)} "
              f"{'FAILED' if any(r['wrong'] for r in results) else 'OK'}")
        if results:
            bus = [r["busbw_GBps"] for r in results]
            print(f"# Avg bus bandwidth    : {sum(bus) / len(bus):.4g} ")
        for c in copies:
            print(f"# copy {c['kind']:4s} {c['size_bytes']:12d} B {c['time_us']:10.2f} us "
                  f"{c['bandwidth_GBps']:8.2f} GB/s per direction")
        if args.output:
            meta["copies"] = copies
            text = (B.rows_to_json(results, meta) if args.output.endswith(".json")
                    else B.rows_to_csv(results))
            B.write_atomic(args.output, text)
            B.log(f"wrote {args.output}")
    dist.barrier()
    dist.destroy_process_group()
    return 1 if any(r["wrong"] or (r.get("inplace_wrong") or 0) for r in results) else 0
