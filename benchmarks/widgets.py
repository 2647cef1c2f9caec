"""Benchmark the interactive explorers: time per control update (model + PNG redraw).

For every explorer in ``gpulab.widgets.explorers()``: build it, then for each control
cycle through a few valid values, N times, timing each assignment
``control.value = v``. Observers run synchronously, so that time is the whole update:
model call, redraw on the persistent Agg figure and PNG encoding into the Image.

Prints median and p90 [ms] per explorer and control and exits with status 1 if any
median reaches the target (default 50 ms), 2 if a value shows an error message.

Usage::

    python benchmarks/widgets.py [--n 30] [--target-ms 50] [--warmup 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402

from gpulab import widgets  # noqa: E402

#: Valid values to cycle through, per (explorer, control). Text controls need them;
#: other controls fall back to values taken from their range or options.
VALUES = {
    ("scaling", "n_gpus"): [4, 8, 16, 32],
    ("scaling", "params"): ["7B", "13B", "70B", "175B"],
    ("scaling", "tokens_per_gpu"): [1024, 4096, 16384, 65536],
    ("scaling", "overlap"): [0.0, 0.25, 0.5, 0.9],
    ("scaling", "mfu"): [0.3, 0.4, 0.5, 0.6],
    ("link", "preset"): [1, 2, 3, 4, 5],
    ("link", "modulation"): [1, 2],
    ("link", "symbol_rate_gbaud"): [25.0, 53.125, 106.25, 50.0],
    ("link", "lanes"): [1, 2, 4, 8],
    ("link", "coding"): [16 / 17, 64 / 66, 1.0, 0.8],
    ("link", "links"): [4, 6, 12, 18],
    ("link", "compare"): ["900 GB/s bidirectional", "1.8 TB/s bidirectional",
                          "400 Gb/s per direction"],
    # layout: TP x PP x DP must fit in the system's 8 GPUs
    ("layout", "tp"): [2, 1], ("layout", "pp"): [2, 1], ("layout", "dp"): [2, 1],
    ("roi", "price_fast"): [3.0, 2.5, 4.0, 3.5],
    ("roi", "price_slow"): [2.25, 2.0, 1.5, 2.5],
    ("roi", "project_tokens"): [200.0, 100.0, 1000.0, 500.0],
    # network: sizes across the whole curve (small, medium, large)
    ("network", "message_bytes"): [2 ** 10, 2 ** 20, 2 ** 30, 2 ** 34],
    ("network", "nodes"): [2, 4, 16, 64],
    # pasted `nvidia-smi topo -m` texts ("" = use the sample)
    ("topology", "text"): ["", *(
        __import__("gpulab.widgets", fromlist=["x"]).topology_samples()[k]
        for k in ("layout-a", "layout-b", "pcie-box"))],
}


def default_values(control):
    """A few valid, distinct values for a control without an entry in VALUES."""
    if isinstance(control, (W.IntSlider, W.FloatSlider)):
        lo, hi = control.min, control.max
        vals = [lo + (hi - lo) * f for f in (0.2, 0.5, 0.8)]
        return [int(round(v)) if isinstance(control, W.IntSlider) else v for v in vals]
    if isinstance(control, W.Checkbox):
        return [True, False]
    if isinstance(control, (W.FloatText, W.BoundedFloatText)):   # a price, a rate
        return [control.value * f for f in (0.8, 1.25, 1.0)]
    if isinstance(control, (W.IntText, W.BoundedIntText)):
        return [max(1, int(round(control.value * f))) for f in (0.5, 2.0, 1.0)]
    options = getattr(control, "options", None)
    if options:
        opts = [o[1] if isinstance(o, tuple) else o for o in options]
        return opts[:4]
    raise SystemExit(f"no valid values known for control {control!r}: add to VALUES")


def percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


#: Explorers whose message legitimately explains a state (a layout that does not fit
#: or does not divide); any other message, or a traceback anywhere, is an error.
REASON_MESSAGES = {"layout", "tp", "roi", "bucket", "collective", "fabric", "decode"}


def bench_control(explorer, name, control, values, n, warmup, ename=""):
    """Time ``n`` assignments cycling through ``values``; return times in ms."""
    seq = [v for v in values if v != control.value] + [
        v for v in values if v == control.value]
    if len(set(map(repr, seq))) < 2:
        raise SystemExit(f"{name}: need at least two distinct values")
    times = []
    for i in range(warmup + n):
        v = seq[i % len(seq)]
        if v == control.value:                 # no change -> no observer; skip on
            v = seq[(i + 1) % len(seq)]
        before = explorer.n_updates
        t0 = time.perf_counter()
        control.value = v
        dt = time.perf_counter() - t0
        msg = explorer.message.value
        if msg and (ename not in REASON_MESSAGES or "Traceback" in msg
                    or "Error" in msg):
            print(f"error: {name}={v!r} shows a message: {explorer.message.value}",
                  file=sys.stderr)
            sys.exit(2)
        if explorer.n_updates == before and not isinstance(control, W.Text) \
                and not (ename in REASON_MESSAGES and msg):
            print(f"error: setting {name}={v!r} did not update", file=sys.stderr)
            sys.exit(2)
        if i >= warmup:
            times.append(dt * 1e3)
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=30, help="timed updates per control")
    p.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    p.add_argument("--target-ms", type=float, default=50.0,
                   help="fail if any median reaches this [ms]")
    args = p.parse_args(argv)

    rows = []
    for ename, factory in widgets.explorers().items():
        t0 = time.perf_counter()
        ex = factory()
        build_ms = (time.perf_counter() - t0) * 1e3
        rows.append((ename, "(build)", [build_ms]))
        all_times = []
        for cname in list(ex.controls):
            if ename in REASON_MESSAGES:
                ex = factory()            # each control from the default (valid) state
            control = ex.controls[cname]
            values = VALUES.get((ename, cname)) or default_values(control)
            if len(set(map(repr, values))) < 2:
                continue                      # a one-option control (nothing to time)
            t = bench_control(ex, cname, control, values, args.n, args.warmup, ename)
            rows.append((ename, cname, t))
            all_times += t
        rows.append((ename, "(all controls)", all_times))

    print(f"Widget update time, {args.n} updates per control "
          f"(target: median < {args.target_ms:g} ms)")
    print(f"{'explorer':<10} {'control':<18} {'n':>4} {'median ms':>10} {'p90 ms':>8}")
    worst = 0.0
    failed = []
    for ename, cname, t in rows:
        med, p90 = statistics.median(t), percentile(t, 0.9)
        flag = ""
        if not cname.startswith("("):
            worst = max(worst, med)
            if med >= args.target_ms:
                failed.append(f"{ename}.{cname}")
                flag = "  <-- over target"
        print(f"{ename:<10} {cname:<18} {len(t):>4} {med:>10.1f} {p90:>8.1f}{flag}")
    print(f"worst median: {worst:.1f} ms; target {args.target_ms:g} ms")
    if failed:
        print(f"FAIL: median >= {args.target_ms:g} ms for {', '.join(failed)}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
