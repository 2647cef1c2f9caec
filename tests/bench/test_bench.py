"""gpulab.bench without a GPU: sizes, counts, expected values, formatting, writing,
argument errors; the GPU path is skipped cleanly when torch/CUDA are absent."""
from __future__ import annotations

import json
from pathlib import Path
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpulab import bench as B
from gpulab import collectives, nccltests
from tests import strategies  # noqa: F401  (registers the "ci" profile)


@pytest.mark.parametrize("text, want", [("8", 8), ("1K", 1024), ("64k", 65536),
                                        ("1M", 2**20), ("4G", 2**32), ("1.5M", 1572864),
                                        ("2GB", 2**31), (4096, 4096)])
def test_parse_size(text, want):
    assert B.parse_size(text) == want


@pytest.mark.parametrize("bad", ["", "abc", "0", "-8", "1.3", "1Q", None, True, 2.5,
                                 "nan", "infK"])
def test_parse_size_refuses(bad):
    with pytest.raises(ValueError, match="text"):
        B.parse_size(bad)


def test_size_list_like_nccl_tests():
    assert B.size_list(8, 1024**3)[:3] == [8, 16, 32]
    assert len(B.size_list(8, 1024**3)) == 28                    # 8 B .. 1 GiB
    assert B.size_list("1K", "4K", step_bytes=1024) == [1024, 2048, 3072, 4096]
    assert B.size_list(100, 100) == [100]
    for kw, name in (({"min_bytes": 0, "max_bytes": 8}, "min_bytes"),
                     ({"min_bytes": 8, "max_bytes": 4}, "max_bytes"),
                     ({"min_bytes": 8, "max_bytes": 64, "factor": 1}, "factor"),
                     ({"min_bytes": 8, "max_bytes": 64, "step_bytes": 0}, "step_bytes"),
                     ({"min_bytes": 1, "max_bytes": 2**40, "step_bytes": 1}, "sizes")):
        with pytest.raises(ValueError, match=name if name != "sizes" else "at most"):
            B.size_list(**kw)


@given(st.sampled_from(B.COLLECTIVES), st.integers(1, 2**31), st.integers(1, 64),
       st.sampled_from(sorted(B.DTYPES)))
def test_element_count_properties(coll, size, n, dtype):
    c = B.element_count(coll, size, n, dtype)
    assert c >= 1
    if coll in ("all_gather", "reduce_scatter", "alltoall"):
        assert c % n == 0 and c >= n
        if size // B.DTYPES[dtype] >= n:
            assert c * B.DTYPES[dtype] <= size                # rounded down
    else:
        assert c == max(size // B.DTYPES[dtype], 1)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_expected_values_are_the_sums_a_correct_collective_gives(n):
    # rank r contributes r + 1: the sum over ranks is n (n + 1) / 2
    total = n * (n + 1) / 2
    for r in range(n):
        assert B.expected_values("all_reduce", r, n) == total
        assert B.expected_values("reduce_scatter", r, n) == total
        assert B.expected_values("all_gather", r, n) == [float(j + 1) for j in range(n)]
        assert B.expected_values("broadcast", r, n) == 1.0
        assert B.expected_values("sendrecv", r, n) == float((r - 1) % n + 1)
    assert B.expected_values("reduce", 0, n) == total
    with pytest.raises(ValueError, match="rank"):
        B.expected_values("all_reduce", n, n)


def _rows():
    rows = []
    for coll in ("all_reduce", "all_gather", "alltoall"):
        for size in (1024, 2**20, 2**30):
            t = 20e-6 + size / 300e9
            ab = size / t / 1e9
            row = {"collective": coll, "n_ranks": 2, "size_bytes": size,
                   "count": size // 4, "type": "float", "time_us": t * 1e6,
                   "algbw_GBps": ab, "busbw_GBps": ab * collectives.busbw_factor(coll, 2),
                   "wrong": 0}
            if coll == "alltoall":
                row.update(inplace_time_us=None, inplace_algbw_GBps=None,
                           inplace_busbw_GBps=None, inplace_wrong=None)
            else:
                row.update(inplace_time_us=t * 1e6, inplace_algbw_GBps=ab,
                           inplace_busbw_GBps=row["busbw_GBps"], inplace_wrong=0)
            rows.append(row)
    return rows


def _meta():
    return {"n_ranks": 2, "min_bytes": 1024, "max_bytes": 2**30, "step": "2(factor)",
            "warmup": 5, "iters": 20, "check": 1,
            "devices": [{"rank": r, "pid": 100 + r, "host": "node1", "device": r,
                         "bus_id": f"0000:{r + 0x18:02x}:00", "name": "NVIDIA H200"}
                        for r in range(2)]}


def test_table_output_reads_back_with_the_nccl_tests_reader():
    """What the benchmark prints is what nccl-tests prints: our own reader parses it."""
    rows = _rows()
    parts = [B.format_header(_meta())]
    for coll in ("all_reduce", "all_gather", "alltoall"):
        parts += [f"#\n# Collective test starting: {coll}_perf", B.core.table_head(coll)]
        parts += [B.format_row(r) for r in rows if r["collective"] == coll]
    parts.append("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100 \n#")
    sweeps = nccltests.parse_all("\n".join(parts) + "\n")
    assert [s.collective for s in sweeps] == ["all_reduce", "all_gather", "alltoall"]
    for sw in sweeps:
        assert sw.n_ranks == 2
        want = [r for r in rows if r["collective"] == sw.collective]
        for got_t, r in zip(sw.time_s, want):
            assert got_t == pytest.approx(r["time_us"] * 1e-6, abs=0.006e-6)
        assert not nccltests.consistency(sw)


def test_csv_and_json_outputs(tmp_path):
    rows = _rows()
    csv_text = B.rows_to_csv(rows)
    head, *lines = csv_text.strip().splitlines()
    assert head.split(",") == list(B.CSV_COLUMNS)
    assert len(lines) == len(rows)
    sw = nccltests.parse(csv_text, collective="all_reduce")
    assert sw.size_bytes.tolist()[:3] == [1024, 2**20, 2**30]
    doc = json.loads(B.rows_to_json(rows, _meta()))
    assert doc["meta"]["n_ranks"] == 2 and len(doc["results"]) == len(rows)


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "out.csv"
    B.write_atomic(path, "old\n")

    def boom(*a, **k):
        raise KeyboardInterrupt          # the run is cut short while writing
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        B.write_atomic(path, "new\n" * 1000)
    monkeypatch.undo()
    assert path.read_text() == "old\n"                  # old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]   # no temp left
    B.write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    for bad, name in ((None, "path"), ("", "path"), (tmp_path / "no" / "x.csv", "path")):
        with pytest.raises(ValueError, match=name):
            B.write_atomic(bad, "x")
    with pytest.raises(ValueError, match="text"):
        B.write_atomic(path, b"x")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "gpulab.bench", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, msg", [
    (["-e", "0"], "maxbytes"), (["-b", "1K", "-e", "8"], "maxbytes"),
    (["-f", "1"], "stepfactor"), (["-o", "allreduce"], "op"),
    (["--copy", "h2h"], "copy"), (["-n", "0"], "iters"), (["-c", "2"], "check"),
    (["--output", "x.txt"], "output"), (["--output", "/no/such/dir/x.json"], "output"),
    (["-d", "fp8"], "datatype")])
def test_cli_usage_errors(args, msg):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert "usage:" in r.stderr and msg in r.stderr


def test_cli_without_torch_or_gpu_says_so():
    r = _cli("-b", "8", "-e", "64")
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = None
    if has_gpu:
        pytest.skip("a GPU is present: the GPU path is exercised on the device")
    assert r.returncode == 3
    assert ("torch is not installed" in r.stderr) if has_gpu is None else \
        ("no CUDA GPU" in r.stderr)


def test_import_does_not_need_torch():
    r = subprocess.run([sys.executable, "-c", "import sys, gpulab.bench; "
                        "print('torch' in sys.modules)"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "False"


def test_gpu_run_on_recorded_output():
    """The benchmark's real output (1x H200) is readable and self-consistent."""
    from gpulab import measurements
    text = measurements.raw_capture("h200-x1-2026-11-30-bench-smoke", "smoke.txt")
    sweeps = nccltests.parse_all(text)
    assert {s.collective for s in sweeps} >= {"all_reduce", "all_gather", "alltoall",
                                              "sendrecv"}
    assert all(s.n_ranks == 1 for s in sweeps)
    assert all((s.wrong == 0).all() for s in sweeps)
    doc = json.loads(measurements.raw_capture("h200-x1-2026-11-30-bench-smoke",
                                              "smoke.json"))
    assert doc["meta"]["env"]["NCCL_NVLS_ENABLE"] == "0"


@pytest.mark.skipif("torch" not in sys.modules and
                    __import__("importlib").util.find_spec("torch") is None,
                    reason="torch is not installed (GPU path runs on the device)")
def test_gpu_path_smoke():                                 # pragma: no cover
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    r = subprocess.run(["torchrun", "--nproc_per_node", "1", "-m", "gpulab.bench",
                        "-b", "8", "-e", "1K"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


def test_recorded_h200_x2_runs_match_the_cpp_nccl_sweep():
    """gpulab.bench vs the nccl-tests method without Python (measure/nccl_sweep.cu),
    same machine and session: busbw within 5% from 64 MiB (at most 3 of 100 points off,
    transients of a shared machine), and the JSON output reads back."""
    from gpulab import measurements
    run = "h200-x2-2026-11-30-bench"
    ref = {s.collective: dict(zip(s.size_bytes, s.busbw)) for s in nccltests.parse_all(
        measurements.raw_capture(run, "c_default.csv"))}
    diffs = []
    for name in ("bench_default_r1.txt", "bench_default_r2.txt",
                 "a_bench_default_r1.txt", "a_bench_default_r2.txt"):
        for sw in nccltests.parse_all(measurements.raw_capture(run, name)):
            assert sw.n_ranks == 2 and (sw.wrong == 0).all()
            for s, b in zip(sw.size_bytes, sw.busbw):
                if s >= 64 * 2**20:
                    diffs.append(b / ref[sw.collective][s] - 1)
    diffs = np.abs(diffs)
    assert len(diffs) == 100           # 5 sizes x 5 collectives x 4 runs
    assert np.median(diffs) < 0.01
    assert (diffs > 0.05).sum() <= 3
    sweeps = nccltests.read_all(str(Path(measurements.__file__).with_name("data")
                                    / "measurements" / "raw" / run / "bench_default_r1.json"))
    assert [s.collective for s in sweeps][:2] == ["all_reduce", "all_gather"]


def test_current_gpu_path_recording_reads_back():
    """The GPU path as it is now (gpulab/bench/gpu.py, recorded on 1x H200 on
    2026-12-02): the text output parses as nccl-tests output, the JSON holds the same
    rows, and each ``# copy`` line agrees with the JSON copies (time as printed,
    bandwidth = size / time, per direction, GB = 1e9 B)."""
    import re

    from gpulab import measurements
    run = "h200-x1-2026-12-02-bench-smoke"
    text = measurements.raw_capture(run, "smoke.txt")
    doc = json.loads(measurements.raw_capture(run, "smoke.json"))
    sweeps = {s.collective: s for s in nccltests.parse_all(text)}
    assert set(sweeps) == {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                           "sendrecv", "broadcast", "reduce"}
    assert all(s.n_ranks == 1 and (s.wrong == 0).all() for s in sweeps.values())
    # 8 B .. 32 MiB in x4 steps: 12 sizes per collective, in the text and in the JSON
    for name, sw in sweeps.items():
        assert list(sw.size_bytes) == [8 * 4**k for k in range(12)], name
        rows = [r for r in doc["results"] if r["collective"] == name]
        assert [r["size_bytes"] for r in rows] == list(sw.size_bytes)
        np.testing.assert_allclose([r["time_us"] for r in rows], sw.time_s * 1e6,
                                   rtol=0, atol=0.006)
    assert doc["meta"]["env"]["NCCL_NVLS_ENABLE"] == "0"
    assert doc["meta"]["nccl_version"] == "2.28.9"
    printed = re.findall(r"^# copy (\w+)\s+(\d+) B\s+([\d.]+) us\s+([\d.]+) GB/s "
                         r"per direction$", text, flags=re.M)
    copies = doc["meta"]["copies"]
    assert len(printed) == len(copies) == 24          # h2d and d2h, 12 sizes each
    for (kind, size, t_us, gbps), c in zip(printed, copies):
        assert (kind, int(size), c["direction"]) == (c["kind"], c["size_bytes"],
                                                     "per_direction")
        assert abs(float(t_us) - c["time_us"]) <= 0.006
        assert c["bandwidth_GBps"] == pytest.approx(c["size_bytes"] / c["time_us"]
                                                    / 1e3, rel=1e-9)
        assert abs(float(gbps) - c["bandwidth_GBps"]) <= 0.006
    # a 32 MiB pinned copy through PyTorch runs near the link's rate (tens of GB/s),
    # an 8 B one is dominated by the issue cost (several microseconds)
    big = {c["kind"]: c for c in copies if c["size_bytes"] == 32 * 2**20}
    assert all(40 < big[k]["bandwidth_GBps"] < 64 for k in ("h2d", "d2h"))
    assert all(c["time_us"] > 2 for c in copies if c["size_bytes"] == 8)
