"""Writing files safely: what the benchmark and ``gpulab fit`` write goes through a
temporary file and a rename."""
from __future__ import annotations

import os
import tempfile

__all__ = ["write_atomic"]


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
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpulab-", suffix=".tmp")
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
