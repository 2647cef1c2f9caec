"""``gpulab predict`` says where published runs of the same preset disagree with the
model (a ``# CHECK`` line), and refuses network inputs it cannot model."""
from __future__ import annotations

import io
import statistics

import pytest

from gpulab import calibration, cli, network


def run(*argv):
    buf = io.StringIO()
    rc = cli.main(["predict", *map(str, argv)], out=buf)
    return rc, buf.getvalue()


COLL = ["--collective", "all_reduce", "-b", "8G", "-e", "8G"]


def _single_groups(name, gpus, gpp=1):
    return [e for e in calibration.public_singlenode_errors()
            if e["system"] == name and e["gpus"] == gpus
            and (e["gpus_per_process"] or 1) == gpp]


# --- the CHECK line --------------------------------------------------------------------
def test_gb200_rack_prints_the_public_runs_error_under_the_table():
    """The full-rack public run (coreweave/nccl-tests#43) has a point beyond the
    model's point target (mid sizes): predict says so under the table, with the
    median error per band computed from the data, not typed."""
    groups = _single_groups("gb200-nvl72", 72)
    assert any(e["points_within"] < 1 for e in groups)      # the premise
    rc, text = run(*COLL, "--system", "gb200-nvl72")
    assert rc == 0
    lines = text.splitlines()
    assert lines[-3].startswith("# CHECK: published nccl-tests runs of gb200-nvl72 on "
                                "72 GPUs")
    assert "CAVEAT" not in text                 # checked, not unvalidated
    for band, _, _, metric, _ in network.BANDS:
        g = [e for e in groups if e["band"] == band]
        if g:
            med = sorted(e["median_error"] for e in g)[len(g) // 2]
            assert f"{100 * med:+.0f}% {metric} {band}" in lines[-3]
    worst = max((e["worst_error"] for e in groups), key=abs)
    assert f"worst {100 * worst:+.0f}%" in lines[-3]
    assert abs(worst) > network.POINT_TARGET


def test_check_line_goes_to_stderr_in_csv_and_json(capsys):
    capsys.readouterr()
    for fmt in ("csv", "json"):
        rc, text = run(*COLL, "--system", "gb200-nvl72", "--format", fmt)
        assert rc == 0 and "CHECK" not in text
        assert "gpulab predict: warning: CHECK: published nccl-tests runs of " \
            "gb200-nvl72" in capsys.readouterr().err


def test_check_line_across_nodes_uses_the_runs_of_that_node_count():
    groups = [e for e in network.public_errors()
              if e["system"] == "aws-p5" and e["nodes"] == 32]
    assert any(e["points_within"] < 1 for e in groups)
    rc, text = run(*COLL, "--system", "aws-p5", "--nodes", "32")
    assert rc == 0
    assert "# CHECK: published nccl-tests runs of aws-p5 on 32 nodes" in text
    med = statistics.median_high(e["median_error"] for e in groups
                                 if e["band"] == network.BANDS[2][0])
    assert f"{100 * med:+.0f}% busbw {network.BANDS[2][0]}" in text


@pytest.mark.parametrize("argv", [
    ["--system", "h200-x2-measured"],            # our own runs, no public rows
    ["--system", "gb200-nvl72", "--nodes", "7"],   # no public run of 7 racks
])
def test_no_check_line_without_a_matching_public_run(argv):
    rc, text = run(*COLL, *argv)
    assert rc == 0 and "CHECK" not in text


def test_check_line_follows_the_process_model():
    """-g 8 rows are compared with -g 8, one process per GPU with one process per GPU."""
    for gpp in (1, 8):
        groups = _single_groups("hgx-h200", 8, gpp)
        expect = bool(groups) and any(e["points_within"] < 1 for e in groups)
        text = run(*COLL, "--system", "hgx-h200", "-g", gpp)[1]
        assert ("# CHECK:" in text) is expect, gpp
        if expect:
            assert f"{gpp} GPU(s) per process" in text


# --- network inputs the model cannot take are refused ------------------------------------
@pytest.mark.parametrize("argv, needle", [
    (["--system", "hgx-h200", "--nodes", "2", "--nics", "64x400G"],
     "argument --nics: nics '64x400G' is 25600 Gb/s per node, more than its 8 GPUs' "
     "PCIe"),
    (["--system", "aws-p5", "--nodes", "2", "--fabric", "tcpx"],
     "argument --fabric: fabric: aws-p5's network is EFA (fixed by the provider)"),
])
def test_impossible_network_inputs_are_refused(capsys, argv, needle):
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        cli.main(["predict", *COLL, *argv], out=io.StringIO())
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1, err
    assert needle in err, err
