"""Collective sweep over NCCL with torch.distributed, reported like nccl-tests.

Run on a GPU machine, one process per GPU::

    torchrun --nproc_per_node 2 measure/nccl_sweep.py -b 8 -e 1G -f 2 \
        --ops all_reduce,all_gather,reduce_scatter,alltoall,sendrecv --csv out.csv

Sizes follow nccl-tests: ``size`` is the full buffer of the collective (for
all_gather the gathered output, for reduce_scatter the input, for alltoall each
rank's buffer, for sendrecv what each rank sends). ``algbw = size / time`` and
``busbw = algbw * factor`` with nccl-tests' factors (all_reduce 2(n-1)/n,
all_gather / reduce_scatter / alltoall (n-1)/n, sendrecv 1). Times are the mean
of ``-n`` back-to-back calls after ``-w`` warm-ups, measured with CUDA events,
then the maximum over ranks. The all_reduce result is checked (sum of ranks).

Progress goes to stderr; rank 0 prints an nccl-tests-style table to stdout and
writes the CSV atomically. NCCL_NVLS_ENABLE=0 is forced (NVLink multicast off).
This is the seed of ``gpulab bench``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ["NCCL_NVLS_ENABLE"] = "0"


def parse_size(text):
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip().upper()
    if text and text[-1] in mult:
        return int(float(text[:-1]) * mult[text[-1]])
    return int(text)


def placement(rank, gpus_per_host):
    """(host, GPU) of ``rank`` when hosts of ``gpus_per_host`` ranks share the
    machine's first GPUs: rank r is GPU r % G of host r // G.

    >>> [placement(r, 2) for r in range(4)]
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    return rank // gpus_per_host, rank % gpus_per_host


def nccl_runtime_version():
    """(major, minor, patch) of the NCCL library loaded in this process, from its
    ncclGetVersion (torch.cuda.nccl.version() gives the headers torch was built with,
    which a preloaded NCCL does not change). Call after importing torch."""
    import ctypes
    code = ctypes.c_int()
    ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(code))
    return code.value // 10000, code.value % 10000 // 100, code.value % 100


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-b", "--min-bytes", default="8")
    p.add_argument("-e", "--max-bytes", default="1G")
    p.add_argument("-f", "--factor", type=int, default=2)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,alltoall,"
                   "sendrecv")
    p.add_argument("--csv", default=None)
    p.add_argument("--label", default="")
    p.add_argument("--graph", action="store_true",
                   help="capture the -n timed calls in one CUDA graph and time its replay, "
                        "so no Python launch cost sits between calls (falls back to "
                        "launching them one by one where capture fails)")
    p.add_argument("--hosts-on-one-gpu", action="store_true",
                   help="put every rank on GPU 0 and give each its own NCCL_HOSTID, so "
                        "NCCL sees one node per rank and joins them with its network "
                        "transport (run under MPS so the ranks' kernels run at once)")
    p.add_argument("--gpus-per-host", type=int, default=None, metavar="G",
                   help="split the ranks into hosts of G ranks, rank r on GPU r %% G of "
                        "host r // G (its own NCCL_HOSTID): inside a host NCCL joins the "
                        "GPUs over NVLink, between hosts through its network transport, "
                        "so a ring mixes both kinds of edge (two hosts on one GPU share it: "
                        "run under MPS)")
    p.add_argument("--ranks-per-host", type=int, default=None, metavar="R",
                   help="every rank on GPU 0, in hosts of R ranks (host r // R, its own "
                        "NCCL_HOSTID): inside a host NCCL joins ranks that share the GPU "
                        "with its P2P transport, between hosts through its network "
                        "transport. Needs NCCL 2.30 or later with "
                        "NCCL_MULTI_RANK_GPU_ENABLE=1 (older NCCL refuses two ranks of "
                        "one host on one GPU); run under MPS")
    args = p.parse_args(argv)
    placements = [args.hosts_on_one_gpu, args.gpus_per_host is not None,
                  args.ranks_per_host is not None]
    if sum(placements) > 1:
        p.error("--hosts-on-one-gpu, --gpus-per-host and --ranks-per-host exclude "
                "each other")
    for name in ("gpus_per_host", "ranks_per_host"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        sys.exit("no CUDA device visible")
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    if args.hosts_on_one_gpu:
        # NCCL refuses two ranks on one GPU of one host (init.cc, "Duplicate GPU
        # detected"); a host id per rank makes every rank a node of its own.
        os.environ["NCCL_HOSTID"] = f"node{rank}"
        local = 0
    elif args.gpus_per_host is not None:
        host, local = placement(rank, args.gpus_per_host)
        os.environ["NCCL_HOSTID"] = f"node{host}"
    elif args.ranks_per_host is not None:
        version = nccl_runtime_version()
        if args.ranks_per_host > 1 and version[:2] < (2, 30):
            sys.exit(f"--ranks-per-host {args.ranks_per_host} needs NCCL 2.30 or later "
                     f"(two ranks of one host on one GPU); this is {version}")
        os.environ["NCCL_HOSTID"] = f"node{rank // args.ranks_per_host}"
        local = 0
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    n = world
    factors = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n,
               "reduce_scatter": (n - 1) / n, "alltoall": (n - 1) / n,
               "sendrecv": 1.0, "broadcast": 1.0}
    sizes = []
    s = parse_size(args.min_bytes)
    while s <= parse_size(args.max_bytes):
        sizes.append(s)
        s *= args.factor
    ops = [o for o in args.ops.split(",") if o]
    rows = []
    dtype = torch.float32
    for op in ops:
        if rank == 0:
            print(f"# {op}  ranks {n}  {args.label}", file=sys.stderr, flush=True)
            print(f"#\n# {op}: nranks {n} {args.label}\n#{'size':>12} {'count':>12} "
                  f"{'type':>6} {'time(us)':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>6}")
        for size in sizes:
            count = max(size // 4, 1)
            per = max(count // n, 1)
            if op == "all_reduce":
                buf = torch.full((count,), float(rank + 1), dtype=dtype, device="cuda")
                def fn(buf=buf):
                    dist.all_reduce(buf)
            elif op == "all_gather":
                inp = torch.ones(per, dtype=dtype, device="cuda")
                out = torch.empty(per * n, dtype=dtype, device="cuda")
                def fn(inp=inp, out=out):
                    dist.all_gather_into_tensor(out, inp)
            elif op == "reduce_scatter":
                inp = torch.ones(per * n, dtype=dtype, device="cuda")
                out = torch.empty(per, dtype=dtype, device="cuda")
                def fn(inp=inp, out=out):
                    dist.reduce_scatter_tensor(out, inp)
            elif op == "alltoall":
                inp = torch.ones(per * n, dtype=dtype, device="cuda")
                out = torch.empty(per * n, dtype=dtype, device="cuda")
                def fn(inp=inp, out=out):
                    dist.all_to_all_single(out, inp)
            elif op == "sendrecv":
                snd = torch.ones(count, dtype=dtype, device="cuda")
                rcv = torch.empty(count, dtype=dtype, device="cuda")
                nxt, prv = (rank + 1) % n, (rank - 1) % n
                def fn(snd=snd, rcv=rcv, nxt=nxt, prv=prv):
                    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, snd, nxt),
                                                   dist.P2POp(dist.irecv, rcv, prv)])
                    for r in reqs:
                        r.wait()
            elif op == "broadcast":
                buf = torch.ones(count, dtype=dtype, device="cuda")
                def fn(buf=buf):
                    dist.broadcast(buf, 0)
            else:
                sys.exit(f"unknown op {op}")
            for _ in range(args.warmup):
                fn()
            torch.cuda.synchronize()
            dist.barrier()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            graph = None
            if args.graph and op != "sendrecv":
                try:
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        fn()
                    torch.cuda.current_stream().wait_stream(side)
                    torch.cuda.synchronize()
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        for _ in range(args.iters):
                            fn()
                    graph.replay()
                    torch.cuda.synchronize()
                    dist.barrier()
                except Exception as exc:        # capture unsupported: time eagerly
                    print(f"# graph capture failed ({exc}); eager", file=sys.stderr)
                    graph = None
                    torch.cuda.synchronize()
                    dist.barrier()
            start.record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(args.iters):
                    fn()
            end.record()
            end.synchronize()
            t = torch.tensor([start.elapsed_time(end) / 1e3 / args.iters],
                             device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            t = float(t.item())
            wrong = 0
            if op == "all_reduce":
                buf.fill_(float(rank + 1))
                dist.all_reduce(buf)
                wrong = int((buf != n * (n + 1) / 2).sum().item())
            chunked = op in ("all_gather", "reduce_scatter", "alltoall")
            nbytes = (per * n if chunked else count) * 4
            algbw = nbytes / t / 1e9
            busbw = algbw * factors[op]
            if rank == 0:
                print(f" {nbytes:>12} {nbytes // 4:>12} {'float':>6} {t * 1e6:>10.2f} "
                      f"{algbw:>8.2f} {busbw:>8.2f} {wrong:>6}", flush=True)
                rows.append((op, n, nbytes, t * 1e6, algbw, busbw, wrong))
    if rank == 0 and args.csv:
        d = os.path.dirname(os.path.abspath(args.csv))
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write("collective,n_ranks,size_bytes,time_us,algbw_GBps,busbw_GBps,"
                     "wrong,label\n")
            for r in rows:
                fh.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.3f},{r[4]:.4f},{r[5]:.4f},"
                         f"{r[6]},{args.label}\n")
        os.replace(tmp, args.csv)
    if args.graph:
        # a process group whose collectives sit in a live CUDA graph can hang in
        # destroy_process_group; the results are written, so leave at once
        sys.stdout.flush()
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
