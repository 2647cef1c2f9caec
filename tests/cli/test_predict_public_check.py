"""``gpulab predict`` says where published runs of the same preset disagree with the
model (a ``# CHECK`` line), and refuses network inputs it cannot model."""
from __future__ import annotations

import io
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
def _expect_check(text, groups, where):
    """The CHECK line is there exactly when a matching group has a point beyond the
    point target, with the median error per band and the worst, computed here."""
    miss = any(e["points_within"] < 1 for e in groups)
    lines = [ln for ln in text.splitlines() if ln.startswith("# CHECK:")]
    assert len(lines) == (1 if miss else 0), text[-800:]
    if not miss:
        return
    line = lines[0]
    assert where in line and "CAVEAT" not in text        # checked, not unvalidated
    assert text.splitlines()[-3] == line                  # under the table
    for band, _, _, metric, _ in network.BANDS:
        g = [e for e in groups if e["band"] == band]
        if g:
            med = sorted(e["median_error"] for e in g)[len(g) // 2]
            assert f"{100 * med:+.0f}% {metric} {band}" in line
    worst = max((e["worst_error"] for e in groups), key=abs)
    assert f"worst {100 * worst:+.0f}%" in line and abs(worst) > network.POINT_TARGET


def test_gb200_rack_check_line_follows_the_public_run():
    """The full-rack public run (coreweave/nccl-tests#43): at HEAD of this test the
    model misses its mid sizes (+52% at 512 MiB), which predict must say."""
    rc, text = run(*COLL, "--system", "gb200-nvl72")
    assert rc == 0
    _expect_check(text, _single_groups("gb200-nvl72", 72),
                  "# CHECK: published nccl-tests runs of gb200-nvl72 on 72 GPUs")


def test_check_line_across_nodes_uses_the_runs_of_that_node_count():
    groups = [e for e in network.public_errors()
              if e["system"] == "aws-p5" and e["nodes"] == 32]
    assert groups
    rc, text = run(*COLL, "--system", "aws-p5", "--nodes", "32")
    assert rc == 0
    _expect_check(text, groups, "# CHECK: published nccl-tests runs of aws-p5 on 32 nodes")


def _fake_miss(monkeypatch):
    """One public group of gb200-nvl72 on 72 GPUs with a point beyond the target."""
    fake = [{"url": "u", "system": "gb200-nvl72", "gpus": 72, "gpus_per_process": None,
             "band": network.BANDS[1][0], "points": 3, "median_error": 0.5,
             "worst_error": 0.61, "within": False, "points_within": 1 / 3}]
    monkeypatch.setattr(calibration, "public_singlenode_errors", lambda *args, **kwargs: fake)


def test_check_line_text_from_a_known_group(monkeypatch):
    _fake_miss(monkeypatch)
    rc, text = run(*COLL, "--system", "gb200-nvl72")
    assert rc == 0
    line = text.splitlines()[-3]
    assert line.startswith("# CHECK: published nccl-tests runs of gb200-nvl72 on 72 GPUs, "
                           "1 GPU(s) per process")
    assert f"+50% busbw {network.BANDS[1][0]} (3 points)" in line
    assert "worst +61%" in line and "the published run is the better number" in line


def test_check_line_goes_to_stderr_in_csv_and_json(capsys, monkeypatch):
    _fake_miss(monkeypatch)
    capsys.readouterr()
    for fmt in ("csv", "json"):
        rc, text = run(*COLL, "--system", "gb200-nvl72", "--format", fmt)
        assert rc == 0 and "CHECK" not in text
        assert "gpulab predict: warning: CHECK: published nccl-tests runs of " \
            "gb200-nvl72" in capsys.readouterr().err


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


# --- the NOTE line: checked elsewhere, not at this size or for this collective -----------
def _note(text):
    lines = [ln for ln in text.splitlines() if ln.startswith("# NOTE:")]
    assert len(lines) <= 1, text[-800:]
    return lines[0] if lines else None


def test_note_names_the_node_counts_the_public_runs_have():
    rows = [r for r in network.public_results() if r["system"] == "gcp-a4"]
    counts = sorted({r["nodes"] for r in rows})
    assert rows and 4 not in counts
    rc, text = run(*COLL, "--system", "gcp-a4", "--nodes", 4)
    assert rc == 0 and "CAVEAT" not in text and "# CHECK:" not in text
    line = _note(text)
    assert line is not None and text.splitlines()[-3] == line
    assert line.startswith("# NOTE: no published nccl-tests run of gcp-a4 on 4 nodes: ")
    assert f"runs are on {', '.join(map(str, counts))} nodes (" in line
    assert "extrapolation" in line


def test_note_names_the_gpu_counts_inside_one_server():
    rows = [r for r in calibration.public_singlenode_results() if r["system"] == "dgx-h100"]
    assert rows and 3 not in {r["gpus"] for r in rows}
    rc, text = run(*COLL, "--system", "dgx-h100", "--ranks", 3)
    assert rc == 0
    line = _note(text)
    assert line.startswith("# NOTE: no published nccl-tests run of dgx-h100 on 3 GPUs, "
                           "1 GPU(s) per process")
    for g in sorted({r["gpus"] for r in rows}):
        assert f"{g} GPUs with " in line


def test_a_collective_no_public_run_measured_is_named():
    rows = [r for r in network.public_results()
            if r["system"] == "aws-p5" and r["nodes"] == 2]
    colls = sorted({r["collective"] for r in rows})
    assert rows and "reduce" not in colls
    argv = ["--collective", "reduce", "-b", "8G", "-e", "8G", "--system", "aws-p5",
            "--nodes", 2]
    rc, text = run(*argv)
    assert rc == 0
    last = text.splitlines()[-3]
    assert last.startswith("# CHECK:") or last.startswith("# NOTE:")
    assert f"runs of aws-p5 on 2 nodes are of {', '.join(colls)} only: for reduce " \
        "these numbers are the model's extrapolation" in last


@pytest.mark.parametrize("argv", [
    ["--system", "hgx-h200"],                          # 8 GPUs, all_reduce: run
    ["--system", "aws-p5", "--nodes", 2],                # 2 nodes, all_reduce: run
    ["--system", "h200-x2-measured"],                  # our own runs, no public rows
])
def test_no_note_where_a_public_run_matches(argv):
    rc, text = run(*COLL, *argv)
    assert rc == 0 and "NOTE" not in text


def test_note_goes_to_stderr_in_csv(capsys):
    capsys.readouterr()
    rc, text = run(*COLL, "--system", "gcp-a4", "--nodes", 4, "--format", "csv")
    assert rc == 0 and "NOTE" not in text
    assert "gpulab predict: warning: NOTE: no published nccl-tests run of gcp-a4" \
        in capsys.readouterr().err
