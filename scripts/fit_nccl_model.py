"""Re-derive gpulab/data/nccl_model.yaml's fitted constants from our H200 sweeps.

    python scripts/fit_nccl_model.py            # report only
    python scripts/fit_nccl_model.py --search   # also grid-search the globals
    python scripts/fit_nccl_model.py --search --write   # and store them in the YAML

Global constants (protocol base latencies and bandwidth shares, per-collective
pipeline fill) are found by a coordinate grid search that minimises the worst
relative error from 64 KiB, plus the mean of every collective's worst error and
of the mean errors, over the POOLED table of all our earlier sweeps
(scripts/pool_runs.py: at each size the value with the smallest worst error
against the 10th and 90th percentile of the runs, whose host floor is bimodal),
plus a third of the worst error of the forced-protocol sweeps, half of the public
8x H200 sweep's and the 1-8 GiB runs'. Per-collective launch cost and efficiency
then follow from :func:`gpulab.collectives.calibrate` (tests/test_collectives_model.py
checks that the YAML holds exactly those). Shares are capped by the protocols'
payload fractions (LL 0.5, LL128 0.9375). Prints the per-collective error table.
The floor study (raw/h200-x2-2026-11-30-floors) is not used here: it is the
held-out check.
"""
from __future__ import annotations

import argparse
import copy
import csv
import io

import numpy as np

from gpulab import collectives as C, measurements as M

SYSTEM = "h200-x2-measured"
RUN = "h200-x2-2026-11-30-nccl-c-repeat"
POOLED = "h200-x2-2026-11-30-pooled"   # scripts/pool_runs.py
BANDS = ((0, 32 * 1024), (64 * 1024, 512 * 1024), (2**20, 8 * 2**20), (16 * 2**20, 2**40))


def sweep(run, name):
    out = {}
    for r in csv.DictReader(io.StringIO(M.raw_capture(run, name))):
        out.setdefault(r["collective"], []).append(
            (float(r["size_bytes"]), float(r["time_us"]) * 1e-6))
    return {k: np.array(v) for k, v in out.items()}


SWEEPS = {"p2p": sweep(POOLED, "p2p_center.csv"),
          "shm": sweep(POOLED, "shm_center.csv")}
#: One process per GPU (gpus_per_process=1): the host's own time per call.
PROCS = {"p2p": sweep(POOLED, "p2p_procs_center.csv"),
         "shm": sweep(POOLED, "shm_procs_center.csv")}
#: Public 8x H20 nccl-tests all_reduce (NVLink4 and third-generation NVSwitch, as in
#: HGX H100/H200), 128 B - 4 KiB [s] (deepseek-ai/DeepEP#303): an upper bound on the
#: GPUs' time of an 8-rank all_reduce with LL, whatever the host added.
PUBLIC_8XH20_AR = {128: 15.50e-6, 256: 15.70e-6, 512: 16.26e-6, 1024: 16.38e-6,
                   2048: 16.49e-6, 4096: 16.69e-6}
FORCED = {p: sweep("h200-x2-2026-11-30-nccl-c", f"c_proto_{p}.csv") for p in C.PROTOCOLS}
#: 1-8 GiB on the same kind of machine: guards the extrapolation beyond 1 GiB.
LARGE = {k: v for k, v in sweep("h200-x2-2026-11-30-bench-large", "c_large.csv").items()
         if k in C.COLLECTIVES}


def with_model(mdl, fn):
    orig = C._model
    C._model = lambda: mdl
    try:
        return fn()
    finally:
        C._model = orig


def procs_floor(a):
    """Host time per call with one GPU per process: median time up to 4 KiB."""
    return float(np.median(a[a[:, 0] <= 4096, 1]))


def recalibrate(mdl):
    """launch_s from the one-process-per-GPU runs, launch_gpu_s as the median extra
    floor of the one-process runs over them, efficiency from calibrate()."""
    def run():
        for tr, sw in SWEEPS.items():
            cs = mdl["transports"][tr]["collectives"]
            extra = []
            for coll, a in sw.items():
                cs[coll]["launch_s"] = procs_floor(PROCS[tr][coll])
                cs[coll]["launch_gpu_s"] = max(
                    float(np.median(a[a[:, 0] <= 4096, 1])) - cs[coll]["launch_s"], 0.0)
                extra.append(cs[coll]["launch_gpu_s"])
            mdl["transports"][tr]["launch_gpu_s"] = float(np.median(extra))
            for coll, a in sw.items():
                cs[coll]["efficiency"] = C.calibrate(
                    coll, a[:, 0], a[:, 1], 2, SYSTEM, transport=tr)["efficiency"]
            ar = mdl["transports"][tr]["collectives"]["all_reduce"]
            mdl["transports"][tr]["collectives"]["reduce"].update(
                {k: ar[k] for k in ("launch_s", "launch_gpu_s", "efficiency", "fill",
                                    "fill_bytes")
                 if k in ar})
    with_model(mdl, run)
    return mdl


def errors(mdl, transport="p2p", protocol="auto", sweeps=None, gpp=None):
    sweeps = sweeps or SWEEPS[transport]

    def run():
        out = {}
        for coll, a in sweeps.items():
            s, t = a[:, 0], a[:, 1]
            out[coll] = (s, np.abs(C.predict(coll, s, 2, SYSTEM, transport=transport,
                                              protocol=protocol, gpus_per_process=gpp)
                                    .time / t - 1))
        return out
    return with_model(mdl, run)


#: Public 8x H200 all_reduce busbw [GB/s] with NCCL defaults (NVLS on), from a
#: PyTorch benchmark (stas00/ml-engineering all_reduce_bench.py): its small sizes
#: carry PyTorch's per-call cost, so only sizes from 64 MiB guard the fit.
PUBLIC_8XH200 = {2**15: 1.44, 2**17: 5.7, 2**19: 23.9, 2**20: 39.9, 2**22: 107, 2**23: 156,
                 2**24: 220, 2**25: 276, 2**26: 347, 2**27: 402, 2**28: 436, 2**29: 450,
                 2**30: 464, 2**32: 473, 2**34: 482}


def public_error(mdl):
    s = np.array([k for k in sorted(PUBLIC_8XH200) if k >= 2**26], dtype=float)
    want = np.array([PUBLIC_8XH200[k] for k in s.astype(int)]) * 1e9
    got = with_model(mdl, lambda: C.predict("all_reduce", s, 8, "hgx-h200").busbw)
    return np.abs(got / want - 1)


def public_h20_excess(mdl):
    """How far the model's 8-rank LL all_reduce GPU time exceeds the public 8x H20
    times (relative; 0 where it does not)."""
    s = np.array(sorted(PUBLIC_8XH20_AR), dtype=float)
    want = np.array([PUBLIC_8XH20_AR[k] for k in sorted(PUBLIC_8XH20_AR)])

    def run():
        p = C._protocol(None, "p2p", "LL")
        b = C.fabric_bandwidth("hgx-h200").bytes_per_s * C._efficiency(
            "p2p", "all_reduce", 8) * p["bandwidth"]
        return p["base_latency_s"] + C.ring_steps("all_reduce", 8) * p["hop_latency_s"] \
            + C.wire_factor("all_reduce", 8) * s / b
    return np.maximum(with_model(mdl, run) / want - 1, 0)


def score(mdl):
    worst, means = [], []
    for tr in SWEEPS:
        for sweeps, gpp in ((SWEEPS[tr], None), (PROCS[tr], 1)):
            for s, err in errors(mdl, tr, sweeps=sweeps, gpp=gpp).values():
                if (s >= 65536).any():
                    worst.append(err[s >= 65536].max())
                means.append(err.mean())
    forced = []
    for p, sw in FORCED.items():
        sub = {c: sw[c] for c in ("all_reduce", "all_gather", "reduce_scatter",
                                  "broadcast")}
        forced += [err[s >= 65536].max() for s, err in errors(mdl, "p2p", p, sub).values()]
    large = [err.max() for _, err in errors(mdl, "p2p", sweeps=LARGE).values()]
    worst += large
    return (max(worst + large) + np.mean(worst) + np.mean(means) + np.mean(forced) / 3
            + public_error(mdl).max() / 2 + public_h20_excess(mdl).max())


def _set(mdl, key, value):
    node = mdl
    for k in key[:-1]:
        node = node.setdefault(k, {})
    node[key[-1]] = float(value)


def search(mdl, rounds=6):
    """Coordinate grid search over the fitted constants (see the module docstring)."""
    for tr in SWEEPS:                         # start each transport from the shared values
        mdl["transports"][tr].setdefault("protocols", {
            p: dict(mdl["protocols"][p]) for p in C.PROTOCOLS})
    grid = {}
    for tr in SWEEPS:
        P = ("transports", tr, "protocols")
        grid[P + ("LL", "base_latency_s")] = np.arange(0, 21) * 1e-6
        grid[P + ("LL128", "base_latency_s")] = np.arange(0, 31) * 1e-6
        grid[P + ("Simple", "base_latency_s")] = np.arange(0, 31) * 1e-6
        grid[P + ("LL", "bandwidth")] = np.arange(0.2, 0.5001, 0.02)
        grid[P + ("LL128", "bandwidth")] = np.arange(0.5, 0.9376, 0.02)
        for coll in ("alltoall", "sendrecv"):
            grid[("transports", tr, "collectives", coll, "gpu_latency_s")] = \
                np.arange(2, 16.1, 0.5) * 1e-6
        for coll in ("all_reduce", "all_gather", "reduce_scatter", "broadcast",
                     "alltoall", "sendrecv"):
            grid[("transports", tr, "collectives", coll, "fill")] = np.arange(0, 3.01, 0.1)
            grid[("transports", tr, "collectives", coll, "fill_bytes")] = \
                [2.0**k for k in range(14, 29)]
        grid[("transports", tr, "channel_s")] = np.arange(0, 0.31, 0.02) * 1e-6
    grid[("transports", "p2p", "protocols", "LL", "hop_latency_s")] = \
        np.arange(0.3, 4.01, 0.1) * 1e-6
    best = score(recalibrate(mdl))
    for _ in range(rounds):
        for key, values in grid.items():
            for v in values:
                trial = copy.deepcopy(mdl)
                _set(trial, key, v)
                sc = score(recalibrate(trial))
                if sc < best - 1e-9:
                    best, mdl = sc, trial
    return mdl


def report(mdl):
    for tr in SWEEPS:
        for label, sweeps, gpp in (("one process, both GPUs", SWEEPS[tr], None),
                                   ("one process per GPU", PROCS[tr], 1)):
            print(f"# {tr}, {label}: mean (worst) |error| % per band "
                  "8 B-32 KiB | 64-512 KiB | 1-8 MiB | 16 MiB-1 GiB")
            for coll, (s, err) in errors(mdl, tr, sweeps=sweeps, gpp=gpp).items():
                cells = []
                for lo, hi in BANDS:
                    m = (s >= lo) & (s <= hi)
                    cells.append(f"{err[m].mean() * 100:4.1f} ({err[m].max() * 100:4.1f})"
                                 if m.any() else "     -     ")
                print(f"{coll:15s}" + " | ".join(cells))


def _num(x):
    """YAML text of a fitted number: seconds in microseconds, others short."""
    if x == 0:
        return "0.0"
    if abs(x) < 1e-3:
        return f"{x * 1e6:.3f}e-6"
    if abs(x) >= 1e4:
        mant, exp = f"{x:.8e}".split("e")
        return f"{mant.rstrip('0').rstrip('.')}e+{int(exp)}"
    return f"{round(x, 4):g}" if x != int(x) or abs(x) < 10 else f"{x:g}"


def write_yaml(mdl, path):
    """Write the fitted numbers into gpulab/data/nccl_model.yaml, line by line,
    keeping its comments and layout (only ``transports`` is touched)."""
    import re
    lines, tr, out = open(path).read().split("\n"), None, []
    keys = ("launch_s", "launch_gpu_s", "gpu_latency_s", "efficiency", "efficiency_8",
            "fill", "fill_bytes")
    for ln in lines:
        if re.match(r"^\S", ln):
            tr = "top" if ln.startswith("transports:") else None
        m = re.match(r"^  (p2p|shm):\s*$", ln)
        if tr and m:
            tr = m.group(1)
        if tr in ("p2p", "shm"):
            t = mdl["transports"][tr]
            m = re.match(r"^    (fill|fill_bytes|launch_gpu_s|channel_s):\s*\S+(.*)$", ln)
            if m:
                ln = f"    {m.group(1)}: {_num(t[m.group(1)])}{m.group(2)}"
            m = re.match(r"^(      )(LL|LL128|Simple):(\s*)\{.*?\}(.*)$", ln)
            if m:
                v = t["protocols"][m.group(2)]
                ln = (f"{m.group(1)}{m.group(2)}:{m.group(3)}{{base_latency_s: "
                      f"{_num(v['base_latency_s'])}, hop_latency_s: {_num(v['hop_latency_s'])}, "
                      f"bandwidth: {round(v['bandwidth'], 2):g}}}{m.group(4)}")
            m = re.match(r"^(      )(\w+):(\s*)\{.*?\}(.*)$", ln)
            if m and m.group(2) in t["collectives"]:
                v = t["collectives"][m.group(2)]
                body = ", ".join(f"{k}: {_num(v[k])}" for k in keys if k in v)
                ln = f"{m.group(1)}{m.group(2)}:{m.group(3)}{{{body}}}{m.group(4)}"
        out.append(ln)
    open(path, "w").write("\n".join(out))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--search", action="store_true")
    p.add_argument("--write", action="store_true",
                   help="write the fitted numbers into gpulab/data/nccl_model.yaml")
    args = p.parse_args(argv)
    mdl = copy.deepcopy(C._model())
    if args.search:
        mdl = search(mdl)
    mdl = recalibrate(mdl)
    if args.write:
        import pathlib
        write_yaml(mdl, pathlib.Path(C.__file__).parent / "data" / "nccl_model.yaml")
    report(mdl)
    print("# per-collective constants (launch_s, efficiency[, fill, fill_bytes]):")
    for tr in SWEEPS:
        t_ = mdl['transports'][tr]
        print(f"  {tr}: fill {t_['fill']} fill_bytes {t_['fill_bytes']:.6g} launch_gpu_s "
              f"{t_['launch_gpu_s'] * 1e6:.3f}e-6 channel_s {t_['channel_s'] * 1e6:.3f}e-6")
        for coll, v in mdl["transports"][tr]["collectives"].items():
            extra = "".join(f", {k}: {v[k]:.6g}" for k in
                            ("launch_gpu_s", "gpu_latency_s", "fill", "fill_bytes") if k in v)
            print(f"      {coll + ':':16s}{{launch_s: {v['launch_s'] * 1e6:.3f}e-6, "
                  f"efficiency: {v['efficiency']:.4f}{extra}}}")
    for tr in SWEEPS:
        for p_, v in mdl["transports"][tr].get("protocols", {}).items():
            print(f"  {tr} protocol {p_}: {v}")
    print(f"  nvls latency_s: {mdl['nvls']['latency_s']}")
    large = errors(mdl, "p2p", sweeps=LARGE)
    print("# 1-8 GiB (beyond the calibration sizes), worst |time error| %: " + ", ".join(
        f"{c} {err.max() * 100:.1f}" for c, (_, err) in large.items()))
    pub = public_error(mdl)
    print(f"# public 8x H200 NVLS sweep from 64 MiB: worst |busbw error| "
          f"{pub.max() * 100:.1f}%; 8x H20 LL excess {public_h20_excess(mdl).max() * 100:.1f}%")


if __name__ == "__main__":
    main()
