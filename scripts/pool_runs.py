"""Write the pooled calibration tables of our 2x H200 collective sweeps.

    python scripts/pool_runs.py      # rewrites raw/h200-x2-2026-11-30-pooled/*.csv

Per transport, :func:`gpulab.measurements.pool_runs` over
:data:`gpulab.measurements.FIT_RUNS` (``<t>_center.csv``, one process driving both
GPUs) and :data:`~gpulab.measurements.PROCS_RUNS` (``<t>_procs_center.csv``, one
process per GPU): per collective and size, ``time_us`` is
``2 lo hi / (lo + hi)`` of the 10th and 90th percentile of the runs (the value with
the smallest worst relative error against both: the host floor is bimodal from run
to run), with its algbw and busbw (nccl-tests' definitions, GB = 1e9 B), ``lo_us``,
``hi_us``, ``median_us`` and ``runs``. The floor study
(``HOLDOUT_RUNS``) is not pooled here: it checks the model.
"""
from __future__ import annotations

import csv
import pathlib

import numpy as np

from gpulab import collectives as C, measurements as M

FIELDS = ["collective", "n_ranks", "size_bytes", "time_us", "algbw_GBps", "busbw_GBps",
          "lo_us", "hi_us", "median_us", "runs"]


def main():
    folder = pathlib.Path(M.__file__).parent / "data" / "measurements" / "raw" / \
        "h200-x2-2026-11-30-pooled"
    folder.mkdir(exist_ok=True)
    tables = [(f"{tr}_center.csv", runs) for tr, runs in M.FIT_RUNS.items()]
    tables += [(f"{tr}_procs_center.csv", runs) for tr, runs in M.PROCS_RUNS.items()]
    for name, runs in tables:
        with open(folder / name, "w", newline="") as f:
            w = csv.DictWriter(f, FIELDS, lineterminator="\n")
            w.writeheader()
            for coll, p in M.pool_runs(runs).items():
                for i, s in enumerate(p.size_bytes):
                    algbw = s / p.center[i] / 1e9
                    w.writerow({"collective": coll, "n_ranks": 2, "size_bytes": int(s),
                                "time_us": f"{p.center[i] * 1e6:.3f}",
                                "algbw_GBps": f"{algbw:.4f}",
                                "busbw_GBps": f"{algbw * C.busbw_factor(coll, 2):.4f}",
                                "lo_us": f"{p.lo[i] * 1e6:.3f}",
                                "hi_us": f"{p.hi[i] * 1e6:.3f}",
                                "median_us": f"{p.median[i] * 1e6:.3f}",
                                "runs": int(np.isfinite(p.times[:, i]).sum())})
        print(f"{len(runs)} runs -> {folder.name}/{name}")


if __name__ == "__main__":
    main()
