"""``gpulab topo FILE``: formats, verdicts, options and errors."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from importlib import resources

import pytest

from gpulab import cli, topology as T

DATA = resources.files("gpulab").joinpath("data")
REAL = str(DATA.joinpath("measurements", "raw", "h200-x2-2026-11-30", "topo-m.txt"))
LAYOUT_A = str(DATA.joinpath("topologies", "layout-a.txt"))
DGX = str(DATA.joinpath("topologies", "dgx-h100.txt"))
COLUMNS = ["pair", "class", "p2p", "p2p_reason", "nccl_transport", "nccl_reason",
           "bottleneck_data_GBps_per_direction"]


def run(*argv):
    out = io.StringIO()
    rc = cli.main(["topo", *argv], out=out)
    return rc, out.getvalue()


def test_table_on_the_real_capture():
    rc, text = run(REAL)
    assert rc == 0
    lines = text.splitlines()
    assert lines[0].split() == ["pair", "class", "p2p", "nccl_transport",
                                "bottleneck_data_GBps_per_direction"]
    assert lines[1].split() == ["GPU0-GPU1", "NV18", "yes", "[1]", "P2P/NVLink", "[2]",
                                "450.0"]
    assert "[1] NV18: NVLink peer access" in text
    assert "GB = 1e9 B" in text and "NVLink4" in text


def test_csv_layout_a():
    rc, text = run(LAYOUT_A, "--format", "csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == COLUMNS
    assert len(rows) == 28                                   # 8 choose 2
    by = {r["pair"]: r for r in rows}
    assert by["GPU0-GPU1"]["class"] == "PIX" and by["GPU0-GPU1"]["p2p"] == "yes"
    assert by["GPU0-GPU1"]["nccl_transport"] == "P2P/PCIe"
    assert by["GPU0-GPU4"]["class"] == "SYS" and by["GPU0-GPU4"]["p2p"] == "no"
    assert by["GPU0-GPU4"]["nccl_transport"] == "SHM"
    gen5_x16 = 32 * 16 * 128 / 130 / 8
    assert float(by["GPU0-GPU1"]["bottleneck_data_GBps_per_direction"]) == \
        pytest.approx(gen5_x16, abs=0.05)


def test_json_dgx_and_options():
    rc, text = run(DGX, "--format", "json")
    rows = json.loads(text)
    assert rc == 0 and len(rows) == 28 and list(rows[0]) == COLUMNS
    assert {r["class"] for r in rows} == {"NV18"}
    assert {r["nccl_transport"] for r in rows} == {"P2P/NVLink"}
    assert {r["bottleneck_data_GBps_per_direction"] for r in rows} == {"450.0"}
    _, text = run(DGX, "--format", "json", "--nvlink-generation", "5")
    assert {r["bottleneck_data_GBps_per_direction"] for r in json.loads(text)} == {"900.0"}


def test_acs_iommu_and_p2p_level_options():
    def rows(*extra):
        _, text = run(LAYOUT_A, "--format", "json", *extra)
        return {r["pair"]: r for r in json.loads(text)}
    assert rows("--acs")["GPU0-GPU1"]["p2p"] == "no"
    assert "ACS" in rows("--acs")["GPU0-GPU1"]["nccl_reason"]
    assert rows("--iommu", "on")["GPU0-GPU1"]["p2p"] == "no"
    assert rows("--iommu", "passthrough")["GPU0-GPU1"]["p2p"] == "yes"
    assert rows("--p2p-level", "LOC")["GPU0-GPU1"]["nccl_transport"] == "SHM"
    slow = rows("--pcie-generation", "4", "--lanes", "8")["GPU0-GPU1"]
    assert float(slow["bottleneck_data_GBps_per_direction"]) == pytest.approx(
        16 * 8 * 128 / 130 / 8, abs=0.05)


@pytest.mark.parametrize("content, needle", [
    ("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\t Y \n", "line 3:"),
    ("nothing here\n", "line 1:"),
    ("\tGPU0\tGPU1\nGPU0\t X \tPIX\n", "expected a row for GPU1"),
])
def test_parse_errors_exit_2_with_the_line(tmp_path, capsys, content, needle):
    f = tmp_path / "topo.txt"
    f.write_text(content)
    with pytest.raises(SystemExit) as info:
        cli.main(["topo", str(f)], out=io.StringIO())
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulab topo: error: ") and needle in err
    assert str(f) in err


def test_missing_file_and_bad_options(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["topo", str(tmp_path / "nope.txt")], out=io.StringIO())
    assert info.value.code == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        cli.main(["topo", LAYOUT_A, "--lanes", "3"], out=io.StringIO())
    assert info.value.code == 2 and "lanes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["topo", LAYOUT_A, "--iommu", "maybe"], out=io.StringIO())


def test_single_gpu_matrix(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n")
    rc, text = run(str(f))
    assert rc == 0 and "one GPU" in text


def test_render_then_cli(tmp_path):
    f = tmp_path / "b.txt"
    f.write_text(T.render_topo_matrix(T.layout_b()))
    _, text = run(str(f), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["class"] for r in rows} == {"PIX", "PXB"}


def test_console_entry_point():
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "gpulab", "topo", REAL, "--format",
                        "csv"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith("GPU0-GPU1,NV18,yes,")
