"""Measure copy bandwidth on real GPUs with PyTorch (run on a GPU machine).

Measures, over a sweep of sizes, one direction at a time unless stated:

* ``h2d_pinned`` / ``d2h_pinned``: host (page-locked) <-> GPU 0 over PCIe.
* ``h2d_pageable`` / ``d2h_pageable``: the same from ordinary (pageable) memory.
* ``p2p``: GPU 0 -> GPU 1 (NVLink when present, else PCIe P2P or host staging).
* ``p2p_bidir``: GPU 0 -> GPU 1 and GPU 1 -> GPU 0 at the same time; bytes
  counted in both directions.
* ``p2p_via_host``: GPU 0 -> pinned host buffer -> GPU 1, one after the other
  (what a transport without peer-to-peer access does).

Writes a CSV (``size_bytes,kind,time_us,bandwidth_GBps``, GB = 1e9 bytes) on
stdout and progress on stderr. Timing: CUDA events around ``iters`` copies
after ``warmup`` copies; the median of ``repeats`` such batches is reported.
"""
from __future__ import annotations

import argparse
import statistics
import sys


def main(argv=None):
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", type=int, default=1 << 12)
    p.add_argument("--max-bytes", type=int, default=1 << 30)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("no CUDA device visible")
    n_dev = torch.cuda.device_count()
    sizes = []
    s = args.min_bytes
    while s <= args.max_bytes:
        sizes.append(s)
        s *= args.factor

    def timed(fn, streams):
        times = []
        for _ in range(args.repeats):
            for _ in range(args.warmup):
                fn()
            for d in range(n_dev):
                torch.cuda.synchronize(d)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(streams[0])
            for st in streams[1:]:
                st.wait_event(start)
            for _ in range(args.iters):
                fn()
            for st in streams[1:]:
                ev = torch.cuda.Event()
                ev.record(st)
                streams[0].wait_event(ev)
            end.record(streams[0])
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / args.iters)
        return statistics.median(times)

    print("size_bytes,kind,time_us,bandwidth_GBps")
    s0 = torch.cuda.Stream(device=0)
    for size in sizes:
        n = size // 4
        dev0 = torch.empty(n, dtype=torch.float32, device="cuda:0")
        pinned = torch.empty(n, dtype=torch.float32, pin_memory=True)
        pageable = torch.empty(n, dtype=torch.float32)
        cases = {}
        with torch.cuda.stream(s0):
            cases["h2d_pinned"] = (lambda: dev0.copy_(pinned, non_blocking=True), [s0], 1)
            cases["d2h_pinned"] = (lambda: pinned.copy_(dev0, non_blocking=True), [s0], 1)
            cases["h2d_pageable"] = (lambda: dev0.copy_(pageable), [s0], 1)
            cases["d2h_pageable"] = (lambda: pageable.copy_(dev0), [s0], 1)
        if n_dev >= 2:
            dev1 = torch.empty(n, dtype=torch.float32, device="cuda:1")
            src1 = torch.empty(n, dtype=torch.float32, device="cuda:1")
            dst0 = torch.empty(n, dtype=torch.float32, device="cuda:0")
            # A cross-device copy_ runs on the source device's *current* stream and
            # makes the destination's current stream wait for it. Each direction
            # therefore gets its own pair of current streams, or the two directions
            # would queue one behind the other.
            s1a = torch.cuda.Stream(device=1)
            s0b = torch.cuda.Stream(device=0)
            s1b = torch.cuda.Stream(device=1)

            def p2p():
                with torch.cuda.stream(s0), torch.cuda.stream(s1a):
                    dev1.copy_(dev0, non_blocking=True)

            def p2p_bidir():
                with torch.cuda.stream(s0), torch.cuda.stream(s1a):
                    dev1.copy_(dev0, non_blocking=True)
                with torch.cuda.stream(s1b), torch.cuda.stream(s0b):
                    dst0.copy_(src1, non_blocking=True)

            def p2p_via_host():
                # what a transport without P2P does: stage through pinned host memory
                with torch.cuda.stream(s0):
                    pinned.copy_(dev0, non_blocking=True)
                    staged = torch.cuda.Event()
                    staged.record(s0)
                s1a.wait_event(staged)
                with torch.cuda.stream(s1a):
                    dev1.copy_(pinned, non_blocking=True)
                    done = torch.cuda.Event()
                    done.record(s1a)
                s0.wait_event(done)

            cases["p2p"] = (p2p, [s0, s1a], 1)
            cases["p2p_via_host"] = (p2p_via_host, [s0, s1a], 1)
            cases["p2p_bidir"] = (p2p_bidir, [s0, s1a, s0b, s1b], 2)
        for kind, (fn, streams, mult) in cases.items():
            def run():
                with torch.cuda.stream(s0):
                    fn()
            t = timed(run, streams)
            bw = mult * size / t / 1e9
            print(f"{size},{kind},{t * 1e6:.3f},{bw:.3f}", flush=True)
            print(f"{kind:>13} {size:>12} B  {t * 1e6:10.2f} us  {bw:8.2f} GB/s",
                  file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
