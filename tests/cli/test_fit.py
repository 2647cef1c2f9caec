"""gpulab fit: calibrate on recorded sweeps, write a preset, use it again."""
from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import yaml

from gpulab import cli, collectives, measurements, nccltests, systems

RAW = Path(measurements.__file__).with_name("data") / "measurements" / "raw"
MEDIAN = RAW / "h200-x2-2026-11-30-pooled" / "p2p_center.csv"     # pooled runs
SHM = RAW / "h200-x2-2026-11-30-pooled" / "shm_center.csv"


def _run(*args):
    out = io.StringIO()
    try:
        rc = cli.main(list(args), out=out)
    except SystemExit as exc:
        rc = exc.code
    return rc, out.getvalue()


@pytest.mark.parametrize("src, transport, worst", [(MEDIAN, "p2p", 0.25),
                                                    (SHM, "shm", 0.30)])
def test_fit_reproduces_our_measurements(tmp_path, src, transport, worst):
    out = tmp_path / "mine.yaml"
    rc, text = _run("fit", str(src), "--system", "h200-x2-measured", "-o", str(out),
                    "--transport", transport, "--format", "json")
    assert rc == 0, text
    rows = json.loads(text)
    assert {r["fit"] for r in rows} == {"before", "after"}
    mine = systems.resolve(str(out))
    assert mine.name == "mine" and mine.n_gpus == 2          # inherited from the base
    for sw in nccltests.read_all(str(src)):
        s, t = sw.size_bytes.astype(float), sw.time_s
        err = np.abs(collectives.predict(sw.collective, s, 2, mine, transport=transport,
                                         gpus_per_process=2).time / t - 1)   # -g 2
        assert err[s >= 65536].max() < worst, (sw.collective, err.max())
        assert err.mean() < 0.10, sw.collective
    # the fitted values are what calibrate() gives, written into the file
    doc = yaml.safe_load(out.read_text())["systems"]["mine"]
    assert doc["base"] == "h200-x2-measured"
    ar = doc["collective_model"]["transports"][transport]["collectives"]["all_reduce"]
    a = nccltests.parse(src.read_text(), collective="all_reduce")
    want = collectives.calibrate("all_reduce", a.size_bytes.astype(float), a.time_s, 2,
                                 "h200-x2-measured", transport=transport)
    assert ar["efficiency"] == pytest.approx(want["efficiency"], rel=1e-4)


def test_fitted_file_changes_the_prediction(tmp_path):
    """A system's collective_model overrides the shared constants (and only its own)."""
    text = ("systems:\n  slow:\n    base: hgx-h200\n    collective_model:\n"
            "      source: test\n      transports:\n        p2p:\n          collectives:\n"
            "            all_gather: {efficiency: 0.4, efficiency_8: 0.4}\n")
    slow = systems.parse(text)["slow"]
    base = collectives.predict("all_gather", 2**34, 8, "hgx-h200").busbw[0]
    got = collectives.predict("all_gather", 2**34, 8, slow).busbw[0]
    assert got == pytest.approx(0.4 * 450e9, rel=0.01) and base > 1.5 * got
    assert collectives.predict("reduce_scatter", 2**34, 8, slow).busbw[0] == \
        pytest.approx(collectives.predict("reduce_scatter", 2**34, 8, "hgx-h200").busbw[0])


@pytest.mark.parametrize("bad, msg", [
    ("efficiency: 1.5", "efficiency"), ("efficiency: 0", "efficiency"),
    ("launch_s: -1.0e-6", "launch_s"), ("speed: 3", "speed")])
def test_collective_model_section_is_validated(bad, msg):
    text = ("systems:\n  x:\n    base: hgx-h200\n    collective_model:\n      source: t\n"
            "      transports:\n        p2p:\n          collectives:\n"
            f"            all_gather: {{{bad}}}\n")
    with pytest.raises(ValueError, match=msg):
        systems.parse(text)


def test_base_must_be_a_preset():
    with pytest.raises(ValueError, match="base"):
        systems.parse("systems:\n  x:\n    base: no-such\n")


@pytest.mark.parametrize("args, msg", [
    (["fit", str(MEDIAN), "--system", "nope", "-o", "x.yaml"], "--system"),
    (["fit", str(MEDIAN), "--system", "hgx-h200", "-o", "x.txt"], "--output"),
    (["fit", "/no/such/file", "--system", "hgx-h200", "-o", "x.yaml"], "FILE"),
    (["fit", str(MEDIAN), "--system", "hgx-h200", "-o", "x.yaml", "--ranks", "0"],
     "ranks"),
    (["fit", str(MEDIAN), "--system", "hgx-h200"], "output"),
    # the pooled CSV says 2 ranks: another --ranks is refused, not used
    (["fit", str(MEDIAN), "--system", "h200-x2-measured", "-o", "x.yaml", "--ranks",
      "8"], "--ranks (n_ranks): 8 disagrees"),
    # nccl-tests' result check failed (#wrong = 1, Out of bounds values : 4 FAILED)
    (["fit", str(Path(__file__).parents[1] / "data" / "nccltests" /
                 "v100_dgx2_old_format.txt"), "--system", "hgx-h200-2node", "-o",
      "x.yaml", "--collective", "all_gather"], "Out of bounds values : 4 FAILED")])
def test_fit_usage_errors(args, msg, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _ = _run(*args)
    assert rc == 2
    assert msg in capsys.readouterr().err


def test_fit_needs_small_and_large_sizes(tmp_path, capsys):
    f = tmp_path / "mid.csv"
    f.write_text("collective,n_ranks,size_bytes,time_us,algbw_GBps,busbw_GBps\n"
                 "all_reduce,2,1048576,20.0,52.43,52.43\n"
                 "all_reduce,2,2097152,28.0,74.90,74.90\n")
    rc, _ = _run("fit", str(f), "--system", "h200-x2-measured", "-o",
                 str(tmp_path / "x.yaml"))
    assert rc == 2 and "message_bytes" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_fit_one_process_per_gpu(tmp_path):
    """A run with one process per GPU: --gpus-per-process 1 takes its floor as
    launch_s; read as nccl-tests -g 2 the same floor would lose the second GPU's
    launches, and predictions for one process per GPU come back out as measured."""
    src = RAW / "h200-x2-2026-11-30-pooled" / "p2p_procs_center.csv"
    out = tmp_path / "procs.yaml"
    rc, text = _run("fit", str(src), "--system", "h200-x2-measured", "-o", str(out),
                    "--collective", "sendrecv", "--gpus-per-process", "1",
                    "--format", "json")
    assert rc == 0, text
    doc = yaml.safe_load(out.read_text())["systems"]["procs"]
    got = doc["collective_model"]["transports"]["p2p"]["collectives"]["sendrecv"]
    sw = nccltests.parse(src.read_text(), collective="sendrecv")
    floor = float(np.median(sw.time_s[sw.size_bytes <= 4096]))
    assert got["launch_s"] == pytest.approx(floor, rel=1e-4)
    rc2, _ = _run("fit", str(src), "--system", "h200-x2-measured", "-o",
                  str(tmp_path / "g2.yaml"), "--collective", "sendrecv")
    doc2 = yaml.safe_load((tmp_path / "g2.yaml").read_text())["systems"]["g2"]
    got2 = doc2["collective_model"]["transports"]["p2p"]["collectives"]["sendrecv"]
    assert rc2 == 0 and got2["launch_s"] < got["launch_s"]
    rc3, _ = _run("fit", str(src), "--system", "h200-x2-measured", "-o",
                  str(tmp_path / "bad.yaml"), "--gpus-per-process", "0")
    assert rc3 == 2


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_fit_output_has_the_mode_open_would_give(tmp_path, umask):
    """``gpulab fit`` writes through mkstemp (0600); the YAML must get 0666 less
    the umask, as any file the user writes, and keep an existing file's mode."""
    out = tmp_path / "fitted.yaml"
    old = os.umask(umask)
    try:
        rc, _ = _run("fit", str(MEDIAN), "--system", "h200-x2-measured", "-o", str(out))
        assert rc == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
        out.chmod(0o640)
        rc, _ = _run("fit", str(MEDIAN), "--system", "h200-x2-measured", "-o", str(out))
        assert rc == 0 and stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)
    assert [p.name for p in tmp_path.iterdir()] == ["fitted.yaml"]    # no temp left
