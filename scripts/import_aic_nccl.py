"""Copy AIConfigurator's measured NCCL all_reduce rows into the single-server check.

    python scripts/import_aic_nccl.py     # rewrites its block of public_singlenode.csv

``gpulab/data/measurements/public/serving_allreduce.csv`` holds NVIDIA AIConfigurator's
nccl-tests tables (``all_reduce_perf -b S -e S -t <gpus> -d half -w 40 -n 100 -c 0``:
one process, one thread per GPU, so each GPU has its own launching thread, as with one
process per GPU; no CUDA graph; out-of-place time; NCCL 2.29.2, 2.27.3 on L40S) for the
serving chapters. The same rows are an independent check of the collective model on 2,
4 and 8 GPUs of H100, H200 and B200 servers: this script appends them to
``public_singlenode.csv`` (``gpus_per_process`` 1, transport P2P over NVLink), so that
``gpulab.calibration.public_singlenode_errors`` reports them per band. The PCIe-only
machines (L40S, RTX PRO 6000 Server) go in as ``system = none`` (cited, not checked):
the source does not print whether NCCL joined their GPUs by PCIe P2P or through host
memory. Re-running replaces the block (rows whose source starts with ``SOURCE``). Never
fitted: no constant of the model is derived from these rows.
"""
from __future__ import annotations

import csv
import io
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "gpulab" / "data" / "measurements"
SERVING = ROOT / "public" / "serving_allreduce.csv"
SINGLE = ROOT / "public_singlenode.csv"
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
SOURCE = "NVIDIA AIConfigurator"
#: AIConfigurator's system folder -> (our preset or none, parquet folder, what it is)
SYSTEMS = {
    "h100_sxm": ("dgx-h100", "8x H100 SXM on NVSwitch (HGX H100)"),
    "h200_sxm": ("hgx-h200", "8x H200 SXM on NVSwitch (HGX H200)"),
    "b200_sxm": ("hgx-b200", "8x B200 SXM on NVSwitch (HGX B200)"),
    "l40s": ("none", "L40S PCIe server, no NVLink"),
    "rtx_pro_6000_server": ("none", "RTX PRO 6000 Blackwell Server Edition, PCIe, no "
                                    "NVLink"),
}


def rows():
    text = "".join(ln for ln in SERVING.open(encoding="utf-8") if not ln.startswith("#"))
    for r in csv.DictReader(io.StringIO(text)):
        if r["implementation"] != "nccl":
            continue
        preset, what = SYSTEMS[r["system"]]
        version = r["source_id"].rsplit("-", 1)[1]
        n = int(r["gpus"])
        size = int(r["message_bytes"])
        t_us = float(r["latency_ms"]) * 1e3
        busbw = size / (t_us * 1e-6) / 1e9 * 2 * (n - 1) / n
        path = (f"aic-core/src/aiconfigurator_core/systems/data/{r['system']}/comm/nccl/"
                f"{version}/nccl_perf.parquet")
        pcie = preset == "none"
        note = (f"{what}; {n} of its GPUs; nccl-tests all_reduce_perf -b S -e S -t {n} -d "
                "half -w 40 -n 100 -c 0 (AIConfigurator collector/network/collect_nccl.py "
                "at the same commit): one process, one thread per GPU, so each GPU has its "
                "own launching thread as with one process per GPU; no CUDA graph; "
                "out-of-place time as stored (ms); 8 KiB - 8 MiB only (the rows the "
                "course's serving table copied, gpulab/data/measurements/public/"
                "serving_allreduce.csv); busbw computed from the time; "
                + ("PCIe only: whether NCCL joined the GPUs by PCIe P2P or through host "
                   "memory is not printed, so the row is cited, not checked; "
                   if pcie else "")
                + "added 2026-12-04 as an independent check, never fitted")
        yield {"source": f"{SOURCE} (ai-dynamo/aiconfigurator commit {COMMIT[:12]}), "
                         f"{r['system']}/comm/nccl/{version}/nccl_perf.parquet, "
                         f"all_reduce on {n} GPUs",
               "url": f"https://github.com/ai-dynamo/aiconfigurator/blob/{COMMIT}/{path}",
               "system": preset, "gpus": n, "gpus_per_process": 1,
               "transport": "unknown" if pcie else "p2p", "nccl_version": version,
               "collective": "all_reduce", "size_bytes": size, "time_us": f"{t_us:.2f}",
               "busbw_gbps": f"{busbw:.2f}", "algorithm": "", "protocol": "", "nvls": "",
               "in_place": 0, "kind": "published", "note": note}


def main():
    with SINGLE.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        keep = [r for r in reader if not r["source"].startswith(SOURCE)]
    new = list(rows())
    with SINGLE.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fields, lineterminator="\n")
        w.writeheader()
        w.writerows(keep + new)
    print(f"{len(new)} rows of {SOURCE} -> {SINGLE.name} ({len(keep)} other rows kept)")


if __name__ == "__main__":
    main()
