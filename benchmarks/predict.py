"""Benchmark ``gpulab predict``: a full nccl-tests sweep for every system preset.

For each preset (at its full GPU count, the CLI's default ``--ranks``): predict the
sweep ``-b 8 -e 16G -f 2`` (32 sizes) for all 7 collectives on both transports
(p2p and shm), i.e. 14 predictions per preset, timed two ways:

* ``model``: :func:`gpulab.collectives.predict` alone;
* ``cli``: ``gpulab predict --collective ... --format table`` run in-process
  (argument parsing, model, formatting into a string; Python start-up excluded).

Each preset is timed ``--repeat`` times after one warm-up pass (the first pass,
which reads the YAML data files, is reported separately as ``cold``). Prints the
median per preset and the total, and exits with status 1 if the total of the
median CLI times over all presets exceeds ``--limit-s`` (default 1 s; the target
is "well under a second").

Usage::

    python benchmarks/predict.py [--repeat 5] [--limit-s 1.0]
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time

from gpulab import cli, collectives, systems

MIN_BYTES, MAX_BYTES, FACTOR = 8, 16 * 2**30, 2


def sweep():
    sizes, s = [], MIN_BYTES
    while s <= MAX_BYTES:
        sizes.append(float(s))
        s *= FACTOR
    return sizes


def time_model(name, sizes):
    system = systems.get(name)
    t0 = time.perf_counter()
    for transport in collectives.TRANSPORTS:
        for coll in collectives.COLLECTIVES:
            collectives.predict(coll, sizes, system.n_gpus, system, transport=transport)
    return time.perf_counter() - t0


def time_cli(name):
    t0 = time.perf_counter()
    for transport in collectives.TRANSPORTS:
        for coll in collectives.COLLECTIVES:
            out = io.StringIO()
            status = cli.main(["predict", "--collective", coll, "--system", name,
                               "--transport", transport, "-b", str(MIN_BYTES),
                               "-e", str(MAX_BYTES), "-f", str(FACTOR)], out=out)
            if status != 0:
                raise SystemExit(f"gpulab predict failed for {name} {coll} {transport}")
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed passes (default 5)")
    ap.add_argument("--limit-s", type=float, default=1.0,
                    help="fail if the total CLI time exceeds this (default 1 s)")
    args = ap.parse_args(argv)
    sizes = sweep()
    names = systems.names()
    t0 = time.perf_counter()
    for name in names:                      # warm-up: data files, caches
        time_cli(name)
    cold = time.perf_counter() - t0
    rows = []
    for name in names:
        model = statistics.median(time_model(name, sizes) for _ in range(args.repeat))
        clit = statistics.median(time_cli(name) for _ in range(args.repeat))
        rows.append((name, systems.get(name).n_gpus, model, clit))
    n_pred = len(collectives.TRANSPORTS) * len(collectives.COLLECTIVES)
    print(f"# gpulab predict benchmark: sweep {MIN_BYTES} B .. {MAX_BYTES // 2**30} GiB, factor "
          f"{FACTOR} ({len(sizes)} sizes) x {len(collectives.COLLECTIVES)} collectives "
          f"x {len(collectives.TRANSPORTS)} transports = {n_pred} predictions per "
          f"preset; median of {args.repeat} passes")
    print(f"{'preset':<18} {'ranks':>5} {'model_ms':>9} {'cli_ms':>8}")
    for name, n, model, clit in rows:
        print(f"{name:<18} {n:>5} {model * 1e3:>9.1f} {clit * 1e3:>8.1f}")
    total_model = sum(r[2] for r in rows)
    total_cli = sum(r[3] for r in rows)
    print(f"{'total':<18} {'':>5} {total_model * 1e3:>9.1f} {total_cli * 1e3:>8.1f}")
    print(f"# first (cold) pass over all presets, CLI: {cold * 1e3:.1f} ms")
    ok = total_cli <= args.limit_s
    print(f"# total CLI {total_cli:.3f} s {'<=' if ok else '>'} limit {args.limit_s} s: "
          f"{'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
