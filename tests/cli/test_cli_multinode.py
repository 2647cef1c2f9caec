"""``gpulab predict`` and ``gpulab compare`` across nodes: the cluster flags of
compare, the GPU-name check of compare, refused flag combinations, the preset list,
the caveat of unchecked presets and the process model."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from gpulab import cli, collectives as C, network, systems
from gpulab.cli import base

ROOT = Path(cli.__file__).resolve().parents[2]
AZURE = ROOT / "gpulab" / "data" / "measurements" / "public" / "azure_2x8_all_reduce.txt"
DATA = ROOT / "tests" / "data" / "nccltests"
H100_2X8 = DATA / "h100_2x8_all_reduce.txt"
V100 = DATA / "v100_dgx2_old_format.txt"
GB200 = DATA / "gb200_nvl72_all_reduce_excerpt.txt"
RUN2 = ROOT / "gpulab" / "data" / "measurements" / "raw" / "h200-x2-2026-11-30-run2" / \
    "nccl_default.txt"


def run(command, *argv):
    buf = io.StringIO()
    rc = cli.main([command, *map(str, argv)], out=buf)
    return rc, buf.getvalue()


def usage_error(capsys, command, *argv):
    """The one stderr line of a usage error (exit status 2, no traceback)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        cli.main([command, *map(str, argv)], out=io.StringIO())
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert err.startswith(f"gpulab {command}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --- 1. compare across nodes ----------------------------------------------------------
def test_compare_azure_two_nodes_against_the_hdr_cluster():
    """The two-node Azure file (8x 200G HDR InfiniBand per node, no Rank lines): 16
    ranks from --nodes 2 x 8 GPUs, the cluster model named in the header, the model's
    numbers those of scale_out + predict with one process per GPU."""
    rc, text = run("compare", AZURE, "--system", "dgx-a100-spod", "--nodes", "2")
    assert rc == 0
    head = text.splitlines()[0]
    assert "all_reduce, 16 ranks (--nodes 2 x 8 GPUs" in head
    assert "cluster model: dgx-a100-spod x2 nodes" in head
    assert "8x 200 Gb/s infiniband NICs per node" in head
    assert "process model: 1 GPU(s) per process" in head
    rc, js = run("compare", AZURE, "--system", "dgx-a100-spod", "--nodes", "2",
                 "--format", "json")
    (doc,) = json.loads(js)
    assert (doc["n_ranks"], doc["nodes"], doc["gpus_per_process"]) == (16, 2, 1)
    assert "8x 200 Gb/s infiniband" in doc["cluster"]
    c = network.scale_out("dgx-a100-spod", 2)
    sizes = [float(r["size_bytes"]) for r in doc["rows"]]
    p = C.predict("all_reduce", sizes, 16, c, gpus_per_process=1)
    for r, t in zip(doc["rows"], p.time):
        assert r["model_time_us"] == pytest.approx(t * 1e6, rel=1e-3)


def test_compare_node_preset_with_nics_and_fabric():
    rc, text = run("compare", AZURE, "--system", "dgx-a100", "--nodes", "2", "--nics",
                   "8x200G", "--fabric", "ib", "--sharp", "off")
    assert rc == 0
    assert "cluster model: dgx-a100 x2 nodes (8x200G, infiniband)" in text


@pytest.mark.parametrize("name", list(network.CLUSTER_PRESETS))
def test_compare_accepts_every_cluster_preset(name):
    per_node = network.scale_out(name, 1).gpus_per_node
    nodes = 16 // per_node
    rc, text = run("compare", AZURE, "--system", name, "--nodes", nodes)
    assert rc == 0
    assert f"cluster model: {name} x{nodes} nodes" in text.splitlines()[0]


def test_compare_two_node_file_with_rank_lines():
    rc, text = run("compare", H100_2X8, "--system", "gcp-a3-mega", "--nodes", "2")
    assert rc == 0
    head = text.splitlines()[0]
    assert "16 ranks, measured vs model on gcp-a3-mega x2 nodes" in head
    assert "tcpx" in head and "nccl-tests -g 1, from the file's nGpus" in head


@pytest.mark.parametrize("argv, needle", [
    # 16 ranks in the file, one node of the cluster modelled
    ([H100_2X8, "--system", "dgx-h100-spod"], "argument --ranks: 16 ranks but system "
     "dgx-h100-spod x1 nodes has 8 GPUs; give --nodes 2"),
    ([H100_2X8, "--system", "dgx-h100-spod", "--nodes", "4"],
     "argument --nodes: 4 nodes x 8 GPUs = 32 ranks, but"),
    ([AZURE, "--system", "dgx-a100-spod", "--nodes", "2", "--ranks", "8"],
     "argument --nodes: 2 nodes x 8 GPUs = 16 ranks"),
    ([AZURE, "--system", "dgx-a100-spod", "--ranks", "8", "--nics", "4x200G"],
     "argument --nics: --nics 4x200G changes the network between nodes"),
    ([RUN2, "--system", "h200-x2-measured", "--fabric", "roce"], "argument --fabric"),
    ([AZURE, "--system", "no-such-cluster", "--nodes", "2"], "argument --system"),
    ([AZURE, "--system", "dgx-a100-spod", "--nodes", "0"], "argument --nodes: invalid"),
    ([H100_2X8, "--system", "dgx-h100-spod", "--nodes", "2", "-g", "8"],
     "argument --gpus-per-process: 8 disagrees with"),
])
def test_compare_cluster_flags_refused(capsys, argv, needle):
    err = usage_error(capsys, "compare", *argv)
    assert needle in err, err


# --- 2. the file's GPU against the preset's -----------------------------------------
@pytest.mark.parametrize("device, model", [
    ("NVIDIA H100 80GB HBM3", "H100"), ("Tesla V100-SXM3-32GB", "V100"),
    ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA H200", "H200"),
    ("NVIDIA B200", "B200"), ("NVIDIA Graphics Device", None)])
def test_gpu_model_from_device_names(device, model):
    assert base.gpu_model(device) == model


def test_compare_warns_once_when_the_files_gpu_is_not_the_presets(capsys):
    rc, _ = run("compare", V100, "--system", "hgx-h200-2node", "--collective",
                "broadcast")
    err = capsys.readouterr().err.splitlines()
    assert rc == 0
    gpu = [ln for ln in err if "the file's GPUs are" in ln]
    assert len(gpu) == 1 and gpu[0].startswith("gpulab compare: warning: ")
    assert "'Tesla V100-SXM3-32GB' (V100)" in gpu[0] and "models H200" in gpu[0]


@pytest.mark.parametrize("argv", [
    [H100_2X8, "--system", "dgx-h100-spod", "--nodes", "2"],
    [GB200, "--system", "gb200-nvl72", "--ranks", "72", "--collective", "all_reduce"],
    [RUN2, "--system", "h200-x2-measured", "--collective", "all_reduce"],
])
def test_compare_no_gpu_warning_when_they_match_or_the_file_does_not_say(capsys, argv):
    rc, _ = run("compare", *argv)
    assert rc == 0 and "the file's GPUs are" not in capsys.readouterr().err


# --- 3. predict refuses what it would ignore or cannot model ----------------------------
COLL = ["--collective", "all_reduce", "-b", "1M", "-e", "1M"]


@pytest.mark.parametrize("argv, needle", [
    (["--system", "hgx-h200", "--nics", "4x400G"],
     "argument --nics: --nics 4x400G changes the network between nodes"),
    (["--system", "hgx-h200", "--fabric", "roce"], "argument --fabric: --fabric roce"),
    (["--system", "hgx-h200", "--sharp", "on"], "argument --sharp: --sharp on"),
    (["--system", "hgx-h200", "--nodes", "1", "--nics", "8x200G"], "argument --nics"),
    (["--system", "gb200-nvl72", "--fabric", "ib"], "argument --fabric"),
    (["--system", "dgx-h100-spod", "--ranks", "8", "--fabric", "efa"],
     "argument --fabric"),
    (["--system", "h100-pcie", "--nvls", "on"],
     "argument --nvls: on needs in-switch reduction"),
    (["--system", "dgx-a100", "--nvls", "on"], "argument --nvls"),
    (["--system", "dgx-a100-spod", "--nodes", "2", "--nvls", "on"], "argument --nvls"),
    (["--system", "hgx-h200", "--nodes", "2", "--ranks", "8"],
     "argument --ranks: 8 disagrees with --nodes 2, which has 16 GPUs"),
    (["--system", "dgx-h100-spod", "--nodes", "4", "--ranks", "16"],
     "give --ranks 32"),
    (["--system", "gb200-nvl72", "--nodes", "2", "--ranks", "8"],
     "which has 144 GPUs (2 racks x 72)"),
    # SHARP: only where NCCL's SHARP plugin can run (InfiniBand, a provider offering it)
    (["--system", "aws-p5", "--nodes", "2", "--sharp", "on"],
     "argument --sharp: sharp: aws-p5's network has no in-switch reduction"),
    (["--system", "gcp-a3-mega", "--nodes", "2", "--sharp", "on"],
     "argument --sharp: sharp: gcp-a3-mega's network has no in-switch reduction"),
    (["--system", "dgx-h100-spod", "--nodes", "2", "--fabric", "efa", "--sharp", "on"],
     "argument --sharp: sharp needs an InfiniBand fabric"),
    (["--system", "h100-pcie", "--nodes", "2", "--nics", "8x400G", "--fabric", "roce",
      "--sharp", "on"], "the fabric is RoCE"),
    # GeForce cards: no GPUDirect RDMA, so no SHARP either
    (["--system", "rtx-4090-x8", "--nodes", "2", "--nics", "1x100G", "--fabric", "ib",
      "--sharp", "on"], "sharp needs GPUDirect RDMA"),
])
def test_predict_refuses_ignored_or_impossible_flags(capsys, argv, needle):
    err = usage_error(capsys, "predict", *COLL, *argv)
    assert needle in err, err


@pytest.mark.parametrize("argv", [
    ["--system", "hgx-h200", "--sharp", "off"],          # the default: changes nothing
    ["--system", "hgx-h200", "--nodes", "2", "--ranks", "16", "--nics", "8x200G"],
    ["--system", "hgx-h200-2node", "--fabric", "roce"],  # a two-node preset
    ["--system", "hgx-h200", "--nvls", "on"],
    ["--system", "h100-pcie", "--nvls", "off"],
])
def test_predict_accepts_flags_that_apply(argv):
    assert run("predict", *COLL, *argv)[0] == 0


@pytest.mark.parametrize("target, message", [
    ("scale_out", "nics '64x400G' is 25600 Gb/s per node, more than the 8 GPUs'\n"
                  "PCIe links carry"),
    ("scale_out", "fabric 'tcpx' is not offered on aws-p5 (EFA only)"),
    ("scale_out", "something the CLI does not know"),
])
def test_predict_turns_scale_out_errors_into_one_line(capsys, monkeypatch, target,
                                                      message):
    def refuse(*args, **kwargs):
        raise ValueError(message)

    monkeypatch.setattr(network, target, refuse)
    err = usage_error(capsys, "predict", *COLL, "--system", "aws-p5", "--nodes", "2",
                      "--fabric", "tcpx")
    first = message.split(" ", 1)[0]
    # the flag the message names first; --system when it names none
    flag = {"nics": "--nics", "fabric": "--fabric"}.get(first, "--system")
    assert f"argument {flag}: " in err and " ".join(message.split()) in err, err


def test_compare_turns_scale_out_errors_into_one_line(capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("nics '64x400G' is 25600 Gb/s per node,\nmore than PCIe carries")

    monkeypatch.setattr(network, "scale_out", refuse)
    err = usage_error(capsys, "compare", AZURE, "--system", "dgx-a100-spod", "--nodes",
                      "2", "--nics", "64x400G")
    assert "argument --nics: nics '64x400G' is 25600 Gb/s per node, more" in err


def test_predict_turns_model_errors_into_one_line(capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("n_ranks: cannot place\nthese ranks")

    monkeypatch.setattr(C, "predict", refuse)
    err = usage_error(capsys, "predict", *COLL, "--system", "dgx-h100-spod", "--nodes",
                      "2")
    assert "argument --ranks: n_ranks: cannot place these ranks" in err


@pytest.mark.parametrize("argv, flag", [
    (["--system", "hgx-h200", "--nodes", "2", "--nics", "64x400G"], "--nics"),
    (["--system", "aws-p5", "--nodes", "2", "--fabric", "tcpx"], "--fabric"),
])
def test_real_refusals_are_one_line(capsys, argv, flag):
    """The model's own refusals reach the user as one usage line naming the flag."""
    with pytest.raises(SystemExit) as info:
        run("predict", *COLL, *argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"gpulab predict: error: argument {flag}: "), err


@pytest.mark.parametrize("argv, gdr", [
    (["--system", "rtx-4090-x8", "--nodes", "2", "--nics", "1x100G", "--fabric", "roce"],
     "off"),                                   # GeForce: the driver refuses peer DMA
    (["--system", "l40s-x8", "--nodes", "2", "--nics", "1x100G", "--fabric", "roce"],
     "on"),
    (["--system", "dgx-h100-spod", "--nodes", "2", "--sharp", "on"], "on"),
])
def test_header_states_gpudirect_rdma_as_the_cards_allow(argv, gdr):
    rc, text = run("predict", *COLL, *argv)
    assert rc == 0 and f"GPUDirect RDMA {gdr})" in text, text


def test_gb200_notes_count_racks(capsys):
    rc, text = run("predict", *COLL, "--system", "gb200-nvl72", "--nodes", "5")
    err = capsys.readouterr().err
    note = [line for line in (text + err).splitlines() if "NOTE:" in line]
    assert rc == 0 and note and "on 5 racks" in note[0] and " racks (" in note[0], note


# --- 4. --list-systems ------------------------------------------------------------------
def test_list_systems_prints_every_node_and_cluster_preset():
    rc, text = run("predict", "--list-systems", "--format", "json")
    assert rc == 0
    rows = json.loads(text)
    names = [r["system"] for r in rows]
    assert names == list(systems.names()) + list(network.CLUSTER_PRESETS)
    for r in rows:
        assert r["gpus"] and r["scale_up"] and r["pcie"].startswith("Gen")
        assert r["nics_per_node"] and r["fabric"] and r["description"] and r["source"]
        assert r["collectives"].split()[0] in ("checked", "unvalidated")
    by = {r["system"]: r for r in rows}
    assert by["dgx-a100-spod"]["nics_per_node"].startswith("8x 200G")
    assert by["dgx-a100-spod"]["fabric"] == "infiniband"
    assert by["dgx-a100-spod"]["kind"] == "cluster of dgx-a100"
    assert by["h100-pcie"]["scale_up"].startswith("PCIe only")
    assert by["hgx-h200"]["scale_up"] == "NVLink4 nvswitch, NVLS"
    rc, table = run("predict", "--list-systems")
    lines = table.splitlines()
    assert rc == 0 and len(lines) == 1 + len(rows)      # one line per preset
    for name in names:
        assert any(line.split()[0] == name for line in lines[1:])


def test_list_systems_follows_the_data(monkeypatch):
    """A preset added to the data files is listed without a change to the CLI."""
    real_names, real_get = systems.names, systems.get
    monkeypatch.setattr(systems, "names", lambda: real_names() + ["my-new-box"])
    monkeypatch.setattr(systems, "get", lambda n: real_get(
        "hgx-h200" if n == "my-new-box" else n))
    rows = list(csv.DictReader(io.StringIO(run("predict", "--list-systems", "--format",
                                               "csv")[1])))
    assert "my-new-box" in [r["system"] for r in rows]


# --- 5. the caveat of presets nothing checks ----------------------------------------
def test_caveat_under_the_table_of_an_unchecked_preset(capsys):
    rc, text = run("predict", "--collective", "all_reduce", "--system", "a100-pcie-x8",
                   "-b", "8G", "-e", "8G")
    lines = text.splitlines()
    assert rc == 0
    assert lines[-3].startswith("# CAVEAT: a100-pcie-x8 is unvalidated for collectives")
    assert lines[-2].startswith("# Avg bus bandwidth") and lines[-1] == "#"
    # csv/json: the caveat goes to stderr, the data stays parseable
    capsys.readouterr()
    rc, text = run("predict", "--collective", "all_reduce", "--system", "a100-pcie-x8",
                   "-b", "8G", "-e", "8G", "--format", "csv")
    assert rc == 0 and "CAVEAT" not in text
    assert "gpulab predict: warning: CAVEAT: a100-pcie-x8" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--system", "h200-x2-measured"],
                                  ["--system", "gb200-nvl72"],       # a public rack run
                                  ["--system", "dgx-h100-spod", "--nodes", "2"]])
def test_no_caveat_where_a_measurement_checks_the_preset(argv):
    rc, text = run("predict", "--collective", "all_reduce", *argv, "-b", "1G", "-e",
                   "1G")
    assert rc == 0 and "CAVEAT" not in text


# --- 6. the process model does not flip with --nodes ----------------------------------
@pytest.mark.parametrize("nodes", [None, 2, 4])
def test_default_is_one_process_per_gpu_at_every_node_count(nodes):
    extra = [] if nodes is None else ["--nodes", str(nodes)]
    argv = ["--collective", "all_reduce", "--system", "hgx-h200", *extra, "-b", "8",
            "-e", "1G", "-f", "1024"]
    text = run("predict", *argv)[1]
    assert "process model: 1 GPU(s) per process (one process per GPU" in text
    rows = json.loads(run("predict", *argv, "--format", "json")[1])
    system = systems.get("hgx-h200") if nodes is None else network.scale_out(
        "hgx-h200", nodes)
    p = C.predict("all_reduce", [8.0, 8192.0, 2.0**23], system.n_gpus, system,
                  gpus_per_process=1)
    for r, t in zip(rows, p.time):
        assert r["time_us"] == pytest.approx(t * 1e6, abs=1e-3)


@pytest.mark.parametrize("flag", ["--gpus-per-process", "-g"])
def test_gpus_per_process_flag_models_nccl_tests_g(flag):
    argv = ["--collective", "all_reduce", "--system", "hgx-h200", "-b", "8", "-e", "8"]
    text = run("predict", *argv, flag, "8")[1]
    assert "process model: 8 GPU(s) per process (nccl-tests -g 8" in text
    row = json.loads(run("predict", *argv, flag, "8", "--format", "json")[1])[0]
    p = C.predict("all_reduce", 8.0, 8, "hgx-h200", gpus_per_process=8)
    assert row["time_us"] == pytest.approx(float(p.time[0]) * 1e6, abs=1e-3)


def test_gb200_header_counts_racks_and_their_nics():
    """--nodes on GB200 NVL72 counts racks: 2 racks = 144 GPUs, 72 NICs per rack."""
    rc, text = run("predict", "--collective", "all_reduce", "--system", "gb200-nvl72",
                   "--nodes", "2", "-b", "1G", "-e", "1G")
    assert rc == 0
    assert "nranks 144" in text and "between 2 racks: 72x 400 Gb/s" in text
    assert "NICs per rack" in text
