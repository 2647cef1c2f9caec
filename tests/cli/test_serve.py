"""``gpulab serve``: the numbers are gpulab.inference's, every format parses back,
bad arguments are one-line usage errors (exit 2, no traceback) naming the flag."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from gpulab import cli, inference

BASE = ["serve", "--model", "llama3-70b", "--system", "hgx-h200", "--tp", "8",
        "--batch", "32", "--context", "8192"]


def run(*argv):
    out = io.StringIO()
    assert cli.main(list(argv), out=out) == 0
    return out.getvalue()


def run_error(capsys, *argv):
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv), out=io.StringIO())
    assert info.value.code == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("extra, kw", [
    ([], {}),
    (["--precision", "fp8", "--allreduce", "twoshot"],
     dict(precision="fp8", allreduce="twoshot")),
    (["--allreduce", "oneshot", "--recipe", "eager", "--pp", "1"],
     dict(allreduce="oneshot", recipe="eager")),
])
def test_json_is_the_model(extra, kw):
    rows = {r["metric"]: r["value"] for r in json.loads(run(*BASE, *extra,
                                                            "--format", "json"))}
    d = inference.decode_step("llama3-70b", "hgx-h200", tp=8, batch=32, context=8192,
                              **kw)
    f = inference.prefill_time("llama3-70b", "hgx-h200", tp=8, prompt=2048, **kw)
    assert rows["TPOT"] == pytest.approx(d.tpot * 1e3)
    assert rows["tokens/s per GPU"] == pytest.approx(d.tokens_per_s_per_gpu)
    assert rows["tokens/s total"] == pytest.approx(d.tokens_per_s)
    assert rows["decode communication share"] == pytest.approx(d.comm_share * 100)
    assert rows["TTFT (2048-token prompt)"] == pytest.approx(f.ttft * 1e3)


def test_prompt_changes_ttft_only():
    a = {r["metric"]: r["value"] for r in json.loads(run(*BASE, "--format", "json"))}
    b = {r["metric"]: r["value"] for r in json.loads(run(*BASE, "--prompt", "8192",
                                                         "--format", "json"))}
    assert a["TPOT"] == b["TPOT"]
    assert b["TTFT (8192-token prompt)"] > a["TTFT (2048-token prompt)"]


def test_csv_and_table():
    rows = list(csv.DictReader(io.StringIO(run(*BASE, "--format", "csv"))))
    assert [r["metric"] for r in rows][:2] == ["TPOT", "layer compute + memory"]
    text = run(*BASE)
    assert text.startswith("# llama3-70b on hgx-h200 (8x H200), TP 8 x PP 1")
    assert "TPOT" in text and "% of TPOT" in text and "512 KiB" in text


def test_memory_warning():
    text = run("serve", "--model", "llama3-70b", "--system", "hgx-h200", "--batch", "8",
               "--context", "8192")
    assert "exceed the GPU's memory" in text
    assert "exceed" not in run(*BASE)


@pytest.mark.parametrize("argv, message", [
    (["--tp", "3"], "--tp (tp) must divide heads (64); got 3"),
    (["--tp", "0"], "argument --tp: invalid tp '0': must be an integer from 1"),
    (["--batch", "x"], "argument --batch: invalid batch 'x'"),
    (["--context", "-5"], "argument --context: invalid context '-5'"),
    (["--prompt", "0"], "argument --prompt: invalid prompt '0'"),
    (["--model", "mixtral-8x7b"], "--model (model) must be a dense model"),
    (["--model", "nope"], "--model (model) must be a ModelSpec or a preset name"),
    (["--system", "nope"], "--system"),
    (["--tp", "16"], "--tp (tp) must be an integer in [1, 8]; got 16"),
    (["--tp", "8", "--pp", "2"], "--pp (pp) must be at most"),
    (["--precision", "fp4"], "argument --precision: invalid choice"),
    (["--allreduce", "ring"], "argument --allreduce: invalid choice"),
])
def test_bad_arguments(capsys, argv, message):
    base = ["serve", "--model", "llama3-70b", "--system", "hgx-h200", "--batch", "32",
            "--context", "8192"]
    # later flags win in argparse: the bad value replaces the base one
    err = run_error(capsys, *base, *argv)
    assert message in err, err
    assert err.startswith("gpulab serve: error:")


def test_custom_allreduce_on_pcie_names_the_flag(capsys):
    err = run_error(capsys, "serve", "--model", "llama3-70b", "--system", "l40s-x8",
                    "--tp", "8", "--batch", "32", "--context", "8192", "--allreduce",
                    "oneshot")
    assert "--allreduce (algorithm) 'oneshot' needs NVLink" in err


def test_fp8_on_a100_names_the_flag(capsys):
    err = run_error(capsys, "serve", "--model", "llama3-8b", "--system", "dgx-a100",
                    "--tp", "2", "--batch", "4", "--context", "1024", "--precision",
                    "fp8")
    assert "--precision (precision) 'fp8' needs" in err


def test_missing_required_flag(capsys):
    err = run_error(capsys, "serve", "--model", "llama3-70b", "--system", "hgx-h200")
    assert "required: --batch, --context" in err


def test_console_exit_status_and_no_traceback():
    done = subprocess.run([sys.executable, "-m", "gpulab", *BASE[:-2], "--context", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
