"""Start and stop a JupyterLab server for the browser tests (one place for the set-up that
tests/book/conftest.py's ``lab_server`` and test_lab_landing.py's ``root_lab`` share).

:func:`jupyterlab` starts ``python -m jupyterlab`` on 127.0.0.1 (a free port, a random
token) with every Jupyter / IPython user directory in a temporary folder, the given user
settings written there, waits until ``/api/status`` answers, yields ``(base_url, token,
log_path)`` and stops the server and the kernels it started (its process group).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

SERVER_START_TIMEOUT = 90  # s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, tmp: Path, *, user_settings: dict, env: dict | None = None,
               args: tuple = ()):
    """JupyterLab serving ``root``; its user state lives in ``tmp``.

    ``user_settings``: ``{plugin id: settings}`` written as the user's settings;
    ``env``: variables set on top of the isolated environment (``None`` removes one);
    ``args``: further command-line options of the server.
    """
    settings = tmp / "user-settings"
    for plugin, values in user_settings.items():
        f = settings / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values), encoding="utf-8")
    full_env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    # no user or site Jupyter path leaks in; other test modules set MPLBACKEND=Agg for
    # themselves at import, and a kernel that inherits it draws no inline figures
    for name in ("JUPYTER_PATH", "MPLBACKEND", "JUPYTER_CONFIG_PATH"):
        full_env.pop(name, None)
    for name, value in (env or {}).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    port, token = free_port(), secrets.token_hex(16)
    log_path = tmp / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LanguageServerManager.autodetect=False", *args,
         *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])],
        cwd=root, env=full_env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n"
                            + log_path.read_text())
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}",
                                            timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + log_path.read_text())
            time.sleep(0.5)
        yield base, token, log_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
