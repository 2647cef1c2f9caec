"""Root pytest configuration: let nbval run MyST Markdown notebooks (jupytext ``.md``).

nbval 0.11 only collects ``*.ipynb``. A ``.md`` file whose YAML header declares
``format_name: myst`` and a ``kernelspec`` is collected as a notebook too, read through
jupytext, when ``--nbval`` or ``--nbval-lax`` is given. Recipe: toolchain guide section 3.
``tests/book/test_notebook_set.py`` uses :func:`is_myst_notebook` to decide what a notebook is.
"""
from __future__ import annotations

import functools
from pathlib import Path
from unittest import mock


@functools.lru_cache(maxsize=None)
def _chapter_notebooks():
    """jupyter/chapter_notebooks.py (a script, not a package), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gpulab_course_chapter_notebooks",
        Path(__file__).resolve().parent / "jupyter" / "chapter_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_myst_notebook(path) -> bool:
    """Return True if ``path`` is a MyST Markdown notebook (jupytext header + kernelspec);
    the same test ``make lab`` uses to pick the chapters it copies."""
    return _chapter_notebooks().is_chapter_notebook(Path(path))


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if not is_myst_notebook(file_path):
        return None
    import jupytext
    import nbval.plugin as nbval_plugin

    class MystNotebookFile(nbval_plugin.IPyNbFile):
        def collect(self):
            def _read(fp, as_version=4, **kw):
                return jupytext.read(fp, fmt="md:myst")

            with mock.patch.object(nbval_plugin.nbformat, "read", _read):
                yield from super().collect()

    return MystNotebookFile.from_parent(parent, path=file_path)
