"""The book's pages in order, read from ``_toc.yml`` (shared by build_slides.py and
build_pdf.py, which run as scripts with this folder on ``sys.path``)."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_docs(root=ROOT):
    """Every document of ``_toc.yml`` (jb-book format) in book order, root first, without
    its suffix: ``["intro", "book/setup", ...]``."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    docs = [re.sub(r"\.(md|ipynb)$", "", toc["root"])]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                docs.append(re.sub(r"\.(md|ipynb)$", "", e["file"]))
            walk(e.get("sections"))
            walk(e.get("chapters"))
    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    return docs
