"""Benchmark the layout chooser: rank every layout of a 70B model on 64 GPUs.

``--system`` and ``--gpus`` pick another cluster (a system preset scaled with
:func:`gpulab.parallelism.cluster`, or a cluster preset of
:data:`gpulab.network.CLUSTER_PRESETS` scaled with :func:`gpulab.network.scale_out`),
e.g. ``--system dgx-h100-spod --gpus 512``; the picks are printed either way.

The cluster is eight HGX H200 nodes (8x H200 SXM each, NVSwitch inside a node, one
400 Gb/s InfiniBand NIC per GPU between nodes): the ``hgx-h200-2node`` preset scaled
to eight nodes with :func:`gpulab.parallelism.cluster`. For each model (the source
article's 70B shape and Llama 3 70B) :func:`gpulab.parallelism.rank_layouts` ranks
all 28 TP x PP x DP layouts of 64 GPUs, and again with the recomputation and
sequence-parallelism options searched too (3 x 2 = 6 variants per layout).

Each case is timed ``--repeat`` times after one cold pass (which fills the
collective-time cache and reads the YAML data); the cold time is reported too.
Prints the median per case, the pick, and exits with status 1 if the slowest median
exceeds ``--limit-s`` (default 1 s), or if the cold pass of any case does.

Usage::

    python benchmarks/chooser.py [--repeat 5] [--limit-s 1.0] [--system NAME]
                                 [--gpus N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from gpulab import network, parallelism as par, systems

CASES = [
    ("70b", {}),
    ("llama3-70b", {}),
    ("70b", {"recompute": par.RECOMPUTE, "sequence_parallel": (False, True)}),
    ("llama3-70b", {"recompute": par.RECOMPUTE, "sequence_parallel": (False, True)}),
]


def run(system, model, opts, gpus=64):
    t0 = time.perf_counter()
    r = par.rank_layouts(model, system, gpus, global_batch=8 * gpus, micro_batch=1,
                         zero=1, **opts)
    return time.perf_counter() - t0, r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--limit-s", type=float, default=1.0)
    ap.add_argument("--system", default="hgx-h200-2node",
                    help="system or cluster preset (default hgx-h200-2node)")
    ap.add_argument("--gpus", type=int, default=64, help="GPUs to rank (default 64)")
    args = ap.parse_args(argv)
    if args.system in network.CLUSTER_PRESETS:
        per_node = systems.get(network.cluster_preset(args.system)["node"]).gpus_per_node
        system = network.scale_out(args.system, -(-args.gpus // per_node))
    else:
        per_node = systems.get(args.system).gpus_per_node
        system = par.cluster(args.system, -(-args.gpus // per_node))
    worst, worst_cold = 0.0, 0.0
    print(f"system: {system.name} ({system.n_gpus} GPUs)")
    for model, opts in CASES:
        cold, r = run(system, model, opts, args.gpus)
        times = [run(system, model, opts, args.gpus)[0] for _ in range(args.repeat)]
        med = statistics.median(times)
        worst, worst_cold = max(worst, med), max(worst_cold, cold)
        n = len(r.valid) + len(r.invalid)
        best = r.best
        pick = "nothing fits" if best is None else (
            f"{best.layout} {best.options} {best.step.total:.2f} s/step")
        label = "+options" if opts else "defaults"
        print(f"{model:>11} {label:9} {n:4d} candidates ({len(r.valid)} fit): "
              f"cold {cold * 1e3:7.1f} ms, median {med * 1e3:7.1f} ms; pick {pick}")
    ok = worst <= args.limit_s and worst_cold <= args.limit_s
    print(f"slowest median {worst * 1e3:.1f} ms, slowest cold {worst_cold * 1e3:.1f} ms"
          f" (limit {args.limit_s * 1e3:.0f} ms): {'OK' if ok else 'TOO SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
