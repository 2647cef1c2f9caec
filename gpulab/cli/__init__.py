"""Command-line interface: ``gpulab`` (console script) or ``python -m gpulab``.

Subcommands
-----------
``gpulab specs {gpus,nvlink,pcie} [--format table|csv|json]``
    Print the hardware tables from ``gpulab/data`` with their sources.
``gpulab link (--generation N | --baud GBD --bits B --lanes L) [--coding E] [--links K]``
    SerDes arithmetic: lane, link and per-GPU bandwidth, per direction and
    bidirectional.
``gpulab nvlink-status FILE``
    Read ``nvidia-smi nvlink --status`` output and compare with the spec.
``gpulab topo FILE``
    Read ``nvidia-smi topo -m`` output: path classes, P2P verdicts, NCCL
    transport and expected bandwidth per GPU pair (:mod:`gpulab.cli.topo`).
``gpulab predict --copy {h2d,d2h,p2p} --system NAME``
    Predicted copy times over a size sweep, like a copy benchmark would print.
``gpulab predict --collective all_reduce --system NAME --ranks N``
    Predicted collective times, algbw and busbw in nccl-tests' table format
    (:mod:`gpulab.cli.predict`, model in :mod:`gpulab.collectives`).
``gpulab fit FILE... --system NAME -o my-system.yaml``
    Calibrate the collective model's launch cost and efficiency per collective
    from measured sweeps; the YAML works as ``--system`` (:mod:`gpulab.cli.fit`).
``gpulab compare FILE [FILE...] --system NAME``
    Measured nccl-tests sweeps vs the model per size, with the error and a
    summary per size band (:mod:`gpulab.cli.compare`, readers in
    :mod:`gpulab.nccltests`).
``gpulab serve --model NAME --system NAME --tp N --batch B --context C``
    Serving a dense model with TP x PP: TPOT, TTFT (``--prompt``), tokens/s total
    and per GPU, communication share; ``--precision``, ``--allreduce
    nccl|oneshot|twoshot`` (:mod:`gpulab.cli.serve`, model in :mod:`gpulab.inference`).
``gpulab doctor [--requirements FILE] [--no-gpu]``
    Pre-flight check of a learner's environment: one PASS/FAIL/SKIP line per
    check, exit status 1 when a required check fails (:mod:`gpulab.doctor`).

One module per command (``gpulab.cli.<command>``), each with ``register(subparsers,
fmt)``; this package only assembles the parser and runs it.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from .. import __version__
from . import (compare, doctor, fit, link, nvlink_status, predict, serve, specs,
               topo)
from .base import emit, short_message

__all__ = ["main", "build_parser", "emit", "COMMANDS"]

#: The command modules, in the order ``gpulab --help`` lists them.
COMMANDS = (specs, link, nvlink_status, topo, predict, compare, fit, serve, doctor)


class _OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``gpulab predict: error:
    ...``), exit status 2, no usage block: ``--help`` shows the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {short_message(message)} "
                     f"(see {self.prog} --help)\n")


#: A value that starts like a negative number (``-4K``, ``-.5``, ``-1e3``).
_NEGATIVE = re.compile(r"^-\.?\d")


def attach_negative_values(argv):
    """``argv`` with a negative value joined to the flag before it (``-b -4K`` ->
    ``-b=-4K``): argparse takes ``-4K`` for an unknown flag and says "expected one
    argument"; joined, the flag's own check says what values it takes.

    >>> attach_negative_values(["predict", "-b", "-4K", "--ranks", "-2", "-e", "1M"])
    ['predict', '-b=-4K', '--ranks=-2', '-e', '1M']
    """
    out = []
    for tok in argv:
        prev = out[-1] if out else ""
        if (_NEGATIVE.match(tok) and prev.startswith("-") and "=" not in prev
                and prev != "--" and not _NEGATIVE.match(prev)):
            out[-1] = f"{prev}={tok}"
        else:
            out.append(tok)
    return out


def build_parser():
    """Return the argument parser (exposed for tests and documentation)."""
    p = _OneLineErrors(
        prog="gpulab",
        description="Models of multi-GPU interconnects (units: GB = 1e9 bytes; "
                    "every bandwidth says per direction or bidirectional).")
    p.add_argument("--version", action="version", version=f"gpulab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    fmt = dict(choices=("table", "csv", "json"), default="table",
               help="output format (default: table)")
    for command in COMMANDS:
        command.register(sub, fmt)
    return p


def main(argv=None, out=None):
    """Run the CLI; return the exit status (2 for usage errors)."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(attach_negative_values(argv))
    if not getattr(args, "func", None):
        # no command is a usage error: the help on stderr, exit status 2
        parser.print_help(sys.stderr)
        sys.stderr.write("gpulab: error: a command is required\n")
        return 2
    try:
        return args.func(args, out)
    except ValueError as exc:
        parser.exit(2, f"gpulab {args.command}: error: {short_message(exc)}\n")
    except BrokenPipeError:
        # the reader closed the pipe (`gpulab specs gpus | head`): stop quietly, and point
        # stdout at /dev/null so that Python's exit flush does not raise again
        if out is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
