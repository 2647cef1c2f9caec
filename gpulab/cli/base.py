"""Shared parts of the ``gpulab`` commands: output formats, flag-named errors, the
sweep reader with usage errors, and small argument types."""
from __future__ import annotations

import argparse
import csv
import json
import os

from .. import nccltests


def emit(rows, fmt, out):
    """Write ``rows`` (list of dicts) as an aligned table, CSV or JSON."""
    if not rows:
        return
    cols = list(rows[0])
    if fmt == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
    elif fmt == "csv":
        w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    else:
        cells = [[str(r[c]) for c in cols] for r in rows]
        widths = [max(len(c), *(len(row[i]) for row in cells))
                  for i, c in enumerate(cols)]
        out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
        for row in cells:
            out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()
                      + "\n")


def name_flag(message, flags):
    """Prefix a model error that names a parameter with the CLI flag behind it."""
    for param, flag in flags.items():
        if message.startswith(param):
            return f"{flag} ({param}){message[len(param):]}"
    return message


def nvls_enabled(choice):
    """--nvls: ``on``/``off``, or ``auto`` = as NCCL would here: off when the
    environment sets ``NCCL_NVLS_ENABLE=0`` (NVLink multicast disabled), else on
    wherever the switch supports it."""
    if choice in ("on", "off"):
        return choice == "on"
    return os.environ.get("NCCL_NVLS_ENABLE", "").strip() != "0"


def read_sweeps(parser, path):
    """Every sweep of ``path``, or a usage error naming the file and line."""
    try:
        return nccltests.read_all(path)
    except nccltests.NcclTestsParseError as exc:
        where = f", line {exc.lineno}" if exc.lineno else ""
        quoted = f": {exc.line[:120]!r}" if exc.line is not None else ""
        parser.error(f"argument FILE: {path}{where}: {exc.reason}{quoted}")
    except ValueError as exc:
        parser.error(f"argument FILE: {exc}")


def read_text_file(path, expected):
    """The UTF-8 text of ``path``; a ValueError naming the file (and the line of
    the first byte that is not UTF-8) for a missing, unreadable or binary file.
    ``expected`` says what the file should hold."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ValueError(f"file: cannot read {path!r}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ValueError(f"file: {path}: line {line}: not UTF-8 text (binary data?); "
                         f"expected {expected}") from None


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid ranks {text!r}: must be an "
                                         "integer >= 1")
    return value
