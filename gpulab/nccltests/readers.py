"""Readers of nccl-tests output: its text tables (any version, MPI-tagged lines,
several collectives per file), its ``-J`` JSON reports, ``gpulab.bench`` output and
our CSV sweeps.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from pathlib import Path

import numpy as np

from .. import collectives, units
from .._validate import check_choice

from .sweep import COLLECTIVE_NAMES, Device, NcclTestsParseError, Sweep, time_resolution


# --- small helpers ------------------------------------------------------------------------
_TAG_RE = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_RE = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+-?\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+"
    r"(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
_PERF_RE = re.compile(r"\b([a-z][a-z_]*?)_perf\b")
_TITLE_RE = re.compile(r"^#\s*([a-z][a-z_]*)\s*:?\s+n?ranks\s+(\d+)\b")
_PREDICT_RE = re.compile(r"^#\s*gpulab predict:\s*([a-z_]+),.*?\bnranks\s+(\d+)")
_VERSION_RES = (
    re.compile(r"nccl-library=(\d{4,6})"),
    re.compile(r"NCCL version\s+(\d+\.\d+\.\d+)"),
    re.compile(r"\bNCCL\s+(\d{5})\b"),
    re.compile(r"\bnccl \((\d+), (\d+), (\d+)\)"),
)
_CONFIG_RE = re.compile(r"([A-Za-z][A-Za-z ]*?):?\s+(-?\d+)(?:\((\w+)\))?")
_NA = {"N/A", "n/a", "nan", "NaN", "-nan", "NA"}


def _version(code):
    """``22803`` -> ``"2.28.3"`` (NCCL_VERSION_CODE), ``"2.18.1"`` unchanged."""
    if isinstance(code, str) and "." in code:
        return code
    code = int(code)
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def _normalize_collective(name, what="collective"):
    if name is None:
        return None
    if not isinstance(name, str):
        raise ValueError(f"{what} must be None or one of {', '.join(COLLECTIVE_NAMES)}; "
                         f"got {name!r}")
    name = name[:-5] if name.endswith("_perf") else name
    check_choice(what, name, COLLECTIVE_NAMES)
    return name


def _clean(raw):
    line = _ANSI_RE.sub("", raw)
    line = _TAG_RE.sub("", line)
    return line.rstrip()


def _check_text(text, name):
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a str with nccl-tests output; got "
                         f"{type(text).__name__}")


def _check_source(source):
    if not isinstance(source, str) or not source:
        raise ValueError(f"source must be a non-empty str naming the input; got "
                         f"{source!r}")


def _control_char_line(text, source):
    """Refuse binary input: the first line with a NUL or other control byte."""
    for i, line in enumerate(text.splitlines(), 1):
        if re.search(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]", _ANSI_RE.sub("", line)):
            raise NcclTestsParseError("binary data (control characters), not "
                                      "nccl-tests output", i, line, source)


# --- text tables --------------------------------------------------------------------------
_HEADER_ALIASES = {"error": "#wrong", "wrong": "#wrong", "cputime": "time"}


def _header_columns(body):
    cols = []
    for tok in body.split():
        tok = re.sub(r"\(.*\)$", "", tok)
        cols.append(_HEADER_ALIASES.get(tok, tok))
    return cols


def _is_header(body):
    cols = _header_columns(body)
    return bool(cols) and cols[0] == "size" and "time" in cols and "busbw" in cols


class _Table:
    def __init__(self, cols, lineno, meta, inplace_first):
        self.cols, self.lineno, self.meta = cols, lineno, meta
        self.times = [i for i, c in enumerate(cols) if c == "time"]
        self.inplace_first = inplace_first and len(self.times) == 2
        self.rows = []
        self.avg = None
        self.oob = None


def _new_meta(prev=None):
    """Metadata of a new table; a table that restates no devices, version or
    settings inherits them from the previous one (one run, several tests)."""
    meta = {"collective": None, "n_ranks": None, "devices": [], "version": None,
            "config": {}, "inherited": False}
    if prev is not None and prev["devices"]:
        meta.update(devices=list(prev["devices"]), inherited=True)
    if prev is not None:
        meta.update(version=prev["version"], config=dict(prev["config"]))
    return meta


def _parse_float(tok, what, lineno, line, source, allow_na=True):
    if allow_na and tok in _NA:
        return math.nan
    try:
        v = float(tok)
    except ValueError:
        raise NcclTestsParseError(f"{what} {tok!r} is not a number", lineno, line,
                                  source) from None
    if math.isinf(v) or (math.isnan(v) and not allow_na) or v < 0:
        raise NcclTestsParseError(f"{what} {tok!r} must be a finite number >= 0",
                                  lineno, line, source)
    return v


def _parse_int(tok, what, lineno, line, source, low=0):
    if not re.fullmatch(r"-?\d+", tok):
        raise NcclTestsParseError(f"{what} {tok!r} is not an integer", lineno, line,
                                  source)
    v = int(tok)
    if v < low or v >= 2**63:           # nccl-tests prints int64 (size_t) counts
        raise NcclTestsParseError(f"{what} {tok[:40]!r} must be an integer in "
                                  f"[{low}, 2**63)", lineno, line, source)
    return v


def _parse_row(table, tokens, lineno, line, source):
    cols = table.cols
    expected = len(cols) + (1 if cols[-1] == "timestamp" else 0)
    tokens = list(tokens)
    if len(tokens) == expected - 1 and "redop" in cols:
        i = cols.index("redop")       # old alltoall/broadcast rows print no redop
        if i < len(tokens) and re.fullmatch(r"-?[\d.]+(?:e[-+]?\d+)?", tokens[i]):
            tokens.insert(i, "none")
    if len(tokens) == expected - 4 and len(table.times) == 2:
        t0 = table.times[0]          # out-of-place body left blank (trace replay)
        tokens[t0:t0] = ["N/A"] * 4
    if len(tokens) != expected:
        raise NcclTestsParseError(
            f"expected {expected} columns ({' '.join(cols)}), got {len(tokens)}",
            lineno, line, source)
    if cols[-1] == "timestamp":
        tokens[-2:] = [" ".join(tokens[-2:])]
    get = dict(zip(cols, tokens))
    row = {"size": _parse_int(get["size"], "size", lineno, line, source),
           "count": (_parse_int(get["count"], "count", lineno, line, source)
                     if "count" in get else -1),
           "type": get.get("type", "float"), "redop": get.get("redop", "none"),
           "root": (_parse_int(get["root"], "root", lineno, line, source, low=-1)
                    if "root" in get else -1),
           "lineno": lineno, "res": {}}
    groups = []
    for t in table.times:
        g = {}
        for off, key in enumerate(("time", "algbw", "busbw", "wrong")):
            j = t + off
            if j >= len(cols) or (off and cols[j] != ("#wrong" if key == "wrong"
                                                      else key)):
                raise NcclTestsParseError(f"column header has no {key} after time",
                                          table.lineno, None, source)
            tok = tokens[j]
            g[key] = _parse_float(tok, cols[j] if key != "wrong" else "#wrong",
                                  lineno, line, source)
            g["res_" + key] = time_resolution(tok)
        groups.append(g)
    if table.inplace_first:
        groups.reverse()
    row["oop"] = groups[0]
    row["ip"] = groups[1] if len(groups) > 1 else None
    table.rows.append(row)


def _finish(table, source, out):
    if table is None or not table.rows:
        return
    meta = table.meta
    rows = table.rows
    nan = np.full(len(rows), np.nan)

    def col(group, key, scale=1.0):
        if group == "ip" and rows[0]["ip"] is None:
            return nan.copy()
        arr = np.array([r[group][key] for r in rows], dtype=float)
        return arr / 1e6 if scale == units.US else arr * scale

    n, rank_note = meta["n_ranks"], None
    if n is None and meta["devices"]:
        n, rank_note = _ranks_from_devices(meta["devices"])
    res = {k: np.array([r["oop"]["res_" + k] for r in rows])
           for k in ("time", "algbw", "busbw")}
    out.append(Sweep(
        collective=meta["collective"], n_ranks=n, devices=tuple(meta["devices"]),
        nccl_version=meta["version"],
        size_bytes=np.array([r["size"] for r in rows], dtype=np.int64),
        count=np.array([r["count"] for r in rows], dtype=np.int64),
        type=np.array([r["type"] for r in rows], dtype=object).astype(str),
        redop=np.array([r["redop"] for r in rows], dtype=object).astype(str),
        root=np.array([r["root"] for r in rows], dtype=np.int64),
        time_s=col("oop", "time", units.US), algbw=col("oop", "algbw", units.GB),
        busbw=col("oop", "busbw", units.GB), wrong=col("oop", "wrong"),
        time_s_inplace=col("ip", "time", units.US), algbw_inplace=col("ip", "algbw", units.GB),
        busbw_inplace=col("ip", "busbw", units.GB), wrong_inplace=col("ip", "wrong"),
        avg_busbw=None if table.avg is None else table.avg * units.GB,
        out_of_bounds=table.oob, rank_note=rank_note, source=source, format="text",
        lineno=np.array([r["lineno"] for r in rows], dtype=np.int64),
        config=dict(meta["config"]),
        time_resolution={"time": res["time"] * units.US, "algbw": res["algbw"] * units.GB,
                     "busbw": res["busbw"] * units.GB}))


def _ranks_from_devices(devices):
    """``(n_ranks, note)`` from the ``#  Rank`` lines: nccl-tests prints one per rank
    (every process's GPUs, gathered under MPI), numbered 0..n-1. Ranks missing
    from that numbering (an excerpt, a cut-off log) leave the count unknown:
    ``(None, why)``."""
    ranks = sorted({d.rank for d in devices})
    if ranks == list(range(len(ranks))):
        return len(ranks), None
    missing = sorted(set(range(ranks[-1] + 1)) - set(ranks))
    shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
    return None, (f"the Rank lines list {len(ranks)} rank(s) up to rank {ranks[-1]} "
                  f"but not rank(s) {shown}: an incomplete header, so the rank count "
                  f"is unknown (at least {ranks[-1] + 1})")


def _meta_line(meta, body, raw_line):
    """Update ``meta`` from a header/comment line; True if it carried metadata."""
    m = _RANK_RE.match(body)
    if m:
        if meta["inherited"]:
            meta.update(devices=[], inherited=False)
        meta["devices"].append(Device(int(m.group(1)), m.group(3), int(m.group(4)),
                                      m.group(6)))
        return True
    found = False
    for rx in (_PREDICT_RE, _TITLE_RE):
        m = rx.match(body)
        if m and m.group(1).removesuffix("_perf") in COLLECTIVE_NAMES:
            meta["collective"] = m.group(1).removesuffix("_perf")
            meta["n_ranks"] = int(m.group(2))
            found = True
            break
    if not found:
        m = _PERF_RE.search(raw_line)
        if m and m.group(1) in COLLECTIVE_NAMES:
            meta["collective"] = m.group(1)
            found = True
    for rx in _VERSION_RES:
        m = rx.search(raw_line)
        if m:
            meta["version"] = (".".join(m.groups()) if len(m.groups()) == 3
                               else _version(m.group(1)))
            found = True
            break
    if body.startswith("#") and "nThread" in body and "nGpus" in body:
        for key, val, unit in _CONFIG_RE.findall(body.lstrip("# ")):
            key = key.strip()
            meta["config"][key + (f" ({unit})" if unit else "")] = int(val)
        found = True
    return found


def _parse_text(text, source):
    lines = text.splitlines()
    out, meta, table = [], _new_meta(), None
    prev_comment = ""
    first_data = None
    for lineno, raw in enumerate(lines, 1):
        line = _clean(raw)
        body = line.strip()
        if not body:
            continue
        if body.startswith("#"):
            inner = body.lstrip("#").strip()
            if _is_header(inner):
                _finish(table, source, out)
                if table is not None and table.rows:
                    meta = _new_meta(meta) if meta is table.meta else meta
                inplace_first = ("in-place" in prev_comment and "out-of-place" in
                                 prev_comment and prev_comment.index("in-place") <
                                 prev_comment.index("out-of-place"))
                table = _Table(_header_columns(inner), lineno, meta, inplace_first)
                prev_comment = body
                continue
            low = inner.lower()
            if table is not None and low.startswith("avg bus bandwidth"):
                m = re.search(r":\s*(\S+)", inner)
                table.avg = (_parse_float(m.group(1), "Avg bus bandwidth", lineno,
                                          raw, source) if m else None)
            elif table is not None and low.startswith("out of bounds values"):
                m = re.search(r":\s*(\S+)", inner)
                table.oob = (_parse_int(m.group(1), "Out of bounds values", lineno,
                                        raw, source) if m else None)
            elif low.startswith("collective test concluded"):
                pass
            else:
                if table is not None and table.rows:
                    probe = _new_meta(table.meta)
                    if _meta_line(probe, body, line):
                        _finish(table, source, out)
                        table, meta = None, probe
                else:
                    _meta_line(meta, body, line)
            prev_comment = body
            continue
        tokens = body.split()
        if re.fullmatch(r"-?\d+", tokens[0]):
            if table is None:
                first_data = first_data or (lineno, raw)
                continue
            _parse_row(table, tokens, lineno, raw, source)
            continue
        # noise (NCCL INFO lines, launcher messages); it may still name the test
        if table is not None and table.rows:
            probe = _new_meta(table.meta)
            if _PERF_RE.search(line) and _meta_line(probe, "", line) \
                    and probe["collective"]:
                _finish(table, source, out)
                table, meta = None, probe
        else:
            _meta_line(meta, "", line)
    _finish(table, source, out)
    if not out:
        if first_data:
            raise NcclTestsParseError("data row before any column header line "
                                      "('#  size  count  type ... time  algbw  busbw')",
                                      first_data[0], first_data[1], source)
        if table is not None:
            raise NcclTestsParseError("column header without data rows", table.lineno,
                                      lines[table.lineno - 1], source)
        first = next(((i, ln) for i, ln in enumerate(lines, 1) if ln.strip()), None)
        if first is None:
            raise NcclTestsParseError("empty input: no nccl-tests table", 1, "",
                                      source)
        raise NcclTestsParseError("not nccl-tests output: no column header line "
                                  "('#  size  count  type ... time  algbw  busbw') found",
                                  first[0], first[1], source)
    return out


# --- CSV (ours) ---------------------------------------------------------------------------
_CSV_REQUIRED = ("size_bytes", "time_us")


def _is_csv(text):
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return "," in first and "size_bytes" in [c.strip() for c in first.split(",")]


def _parse_csv(text, source):
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip())
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [c.strip() for c in next(reader)]
    for need in _CSV_REQUIRED:
        if need not in header:
            raise NcclTestsParseError(f"CSV header lacks column {need!r}", start + 1,
                                      lines[start], source)
    groups = {}
    for k, rec in enumerate(reader):
        lineno = start + 2 + k
        line = lines[lineno - 1] if lineno - 1 < len(lines) else ""
        if not rec or not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise NcclTestsParseError(f"expected {len(header)} fields "
                                      f"({','.join(header)}), got {len(rec)}", lineno,
                                      line, source)
        get = {h: v.strip() for h, v in zip(header, rec)}
        coll = get.get("collective") or None
        if coll is not None:
            if coll.removesuffix("_perf") not in COLLECTIVE_NAMES:
                raise NcclTestsParseError(f"unknown collective {coll!r}", lineno, line,
                                          source)
            coll = coll.removesuffix("_perf")
        n = (_parse_int(get["n_ranks"], "n_ranks", lineno, line, source, low=1)
             if get.get("n_ranks") else None)
        key = (coll, n, get.get("label"), get.get("nccl_version"))
        size = _parse_int(get["size_bytes"], "size_bytes", lineno, line, source)
        t = _parse_float(get["time_us"], "time_us", lineno, line, source,
                         allow_na=False)
        row = {"size": size, "time": t, "lineno": lineno,
               "res_time": time_resolution(get["time_us"])}
        for name, col in (("algbw", "algbw_GBps"), ("busbw", "busbw_GBps")):
            if get.get(col, "") != "":
                row[name] = _parse_float(get[col], col, lineno, line, source)
                row["res_" + name] = time_resolution(get[col])
            else:
                row[name], row["res_" + name] = None, 0.0
        row["wrong"] = (_parse_float(get["wrong"], "wrong", lineno, line, source)
                        if get.get("wrong", "") != "" else math.nan)
        groups.setdefault(key, []).append(row)
    if not groups:
        raise NcclTestsParseError("CSV without data rows", start + 1, lines[start],
                                  source)
    out = []
    for (coll, n, label, version), rows in groups.items():
        size = np.array([r["size"] for r in rows], dtype=np.int64)
        t = np.array([r["time"] for r in rows]) / 1e6
        with np.errstate(divide="ignore", invalid="ignore"):
            alg_calc = np.where(t > 0, size / np.where(t > 0, t, 1.0), np.nan)
        alg = np.array([alg_calc[i] if r["algbw"] is None else r["algbw"] * units.GB
                        for i, r in enumerate(rows)])
        if any(r["busbw"] is None for r in rows):
            fac = (collectives.busbw_factor(coll, n) if coll in collectives.BUSBW_OPS
                   and n else math.nan)
            bus = np.array([alg[i] * fac if r["busbw"] is None else r["busbw"] * units.GB
                            for i, r in enumerate(rows)])
        else:
            bus = np.array([r["busbw"] for r in rows]) * units.GB
        m = len(rows)
        nan = np.full(m, np.nan)
        out.append(Sweep(
            collective=coll, n_ranks=n, devices=(),
            nccl_version=_version(version) if version else None,
            size_bytes=size, count=np.full(m, -1, dtype=np.int64),
            type=np.full(m, "float"), redop=np.full(m, "none"),
            root=np.full(m, -1, dtype=np.int64), time_s=t, algbw=alg, busbw=bus,
            wrong=np.array([r["wrong"] for r in rows]), time_s_inplace=nan.copy(),
            algbw_inplace=nan.copy(), busbw_inplace=nan.copy(),
            wrong_inplace=nan.copy(), source=source, format="csv",
            lineno=np.array([r["lineno"] for r in rows], dtype=np.int64),
            config={"label": label} if label else {},
            time_resolution={"time": np.array([r["res_time"] for r in rows]) * units.US,
                         "algbw": np.array([r["res_algbw"] for r in rows]) * units.GB,
                         "busbw": np.array([r["res_busbw"] for r in rows]) * units.GB}))
    return out


# --- JSON -----------------------------------------------------------------------------
def _json_num(value, what, source, allow_none=True):
    if value is None and allow_none:
        return math.nan
    if isinstance(value, str) and value.strip().lower() in ("nan", "-nan", "n/a"):
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NcclTestsParseError(f"{what} must be a number; got {value!r}", None,
                                  None, source)
    if math.isinf(value) or value < 0:
        raise NcclTestsParseError(f"{what} must be a finite number >= 0; got "
                                  f"{value!r}", None, None, source)
    return float(value)


def _json_int(value, what, source, low=0):
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low \
            or value >= 2**63:
        shown = repr(value) if len(repr(value)) < 60 else repr(value)[:40] + "..."
        raise NcclTestsParseError(f"{what} must be an integer in [{low}, 2**63); got "
                                  f"{shown}", None, None, source)
    return value


def _parse_json_doc(doc, source, collective):
    if isinstance(doc, list):            # gpulab predict --format json
        text = io.StringIO()
        if not doc or not all(isinstance(r, dict) for r in doc):
            raise NcclTestsParseError("JSON list must hold row objects with "
                                      "size_bytes and time_us", None, None, source)
        keys = list(doc[0])
        w = csv.DictWriter(text, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in doc:
            w.writerow({k: r.get(k, "") for k in keys})
        return _parse_csv(text.getvalue(), source)
    if isinstance(doc, dict) and isinstance(doc.get("meta"), dict) \
            and isinstance(doc.get("results"), list) and doc["results"] \
            and isinstance(doc["results"][0], dict) \
            and "size_bytes" in doc["results"][0]:         # python -m gpulab.bench
        sweeps = _parse_json_doc(doc["results"], source, collective)
        version = doc["meta"].get("nccl_version")
        for sw in sweeps:
            if version and not sw.nccl_version:
                sw.nccl_version = str(version)
        return sweeps
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise NcclTestsParseError("JSON object has no 'results' list (nccl-tests "
                                  "-J report)", None, None, source)
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    devs = config.get("devices", doc.get("devices")) or []
    devices = []
    for d in devs if isinstance(devs, list) else []:
        if isinstance(d, dict):
            devices.append(Device(int(d.get("rank", len(devices))),
                                  str(d.get("hostname", "")),
                                  int(d.get("device", -1)),
                                  str(d.get("device_info", ""))))
    coll = None
    args = doc.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        m = _PERF_RE.search(os.path.basename(args[0]))
        if m and m.group(1) in COLLECTIVE_NAMES:
            coll = m.group(1)
    n, rank_note = _ranks_from_devices(devices) if devices else (None, None)
    if n is None and not devices and isinstance(config.get("nthreads"), int) \
            and isinstance(config.get("ngpus"), int):
        n = config["nthreads"] * config["ngpus"]
    rows = []
    for i, r in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict):
            raise NcclTestsParseError(f"{where} must be an object", None, None, source)
        row = {"size": _json_int(r.get("size"), f"{where}.size", source),
               "count": _json_int(r.get("count", -1), f"{where}.count", source,
                                  low=-1),
               "type": str(r.get("type", "float")),
               "redop": str(r.get("redop", "none")).strip(),
               "root": _json_int(r.get("root", -1), f"{where}.root", source, low=-1)}
        for part in ("out_of_place", "in_place"):
            body = r.get(part)
            if body is None:
                row[part] = (math.nan,) * 4
                continue
            if not isinstance(body, dict):
                raise NcclTestsParseError(f"{where}.{part} must be an object or null",
                                          None, None, source)
            t = body.get("time", body.get("cpu_time"))
            row[part] = tuple(_json_num(v, f"{where}.{part}.{k}", source) for k, v in
                              (("time", t), ("alg_bw", body.get("alg_bw")),
                               ("bus_bw", body.get("bus_bw")),
                               ("nwrong", body.get("nwrong"))))
        rows.append(row)
    if not rows:
        raise NcclTestsParseError("JSON report has no results", None, None, source)
    avg = doc.get("average_bus_bandwidth")
    avg = avg.get("bandwidth") if isinstance(avg, dict) else None
    oob = doc.get("out_of_bounds")
    oob = oob.get("count") if isinstance(oob, dict) else None
    version = doc.get("nccl_version")

    def col(part, k, scale):
        arr = np.array([r[part][k] for r in rows], dtype=float)
        return arr / 1e6 if scale == units.US else arr * scale

    res = {"time": np.full(len(rows), 0.5e-6 * units.US),
           "algbw": np.full(len(rows), 0.5e-6 * units.GB),
           "busbw": np.full(len(rows), 0.5e-6 * units.GB)}
    return [Sweep(
        collective=collective or coll, n_ranks=n, devices=tuple(devices),
        nccl_version=_version(version) if isinstance(version, (int, str))
        and str(version).replace(".", "").isdigit() else None,
        size_bytes=np.array([r["size"] for r in rows], dtype=np.int64),
        count=np.array([r["count"] for r in rows], dtype=np.int64),
        type=np.array([r["type"] for r in rows]), redop=np.array([r["redop"]
                                                                  for r in rows]),
        root=np.array([r["root"] for r in rows], dtype=np.int64),
        time_s=col("out_of_place", 0, units.US), algbw=col("out_of_place", 1, units.GB),
        busbw=col("out_of_place", 2, units.GB), wrong=col("out_of_place", 3, 1.0),
        time_s_inplace=col("in_place", 0, units.US), algbw_inplace=col("in_place", 1, units.GB),
        busbw_inplace=col("in_place", 2, units.GB), wrong_inplace=col("in_place", 3, 1.0),
        avg_busbw=(float(avg) * units.GB if isinstance(avg, (int, float))
                   and not isinstance(avg, bool) else None),
        out_of_bounds=oob if isinstance(oob, int) and not isinstance(oob, bool)
        else None, rank_note=rank_note,
        source=source, format="json", lineno=np.zeros(len(rows), dtype=np.int64),
        config={k: v for k, v in config.items() if k != "devices"},
        time_resolution=res)]


def parse_json(text, *, source="<text>", collective=None):
    """Parse nccl-tests' JSON report (``-J FILE.json``) or ``gpulab predict
    --format json`` output.

    Parameters
    ----------
    text : str
        The JSON document.
    source : str
        Name used in error messages.
    collective : str, optional
        The collective when the report does not name it (its ``args[0]`` is
        normally ``.../all_reduce_perf``).

    Returns
    -------
    Sweep

    Examples
    --------
    >>> doc = ('{"version": 2, "args": ["./build/all_gather_perf"], '
    ...        '"nccl_version": 22803, "config": {"nthreads": 1, "ngpus": 2}, '
    ...        '"results": [{"size": 1048576, "count": 131072, "type": "float", '
    ...        '"redop": "none", "root": "    -1", "out_of_place": {"time": 10.0, '
    ...        '"alg_bw": 104.8576, "bus_bw": 52.4288, "nwrong": 0.0}, '
    ...        '"in_place": null}]}')
    >>> s = parse_json(doc)
    >>> s.collective, s.n_ranks, s.nccl_version, float(s.busbw[0]) / 1e9
    ('all_gather', 2, '2.28.3', 52.4288)
    """
    _check_text(text, "text")
    _check_source(source)
    collective = _normalize_collective(collective)
    sweeps = _parse_json_doc(_load_json(text, source), source, collective)
    return _select(sweeps, collective, source)


def _load_json(text, source):
    """``json.loads`` whose error names the line, as the text parser's errors do."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        raise NcclTestsParseError(f"invalid JSON ({exc.msg}, column {exc.colno})",
                                  exc.lineno, line, source) from None


# --- public entry points --------------------------------------------------------------
def _detect(text, source):
    _control_char_line(text, source)
    stripped = text.lstrip()
    if stripped.startswith("{") or re.match(r"\[\s*[{\]]", stripped):
        return _parse_json_doc(_load_json(text, source), source, None)
    if _is_csv(text):
        return _parse_csv(text, source)
    return _parse_text(text, source)


def _select(sweeps, collective, source):
    if collective is not None:
        named = [s for s in sweeps if s.collective == collective]
        if named:
            if len(named) > 1:
                raise ValueError(f"collective: {source} holds {len(named)} "
                                 f"{collective} sweeps; use read_all/parse_all")
            return named[0]
        unnamed = [s for s in sweeps if s.collective is None]
        if len(unnamed) == 1 and len(sweeps) == 1:
            unnamed[0].collective = collective
            return unnamed[0]
        have = ", ".join(str(s.collective) for s in sweeps)
        raise ValueError(f"collective: {source} has no {collective} sweep "
                         f"(it holds: {have})")
    if len(sweeps) > 1:
        have = ", ".join(str(s.collective) for s in sweeps)
        raise ValueError(f"collective: {source} holds {len(sweeps)} sweeps ({have}); "
                         "pick one with collective=... or use read_all/parse_all")
    return sweeps[0]


def parse_all(text, *, source="<text>"):
    """Parse every table in ``text`` (text, JSON or CSV, auto-detected).

    Returns
    -------
    list of Sweep
        In input order (our recorded files hold one table per collective).
    """
    _check_text(text, "text")
    _check_source(source)
    return _detect(text, source)


def parse(text, *, source="<text>", collective=None):
    """Parse one nccl-tests table (text, JSON or CSV, auto-detected).

    Parameters
    ----------
    text : str
        nccl-tests stdout, a ``-J`` JSON report, or a CSV with ``size_bytes`` and
        ``time_us`` columns.
    source : str
        Name used in error messages.
    collective : str, optional
        Picks the table when the input holds several; names it when the input
        does not (old nccl-tests never prints the test's name).

    Returns
    -------
    Sweep

    Raises
    ------
    NcclTestsParseError
        Malformed input (names the line).
    """
    _check_text(text, "text")
    _check_source(source)
    collective = _normalize_collective(collective)
    return _select(_detect(text, source), collective, source)


def _load(text_or_path):
    if isinstance(text_or_path, os.PathLike):
        path = Path(text_or_path)
    elif isinstance(text_or_path, str):
        looks_like_path = ("\n" not in text_or_path and len(text_or_path) < 4096
                           and (os.path.exists(text_or_path) or re.search(
                               r"\.(txt|csv|json|log|out)$", text_or_path)))
        if not looks_like_path:
            return text_or_path, "text_or_path"
        path = Path(text_or_path)
    else:
        raise ValueError("text_or_path must be nccl-tests output (str) or a file path; "
                         f"got {type(text_or_path).__name__}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"text_or_path: cannot read {str(path)!r}: "
                         f"{exc.strerror}") from None
    try:
        return data.decode("utf-8"), str(path)
    except UnicodeDecodeError as exc:
        lineno = data[:exc.start].count(b"\n") + 1
        line = data.splitlines()[lineno - 1].decode("utf-8", "replace") \
            if data.splitlines() else ""
        raise NcclTestsParseError("not UTF-8 text (binary data)", lineno, line,
                                  f"text_or_path {str(path)!r}") from None


def read_all(text_or_path):
    """Like :func:`parse_all` for a file path (or the text itself).

    >>> from pathlib import Path
    >>> import gpulab
    >>> raw = Path(gpulab.__file__).with_name("data") / "measurements" / "raw"
    >>> [s.collective for s in read_all(raw / "h200-x2-2026-11-30-run2" /
    ...                                 "nccl_default.txt")]
    ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']
    """
    text, source = _load(text_or_path)
    with _naming_parameter():
        return _detect(text, source)


def read(text_or_path, *, collective=None):
    """Read one Sweep from a file path or from the text itself.

    Parameters
    ----------
    text_or_path : str or os.PathLike
        A path (``.txt``, ``.csv``, ``.json`` ... or any existing file), or the
        output itself.
    collective : str, optional
        See :func:`parse`.

    Examples
    --------
    >>> from pathlib import Path
    >>> import gpulab
    >>> raw = Path(gpulab.__file__).with_name("data") / "measurements" / "raw"
    >>> s = read(raw / "h200-x2-2026-11-30-nccl-c" / "c_default.txt",
    ...          collective="all_reduce")
    >>> s.n_ranks, s.nccl_version, len(s), round(float(s.busbw[-1]) / 1e9, 2)
    (2, '2.28.3', 28, 329.13)
    """
    collective = _normalize_collective(collective)
    text, source = _load(text_or_path)
    with _naming_parameter():
        return _select(_detect(text, source), collective, source)


class _naming_parameter:
    """Re-raise a parse error of a file so that it names ``text_or_path``."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, NcclTestsParseError) and exc.source != "text_or_path":
            raise NcclTestsParseError(exc.reason, exc.lineno, exc.line,
                                      f"text_or_path {exc.source!r}") from None
        return False
