"""`import gpulab` is light and side-effect free; the CLI starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ENV = {**os.environ, "MPLBACKEND": "Agg"}


def _run(code, *args):
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)] if code
                          else [sys.executable, *args], capture_output=True, text=True,
                          env=ENV, timeout=120)


def test_import_is_light_and_does_no_data_io():
    r = _run("""
        import builtins, io, json, sys
        opened = []
        real_open, real_io_open = builtins.open, io.open
        def spy(file, *a, **k):
            opened.append(str(file))
            return real_open(file, *a, **k)
        builtins.open = io.open = spy
        import gpulab
        builtins.open, io.open = real_open, real_io_open
        from gpulab import specs, scaling
        cached = [f for mod in (specs, scaling) for f in vars(mod).values()
                  if hasattr(f, "cache_info")]
        assert len(cached) >= 4, cached
        caches = {f.__name__: f.cache_info().currsize for f in cached}
        heavy = sorted(m for m in ("matplotlib", "ipywidgets", "IPython", "torch",
                                   "gpulab.plotting", "gpulab.widgets")
                       if m in sys.modules)
        data = [p for p in opened if "gpulab" in p and "data" in p]
        print(json.dumps({"caches": caches, "heavy": heavy, "data": data}))
    """)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["heavy"] == []
    assert out["data"] == []
    assert set(out["caches"].values()) == {0}, out["caches"]


def test_io_spy_and_caches_work():
    # positive control: the checks above would pass vacuously if the spy missed
    # package-data reads or the caches never filled
    r = _run("""
        import builtins, io
        opened = []
        real_open = builtins.open
        def spy(file, *a, **k):
            opened.append(str(file))
            return real_open(file, *a, **k)
        builtins.open = io.open = spy
        from gpulab import specs
        specs.gpu("H100")
        print(specs._gpu_table.cache_info().currsize,
              sum("gpus.csv" in p for p in opened))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1"]


def test_lazy_layers_import_on_attribute_access():
    r = _run("""
        import sys, gpulab
        assert "matplotlib" not in sys.modules
        gpulab.plotting
        assert "gpulab.plotting" in sys.modules and "ipywidgets" not in sys.modules
        gpulab.widgets
        assert "ipywidgets" in sys.modules
        try:
            gpulab.nonexistent
        except AttributeError:
            print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_public_api():
    import gpulab

    assert gpulab.__version__ == "0.1.0"
    for name in gpulab.__all__:
        assert getattr(gpulab, name) is not None


def test_cli_help():
    r = subprocess.run([sys.executable, "-m", "gpulab", "--help"], capture_output=True,
                       text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "usage" in r.stdout.lower()
