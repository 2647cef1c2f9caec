"""Collect gpulab.bench JSON outputs into one CSV with the machine's metadata.

    python scripts/bench_to_csv.py RAW_DIR OUT.csv

Columns: machine, driver, nccl_version, torch, date, transport, run, collective,
n_ranks, size_bytes, time_us, algbw_GBps, busbw_GBps, wrong (out-of-place
columns; GB = 1e9 B; busbw per direction as nccl-tests defines it).
"""
from __future__ import annotations

import glob
import json
import os
import sys

from gpulab.bench import write_atomic

COLS = ("machine", "driver", "nccl_version", "torch", "date", "transport", "run",
        "collective", "n_ranks", "size_bytes", "time_us", "algbw_GBps", "busbw_GBps",
        "wrong")


def main(raw, out):
    lines = [",".join(COLS)]
    for path in sorted(glob.glob(os.path.join(raw, "*bench_*.json"))):
        doc = json.load(open(path))
        meta = doc["meta"]
        gpus = {d["name"] for d in meta["devices"]}
        machine = f"{meta['n_ranks']}x {'/'.join(sorted(gpus))}"
        transport = "shm" if meta["env"].get("NCCL_P2P_DISABLE") == "1" else "p2p"
        run = os.path.basename(path)[:-5]
        for r in doc["results"]:
            vals = (machine, meta["driver"], meta["nccl_version"], meta["torch_version"],
                    meta["date"], transport, run, r["collective"], r["n_ranks"],
                    r["size_bytes"], f"{r['time_us']:.3f}", f"{r['algbw_GBps']:.4f}",
                    f"{r['busbw_GBps']:.4f}", r["wrong"])
            lines.append(",".join(map(str, vals)))
    write_atomic(out, "\n".join(lines) + "\n")
    print(f"{len(lines) - 1} rows -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
