"""``gpulab predict --collective``: nccl-tests-like output of the collective model.

Every format parses back and agrees with :func:`gpulab.collectives.predict`; the
table has nccl-tests' out-of-place columns; sizes follow nccl-tests' -b/-e/-f; bad
arguments are usage errors naming the flag; every preset runs every collective; and
the sizes of our measured 2x H200 sweeps come out within the model's stated accuracy.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from gpulab import cli, collectives as C, measurements, systems

FORMATS = ("table", "csv", "json")
CSV_COLUMNS = ["size_bytes", "time_us", "algbw_GBps", "busbw_GBps"]
TABLE_COLUMNS = ["size", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)",
                 "busbw(GB/s)", "#wrong", "algo/proto"]
#: nccl-tests' busbw factors (doc/PERFORMANCE.md), written out independently.
NCCL_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n,
               "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n,
               "alltoall": lambda n: (n - 1) / n,
               "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0,
               "sendrecv": lambda n: 1.0}
REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}
ROOT = {"broadcast": "0", "reduce": "0"}
RUN = "h200-x2-2026-11-30-pooled"    # scripts/pool_runs.py: 8 + 7 runs, four recordings
MEASURED = {"p2p": "p2p_center.csv", "shm": "shm_center.csv"}


def run(*argv):
    out = io.StringIO()
    status = cli.main(["predict", *argv], out=out)
    assert status == 0
    return out.getvalue()


def run_error(capsys, *argv):
    with pytest.raises(SystemExit) as info:
        cli.main(["predict", *argv], out=io.StringIO())
    assert info.value.code == 2, argv
    return capsys.readouterr().err


def table_rows(text):
    """Data lines of the table (every other line starts with '#', as in nccl-tests)."""
    rows = [line.split() for line in text.splitlines() if not line.startswith("#")]
    assert all(len(r) == len(TABLE_COLUMNS) for r in rows), rows
    return [dict(zip(TABLE_COLUMNS, r)) for r in rows]


def decimals(text):
    return len(text.split(".")[1]) if "." in text else 0


def assert_printed(text, value):
    """``text`` is ``value`` rounded to the decimals it shows."""
    assert float(text) == pytest.approx(value, abs=0.5 * 10.0 ** -decimals(text)
                                        + 1e-9 * abs(value)), (text, value)


def sizes_of(argv_sizes, collective):
    return [int(r["size_bytes"]) for r in json.loads(run(
        "--collective", collective, "--system", "hgx-h200", "--format", "json",
        *argv_sizes))]


# --- every format agrees with the model -----------------------------------------------
CASES = [(c, "hgx-h200", 8, "p2p") for c in C.COLLECTIVES] + [
    ("all_reduce", "h200-x2-measured", 2, "shm"),
    ("all_gather", "dgx-a100", 5, "p2p"),
    ("all_reduce", "hgx-h200-2node", 16, "p2p"),
    ("alltoall", "h100-pcie", 8, "p2p"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("coll, system, n, transport", CASES)
def test_every_format_agrees_with_the_model(coll, system, n, transport, fmt):
    text = run("--collective", coll, "--system", system, "--ranks", str(n),
               "--transport", transport, "-b", "8", "-e", "16G", "-f", "4",
               "--format", fmt)
    sizes = [8 * 4**k for k in range(16)]
    p = C.predict(coll, np.array(sizes, float), n, system, transport=transport,
                  gpus_per_process=1)
    time_us, alg, bus = p.time * 1e6, p.algbw / 1e9, p.busbw / 1e9
    factor = NCCL_FACTOR[coll](n)
    np.testing.assert_allclose(p.busbw, p.algbw * factor, rtol=1e-12)
    if fmt == "table":
        rows = table_rows(text)
        got = {"size": "size", "time": "time(us)", "algbw": "algbw(GB/s)",
               "busbw": "busbw(GB/s)"}
        for i, r in enumerate(rows):
            assert r["algo/proto"] == f"{p.algorithm[i]}/{p.protocol[i]}"
        algo = [r["algo/proto"].split("/")[0] for r in rows]
        proto = [r["algo/proto"].split("/")[1] for r in rows]
    elif fmt == "csv":
        assert text.splitlines()[0] == ",".join(CSV_COLUMNS)
        rows = list(csv.DictReader(io.StringIO(text)))
        got = dict(zip(("size", "time", "algbw", "busbw"), CSV_COLUMNS))
        algo = proto = None
    else:
        rows = json.loads(text)
        assert all(list(r) == CSV_COLUMNS + ["algorithm", "protocol"] for r in rows)
        assert all(isinstance(r["size_bytes"], int) for r in rows)
        got = dict(zip(("size", "time", "algbw", "busbw"), CSV_COLUMNS))
        algo = [r["algorithm"] for r in rows]
        proto = [r["protocol"] for r in rows]
    assert [int(r[got["size"]]) for r in rows] == sizes
    for i, r in enumerate(rows):
        printed = {k: str(r[got[k]]) for k in ("time", "algbw", "busbw")}
        assert_printed(printed["time"], time_us[i])
        assert_printed(printed["algbw"], alg[i])
        assert_printed(printed["busbw"], bus[i])
        # busbw = algbw x nccl-tests' factor, within the printed rounding
        tol = 0.5 * 10.0 ** -decimals(printed["busbw"]) * (1 + factor) + 1e-9
        assert float(printed["busbw"]) == pytest.approx(
            float(printed["algbw"]) * factor, abs=tol)
    if algo is not None:
        assert algo == list(p.algorithm) and proto == list(p.protocol)


# --- the table looks like nccl-tests' ---------------------------------------------------
@pytest.mark.parametrize("coll", C.COLLECTIVES)
def test_table_has_nccl_tests_columns(coll):
    text = run("--collective", coll, "--system", "hgx-h200", "--ranks", "8",
               "-b", "8", "-e", "4G")
    lines = text.splitlines()
    assert lines[0] == (f"# gpulab predict: {coll}, hgx-h200, nranks 8, transport p2p "
                        "(P2P over NVLink4), model: NCCL-like (see gpulab.collectives)")
    header = [line for line in lines if line.split()[:2] == ["#", "size"]]
    assert len(header) == 1 and header[0].split()[1:] == TABLE_COLUMNS
    assert "algo/proto: gpulab's addition" in text
    assert "per direction" in text and "GB/s = 1e9 B/s" in text
    rows = table_rows(text)
    assert len(rows) == 30
    data = [line for line in lines if not line.startswith("#")]
    # right-aligned like nccl-tests: every column ends where its header ends
    cut = header[0].index("algo/proto")
    ends = [m.end() for m in re.finditer(r"\S+", header[0][:cut])][1:]
    for line in data:
        assert [m.end() for m in re.finditer(r"\S+", line[:cut])] == ends, line
        assert line[cut:].strip() == line.split()[-1]
    n = 8
    for r in rows:
        size = int(r["size"])
        per_rank = coll in ("all_gather", "reduce_scatter", "alltoall")
        assert int(r["count"]) == (size // (4 * n) if per_rank else size // 4)
        assert (r["type"], r["redop"], r["root"], r["#wrong"]) == (
            "float", REDOP.get(coll, "none"), ROOT.get(coll, "-1"), "N/A")
        # nccl-tests' time precision: 2 decimals < 100 us, 1 < 10 ms, then none
        t = float(r["time(us)"])
        assert decimals(r["time(us)"]) == (2 if t < 100 else 1 if t < 10000 else 0)
        assert decimals(r["algbw(GB/s)"]) == decimals(r["busbw(GB/s)"]) == 2
    avg = re.fullmatch(r"# Avg bus bandwidth\s+: (\S+)", lines[-2])
    p = C.predict(coll, [8.0 * 2**k for k in range(30)], n, "hgx-h200",
                  gpus_per_process=1)
    assert avg and float(avg.group(1)) == pytest.approx(p.busbw.mean() / 1e9,
                                                        rel=1e-5)
    assert lines[-1] == "#"


def test_table_header_names_transport_ranks_and_forced_choices():
    text = run("--collective", "all_gather", "--system", "h200-x2-measured",
               "--transport", "shm", "--protocol", "LL128", "-b", "1M", "-e", "1M")
    first = text.splitlines()[0]
    assert first.startswith("# gpulab predict: all_gather, h200-x2-measured, nranks 2, "
                            "transport shm (")
    assert "algorithm auto, protocol LL128" in text
    assert "busbw = algbw x 0.5" in text
    assert table_rows(text)[0]["algo/proto"] == "ring/LL128"


def test_forced_algorithm_and_protocol():
    rows = json.loads(run("--collective", "all_reduce", "--system", "hgx-h200",
                          "--algorithm", "ring", "--protocol", "LL", "-b", "1K",
                          "-e", "1G", "-f", "8", "--format", "json"))
    assert {(r["algorithm"], r["protocol"]) for r in rows} == {("ring", "LL")}
    nvls = json.loads(run("--collective", "all_reduce", "--system", "dgx-h100",
                          "--algorithm", "nvls", "-b", "1G", "-e", "1G",
                          "--format", "json"))
    assert nvls[0]["algorithm"] == "nvls"
    assert nvls[0]["busbw_GBps"] == pytest.approx(
        C.predict("all_reduce", 2**30, 8, "dgx-h100", algorithm="nvls").busbw[0]
        / 1e9, abs=1e-4)


def test_one_rank_is_a_copy_at_hbm_speed():
    rows = json.loads(run("--collective", "all_reduce", "--system", "hgx-h200",
                          "--ranks", "1", "-b", "8", "-e", "1G", "--format", "json"))
    assert {r["busbw_GBps"] for r in rows} == {0.0}
    assert {r["algorithm"] for r in rows} == {"copy"}
    # 1 GiB: read + write at the H200's 4.8 TB/s -> 447.4 us, algbw 2400 GB/s
    # (not 8.43 us and 127,401 GB/s)
    assert rows[-1]["time_us"] == pytest.approx(447.392, abs=1e-3)
    assert rows[-1]["algbw_GBps"] == pytest.approx(2400.0)
    table = run("--collective", "sendrecv", "--system", "hgx-h200", "--ranks", "1")
    assert "# 1 rank: no peer" in table and "HBM 4800 GB/s" in table
    assert "# 1 rank" not in run("--collective", "sendrecv", "--system", "hgx-h200",
                                 "--ranks", "2")


# --- sizes and ranks ----------------------------------------------------------------------
def test_size_list_follows_nccl_tests():
    sizes = sizes_of(["-b", "8", "-e", "1G", "-f", "2"], "all_reduce")
    assert len(sizes) == 28 and sizes == [2**k for k in range(3, 31)]
    default = sizes_of([], "all_reduce")
    assert len(default) == 30 and default[0] == 8 and default[-1] == 4 * 2**30
    assert sizes_of(["-b", "1000", "-e", "5000", "-f", "3"], "sendrecv") == [1000, 3000]
    assert sizes_of(["--min-bytes", "64K", "--max-bytes", "1M", "--factor", "4"],
                    "broadcast") == [65536, 262144, 1048576]
    assert sizes_of(["-b", "1.5M", "-e", "1.5M"], "reduce") == [3 * 2**19]


@pytest.mark.parametrize("name", sorted(systems.names()))
def test_ranks_default_to_the_systems_gpus(name):
    n = systems.get(name).n_gpus
    text = run("--collective", "all_reduce", "--system", name, "-b", "1G", "-e", "1G")
    assert f", nranks {n}, " in text.splitlines()[0]
    row = json.loads(run("--collective", "all_reduce", "--system", name, "-b", "1G",
                         "-e", "1G", "--format", "json"))[0]
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * (n - 1) / n,
                                              abs=2e-4 * n)


def test_system_from_yaml_file(tmp_path):
    from tests.models.test_systems import VALID

    f = tmp_path / "box.yaml"
    f.write_text(VALID)
    rows = json.loads(run("--collective", "all_reduce", "--system", str(f),
                          "-b", "1G", "-e", "1G", "--format", "json"))
    p = C.predict("all_reduce", 2**30, 2, systems.resolve(str(f)))
    assert rows[0]["time_us"] == pytest.approx(p.time[0] * 1e6, abs=5e-4)


def test_gpus_per_process_changes_only_the_host_time():
    """-g 8 (the default for 8 ranks) against one process per GPU: small messages
    pay eight launches from one thread, large ones the same bandwidth."""
    def times(*extra):
        return {r["size_bytes"]: r["time_us"] for r in json.loads(run(
            "--collective", "all_reduce", *BASE, "-b", "8", "-e", "8G", "-f", "1024",
            "--format", "json", *extra))}
    g8, g1 = times("--gpus-per-process", "8"), times()
    assert g8[8] > 2 * g1[8]
    assert g8[2**33] == pytest.approx(g1[2**33], rel=1e-3)
    head = run("--collective", "all_reduce", *BASE, "-b", "8", "-e", "8",
               "--gpus-per-process", "8").splitlines()[1]
    assert "8 GPU(s) per process (nccl-tests -g 8" in head


# --- bad arguments --------------------------------------------------------------------------
BASE = ["--system", "hgx-h200"]


@pytest.mark.parametrize("argv, needle", [
    (["--collective", "all_reduce_perf", *BASE], "argument --collective: invalid choice"),
    (["--collective", "all_reduce", "--system", "dgx-z100"],
     "argument --system: system must be a preset name"),
    (["--collective", "all_reduce", "--system", "/no/such.yaml"],
     "argument --system: system: path: cannot read"),
    (["--collective", "all_reduce"], "the following arguments are required: --system"),
    (["--collective", "all_reduce", *BASE, "--ranks", "9"],
     "argument --ranks: 9 is more than the 8 GPUs of system hgx-h200"),
    (["--collective", "all_reduce", "--system", "h200-x2-measured", "--ranks", "3"],
     "argument --ranks: 3 is more than the 2 GPUs"),
    (["--collective", "all_reduce", *BASE, "--ranks", "0"],
     "argument --ranks: invalid ranks '0': must be an integer >= 1"),
    (["--collective", "all_reduce", *BASE, "--ranks", "-2"], "argument --ranks"),
    (["--collective", "all_reduce", *BASE, "--ranks", "two"],
     "argument --ranks: invalid ranks 'two'"),
    (["--collective", "all_reduce", *BASE, "-b", "1G", "-e", "1M"],
     "argument --min-bytes: 1073741824 is larger than --max-bytes 1048576"),
    (["--collective", "all_reduce", *BASE, "--factor", "1"],
     "argument --factor/-f: invalid factor '1'"),
    (["--collective", "all_reduce", *BASE, "--factor", "0"],
     "argument --factor/-f: invalid factor '0'"),
    (["--collective", "all_reduce", *BASE, "-b", "8X"],
     "argument --min-bytes/-b: invalid size '8X'"),
    (["--collective", "all_reduce", "--system", "h100-pcie", "--algorithm", "nvls"],
     "argument --algorithm: algorithm 'nvls' needs all_reduce inside one NVLink"),
    (["--collective", "all_reduce", "--system", "dgx-a100", "--algorithm", "nvls"],
     "argument --algorithm: algorithm 'nvls' needs all_reduce inside one NVLink"),
    (["--collective", "all_gather", *BASE, "--algorithm", "tree"],
     "argument --algorithm: algorithm 'tree' is modelled for all_reduce only"),
    (["--collective", "all_reduce", *BASE, "--algorithm", "nvlstree"],
     "argument --algorithm: algorithm 'nvlstree' needs all_reduce across nodes"),
    (["--collective", "all_reduce", *BASE, "--algorithm", "hierarchical"],
     "argument --algorithm: invalid choice"),
    (["--collective", "all_reduce", *BASE, "--nodes", "0"],
     "argument --nodes: invalid nodes '0': must be an integer in [1, 100000]"),
    (["--collective", "all_reduce", *BASE, "--nodes", "100001"],
     "argument --nodes: invalid nodes '100001'"),
    (["--collective", "all_reduce", *BASE, "--nodes", "two"],
     "argument --nodes: invalid nodes 'two'"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--nics", "8x400"],
     "argument --nics: must be COUNTxRATE such as '8x400G' (count 1-1024, rate "
     "1-3200 Gb/s per NIC)"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--nics", "0x400G"],
     "argument --nics: must be COUNTxRATE"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--nics", "8x9999G"],
     "argument --nics: must be COUNTxRATE"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--fabric", "omnipath"],
     "argument --fabric: invalid choice: 'omnipath' (choose from 'ib', 'roce', "
     "'efa', 'tcpx')"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--sharp", "yes"],
     "argument --sharp: invalid choice"),
    (["--collective", "all_reduce", "--system", "h100-pcie", "--nodes", "2"],
     "argument --nics: system 'h100-pcie' has no network section: give nics and "
     "fabric"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--algorithm", "collnet"],
     "argument --algorithm: algorithm 'collnet' across 2 nodes needs all_reduce with "
     "SHARP"),
    (["--collective", "all_gather", *BASE, "--nodes", "2", "--algorithm", "tree"],
     "argument --algorithm: algorithm 'tree' across 2 nodes needs all_reduce"),
    (["--collective", "all_reduce", *BASE, "--nodes", "2", "--ranks", "17"],
     "argument --ranks: 17 is more than the 16 GPUs"),
    (["--copy", "p2p", *BASE, "--nodes", "2"],
     "argument --nodes: applies to --collective only, not --copy"),
    (["--copy", "p2p", *BASE, "--fabric", "ib"],
     "argument --fabric: applies to --collective only"),
    (["--collective", "all_reduce", "--system", "no-such-cluster", "--nodes", "2"],
     "argument --system:"),
    (["--collective", "all_reduce", *BASE, "--algorithm", "butterfly"],
     "argument --algorithm: invalid choice"),
    (["--collective", "all_reduce", *BASE, "--protocol", "LL256"],
     "argument --protocol: invalid choice"),
    (["--collective", "all_reduce", *BASE, "--transport", "ib"],
     "argument --transport: invalid choice"),
    (["--collective", "all_reduce", "--copy", "h2d", *BASE],
     "argument --copy: not allowed with argument --collective"),
    (["--copy", "h2d", "--collective", "all_reduce", *BASE],
     "argument --collective: not allowed with argument --copy"),
    (["--copy", "p2p", *BASE, "--ranks", "2"],
     "argument --ranks: applies to --collective only, not --copy"),
    (["--copy", "p2p", *BASE, "--transport", "shm"],
     "argument --transport: applies to --collective only"),
    (["--collective", "all_reduce", *BASE, "--memory", "pinned"],
     "argument --memory: applies to --copy only, not --collective"),
    (BASE, "give --copy {h2d,d2h,d2d,p2p} or --collective {all_reduce,"),
    (["--collective", "all_reduce", *BASE, "--format", "xml"],
     "argument --format: invalid choice"),
    (["--collective", "all_reduce", *BASE, "--gpus-per-process", "0"],
     "argument --gpus-per-process: invalid gpus-per-process '0'"),
    (["--collective", "all_reduce", *BASE, "--gpus-per-process", "3"],
     "argument --gpus-per-process: gpus_per_process must divide n_ranks (8)"),
    (["--collective", "all_reduce", *BASE, "--ranks", "2", "--gpus-per-process", "4"],
     "argument --gpus-per-process: gpus_per_process must be an integer in [1, 2]"),
    (["--copy", "p2p", *BASE, "--gpus-per-process", "1"],
     "argument --gpus-per-process: applies to --collective only"),
])
def test_bad_arguments(capsys, argv, needle):
    err = run_error(capsys, *argv)
    assert needle in err, err
    assert err.startswith("gpulab predict: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


# --- every preset x every collective ------------------------------------------------------
@pytest.mark.parametrize("transport", C.TRANSPORTS)
@pytest.mark.parametrize("name", sorted(systems.names()))
def test_every_preset_runs_every_collective(name, transport):
    for coll in C.COLLECTIVES:
        rows = list(csv.DictReader(io.StringIO(run(
            "--collective", coll, "--system", name, "--transport", transport,
            "-b", "8", "-e", "16G", "-f", "8", "--format", "csv"))))
        assert len(rows) == 11, (name, coll)            # 8 B .. 8 GiB
        t = np.array([float(r["time_us"]) for r in rows])
        bus = np.array([float(r["busbw_GBps"]) for r in rows])
        assert np.all(np.isfinite(t)) and np.all(t > 0), (name, coll)
        assert np.all(np.diff(t) >= 0), (name, coll)       # bigger never faster
        assert np.all(np.isfinite(bus)) and bus[-1] > 0, (name, coll)


# --- our measured sweeps on 2x H200 ---------------------------------------------------------
def _measured(transport):
    out = {}
    for r in csv.DictReader(io.StringIO(measurements.raw_capture(
            RUN, MEASURED[transport]))):
        assert int(r["n_ranks"]) == 2
        out.setdefault(r["collective"], []).append(
            (int(r["size_bytes"]), float(r["time_us"])))
    return out


@pytest.mark.parametrize("transport", sorted(MEASURED))
def test_predicting_our_measured_sweep(transport):
    """The CLI at our sweep's sizes is within the accuracy that
    tests/models/test_collectives_model.py asserts for the model: mean |error| < 10%, worst
    < 40% from 64 KiB, < 20% from 64 MiB (2x H200 SXM, NCCL 2.28.3, NVLS off)."""
    measured = _measured(transport)
    assert set(measured) == set(C.COLLECTIVES) - {"reduce"}      # reduce: not measured
    for coll, pairs in measured.items():
        sizes = np.array([s for s, _ in pairs])
        t_meas = np.array([t for _, t in pairs])
        factor = int(round(sizes[1] / sizes[0]))
        assert np.all(sizes[1:] == sizes[:-1] * factor)      # an nccl-tests sweep
        rows = list(csv.DictReader(io.StringIO(run(
            "--collective", coll, "--system", "h200-x2-measured", "--ranks", "2",
            "--transport", transport, "--gpus-per-process", "2", "-b", str(sizes[0]), "-e", str(sizes[-1]),
            "-f", str(factor), "--format", "csv"))))
        assert [int(r["size_bytes"]) for r in rows] == list(sizes)
        t_pred = np.array([float(r["time_us"]) for r in rows])
        err = np.abs(t_pred / t_meas - 1)
        assert err.mean() < 0.12, (coll, err.mean())
        assert err[sizes >= 65536].max() < 0.45, (coll, err[sizes >= 65536].max())
        assert err[sizes >= 2**26].max() < 0.20, (coll, err[sizes >= 2**26].max())


def test_console_script():
    env = {**os.environ, "MPLBACKEND": "Agg"}
    ok = subprocess.run([sys.executable, "-m", "gpulab", "predict", "--collective",
                         "all_reduce", "--system", "hgx-h200", "-b", "1M", "-e", "1M",
                         "--format", "csv"], capture_output=True, text=True, env=env,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == ",".join(CSV_COLUMNS)
    bad = subprocess.run([sys.executable, "-m", "gpulab", "predict", "--collective",
                          "all_reduce", "--system", "hgx-h200", "--ranks", "9"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "argument --ranks" in bad.stderr


def test_nvls_flag_and_environment(monkeypatch, capsys):
    """--nvls auto follows NCCL_NVLS_ENABLE like NCCL; on/off override it."""
    from gpulab.cli import main

    def last_busbw(*extra):
        assert main(["predict", "--collective", "all_reduce", "--system", "hgx-h200",
                     "--ranks", "8", "-b", "4G", "-e", "4G", "--format", "csv",
                     *extra]) == 0
        return float(capsys.readouterr().out.strip().splitlines()[-1].split(",")[3])

    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    assert last_busbw() > 450                       # NVLS: busbw above the line rate
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    assert last_busbw() < 450                       # ring, as NCCL would run here
    assert last_busbw("--nvls", "on") > 450
    monkeypatch.delenv("NCCL_NVLS_ENABLE")
    assert last_busbw("--nvls", "off") < 450


# --- across nodes (gpulab.network) ---------------------------------------------------------
def test_nodes_scale_the_system_and_ranks_default_to_all_gpus():
    """--nodes 4 on a cluster preset: 32 ranks, the same numbers as
    network.scale_out + collectives.predict, in the CSV columns of one node."""
    from gpulab import network
    text = run("--collective", "all_reduce", "--system", "dgx-h100-spod", "--nodes",
               "4", "-b", "1M", "-e", "1G", "-f", "32", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == CSV_COLUMNS
    c = network.scale_out("dgx-h100-spod", 4)
    p = C.predict("all_reduce", [2**20, 2**25, 2**30], 32, c)
    for r, t in zip(rows, p.time):
        assert float(r["time_us"]) == pytest.approx(t * 1e6, rel=1e-4)
    table = run("--collective", "all_reduce", "--system", "dgx-h100-spod", "--nodes",
                "4", "-b", "1G", "-e", "1G")
    assert "nranks 32" in table and "between 4 nodes: 8x 400 Gb/s infiniband" in table


def test_nics_fabric_and_sharp_change_the_prediction():
    """Half the NICs halve a large ring's busbw; SHARP lets collnet in; EFA's extra
    latency shows in the smallest message."""
    base = ["--collective", "all_reduce", "--system", "hgx-h200", "--nodes", "4",
            "--algorithm", "ring", "-b", "4G", "-e", "4G", "--format", "json"]
    full = json.loads(run(*base))[0]["busbw_GBps"]
    half = json.loads(run(*base, "--nics", "4x400G"))[0]["busbw_GBps"]
    assert half == pytest.approx(full / 2, rel=0.03)
    auto = ["--collective", "all_reduce", "--system", "hgx-h200", "--nodes", "4",
            "-b", "8", "-e", "8", "--format", "json"]
    assert json.loads(run(*auto, "--sharp", "on", "-b", "1G", "-e", "1G"))[0][
        "algorithm"] in ("collnet", "nvlstree")
    ib = json.loads(run(*auto))[0]["time_us"]
    efa = json.loads(run(*auto, "--fabric", "efa"))[0]["time_us"]
    assert efa > ib + 20
