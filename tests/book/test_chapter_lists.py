"""The landing page and the labs page list every chapter of the table of contents.

A chapter added to ``_toc.yml`` (as "Beyond One Server", book/scale_out.md, was) must also
appear in intro.md's reading list and in the "Follows" column of book/labs.md, so a reader
who starts from either page finds it.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_PARTS = ("Foundations", "Measure and decide")


def toc_chapters():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [c["file"].removeprefix("book/") for p in toc["parts"]
            if p["caption"] in CHAPTER_PARTS for c in p["chapters"]]


def docs(text, prefix=""):
    return set(re.findall(r"\{doc\}`" + re.escape(prefix) + r"([a-z_]+)`", text))


def test_toc_has_the_chapters():
    chapters = toc_chapters()
    assert "scale_out" in chapters and "nvlink" in chapters and len(chapters) >= 10


def test_intro_lists_every_chapter():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    missing = [c for c in toc_chapters() if c not in docs(intro, "book/")]
    assert not missing, missing


def test_intro_lists_the_chapters_in_toc_order():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    listed = re.findall(r"^- \{doc\}`book/([a-z_]+)`", intro, flags=re.M)
    assert [c for c in listed if c in toc_chapters()] == toc_chapters()


def test_labs_page_names_a_lab_for_every_chapter():
    labs = (ROOT / "book" / "labs.md").read_text(encoding="utf-8")
    follows = set()
    for row in re.findall(r"^\| \{download\}.*$", labs, flags=re.M):
        follows |= docs(row.split("|")[2])
    missing = [c for c in toc_chapters() if c not in follows]
    assert not missing, missing


def test_the_doc_scan_sees_a_missing_chapter():
    text = "- {doc}`book/nvlink`: one\n- {doc}`book/pcie`: two\n"
    assert docs(text, "book/") == {"nvlink", "pcie"}
    assert "scale_out" not in docs(text, "book/")
