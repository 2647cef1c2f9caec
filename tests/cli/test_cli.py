"""The command line: every subcommand (specs, link, nvlink-status, predict), every
format, and bad arguments (exit status 2 with a message naming the argument)."""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

from gpulab import cli, links, pcie, specs, systems
from gpulab.cli.predict import parse_size, sweep_sizes

FORMATS = ("table", "csv", "json")
NVLINK_STATUS = resources.files("gpulab").joinpath(
    "data", "measurements", "raw", "h200-x2-2026-11-30", "nvlink-status.txt")


def run(*argv):
    out = io.StringIO()
    status = cli.main(list(argv), out=out)
    return status, out.getvalue()


def run_error(capsys, *argv):
    """Run a command that must fail; return its stderr."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv), out=io.StringIO())
    assert info.value.code == 2, argv
    return capsys.readouterr().err


def parse(fmt, text):
    if fmt == "json":
        return json.loads(text)
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return text


# --- top level ------------------------------------------------------------------------
def test_no_command_prints_help_and_exits_2(capsys):
    status, text = run()
    assert status == 2 and text == ""              # a usage error, not a success
    err = capsys.readouterr().err
    assert err.startswith("usage: gpulab") and "a command is required" in err
    for cmd in ("specs", "link", "nvlink-status", "predict"):
        assert cmd in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert "gpulab 0.1.0" in capsys.readouterr().out


def test_unknown_command(capsys):
    err = run_error(capsys, "frobnicate")
    assert "invalid choice: 'frobnicate'" in err


# --- specs ----------------------------------------------------------------------------
@pytest.mark.parametrize("table, n, key", [("gpus", len(specs.gpus()), "gpu"),
                                           ("nvlink", 5, "generation"),
                                           ("pcie", 6, "generation")])
@pytest.mark.parametrize("fmt", FORMATS)
def test_specs_every_table_and_format(table, n, key, fmt):
    status, text = run("specs", table, "--format", fmt)
    assert status == 0
    data = parse(fmt, text)
    if fmt == "table":
        lines = [x for x in text.strip().splitlines() if not x.startswith("#")]
        assert lines[0].split()[0] == key and len(lines) == n + 1
        assert "source" not in lines[0]
    else:
        assert len(data) == n
        assert {key, "kind", "source", "accessed"} <= set(data[0])
        assert all(r["source"] for r in data)
        assert {r["kind"] for r in data} <= set(specs.KINDS)


def test_specs_table_with_sources():
    status, text = run("specs", "pcie", "--sources")
    assert status == 0 and "source" in text.splitlines()[0]
    assert "kind" in text.splitlines()[0]


def test_specs_say_which_numbers_are_derived():
    """The NVLink symbol rates from NVLink2 on are back-solved from nvidia-smi (derived);
    the H100 PCIe card's row derives its link count: the CLI shows that, row by row."""
    _status, text = run("specs", "nvlink", "--format", "json")
    kinds = {r["generation"]: r["kind"] for r in json.loads(text)}
    assert kinds[4] == kinds[2] == "derived" and kinds[1] == "spec"
    _status, text = run("specs", "gpus", "--format", "json")
    pcie_row = next(r for r in json.loads(text)
                    if r["gpu"] == "H100" and r["variant"].startswith("PCIe"))
    assert pcie_row["kind"] == "derived" and pcie_row["fp16_dense_TFLOPS"] == "756"


def test_specs_pcie_x16_matches_the_model():
    _, text = run("specs", "pcie", "--format", "json")
    for row in json.loads(text):
        gen = int(row["generation"])
        assert float(row["x16_data_GBps_per_direction"]) == pytest.approx(
            pcie.encoded_bandwidth(gen, 16).gb_per_s, abs=0.005)


@pytest.mark.parametrize("argv, needle", [
    (["specs"], "the following arguments are required: table"),
    (["specs", "cpus"], "invalid choice: 'cpus'"),
    (["specs", "gpus", "--format", "xml"], "argument --format: invalid choice"),
])
def test_specs_bad_arguments(capsys, argv, needle):
    assert needle in run_error(capsys, *argv)


# --- link -----------------------------------------------------------------------------
@pytest.mark.parametrize("gen", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("fmt", FORMATS)
def test_link_every_generation_and_format(gen, fmt):
    status, text = run("link", "--generation", str(gen), "--format", fmt)
    assert status == 0
    gpu = links.nvlink_gpu_bandwidth(gen)
    if fmt == "table":
        assert "per direction" in text and "bidirectional" in text
        return
    rows = parse(fmt, text)
    assert [r["quantity"] for r in rows][:3] == [
        "lane rate (raw signalling)", "link raw (signalling)",
        "link data (after line coding)"]
    assert rows[3]["value"] == f"{gpu.gb_per_s:g} GB/s per direction"
    assert rows[4]["value"].endswith("GB/s bidirectional")


def test_link_custom_serdes():
    status, text = run("link", "--baud", "53.125", "--bits", "2", "--lanes", "2",
                       "--coding", str(16 / 17), "--links", "18", "--format", "json")
    rows = json.loads(text)
    assert status == 0
    assert rows[0]["value"] == "106.25 Gb/s"
    assert rows[3]["value"] == "450 GB/s per direction"


@pytest.mark.parametrize("flag, value, lane_gbit, link_gb", [
    # NVLink4 preset: PAM4 x 53.125 GBd = 106.25 Gb/s per lane, 2 lanes x 16/17 = 25 GB/s
    ("--baud", "106.25", 212.5, 50),          # twice the symbol rate: twice everything
    ("--bits", "1", 53.125, 12.5),            # NRZ instead of PAM4: half
    ("--lanes", "4", 106.25, 50),             # twice the lanes: twice the link
])
def test_link_flags_override_the_generation_preset(flag, value, lane_gbit, link_gb):
    """A flag given with --generation replaces the preset's value (it used to be ignored
    silently for --baud, --bits and --lanes)."""
    status, text = run("link", "--generation", "4", flag, value, "--format", "json")
    rows = json.loads(text)
    assert status == 0
    assert rows[0]["value"] == f"{lane_gbit:g} Gb/s"
    assert rows[2]["value"] == f"{link_gb:g} GB/s per direction"


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_output_into_a_closed_pipe_stops_quietly():
    """`gpulab specs gpus --format json | head -1`: the reader closes the pipe; the command
    stops with status 1 instead of a BrokenPipeError traceback."""
    assert cli.main(["specs", "gpus", "--format", "json"], out=_ClosedPipe()) == 1


@pytest.mark.parametrize("argv, needle", [
    (["link"], "give --generation, or all of --baud --bits --lanes"),
    (["link", "--generation", "4", "--baud", "1e308"],
     "--baud (symbol_rate): 1e+308 GBd is beyond a float's range"),
    (["link", "--baud", "50"], "missing: --bits, --lanes"),
    (["link", "--generation", "9"], "generation must be an integer in [1, 5]"),
    (["link", "--generation", "four"], "argument --generation: invalid int value"),
    (["link", "--baud", "fast", "--bits", "2", "--lanes", "2"],
     "argument --baud: invalid float value"),
    (["link", "--baud", "50", "--bits", "0", "--lanes", "2"],
     "--bits (bits_per_symbol) must be"),
    (["link", "--baud", "50", "--bits", "2", "--lanes", "0"],
     "--lanes (lanes_per_direction) must be"),
    (["link", "--baud", "-1", "--bits", "2", "--lanes", "2"],
     "--baud (symbol_rate) must be"),
    (["link", "--generation", "4", "--coding", "1.5"],
     "--coding (coding_efficiency) must be"),
    (["link", "--generation", "4", "--links", "0"], "--links (n_links) must be"),
    (["link", "--generation", "4", "--format", "yaml"], "argument --format"),
    # huge but finite inputs: a usage error naming the flag, never inf or a traceback
    (["link", "--baud", "1e308", "--bits", "2", "--lanes", "2"],
     "--baud (symbol_rate): 1e+308 GBd is beyond a float's range"),
    (["link", "--baud", "1e297", "--bits", "8", "--lanes", "64", "--links", "1024"],
     "n_links: too large"),
    (["link", "--baud", "1e297", "--bits", "8", "--lanes", "64", "--links", "2"],
     "--links (n_links): the GPU's bidirectional total"),
])
def test_link_bad_arguments(capsys, argv, needle):
    err = run_error(capsys, *argv)
    assert needle in err
    assert "Traceback" not in err


# --- nvlink-status --------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_nvlink_status_real_h200_capture(fmt):
    status, text = run("nvlink-status", str(NVLINK_STATUS), "--format", fmt)
    assert status == 0
    if fmt == "table":
        assert text.splitlines()[0].split()[0] == "gpu"
        return
    rows = parse(fmt, text)
    assert len(rows) == 2
    for r in rows:
        assert int(r["links_active"]) == int(r["links_total"]) == 18
        assert float(r["link_raw_GBps_per_direction"]) == pytest.approx(26.562)
        assert float(r["gpu_raw_GBps_per_direction"]) == pytest.approx(18 * 26.562,
                                                                        abs=0.1)


def _cut_capture(tmp_path):
    """The real capture cut off after GPU 0's second link (GPU 1 missing)."""
    lines = NVLINK_STATUS.read_text().splitlines()
    f = tmp_path / "cut.txt"
    f.write_text("\n".join(lines[:3]) + "\n")
    return f


@pytest.mark.parametrize("fmt", FORMATS)
def test_nvlink_status_cut_off_capture_says_what_is_missing(fmt, tmp_path, capsys):
    f = _cut_capture(tmp_path)
    status, text = run("nvlink-status", str(f), "--gpus", "2", "--format", fmt)
    err = capsys.readouterr().err
    assert status == 1                            # it used to say "2/2 links", exit 0
    assert "GPU 0 (NVIDIA H200): 2 of 18 links listed" in err
    assert "ends inside GPU 0's link list" in err and "GPU 1 missing" in err
    assert str(f) in err
    if fmt == "table":
        assert sum(ln.startswith("# WARNING") for ln in text.splitlines()) == 3
    else:
        (row,) = parse(fmt, text)
        assert (int(row["links_total"]), int(row["links_expected"])) == (2, 18)
    # without --gpus the missing GPU 1 cannot be known; the cut is still reported
    status, _ = run("nvlink-status", str(f))
    err = capsys.readouterr().err
    assert status == 1 and "GPU 1 missing" not in err and "cut off?" in err


def test_nvlink_status_uneven_gpus_and_inactive_links(tmp_path, capsys):
    f = tmp_path / "uneven.txt"
    f.write_text("GPU 0: Some GPU\n Link 0: 25 GB/s\n Link 1: 25 GB/s\n"
                 "GPU 2: Some GPU\n Link 0: 25 GB/s\n Link 1: <inactive>\n")
    status, _ = run("nvlink-status", str(f))
    err = capsys.readouterr().err
    assert status == 1
    assert "GPU 2 (Some GPU): 1 of 2 links inactive" in err
    assert "GPU 1 missing (indices skip them)" in err
    f.write_text("GPU 0: Some GPU\n Link 0: 25 GB/s\n Link 1: 25 GB/s\n"
                 "GPU 1: Some GPU\n Link 0: 25 GB/s\n")
    status, _ = run("nvlink-status", str(f))
    err = capsys.readouterr().err
    assert "GPU 1 (Some GPU): 1 links listed, fewer than the 2" in err
    assert status == 1


@pytest.mark.parametrize("command, extra", [("nvlink-status", []), ("topo", []),
                                            ("compare", ["--system", "hgx-h200"]),
                                            ("fit", ["--system", "hgx-h200", "-o",
                                                     "x.yaml"])])
def test_binary_file_error_names_the_file(command, extra, tmp_path, capsys,
                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "capture.txt"
    f.write_bytes(b"GPU 0: x\n\xff\xfe\x00\x81binary")
    err = run_error(capsys, command, str(f), *extra)
    assert str(f) in err and "line 2" in err and "UTF-8" in err


def test_nvlink_status_bad_file(capsys, tmp_path):
    err = run_error(capsys, "nvlink-status", str(tmp_path / "missing.txt"))
    assert "file: cannot read" in err
    junk = tmp_path / "junk.txt"
    junk.write_text("this is not nvidia-smi output\n")
    err = run_error(capsys, "nvlink-status", str(junk))
    assert f"gpulab nvlink-status: error: {junk}: line 1" in err
    assert "the following arguments are required: file" in run_error(
        capsys, "nvlink-status")


# --- predict --------------------------------------------------------------------------
def test_parse_size_like_nccl_tests():
    assert parse_size("8") == 8
    assert parse_size("64K") == parse_size("64k") == 65536
    assert parse_size("1M") == 2**20 and parse_size("4G") == 4 * 2**30
    assert parse_size("1.5M") == 3 * 2**19 and parse_size(" 2 G ") == 2**31
    for bad in ("", "x", "1T", "-1", "0", "0.3", "1KB", "1e6"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size(bad)


def test_sweep_sizes_semantics():
    assert sweep_sizes(8, 4 * 2**30, 2)[0] == 8
    assert len(sweep_sizes(8, 4 * 2**30, 2)) == 30          # 2^3 .. 2^32
    assert sweep_sizes(1000, 5000, 3) == [1000, 3000]        # stops at <= max
    assert sweep_sizes(5, 5, 2) == [5]


@pytest.mark.parametrize("system", sorted(systems.names()))
@pytest.mark.parametrize("kind, memory", [("h2d", None), ("d2h", None),
                                          ("h2d", "pageable"), ("d2h", "pinned"),
                                          ("p2p", None)])
def test_predict_csv_every_system_and_kind(system, kind, memory):
    """``--caller pytorch``: PyTorch's back-to-back loop, every system."""
    argv = ["predict", "--copy", kind, "--system", system, "--format", "csv",
            "--min-bytes", "4K", "--max-bytes", "1G", "--factor", "4",
            "--caller", "pytorch"]
    if memory:
        argv += ["--memory", memory]
    status, text = run(*argv)
    assert status == 0
    assert text.splitlines()[0] == "size_bytes,pytorch_b2b_us,pytorch_b2b_GBps"
    rows = list(csv.DictReader(io.StringIO(text)))
    sizes_ = [int(r["size_bytes"]) for r in rows]
    assert sizes_ == [4096 * 4**k for k in range(10)]
    t = np.array([float(r["pytorch_b2b_us"]) for r in rows]) * 1e-6
    expected = pcie.copy_time(np.array(sizes_, float), kind,
                              memory=memory or "pinned", system=system)
    np.testing.assert_allclose(t, expected, rtol=1e-3, atol=1e-9)
    bw = [float(r["pytorch_b2b_GBps"]) for r in rows]
    np.testing.assert_allclose(bw, np.array(sizes_) / expected / 1e9, rtol=2e-3,
                               atol=1e-3)
    # at 1 GiB the fixed latency still costs up to ~1.5% on the fastest links
    assert bw[-1] == pytest.approx(
        pcie.copy_bandwidth(kind, memory=memory or "pinned", system=system).gb_per_s,
        rel=0.02)


@pytest.mark.parametrize("kind, extra", [("h2d", []), ("d2h", ["--memory", "pageable"]),
                                         ("h2d", ["--direction", "both"]),
                                         ("d2d", []), ("p2p", [])])
@pytest.mark.parametrize("caller", [None, "cuda"])
def test_predict_hardware_by_default_and_cuda_caller(kind, extra, caller):
    argv = ["predict", "--copy", kind, "--system", "hgx-h200", "--format", "csv",
            "-b", "1K", "-e", "1G", "-f", "32", *extra]
    if caller:
        argv += ["--caller", caller]
    status, text = run(*argv)
    assert status == 0
    t_col = "hw_time_us" if caller is None else "cuda_b2b_us"
    rows = list(csv.DictReader(io.StringIO(text)))
    sizes_ = np.array([float(r["size_bytes"]) for r in rows])
    kw = dict(zip(extra[::2], extra[1::2]))
    expected = pcie.copy_time(sizes_, kind, system="hgx-h200", caller=caller,
                              memory=kw.get("--memory", "pinned"),
                              direction=kw.get("--direction", "one"))
    t = np.array([float(r[t_col]) for r in rows]) * 1e-6
    np.testing.assert_allclose(t, expected, rtol=1e-3, atol=1e-9)


def test_predict_p2p_is_not_the_pytorch_issue_time():
    """1 KiB and 16 MiB over NVLink: PyTorch's loop says 82.5 us for both; the
    hardware time differs by size."""
    def times(*extra):
        text = run("predict", "--copy", "p2p", "--system", "hgx-h200", "--format",
                   "json", "-b", "1K", "-e", "16M", "-f", "16384", *extra)[1]
        return [list(r.values())[1] for r in json.loads(text)]
    assert times("--caller", "pytorch") == [82.51, 82.51]
    hw = times()
    assert hw[0] < 10 and hw[1] > 5 * hw[0]


def test_predict_table_says_which_number():
    text = run("predict", "--copy", "p2p", "--system", "hgx-h200", "-b", "1K",
               "-e", "1K")[1]
    assert "hardware time of one isolated copy" in text and "ASSUMED" in text
    assert text.splitlines()[1].split() == ["size_bytes", "hw_time_us", "hw_GBps"]
    text = run("predict", "--copy", "h2d", "--system", "hgx-h200", "-b", "1K",
               "-e", "1K", "--caller", "pytorch")[1]
    assert "PyTorch copy_ call issued back to back" in text


def test_predict_defaults_are_8_bytes_to_4g_by_2():
    status, text = run("predict", "--copy", "h2d", "--system", "hgx-h200",
                       "--format", "json")
    rows = json.loads(text)
    assert status == 0 and len(rows) == 30
    assert rows[0]["size_bytes"] == 8 and rows[-1]["size_bytes"] == 4 * 2**30
    assert set(rows[0]) == {"size_bytes", "hw_time_us", "hw_GBps"}
    assert all(isinstance(r["hw_time_us"], float) for r in rows)


def test_predict_table_has_header_comment_and_aligned_columns():
    status, text = run("predict", "--copy", "d2h", "--memory", "pageable",
                       "--system", "dgx-h100", "-b", "1K", "-e", "1M", "-f", "8",
                       "--caller", "pytorch")
    lines = text.splitlines()
    assert status == 0
    assert lines[0].startswith("# d2h copy") and "dgx-h100" in lines[0]
    assert "pageable" in lines[0] and "per direction" in lines[0]
    assert lines[1].split() == ["size_bytes", "pytorch_b2b_us", "pytorch_b2b_GBps"]
    body = lines[2:]
    assert len(body) == 4 and len({len(line) for line in body}) == 1   # aligned
    assert [int(line.split()[0]) for line in body] == [1024, 8192, 65536, 524288]


def test_predict_system_from_yaml_file(tmp_path):
    from tests.models.test_systems import VALID

    f = tmp_path / "box.yaml"
    f.write_text(VALID)
    status, text = run("predict", "--copy", "p2p", "--system", str(f), "--format",
                       "csv", "-b", "1G", "-e", "1G", "--caller", "pytorch")
    assert status == 0
    row = next(csv.DictReader(io.StringIO(text)))
    assert float(row["pytorch_b2b_GBps"]) < 450 * 0.8


def test_predict_list_systems():
    for fmt in FORMATS:
        status, text = run("predict", "--list-systems", "--format", fmt)
        assert status == 0
        for name in systems.names():
            assert name in text
    rows = json.loads(run("predict", "--list-systems", "--format", "json")[1])
    assert all(r["source"] for r in rows)


@pytest.mark.parametrize("argv, needle", [
    (["predict", "--system", "hgx-h200"], "give --copy {h2d,d2h,d2d,p2p} or --collective"),
    (["predict", "--copy", "h2d", "--system", "dgx-a100"],
     "argument --system: dgx-a100 has no measured copy calibration for h2d pinned"),
    (["predict", "--copy", "d2d", "--system", "hgx-h200", "--caller", "pytorch"],
     "argument --copy: --caller pytorch models h2d, d2h, p2p copies, not d2d"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--memory", "pageable",
      "--direction", "both"], "argument --direction: direction='both'"),
    (["predict", "--collective", "all_reduce", "--system", "hgx-h200", "--caller",
      "cuda"], "argument --caller: applies to --copy only"),
    (["predict", "--copy", "h2d"], "the following arguments are required: --system"),
    (["predict", "--copy", "h2h", "--system", "hgx-h200"], "argument --copy: invalid choice"),
    (["predict", "--copy", "h2d", "--system", "nope"],
     "argument --system: system must be a preset name"),
    (["predict", "--copy", "h2d", "--system", "/no/such.yaml"],
     "argument --system: system: path: cannot read"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--min-bytes", "3X"],
     "argument --min-bytes/-b: invalid size '3X'"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--max-bytes", "0"],
     "argument --max-bytes/-e: invalid size '0'"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--factor", "1"],
     "argument --factor/-f: invalid factor '1'"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--factor", "1.5"],
     "argument --factor/-f: invalid factor"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "-b", "1G", "-e", "1M"],
     "argument --min-bytes: 1073741824 is larger than --max-bytes 1048576"),
    (["predict", "--copy", "p2p", "--system", "hgx-h200", "--memory", "pageable"],
     "argument --memory: applies to h2d/d2h copies only"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--memory", "locked"],
     "argument --memory: invalid choice"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "--format", "xml"],
     "argument --format: invalid choice"),
    (["predict", "--copy", "h2d", "--system", "hgx-h200", "-b", "1", "-e", "1G",
      "-f", "2", "--copy", "d2h"], None),     # repeating --copy: argparse takes last
])
def test_predict_bad_arguments(capsys, argv, needle):
    if needle is None:
        assert run(*argv)[0] == 0
        return
    err = run_error(capsys, *argv)
    assert needle in err, err
    assert err.startswith("gpulab predict: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_predict_bad_yaml_names_line(capsys, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("systems:\n  a:\n    gpu: H100\n")
    err = run_error(capsys, "predict", "--copy", "h2d", "--system", str(f))
    assert f"{f}: line 2: systems.a: missing key 'description'" in err


def test_console_script_exit_status():
    env = {**os.environ, "MPLBACKEND": "Agg"}
    ok = subprocess.run([sys.executable, "-m", "gpulab", "predict", "--copy", "h2d",
                         "--system", "hgx-h200", "-b", "1M", "-e", "1M",
                         "--format", "csv"], capture_output=True, text=True, env=env,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "size_bytes,hw_time_us,hw_GBps"
    bad = subprocess.run([sys.executable, "-m", "gpulab", "predict", "--copy", "h2d"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2
    assert "--system" in bad.stderr and bad.stdout == ""
    assert bad.stderr.startswith("gpulab predict: error: ") and bad.stderr.count("\n") == 1
