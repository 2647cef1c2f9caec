"""Copy NVIDIA AIConfigurator's measured NCCL tables into the single-server check.

    python scripts/import_aic_nccl.py DIR   # DIR: the repository checked out at COMMIT

AIConfigurator (ai-dynamo/aiconfigurator) stores, per system and NCCL version, the
nccl-tests sweeps its collector ran (``collector/network/collect_nccl.py`` at COMMIT:
``<op>_perf -b S -e S -t <gpus> -d half|int8 -w 40 -a 1 -n 100 -c 0``, 512 B to 512 MiB
by factors of 2, ``-n 60`` above 16 MiB; one process, one thread per GPU, so each GPU
has its own launching thread, as with one process per GPU; no CUDA graph; the
out-of-place time) as ``systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet``.
This script appends the ``half`` rows (the ``int8`` rows repeat the same byte sizes) of
every table whose folder version matches the version its rows record and that holds
one sweep per collective and GPU count, for the systems with a preset here, to
``gpulab/data/measurements/public_singlenode.csv``, so that
``gpulab.calibration.public_singlenode_errors`` reports them per band: checks, never
fitted. Tables left out: the folders whose rows record another NCCL version or hold
several sweeps (h100_sxm 2.23 and 2.27.3, h200_sxm 2.23 and 2.26.2, b200_sxm 2.27.3,
gb200 2.23: earlier tables re-collected with 2.29.2 into the old folder), and the
systems without a preset (B300, GB300, and the PCIe-only L40S and RTX PRO 6000 Server,
whose NCCL transport the tables do not record). Re-running replaces the block (rows
whose source starts with SOURCE). Needs pyarrow (not a course requirement).
"""
from __future__ import annotations

import collections
import csv
import pathlib
import sys

from gpulab import collectives

ROOT = pathlib.Path(__file__).resolve().parents[1] / "gpulab" / "data" / "measurements"
SINGLE = ROOT / "public_singlenode.csv"
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
SOURCE = "NVIDIA AIConfigurator"
DATA = "aic-core/src/aiconfigurator_core/systems/data"
#: AIConfigurator's system folder -> (our preset, what the machine is)
SYSTEMS = {
    "a100_sxm": ("dgx-a100", "8x A100 SXM4 80GB on NVSwitch (HGX A100)"),
    "h100_sxm": ("dgx-h100", "8x H100 SXM on NVSwitch (HGX H100)"),
    "h200_sxm": ("hgx-h200", "8x H200 SXM on NVSwitch (HGX H200)"),
    "b200_sxm": ("hgx-b200", "8x B200 SXM on NVSwitch (HGX B200)"),
    "gb200": ("gb200-nvl72", "GB200 compute tray (4 GPUs, one host) of an NVL72 rack"),
}


def tables(repo):
    """(system folder, version, rows) of every clean table under ``repo``."""
    import pyarrow.parquet as pq
    for system in sorted(SYSTEMS):
        base = pathlib.Path(repo) / DATA / system / "comm" / "nccl"
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            d = pq.read_table(folder / "nccl_perf.parquet").to_pydict()
            if set(d.get("version", [])) != {folder.name}:
                continue                  # rows of another NCCL version in this folder
            rows = [dict(zip(d, v)) for v in zip(*d.values())]
            sweeps = collections.Counter((r["op_name"], r["nccl_dtype"], r["num_gpus"])
                                         for r in rows)
            if set(sweeps.values()) != {21}:
                continue                  # several sweeps pooled in one table
            yield system, folder.name, rows


def rows(repo):
    for system, version, table in tables(repo):
        preset, what = SYSTEMS[system]
        path = f"{DATA}/{system}/comm/nccl/{version}/nccl_perf.parquet"
        for r in sorted((r for r in table if r["nccl_dtype"] == "half"),
                        key=lambda r: (r["op_name"], r["num_gpus"], r["message_size"])):
            n, op = int(r["num_gpus"]), r["op_name"]
            size = int(r["message_size"]) * 2                     # half: 2 bytes each
            t_us = float(r["latency"]) * 1e3
            busbw = size / (t_us * 1e-6) / 1e9 * collectives.busbw_factor(op, n)
            yield {"source": f"{SOURCE} (ai-dynamo/aiconfigurator commit {COMMIT[:12]}), "
                             f"{system}/comm/nccl/{version}: {op}_perf on {n} GPUs",
                   "url": f"https://github.com/ai-dynamo/aiconfigurator/blob/{COMMIT}/{path}",
                   "system": preset, "gpus": n, "gpus_per_process": 1, "transport": "p2p",
                   "nccl_version": version, "collective": op, "size_bytes": size,
                   "time_us": f"{t_us:.2f}", "busbw_gbps": f"{busbw:.2f}",
                   "algorithm": "", "protocol": "", "nvls": "", "in_place": 0,
                   "kind": "published",
                   "note": f"{what}, {n} of its GPUs; nccl-tests {op}_perf -t {n} -d half "
                           "(one thread per GPU, no CUDA graph), out-of-place time as "
                           "stored; see scripts/import_aic_nccl.py; added 2026-12-04 as "
                           "an independent check, never fitted"}


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: python scripts/import_aic_nccl.py DIR (ai-dynamo/aiconfigurator "
                 f"at {COMMIT})")
    with SINGLE.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        keep = [r for r in reader if not r["source"].startswith(SOURCE)]
    new = list(rows(argv[0]))
    with SINGLE.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fields, lineterminator="\n")
        w.writeheader()
        w.writerows(keep + new)
    print(f"{len(new)} rows of {SOURCE} -> {SINGLE.name} ({len(keep)} other rows kept)")


if __name__ == "__main__":
    main(sys.argv[1:])
