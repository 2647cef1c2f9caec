"""Other teams' published serving measurements, read as published.

The serving model is checked against these tables and never fitted to them. Each table is
a CSV under ``gpulab/data/measurements/public/`` whose comment header names every source
(repository, file, commit or page, and table) and every column with its unit; one data row
per published number, ``kind = published``. This module only reads them: it types the
fields, refuses a malformed row by file and line, and checks that every row's
``source_id`` is one the header lists.

Tables (:data:`TABLES`):

``allreduce``
    small-message all-reduce latency (8 KiB to 8 MiB) on 2, 4 and 8 GPUs: NCCL
    (nccl-tests), TensorRT-LLM's and vLLM's custom all-reduce, with and without CUDA
    graphs, on NVLink (H100, H200, B200) and PCIe (L40S, RTX PRO 6000) machines
    (AIConfigurator's measured tables).
``end_to_end``
    MLPerf Inference v4.1 throughput of H100 SXM, H100 PCIe and H100 NVL systems with the
    same software; TensorRT-LLM 1.0 throughput against TP and PP; AIConfigurator's measured
    TTFT and TPOT of Llama-3.1-70B against TP.
``kv_transfer``
    Mooncake's KV-cache transfer tables for prefill/decode disaggregation: KV size,
    transfer time, bandwidth and TTFT per prompt length.
``ep``
    DeepEP's expert-parallel dispatch and combine tables (normal and low-latency kernels).

Units are in the column names (``_ms``, ``_us``, ``_bytes``, ``_gb_per_s``) or, in
``end_to_end``, in the ``unit`` column of each row.
"""
from __future__ import annotations

import csv
import functools
import io
import math

from .. import specs
from .._validate import check_choice

__all__ = ["TABLES", "table_file", "table_header", "rows", "allreduce_rows",
           "end_to_end_rows", "kv_transfer_rows", "ep_rows"]

_DIR = "measurements/public/"

#: Each table: its file in ``gpulab/data``, its typed columns and its required columns.
#: Integer and float columns must be positive (or empty where not required); booleans are
#: ``true`` or ``false``.
_SPECS = {
    "allreduce": dict(
        file="serving_allreduce.csv",
        ints=("gpus", "elements", "message_bytes"),
        floats=("latency_ms",),
        bools=("cuda_graph",),
        required=("source_id", "gpu", "system", "interconnect", "gpus", "implementation",
                  "software", "cuda_graph", "dtype", "elements", "message_bytes",
                  "latency_ms", "kind")),
    "end_to_end": dict(
        file="serving_end_to_end.csv",
        ints=("gpus", "tp", "pp", "ep", "concurrency", "isl", "osl"),
        floats=("value",),
        bools=(),
        required=("source_id", "gpu", "gpus", "system", "interconnect", "software",
                  "model", "precision", "scenario", "metric", "unit", "value", "where",
                  "kind")),
    "kv_transfer": dict(
        file="serving_kv_transfer.csv",
        ints=("prefill_gpus", "decode_gpus", "tp", "nics_per_node", "prompt_tokens",
              "output_tokens", "concurrency"),
        floats=("line_rate_gb_per_s", "ttft_ms", "kv_size", "transfer_ms",
                "bandwidth_gb_per_s", "utilization_pct"),
        bools=(),
        required=("source_id", "engine", "model", "gpu", "network", "prompt_tokens",
                  "ttft_ms", "kv_size", "kv_size_unit", "transfer_ms", "bandwidth_gb_per_s",
                  "kind")),
    "ep": dict(
        file="serving_ep.csv",
        ints=("ep", "tokens_per_batch", "hidden", "topk"),
        floats=("latency_us", "bandwidth_gb_per_s"),
        bools=(),
        required=("source_id", "kernel", "gpu", "ep", "scope", "operation",
                  "tokens_per_batch", "bandwidth_gb_per_s", "bottleneck", "kind")),
}

#: The table names :func:`rows` accepts.
TABLES = tuple(_SPECS)


def table_file(table):
    """The file of ``table`` inside ``gpulab/data``, e.g. ``measurements/public/serving_ep.csv``.

    Raises
    ------
    ValueError
        If ``table`` is not one of :data:`TABLES`.

    Examples
    --------
    >>> table_file("allreduce")
    'measurements/public/serving_allreduce.csv'
    """
    check_choice("table", table, TABLES)
    return _DIR + _SPECS[table]["file"]


def table_header(table):
    """The comment header of ``table`` (its lines without the leading ``#``), as one string.

    It names every source of the table and every column with its unit.
    """
    return _split(specs.read_data_text(table_file(table)))[0]


def _split(text):
    comments, data = [], []
    for i, ln in enumerate(text.splitlines(), start=1):
        if ln.lstrip().startswith("#"):
            comments.append(ln.lstrip()[1:].strip())
        elif ln.strip():
            data.append((i, ln))
    return "\n".join(comments), data


def _typed(name, where, column, value, spec):
    v = value.strip()
    if v == "":
        if column in spec["required"]:
            raise ValueError(f"{where}: {column} is required")
        return None
    if column in spec["ints"] or column in spec["floats"]:
        try:
            n = int(v) if column in spec["ints"] else float(v)
        except ValueError:
            n = float("nan")
        if not (n > 0 and math.isfinite(n)):
            kind = "integer" if column in spec["ints"] else "number"
            raise ValueError(f"{where}: {column} must be a positive {kind}; got {value!r}")
        return n
    if column in spec["bools"]:
        if v not in ("true", "false"):
            raise ValueError(f"{where}: {column} must be true or false; got {value!r}")
        return v == "true"
    return v


@functools.lru_cache(maxsize=8)
def _parse(table, text):
    spec = _SPECS[table]
    name = _DIR + spec["file"]
    header, data = _split(text)
    if not data:
        raise ValueError(f"{name} has no header row")
    reader = csv.DictReader(io.StringIO("\n".join(ln for _, ln in data)))
    fields = reader.fieldnames or []
    missing = [c for c in (spec["required"] + spec["ints"] + spec["floats"] + spec["bools"])
               if c not in fields]
    if missing:
        raise ValueError(f"{name}: columns missing from the header: {', '.join(missing)}")
    out = []
    for raw in reader:
        line = data[reader.line_num - 1][0]
        where = f"{name} line {line}"
        if None in raw or any(v is None for v in raw.values()):
            raise ValueError(f"{where}: wrong number of fields")
        row = {k: _typed(name, where, k, v, spec) for k, v in raw.items()}
        if row["kind"] != "published":
            raise ValueError(f"{where}: kind must be 'published'; got {row['kind']!r}")
        if row["source_id"] not in header:
            raise ValueError(f"{where}: source_id {row['source_id']!r} is not listed in "
                             "the file's header")
        out.append(row)
    return tuple(out)


def rows(table):
    """Every row of a published serving table, typed, in file order.

    Parameters
    ----------
    table : str
        One of :data:`TABLES`.

    Returns
    -------
    list of dict
        One per data row, keyed by the file's columns: the table's integer columns are
        ``int``, its float columns ``float``, its boolean columns ``bool``, an empty field
        ``None``, the rest strings, values as published (units in the column names).

    Raises
    ------
    ValueError
        If ``table`` is unknown, or a row is malformed, not ``published``, or names a
        source the header does not list.

    Examples
    --------
    >>> r = rows("allreduce")[0]
    >>> r["gpu"], r["gpus"], r["implementation"], r["message_bytes"], r["cuda_graph"]
    ('H100 SXM', 2, 'nccl', 8192, False)
    """
    check_choice("table", table, TABLES)
    return [dict(r) for r in _parse(table, specs.read_data_text(table_file(table)))]


def allreduce_rows():
    """:func:`rows` of ``"allreduce"``: all-reduce latency (``latency_ms``) per message size."""
    return rows("allreduce")


def end_to_end_rows():
    """:func:`rows` of ``"end_to_end"``: throughput and per-token latency per system and TP."""
    return rows("end_to_end")


def kv_transfer_rows():
    """:func:`rows` of ``"kv_transfer"``: KV-cache size, transfer time and TTFT per prompt."""
    return rows("kv_transfer")


def ep_rows():
    """:func:`rows` of ``"ep"``: expert-parallel dispatch/combine latency and bandwidth."""
    return rows("ep")
