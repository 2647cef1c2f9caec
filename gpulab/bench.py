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
import datetime as _dt
import json
import math
import os
import socket
import sys
import tempfile
import time

from .collectives import busbw_factor

__all__ = ["COLLECTIVES", "COPIES", "DTYPES", "parse_size", "size_list",
           "element_count", "expected_values", "format_header", "format_row",
           "rows_to_csv", "rows_to_json", "write_atomic", "build_parser", "main"]

#: Collectives the benchmark runs (nccl-tests names without ``_perf``).
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv",
               "broadcast", "reduce")
#: Copy kinds of ``--copy``: pinned host<->device and GPU0 -> GPU1.
COPIES = ("h2d", "d2h", "p2p")
#: Data types (nccl-tests name -> bytes per element).
DTYPES = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int32": 4}
_SPLIT = ("all_gather", "reduce_scatter", "alltoall")
_IN_PLACE_ONLY = ("all_reduce", "broadcast", "reduce")
_NO_IN_PLACE = ("alltoall", "sendrecv")
_MAX_SIZES = 1000
_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
CSV_COLUMNS = ("collective", "n_ranks", "size_bytes", "count", "type", "time_us",
               "algbw_GBps", "busbw_GBps", "wrong", "inplace_time_us",
               "inplace_algbw_GBps", "inplace_busbw_GBps", "inplace_wrong")


def parse_size(text):
    """Bytes from an nccl-tests size string (binary suffixes K, M, G, T).

    >>> parse_size("8"), parse_size("64K"), parse_size("1G"), parse_size("1.5M")
    (8, 65536, 1073741824, 1572864)
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"text must be a size such as 8, 64K, 1M or 4G; got {text!r}")
    s = str(text).strip().upper().removesuffix("B")
    unit = s[-1:] if s[-1:] in _UNITS and s[-1:] else ""
    try:
        value = float(s[:-1] if unit else s) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"text must be a size such as 8, 64K, 1M or 4G; got {text!r}")
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise ValueError(f"text must be a whole number of bytes >= 1; got {text!r}")
    return int(value)


def size_list(min_bytes, max_bytes, factor=2, step_bytes=None):
    """nccl-tests' size sweep: multiply by ``factor`` (or add ``step_bytes``).

    >>> size_list(8, 64)
    [8, 16, 32, 64]
    >>> size_list(1024, 4096, step_bytes=1024)
    [1024, 2048, 3072, 4096]
    """
    lo, hi = (parse_size(min_bytes) if isinstance(min_bytes, str) else min_bytes,
              parse_size(max_bytes) if isinstance(max_bytes, str) else max_bytes)
    for name, v in (("min_bytes", lo), ("max_bytes", hi)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer number of bytes >= 1; got {v!r}")
    if hi < lo:
        raise ValueError(f"max_bytes must be >= min_bytes ({lo}); got {hi}")
    if step_bytes is not None:
        if isinstance(step_bytes, bool) or not isinstance(step_bytes, int) \
                or step_bytes < 1:
            raise ValueError(f"step_bytes must be an integer >= 1; got {step_bytes!r}")
        count = (hi - lo) // step_bytes + 1
        if count > _MAX_SIZES:
            raise ValueError(f"min_bytes..max_bytes in steps of step_bytes gives {count} "
                             f"sizes; at most {_MAX_SIZES}")
        return list(range(lo, hi + 1, step_bytes))
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 2:
        raise ValueError(f"factor must be an integer >= 2; got {factor!r}")
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


def element_count(collective, size_bytes, n_ranks, dtype="float"):
    """Elements of the full buffer, rounded as nccl-tests rounds them.

    Collectives that split the buffer over ranks need a multiple of ``n_ranks``
    elements; the result is at least one element per rank.

    >>> element_count("all_gather", 8, 2), element_count("all_gather", 100, 8)
    (2, 24)
    >>> element_count("all_reduce", 8, 2, "half")
    4
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; "
                         f"got {collective!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    for name, v in (("size_bytes", size_bytes), ("n_ranks", n_ranks)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
    count = max(size_bytes // DTYPES[dtype], 1)
    if collective in _SPLIT:
        count = max(count // n_ranks, 1) * n_ranks
    return count


def expected_values(collective, rank, n_ranks):
    """The value every element of ``rank``'s result must hold (or, for the
    split collectives, a list per chunk), when rank ``r`` contributes ``r + 1``.

    >>> expected_values("all_reduce", 0, 4)
    10.0
    >>> expected_values("all_gather", 1, 3)
    [1.0, 2.0, 3.0]
    >>> expected_values("sendrecv", 0, 4)       # receives from rank 3
    4.0
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; "
                         f"got {collective!r}")
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an integer >= 1; got {n_ranks!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < n_ranks:
        raise ValueError(f"rank must be an integer in [0, {n_ranks - 1}]; got {rank!r}")
    total = n_ranks * (n_ranks + 1) / 2
    if collective in ("all_reduce", "reduce_scatter"):
        return float(total)
    if collective == "reduce":
        return float(total) if rank == 0 else float(rank + 1)
    if collective == "broadcast":
        return 1.0
    if collective in ("all_gather", "alltoall"):
        return [float(j + 1) for j in range(n_ranks)]
    return float((rank - 1) % n_ranks + 1)           # sendrecv: from the previous


def format_header(meta):
    """nccl-tests' header lines for a run described by ``meta`` (a dict with
    keys of :func:`main`'s metadata: ``n_ranks``, ``min_bytes``, ... ``devices``)."""
    lines = [f"# nThread 1 nGpus 1 minBytes {meta['min_bytes']} maxBytes "
             f"{meta['max_bytes']} step: {meta['step']} warmup iters: "
             f"{meta['warmup']} iters: {meta['iters']} agg iters: 1 validation: "
             f"{meta['check']} graph: 0",
             "#", "# Using devices"]
    for d in meta.get("devices", []):
        lines.append(f"#  Rank {d['rank']:2d} Group  0 Pid {d['pid']:6d} on "
                     f"{d['host']:>10s} device {d['device']:2d} [{d['bus_id']}] "
                     f"{d['name']}")
    return "\n".join(lines)


def _table_head(collective, dtype_redop=True):
    return ("#\n#" + " " * 54 + "out-of-place" + " " * 22 + "in-place\n"
            "#       size         count      type   redop    root     time   algbw"
            "   busbw #wrong     time   algbw   busbw #wrong\n"
            "#        (B)    (elements)                               (us)  (GB/s)"
            "  (GB/s)            (us)  (GB/s)  (GB/s)")


def format_row(row):
    """One nccl-tests data line from a result row (a dict with CSV_COLUMNS).

    >>> r = {"collective": "all_reduce", "size_bytes": 1024, "count": 256,
    ...      "type": "float", "time_us": 20.0, "algbw_GBps": 0.0512,
    ...      "busbw_GBps": 0.0512, "wrong": 0, "inplace_time_us": None}
    >>> format_row(r).split()
    ['1024', '256', 'float', 'sum', '-1', '20.00', '0.05', '0.05', '0', 'N/A', 'N/A', 'N/A', 'N/A']
    """
    coll = row["collective"]
    redop = "sum" if coll in ("all_reduce", "reduce_scatter", "reduce") else "none"
    root = "0" if coll in ("broadcast", "reduce") else "-1"

    def group(prefix):
        t = row.get(f"{prefix}time_us")
        if t is None:
            return f"{'N/A':>8s} {'N/A':>7s} {'N/A':>7s} {'N/A':>6s}"
        return (f"{t:8.2f} {row[f'{prefix}algbw_GBps']:7.2f} "
                f"{row[f'{prefix}busbw_GBps']:7.2f} {row[f'{prefix}wrong']:6d}")
    return (f" {row['size_bytes']:12d} {row['count']:13d} {row['type']:>9s} "
            f"{redop:>7s} {root:>7s} {group('')} {group('inplace_')}")


def rows_to_csv(rows):
    """CSV text with :data:`CSV_COLUMNS` (GB = 1e9 bytes; empty cell = N/A)."""
    out = [",".join(CSV_COLUMNS)]
    for r in rows:
        out.append(",".join("" if r.get(c) is None else
                            (f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]))
                            for c in CSV_COLUMNS))
    return "\n".join(out) + "\n"


def rows_to_json(rows, meta):
    """JSON text: ``{"meta": {...}, "results": [row, ...]}``."""
    return json.dumps({"meta": meta, "results": rows}, indent=1) + "\n"


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename, so that
    a run cut short leaves the old file (or none), never half of a new one."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"path must be a file path; got {path!r}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"path must be in an existing folder; {folder!r} is not one")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpulab-bench-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def _log(msg):
    print(f"[gpulab.bench] {msg}", file=sys.stderr, flush=True)


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
    from . import _bench_gpu
    return _bench_gpu.run(args, sizes, torch, dist)


def _now():
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _host():
    return socket.gethostname()


def _clock():
    return time.perf_counter()


def _factor(collective, n):
    return busbw_factor(collective, n) if n > 1 else 1.0


if __name__ == "__main__":
    sys.exit(main())
