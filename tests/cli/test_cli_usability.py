"""Command-line usability: short errors on huge input, size limits and negative sizes,
copy support per preset, messages that name the user's flag in the flag's unit, and
raw vs data rates labelled alike in nvlink-status, topo and specs."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from importlib import resources

import pytest

from gpulab import cli, pcie, systems
from gpulab.cli.predict import MAX_SIZE, parse_size

RAW = resources.files("gpulab").joinpath("data", "measurements", "raw",
                                          "h200-x2-2026-11-30")
NVLINK_STATUS = str(RAW.joinpath("nvlink-status.txt"))
TOPO = str(RAW.joinpath("topo-m.txt"))


def run(*argv):
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


def run_error(capsys, *argv):
    """Run a command that must fail with a usage error; return its stderr."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv), out=io.StringIO())
    assert info.value.code == 2, argv
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def console(*argv):
    """``python -m gpulab ARGV``, as a user types it."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "gpulab", *argv], capture_output=True,
                          text=True, env=env, timeout=120)


# --- 1. a huge line in a file: the error quotes a short piece, once -------------------
@pytest.mark.parametrize("text", [
    "GPU0 " + "X" * 2_000_000 + "\n",                      # no header: quoted in message
    "\tGPU0\tGPU1\nGPU0 " + "X" * 2_000_000 + "\n",        # a row: quoted as the line
])
def test_topo_error_on_a_huge_line_is_short(tmp_path, text):
    f = tmp_path / "huge.txt"
    f.write_text(text)
    p = console("topo", str(f))
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(f"gpulab topo: error: {f}: line ")
    assert len(p.stderr) < 700 and p.stderr.count("\n") == 1, len(p.stderr)
    assert "characters)" in p.stderr          # says how long the cut text was
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("command", [["nvlink-status"],
                                     ["compare", "--system", "hgx-h200"],
                                     ["doctor", "--no-gpu", "--requirements"]])
def test_other_file_commands_keep_errors_short(capsys, tmp_path, command):
    f = tmp_path / "huge.txt"
    f.write_text("GPU0 " + "X" * 1_000_000 + "\n")
    err = run_error(capsys, *command, str(f))
    assert len(err) < 700, len(err)


# --- 2. sizes: 1 byte to 1 TiB, K/M/G only, negatives say "positive" ----------------
@pytest.mark.parametrize("value, needle", [
    ("99999999999999999999999999", "above the largest size, 1024G = 1 TiB"),
    ("1025G", "above the largest size, 1024G = 1 TiB"),
    ("1e400", "T, P and exponents are not taken"),
    ("1T", "T, P and exponents are not taken"),
    ("1P", "T, P and exponents are not taken"),
])
def test_max_size_is_stated_and_enforced(capsys, value, needle):
    err = run_error(capsys, "predict", "--collective", "all_reduce", "--system",
                    "hgx-h200", "-b", "1G", "-e", value)
    assert err.startswith("gpulab predict: error: argument --max-bytes/-e: ")
    assert needle in err and "1 to 1024G" in err


def test_largest_size_is_accepted():
    assert parse_size("1024G") == MAX_SIZE == 1024**4
    rc, text = run("predict", "--collective", "all_reduce", "--system", "hgx-h200",
                   "-b", "512G", "-e", "1024G", "--format", "csv")
    assert rc == 0
    assert [int(r["size_bytes"]) for r in csv.DictReader(io.StringIO(text))] == [
        MAX_SIZE // 2, MAX_SIZE]


@pytest.mark.parametrize("argv", [["-b", "-4K"], ["--min-bytes", "-4K"],
                                  ["-b=-4K"], ["-e", "-1"], ["-b", "-.5K"]])
def test_negative_size_says_positive(capsys, argv):
    err = run_error(capsys, "predict", "--copy", "h2d", "--system", "hgx-h200", *argv)
    assert "expected one argument" not in err
    assert "must be positive" in err and "1 to 1024G" in err
    assert "argument --min-bytes/-b" in err or "argument --max-bytes/-e" in err


def test_negative_size_from_the_shell():
    p = console("predict", "--collective", "all_reduce", "--system", "hgx-h200",
                "-b", "-4K")
    assert p.returncode == 2 and p.stdout == ""
    assert "argument --min-bytes/-b: invalid size '-4K': must be positive" in p.stderr


def test_negative_values_of_other_flags_reach_their_checks(capsys):
    err = run_error(capsys, "predict", "--collective", "all_reduce", "--system",
                    "hgx-h200", "--ranks", "-2")
    assert "argument --ranks: invalid ranks '-2': must be an integer >= 1" in err


# --- 3. copies: refused up front with the presets that have them; --list-systems ------
def test_copy_without_calibration_is_refused_with_the_alternatives(capsys):
    err = run_error(capsys, "predict", "--copy", "h2d", "--system", "dgx-h100")
    assert err.startswith("gpulab predict: error: argument --system: dgx-h100 has no "
                          "measured copy calibration for h2d pinned copies")
    assert "hgx-h200" in err and "--caller pytorch" in err
    assert "--list-systems" in err


def test_d2d_copy_names_presets_and_no_pytorch_alternative(capsys):
    err = run_error(capsys, "predict", "--copy", "d2d", "--system", "dgx-h100")
    assert "for d2d copies" in err and "hgx-h200" in err
    assert "--caller pytorch" not in err       # that model has no d2d


@pytest.mark.parametrize("name", systems.names())
def test_list_systems_copies_column_tells_the_truth(name):
    rows = {r["system"]: r for r in json.loads(
        run("predict", "--list-systems", "--format", "json")[1])}
    cell = rows[name]["copies"]
    if cell.startswith("--caller pytorch: "):
        kinds, caller = cell.split(": ", 1)[1].split(), ["--caller", "pytorch"]
    else:
        kinds, caller = cell.split(), []
    assert kinds
    for kind in pcie.HARDWARE_COPY_KINDS:
        argv = ["predict", "--copy", kind, "--system", name, "-b", "1M", "-e", "1M",
                *caller]
        if kind in kinds:
            assert run(*argv)[0] == 0, argv
        else:
            with pytest.raises(SystemExit):
                run(*argv)


def test_list_systems_says_collectives_and_multi_node():
    rows = json.loads(run("predict", "--list-systems", "--format", "json")[1])
    by = {r["system"]: r for r in rows}
    assert by["hgx-h200"]["multi_node"] == "yes (--nodes N)"
    assert by["h100-pcie"]["multi_node"] == "with --nics and --fabric"
    assert by["hgx-h200"]["copies"] == "h2d d2h d2d p2p"
    assert by["dgx-h100"]["copies"] == "--caller pytorch: h2d d2h p2p"
    for r in rows:
        assert r["collectives"].split()[0] in ("checked", "unvalidated")
    table = run("predict", "--list-systems")[1].splitlines()[0].split()
    assert {"copies", "collectives", "multi_node"} <= set(table)


# --- 4. messages name the user's flag, its range and its unit --------------------------
@pytest.mark.parametrize("value", ["0", "-3", "2000", "two"])
def test_nvlink_status_gpus_names_flag_and_range(capsys, value):
    err = run_error(capsys, "nvlink-status", NVLINK_STATUS, "--gpus", value)
    assert f"argument --gpus: invalid GPU count '{value}': must be an integer from 1 " \
           "to 1024" in err
    assert "ranks" not in err


def test_fit_gpus_per_process_names_itself(capsys):
    err = run_error(capsys, "fit", NVLINK_STATUS, "--system", "hgx-h200", "-o",
                    "x.yaml", "--gpus-per-process", "0")
    assert "argument --gpus-per-process: invalid gpus-per-process '0'" in err


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_link_baud_answers_in_gbd(value):
    p = console("link", "--baud", value, "--bits", "2", "--lanes", "2")
    assert p.returncode == 2 and p.stdout == ""
    assert "--baud (symbol_rate) must be a finite number > 0 GBd" in p.stderr
    assert f"got {float(value):g} GBd" in p.stderr
    assert "e+09" not in p.stderr and "000000000" not in p.stderr


@pytest.mark.parametrize("name", ["missing.txt", "missing", "folder.txt"])
def test_compare_and_fit_name_file_not_internal_parameter(capsys, tmp_path, name):
    path = tmp_path / name
    if name.startswith("folder"):
        path.mkdir()
    for argv in (["compare", str(path), "--system", "hgx-h200"],
                 ["fit", str(path), "--system", "hgx-h200", "-o", "x.yaml"]):
        err = run_error(capsys, *argv)
        assert "text_or_path" not in err
        assert f"argument FILE: cannot read {str(path)!r}" in err


# --- 5. raw (signalling) and data rates, labelled alike --------------------------------
def test_nvlink_status_prints_raw_and_data_rates():
    rows = json.loads(run("nvlink-status", NVLINK_STATUS, "--format", "json")[1])
    for r in rows:
        assert r["link_raw_GBps_per_direction"] == "26.562"      # as nvidia-smi prints
        assert r["link_data_GBps_per_direction"] == "25"
        assert r["gpu_data_GBps_per_direction"] == "450.0"
    text = run("nvlink-status", NVLINK_STATUS)[1]
    assert "raw = signalling rate" in text and "data = raw x the line-code" in text


def test_nvlink_status_unknown_gpu_has_no_data_rate(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("GPU 0: NVIDIA Graphics Device (UUID: x)\n Link 0: 26.562 GB/s\n")
    rows = json.loads(run("nvlink-status", str(f), "--format", "json")[1])
    assert rows[0]["link_raw_GBps_per_direction"] == "26.562"
    assert rows[0]["link_data_GBps_per_direction"] == "?"


def test_topo_specs_and_link_use_the_same_words():
    topo = run("topo", TOPO)[1]
    assert "bottleneck_data_GBps_per_direction" in topo
    assert "data rates per direction" in topo and "raw signalling rate" in topo
    nv = {r["generation"]: r for r in json.loads(
        run("specs", "nvlink", "--format", "json")[1])}
    assert nv[4]["link_raw_GBps_per_direction"] == "26.5625"
    assert nv[4]["link_data_GBps_per_direction"] == "25"
    assert nv[4]["gpu_data_GBps_per_direction"] == "450"
    assert "raw = signalling rate" in run("specs", "nvlink")[1]
    gpus = json.loads(run("specs", "gpus", "--format", "json")[1])
    assert "nvlink_data_GBps_per_direction" in gpus[0]
    link = json.loads(run("link", "--generation", "4", "--format", "json")[1])
    assert link[1] == {"quantity": "link raw (signalling)",
                       "value": "26.5625 GB/s per direction"}
    assert link[2] == {"quantity": "link data (after line coding)",
                       "value": "25 GB/s per direction"}
