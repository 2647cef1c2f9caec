"""``gpulab compare``: measured nccl-tests sweeps vs the model, in every format."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from gpulab import cli, collectives, nccltests as nt

RAW = Path(nt.__file__).parents[1] / "data" / "measurements" / "raw"
RUN2 = RAW / "h200-x2-2026-11-30-run2" / "nccl_default.txt"
C_TXT = RAW / "h200-x2-2026-11-30-nccl-c" / "c_default.txt"
DATA = Path(__file__).parents[1] / "data" / "nccltests"
SYS = ["--system", "h200-x2-measured"]


def run(*argv):
    buf = io.StringIO()
    rc = cli.main(["compare", *map(str, argv)], out=buf)
    return rc, buf.getvalue()


def test_table_on_recorded_all_reduce():
    rc, text = run(RUN2, *SYS, "--collective", "all_reduce")
    assert rc == 0
    lines = text.splitlines()
    assert lines[0].startswith("# gpulab compare:") and "all_reduce, 2 ranks" in lines[0]
    assert lines[2].split()[:4] == ["size_bytes", "time_us", "model_time_us",
                                    "time_err_pct"]
    body = [ln for ln in lines[3:] if not ln.startswith("#")]
    assert len(body) == 28
    assert body[0].split()[:2] == ["8", "47.25"]
    bands = [ln for ln in lines if "mean |time error|" in ln]
    assert [b.split(":")[0].strip("# ").strip() for b in bands] == [
        "8 B-32 KiB", "64-512 KiB", "1-8 MiB", "16 MiB+"]
    assert "(7 sizes)" in bands[-1]


def test_json_agrees_with_the_model():
    rc, text = run(C_TXT, *SYS, "--collective", "all_reduce", "--format", "json")
    assert rc == 0
    (doc,) = json.loads(text)
    assert (doc["collective"], doc["n_ranks"], doc["transport"]) == (
        "all_reduce", 2, "p2p")
    sizes = [r["size_bytes"] for r in doc["rows"]]
    pred = collectives.predict("all_reduce", [float(s) for s in sizes], 2,
                               "h200-x2-measured", gpus_per_process=1)
    for r, t in zip(doc["rows"], pred.time):
        assert r["model_time_us"] == pytest.approx(t * 1e6, rel=1e-3)
        assert r["time_err_pct"] == pytest.approx(
            (r["model_time_us"] - r["time_us"]) / r["time_us"] * 100, abs=0.05)
    big = [b for b in doc["summary"] if b["band"] == "16 MiB+"][0]
    assert big["mean_abs_err_pct"] < 6          # the model's stated accuracy


def test_csv_all_tables_of_a_file():
    rc, text = run(RUN2, *SYS, "--format", "csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["collective"] for r in rows} == {"all_reduce", "all_gather",
                                               "reduce_scatter", "alltoall",
                                               "sendrecv"}
    assert all(r["n_ranks"] == "2" for r in rows)


def test_several_files_and_shm(tmp_path):
    rc, text = run(RAW / "h200-x2-2026-11-30-nccl-c" / "c_p2p_disable.csv", *SYS,
                   "--transport", "shm", "--collective", "all_gather")
    assert rc == 0 and "transport shm" in text


def test_plot_is_png(tmp_path):
    out = tmp_path / "cmp.png"
    rc, _ = run(RUN2, *SYS, "--collective", "all_reduce", "--plot", out)
    assert rc == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ranks_override_and_missing_name():
    rc, text = run(DATA / "gb200_nvl72_all_reduce_excerpt.txt", "--system",
                   "gb200-nvl72", "--ranks", "72", "--collective", "all_reduce")
    assert rc == 0 and "72 ranks" in text


@pytest.mark.parametrize("argv, needle", [
    # the excerpt shows only Rank 71: it does not say the count (it used to read 1)
    ([DATA / "gb200_nvl72_all_reduce_excerpt.txt", "--system", "gb200-nvl72",
      "--collective", "all_reduce"], "at least 72"),
    ([DATA / "gb200_nvl72_all_reduce_excerpt.txt", "--system", "gb200-nvl72",
      "--collective", "all_reduce", "--ranks", "8"], "8 disagrees"),
    ([DATA / "h100_2x8_all_reduce.txt", "--system", "hgx-h200-2node", "--ranks", "8"],
     "header lists 16 ranks"),
    ([RUN2, *SYS, "--ranks", "1"], "header lists 2 ranks"),
])
def test_rank_count_unknown_or_disagreeing_is_refused(argv, needle, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["compare", *map(str, argv)], out=io.StringIO())
    err = capsys.readouterr().err
    assert info.value.code == 2 and "argument --ranks" in err and needle in err


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_failed_result_checks_warn_and_exit_1(fmt, capsys):
    """v100 all_gather: two rows with #wrong = 1 and 'Out of bounds values : 4
    FAILED': printed, warned about, exit status 1."""
    rc, text = run(DATA / "v100_dgx2_old_format.txt", "--system", "hgx-h200-2node",
                   "--collective", "all_gather", "--format", fmt)
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("gpulab compare: warning:") == 6     # 5 failed checks + the GPU
    assert err.count("nccl-tests result check failed") == 5
    assert err.count("the file's GPUs are 'Tesla V100-SXM3-32GB' (V100)") == 1
    assert "Out of bounds values : 4 FAILED" in err
    warned = [ln for ln in text.splitlines() if ln.startswith("# WARNING")]
    assert len(warned) == (5 if fmt == "table" else 0)
    if fmt == "json":
        (doc,) = json.loads(text)
        assert doc["failed_checks"][-1] == "Out of bounds values : 4 FAILED"
    # a clean file: no warning, exit 0
    rc, _ = run(DATA / "v100_dgx2_old_format.txt", "--system", "hgx-h200-2node",
                "--collective", "broadcast", "--format", fmt)
    assert rc == 0 and "result check failed" not in capsys.readouterr().err


@pytest.mark.parametrize("argv, flag", [
    ([RUN2], "--system"),
    ([RUN2, "--system", "no-such"], "--system"),
    ([RUN2, *SYS, "--transport", "nvlink"], "--transport"),
    ([RUN2, *SYS, "--ranks", "0"], "--ranks"),
    ([RUN2, *SYS, "--ranks", "3"], "--ranks"),
    ([RUN2, *SYS, "--collective", "broadcast"], "--collective"),
    ([RUN2, *SYS, "--collective", "allreduce"], "--collective"),
    ([RUN2, *SYS, "--format", "xml"], "--format"),
    (["/no/such/file.txt", *SYS], "FILE"),
    ([DATA / "README.md", *SYS], "FILE"),
    ([RUN2, *SYS, "--plot", "out.svg"], "--plot"),
    ([DATA / "gb200_nvl72_all_reduce_excerpt.txt", "--system", "gb200-nvl72"],
     "--collective"),
    ([], "FILE"),
])
def test_bad_arguments_exit_2_with_usage(argv, flag, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["compare", *map(str, argv)], out=io.StringIO())
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulab compare: error: ") and err.count("\n") == 1, err
    assert flag in err


def test_forced_algorithm_and_protocol_are_modelled_as_forced(tmp_path, capsys):
    """A run under NCCL_ALGO=Ring (NVIDIA/nccl issue 812: 2x DGX A100, forced ring,
    93 us at 8 B) is compared with the model's ring, not its own pick; the header
    says so, and a forced algorithm the network cannot run is refused in one line."""
    f = tmp_path / "ring.csv"
    f.write_text("size_bytes,time_us\n8,93.12\n64,93.05\n256,93.99\n")
    args = [f, "--system", "dgx-a100-spod", "--nodes", "2", "--ranks", "16",
            "--collective", "all_reduce"]
    rc, text = run(*args, "--algorithm", "ring", "--format", "json")
    assert rc == 0
    (doc,) = json.loads(text)
    assert (doc["algorithm"], doc["protocol"]) == ("ring", "auto")
    from gpulab import network
    want = collectives.predict("all_reduce", [8.0, 64.0, 256.0], 16,
                               network.scale_out("dgx-a100-spod", 2),
                               algorithm="ring", gpus_per_process=1)
    assert set(want.algorithm) == {"ring"}
    for r, t in zip(doc["rows"], want.time):
        assert r["model_time_us"] == pytest.approx(t * 1e6, rel=1e-3)
    auto = json.loads(run(*args, "--format", "json")[1])[0]
    assert [r["model_time_us"] for r in auto["rows"]] != \
        [r["model_time_us"] for r in doc["rows"]]           # the pick is not the ring
    rc, text = run(*args, "--algorithm", "ring", "--protocol", "LL")
    assert rc == 0
    assert "algorithm ring (forced); protocol LL (forced)" in text.splitlines()[0]
    with pytest.raises(SystemExit) as exc:
        run(*args, "--algorithm", "nvls")
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 2 and "nvls" in err[-1] and "Traceback" not in err[-1]
