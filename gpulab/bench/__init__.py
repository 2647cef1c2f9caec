r"""Collective and copy benchmark over NCCL, printed as nccl-tests prints it.

Launch one process per GPU with torchrun (the real distributed engine, so the
same command works on one node or many)::

    torchrun --nproc_per_node 8 -m gpulab.bench -b 8 -e 1G -f 2 \
        -o all_reduce,all_gather,reduce_scatter,alltoall,sendrecv \
        --output h200.json

Options follow nccl-tests where they exist: ``-b/-e/-f`` sizes (``-i`` for a
fixed step), ``-w`` warm-up and ``-n`` timed iterations, ``-c`` correctness
check, ``-a`` how times of the ranks are combined (0 rank 0, 1 average, 2 min,
3 max; nccl-tests' default is the average), ``-d`` data type. ``--copy`` adds
host<->device and GPU-to-GPU copy sweeps (run by rank 0 alone).

What is measured
----------------
``size`` is nccl-tests' size: the full buffer of the collective (all_gather:
the gathered output; reduce_scatter: the input; alltoall: each rank's buffer;
sendrecv: what each rank sends). The element count is rounded down to a
multiple of the ranks where the collective splits the buffer, as nccl-tests
does. ``time`` is the wall time of ``-n`` back-to-back calls between two device
synchronisations, divided by ``-n`` (the nccl-tests method), then combined
over ranks by ``-a``. ``algbw = size / time`` and ``busbw = algbw x factor``
(:func:`gpulab.collectives.busbw_factor`). GB = 1e9 bytes.

torch.distributed offers all_reduce, broadcast and reduce only in place, so for
them the out-of-place columns are a second in-place run (the header says so);
alltoall and sendrecv have no in-place form (``N/A``, as in nccl-tests). Each
call goes through PyTorch's dispatcher: expect a latency floor some tens of
microseconds above nccl-tests' on small messages, and the same busbw on large
ones.

Everything but :func:`main`'s GPU path is pure Python and is importable (and
tested) without torch. Results are written atomically: a run cut short leaves
no half-written file. Progress goes to stderr, the table to stdout (rank 0).
"""
from __future__ import annotations

import argparse
import os

from .core import (  # noqa: F401  (the public API of gpulab.bench)
    COLLECTIVES, COPIES, CSV_COLUMNS, DTYPES, element_count, expected_values,
    format_header, format_row, parse_size, rows_to_csv, rows_to_json, size_list,
    write_atomic,
)

__all__ = ["COLLECTIVES", "COPIES", "DTYPES", "parse_size", "size_list",
           "element_count", "expected_values", "format_header", "format_row",
           "rows_to_csv", "rows_to_json", "write_atomic", "build_parser", "main"]


def _size_arg(text):
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _list_arg(choices):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {', '.join(choices)}; got {text!r}")
        return items
    return parse


def _positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return v


def build_parser():
    """The argument parser (nccl-tests-style short options)."""
    p = argparse.ArgumentParser(
        prog="python -m gpulab.bench",
        description="Collective and copy benchmark over NCCL (torch.distributed), "
                    "printed like nccl-tests. Launch with torchrun, one process per GPU.")
    p.add_argument("-b", "--minbytes", type=_size_arg, default=8)
    p.add_argument("-e", "--maxbytes", type=_size_arg, default=1024 ** 3)
    p.add_argument("-f", "--stepfactor", type=_positive, default=2)
    p.add_argument("-i", "--stepbytes", type=_size_arg, default=None)
    p.add_argument("-w", "--warmup_iters", type=_positive, default=5)
    p.add_argument("-n", "--iters", type=_positive, default=20)
    p.add_argument("-c", "--check", type=int, choices=(0, 1), default=1)
    p.add_argument("-a", "--average", type=int, choices=(0, 1, 2, 3), default=1,
                   help="combine rank times: 0 rank 0, 1 average, 2 min, 3 max")
    p.add_argument("-d", "--datatype", choices=tuple(DTYPES), default="float")
    p.add_argument("-o", "--op", dest="collectives", type=_list_arg(COLLECTIVES),
                   default=["all_reduce"], help="collectives, comma-separated")
    p.add_argument("--copy", type=_list_arg(COPIES), default=[],
                   help="copy sweeps run by rank 0: h2d,d2h (pinned), p2p (GPU0->GPU1)")
    p.add_argument("--output", default=None,
                   help="write results to this file (.json or .csv), atomically")
    p.add_argument("--label", default="", help="free text stored in the metadata")
    return p


def _validate_args(p, args):
    if args.maxbytes < args.minbytes:
        p.error(f"argument -e/--maxbytes: must be >= -b/--minbytes ({args.minbytes})")
    if args.stepbytes is None and args.stepfactor < 2:
        p.error("argument -f/--stepfactor: must be >= 2 (or use -i/--stepbytes)")
    if args.output and not args.output.endswith((".json", ".csv")):
        p.error("argument --output: the file name must end in .json or .csv")
    if args.output and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        p.error(f"argument --output: folder of {args.output!r} does not exist")
    try:
        return size_list(args.minbytes, args.maxbytes, args.stepfactor, args.stepbytes)
    except ValueError as e:
        p.error(str(e))


def main(argv=None):
    """Entry point of ``python -m gpulab.bench`` (see the module docstring)."""
    p = build_parser()
    args = p.parse_args(argv)
    sizes = _validate_args(p, args)
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        p.exit(3, "gpulab.bench: needs PyTorch with CUDA (pip install 'gpulab[bench]'); "
                  "torch is not installed\n")
    if not torch.cuda.is_available():
        p.exit(3, "gpulab.bench: no CUDA GPU is visible (torch.cuda.is_available() is "
                  "False)\n")
    if not dist.is_nccl_available():
        p.exit(3, "gpulab.bench: this PyTorch build has no NCCL backend\n")
    from . import gpu
    return gpu.run(args, sizes, torch, dist)
