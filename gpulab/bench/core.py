"""The torch-free core of :mod:`gpulab.bench`: sizes, element counts, expected
values of the correctness check, the nccl-tests table format, CSV/JSON output,
atomic writes and the small clock/host/log helpers the GPU side uses."""
from __future__ import annotations

import datetime as _dt
import json
import math
import socket
import sys
import time

from ..collectives import busbw_factor
from ..files import write_atomic  # noqa: F401  (re-exported)

#: Collectives the benchmark runs (nccl-tests names without ``_perf``).
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv",
               "broadcast", "reduce")
#: Copy kinds of ``--copy``: pinned host<->device and GPU0 -> GPU1.
COPIES = ("h2d", "d2h", "p2p")
#: Data types (nccl-tests name -> bytes per element).
DTYPES = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int32": 4}
_SPLIT = ("all_gather", "reduce_scatter", "alltoall")
IN_PLACE_ONLY = ("all_reduce", "broadcast", "reduce")
NO_IN_PLACE = ("alltoall", "sendrecv")
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


def table_head(collective, dtype_redop=True):
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


def log(msg):
    print(f"[gpulab.bench] {msg}", file=sys.stderr, flush=True)


def now():
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def host():
    return socket.gethostname()


def clock():
    return time.perf_counter()


def factor(collective, n):
    return busbw_factor(collective, n) if n > 1 else 1.0
