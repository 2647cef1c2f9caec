#!/usr/bin/env python3
"""Power and SM clock of tensor-core work on k of the GPU's SMs, to read how the clock falls
under the board's power limit.

A power-limited GPU runs its SMs at the highest clock whose power fits the limit. Under a
fixed limit (the H200's 700 W; its settings are left as they are) the sweep varies the
*load* instead of the limit: a persistent Triton kernel keeps exactly ``k`` SMs busy with
tensor-core products (one CTA per SM: each CTA's shared memory rules out a second), every
CTA multiplying tiles that stay in L2 so that the SMs, not HBM, set the pace.

* With few SMs the board stays under its limit and the SMs run at the top clock: the power
  rises linearly in ``k`` (intercept = the power that does not scale with the busy SMs).
* With many SMs the board reaches its limit and the driver lowers the clock until
  ``P_static + k * p_sm(f) = P_limit``: each such point gives the power of one busy SM at
  the clock it settled on.

Each configuration runs ``--seconds`` of back-to-back kernels while NVML is read every
20 ms in a thread (board power, instantaneous where the driver offers it, SM clock, the
power-cap throttle reason); the rows keep the medians over the second half of the run.
The achieved TFLOP/s per SM is recorded beside the clock (it should follow the clock).
References: cuBLAS BF16 and FP8 products of 8192^3 on every SM, and the idle board.

Usage (GPU machine):
  python3 measure/power_clock.py --output power_clock.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
import threading
import time

import torch
import triton
import triton.language as tl

try:
    import pynvml
except ImportError:          # pragma: no cover - the GPU image has nvidia-ml-py
    pynvml = None

SMS = (4, 8, 16, 24, 33, 44, 55, 66, 77, 88, 99, 110, 121, 132)


@triton.jit
def _spin(a_ptr, b_ptr, c_ptr, iters, NBLK: tl.constexpr, BM: tl.constexpr,
          BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(iters):
        j = (i + pid) % NBLK
        a = tl.load(a_ptr + j * BM * BK + rm[:, None] * BK + rk[None, :])
        b = tl.load(b_ptr + j * BK * BN + rk[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc)


class Sampler:
    """NVML readings in a thread: (t, power W, SM MHz, power-capped)."""

    def __init__(self, period=0.02):
        self.period = period
        self.rows = []
        self._stop = threading.Event()
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.instant = self._instant() is not None

    def _instant(self):
        try:
            fid = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)
            v = pynvml.nvmlDeviceGetFieldValues(self.h, [fid])[0]
            if v.nvmlReturn != 0:
                return None
            return v.value.uiVal / 1000.0
        except Exception:
            return None

    def read(self):
        p = self._instant() if self.instant else None
        if p is None:
            p = pynvml.nvmlDeviceGetPowerUsage(self.h) / 1000.0
        f = pynvml.nvmlDeviceGetClockInfo(self.h, pynvml.NVML_CLOCK_SM)
        try:
            r = pynvml.nvmlDeviceGetCurrentClocksEventReasons(self.h)
        except Exception:
            r = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(self.h)
        cap = bool(r & 0x4)          # SW power cap (nvmlClocksEventReasonSwPowerCap)
        return time.perf_counter(), p, f, cap

    def _loop(self):
        while not self._stop.is_set():
            self.rows.append(self.read())
            time.sleep(self.period)

    def start(self):
        self.rows = []
        self._stop.clear()
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def stop(self):
        self._stop.set()
        self.t.join()
        return self.rows


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def run_for(fn, flops_per_call, seconds, sampler):
    """Call ``fn`` back to back for ``seconds``; NVML medians over the second half."""
    fn()
    torch.cuda.synchronize()
    sampler.start()
    t0 = time.perf_counter()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, gpu_ms = 0, 0.0
    while time.perf_counter() - t0 < seconds:
        e0.record()
        for _ in range(4):
            fn()
        e1.record()
        e1.synchronize()
        gpu_ms += e0.elapsed_time(e1)
        calls += 4
    rows = sampler.stop()
    half = [r for r in rows if r[0] >= t0 + seconds / 2]
    return {"power_w": median([r[1] for r in half]),
            "sm_mhz": median([r[2] for r in half]),
            "capped_share": sum(r[3] for r in half) / max(len(half), 1),
            "samples": len(half),
            "tflops": flops_per_call * calls / (gpu_ms * 1e-3) / 1e12}


def spin_case(dtype, k, iters):
    bm, bn = 128, 256
    bk = 64 if dtype == "bf16" else 128
    nblk = 16
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float8_e4m3fn
    a = torch.randn(nblk * bm * bk, device="cuda").to(tdt)
    b = torch.randn(nblk * bk * bn, device="cuda").to(tdt)
    c = torch.empty(k * bm * bn, device="cuda", dtype=torch.float32)

    def fn():
        _spin[(k,)](a, b, c, iters, NBLK=nblk, BM=bm, BN=bn, BK=bk,
                    num_warps=8, num_stages=3)
    return fn, 2.0 * bm * bn * bk * iters * k


def cublas_case(dtype, n=8192):
    if dtype == "bf16":
        x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.matmul(x, y)), 2.0 * n ** 3
    x = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    y = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    return (lambda: torch._scaled_mm(x, y, one, one, out_dtype=torch.bfloat16)), 2.0 * n ** 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--iters", type=int, default=4096, help="K-loop steps per CTA per call")
    ap.add_argument("--deadline", type=float, default=400.0)
    args = ap.parse_args()
    if pynvml is None:
        sys.exit("power_clock: needs nvidia-ml-py (pynvml)")
    s = Sampler()
    lim = pynvml.nvmlDeviceGetEnforcedPowerLimit(s.h) / 1000.0
    fmax = pynvml.nvmlDeviceGetMaxClockInfo(s.h, pynvml.NVML_CLOCK_SM)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"power limit {lim:.0f} W, max SM clock {fmax} MHz, {sms} SMs, "
          f"instant power {'yes' if s.instant else 'no (1 s average)'}", file=sys.stderr)
    start = time.perf_counter()
    fields = ["kernel", "dtype", "sms", "power_w", "sm_mhz", "capped_share", "samples",
              "tflops", "power_limit_w", "max_sm_mhz", "instant_power"]
    with open(args.output, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()

        def emit(kernel, dtype, k, res):
            row = {"kernel": kernel, "dtype": dtype, "sms": k, **res,
                   "power_limit_w": lim, "max_sm_mhz": fmax, "instant_power": int(s.instant)}
            w.writerow({f: (f"{v:.4g}" if isinstance(v, float) else v)
                        for f, v in row.items()})
            fh.flush()
            print(kernel, dtype, k, {x: round(v, 3) for x, v in res.items()},
                  file=sys.stderr)

        time.sleep(2.0)
        s.start()
        time.sleep(2.0)
        idle = s.stop()
        emit("idle", "", 0, {"power_w": median([r[1] for r in idle]),
                             "sm_mhz": median([r[2] for r in idle]),
                             "capped_share": 0.0, "samples": len(idle), "tflops": 0.0})
        for dtype in ("bf16", "fp8"):
            for k in SMS:
                if k > sms or time.perf_counter() - start > args.deadline:
                    continue
                try:
                    fn, fl = spin_case(dtype, k, args.iters)
                    emit("triton-spin", dtype, k, run_for(fn, fl, args.seconds, s))
                except Exception as exc:       # keep the rest of the sweep
                    print(f"triton-spin {dtype} {k}: {exc!r}"[:400], file=sys.stderr)
                    break
            try:
                fn, fl = cublas_case(dtype)
                emit("cublas-8192", dtype, sms, run_for(fn, fl, args.seconds, s))
            except Exception as exc:
                print(f"cublas {dtype}: {exc!r}"[:400], file=sys.stderr)
        # the BF16 sweep again at the end, to see drift with temperature
        for k in (8, 66, 132):
            if time.perf_counter() - start > args.deadline:
                break
            fn, fl = spin_case("bf16", k, args.iters)
            emit("triton-spin-repeat", "bf16", k, run_for(fn, fl, args.seconds, s))


if __name__ == "__main__":
    main()
