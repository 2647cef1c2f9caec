"""JupyterLab contents manager of the course: text files open read-only as notebooks.

A chapter (``book/*.md``, a MyST Markdown notebook) opened as a notebook goes through
jupytext, which would write it back in its own layout (a version line, re-wrapped figure
captions, blank lines): saving, or autosave, would rewrite the tracked source although the
learner changed nothing. The same holds for any other text file that JupyterLab opens as a
notebook (``README.md``: the course maps Markdown to jupytext's notebook view). This
manager, jupytext's own with one rule added, serves every such file (a notebook that is
not an ``.ipynb``) with ``writable: false``, and refuses to save one as a notebook. The
landing notebook ``START.ipynb`` is read-only in the same way.
JupyterLab then shows it read-only and never autosaves it; *File → Save Notebook As…*
still works. Opened in the text editor the file stays writable: what is saved is then
exactly what is shown.

The executed copies that ``make lab`` writes to ``_build/chapters/`` (see
``chapter_notebooks.py``) are ordinary notebooks and stay writable.

Enabled by ``jupyter_server_config.py`` in this folder (``make lab`` puts the folder on
``JUPYTER_CONFIG_PATH``).
"""
from __future__ import annotations

from pathlib import PurePosixPath

from jupytext.async_contentsmanager import AsyncTextFileContentsManager
from tornado.web import HTTPError

#: tracked notebooks that are read-only too: the landing page has nothing to save, and
#: JupyterLab would write the kernel's language_info into it as soon as a kernel starts
READ_ONLY_NOTEBOOKS = {"START.ipynb"}
READ_ONLY_REASON = ("{path} is read-only here: saving it would rewrite a tracked file. Open "
                    "a chapter's executed copy from START.ipynb, or keep your own version "
                    "with File > Save Notebook As... and a new .ipynb name.")


class CourseContentsManager(AsyncTextFileContentsManager):
    """Jupytext's contents manager; text notebooks (``.md``, ...) are read-only."""

    @staticmethod
    def is_text_source(path: str) -> bool:
        """True if ``path`` is a file that JupyterLab shows as a notebook through jupytext."""
        return PurePosixPath(path.strip("/")).suffix != ".ipynb"

    @classmethod
    def is_read_only_notebook(cls, path: str) -> bool:
        """Text sources, and the landing notebook (its kernel would rewrite its metadata)."""
        return cls.is_text_source(path) or path.strip("/") in READ_ONLY_NOTEBOOKS

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") == "notebook" and self.is_read_only_notebook(path):
            model["writable"] = False
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and self.is_read_only_notebook(path):
            raise HTTPError(403, READ_ONLY_REASON.format(path=path.strip("/")))
        return await super().save(model, path)
