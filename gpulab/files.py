"""Writing files safely: what the benchmark and ``gpulab fit`` write goes through a
temporary file and a rename."""
from __future__ import annotations

import os
import stat
import tempfile

__all__ = ["write_atomic"]


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename, so that
    a run cut short leaves the old file (or none), never half of a new one.

    The file gets the permissions a plain ``open(path, "w")`` would give it: an
    existing file's mode, else ``0o666`` less the process's umask (not
    ``mkstemp``'s private ``0o600``)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"path must be a file path; got {path!r}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"path must be in an existing folder; {folder!r} is not one")
    mode = _mode_of_new(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpulab-", suffix=".tmp")
    try:
        os.fchmod(fd, mode)             # mkstemp makes 0600; give open()'s mode
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _mode_of_new(path):
    """Permission bits ``open(path, "w")`` would leave on ``path``."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0o022)         # read the umask (it can only be set) ...
        os.umask(umask)                 # ... and put it back
        return 0o666 & ~umask
