"""``gpulab compare --help`` gives the sample two-node file (START.ipynb points new users
at it) with the cluster preset it ran on, and that command runs as it says."""
from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from gpulab import cli

ROOT = Path(cli.__file__).resolve().parents[2]


def _help(capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"], out=io.StringIO())
    return " ".join(capsys.readouterr().out.split())


def test_help_names_the_sample_file_with_its_own_cluster(capsys):
    text = _help(capsys)
    m = re.search(r"Example, the sample two-node file \(([^)]*)\): (gpulab compare \S+"
                  r"(?: --\S+ \S+)+)", text)
    assert m, text[-600:]
    assert "A3 Mega" in m.group(1) and "TCPXO" in m.group(1)
    argv = shlex.split(m.group(2))[1:]
    assert argv[1] == "tests/data/nccltests/h100_2x8_all_reduce.txt"
    assert (ROOT / argv[1]).is_file()
    # START points at the same file
    assert argv[1] in (ROOT / "START.ipynb").read_text(encoding="utf-8")
    # the command runs: the file's H100s against an H100 cluster over TCPXO, no warning
    buf = io.StringIO()
    rc = cli.main([argv[0], str(ROOT / argv[1]), *argv[2:]], out=buf)
    head = buf.getvalue().splitlines()[0]
    assert rc == 0
    assert "16 ranks, measured vs model on gcp-a3-mega x2 nodes" in head
    assert "tcpx" in head
    assert "the file's GPUs are" not in capsys.readouterr().err
