"""Every chapter has two to four predict-then-reveal quick checks, with computed answers.

A quick check is an admonition with ``:class: quick-check`` in the chapter's Exercises
section: a question the reader answers first (choices, or a number to write down), then a
closed ``{dropdown}`` that reveals the answer. The reveal's numbers are glued from gpulab
(``{glue:text}``), glued in the chapter's own cells; no number is typed into the question
or the reveal (names such as H200, NVLink4, Gen5 x16 or TP8 are not numbers). In the built
book (when there is one) each quick check is there, with its reveal closed and filled in.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ["why_interconnect", "nvlink", "pcie", "in_network_reduction", "nvswitch",
            "scale_out", "reading_nccl_tests", "parallel_strategies", "tensor_parallel", "nvlink_roi",
            "serving_decode", "serving_pcie", "serving_ep_disagg"]
HTML = ROOT / "_build" / "html" / "book"

QUICK_CHECK = re.compile(
    r"^(?P<fence>:{4,})\{admonition\}\s*Quick check:(?P<title>[^\n]*)\n:class: quick-check\n"
    r"(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M)
DROPDOWN = re.compile(r"^(?P<fence>:{3})\{dropdown\}(?P<title>[^\n]*)\n(?P<opts>(?::[^\n]*\n)*)"
                      r"(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M)
GLUE = re.compile(r"\{glue(?::[a-z]*)?\}`([^`:]+)(?::[^`]*)?`")
# what may hold digits in prose: glue roles, math, code, cross-references, and names
NOT_TYPED = [
    GLUE,
    re.compile(r"\$[^$]+\$"),
    re.compile(r"`[^`]*`"),
    re.compile(r"\{(?:ref|eq|numref|doc)\}`[^`]*`"),
    re.compile(r"\b\d+×\s*[A-Z]\w*"),                 # "8× H200": a system's name
    re.compile(r"\b[A-Za-z]+[A-Za-z-]*\d+[A-Za-z\d]*\b"),  # H200, NVLink4, Gen5, x16, TP8, FP16
    re.compile(r"\b\d+B\b"),                           # model names: 13B, 70B
    re.compile(r"\bLlama \d+(?:\.\d+)?\b"),              # model family names: Llama 3
    re.compile(r"\([a-d]\)"),                          # choice letters
]


def exercises_section(text: str) -> str:
    start = text.index("\n## Exercises\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def quick_checks(chapter: str) -> list[re.Match]:
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    return list(QUICK_CHECK.finditer(exercises_section(text)))


def test_quick_check_pattern_finds_a_known_block():
    sample = ("## Exercises\n\n::::{admonition} Quick check: t\n:class: quick-check\nQ?\n\n"
              ":::{dropdown} Reveal the answer\n{glue:text}`k:.1f`\n:::\n::::\n")
    found = list(QUICK_CHECK.finditer(exercises_section("x\n" + sample)))
    assert len(found) == 1
    assert len(list(DROPDOWN.finditer(found[0].group("body")))) == 1


@pytest.mark.parametrize("text,typed", [
    ("It carries about 450 GB/s per direction.", ["450"]),
    ("(b) 8 GPUs deliver 4.", ["8", "4."]),
    ("One H200 has NVLink4 over Gen5 x16 with TP8 on 8× H200 for 70B, see {glue:text}`k:.1f`.",
     []),
])
def test_typed_number_filter(text, typed):
    prose = text
    for pattern in NOT_TYPED:
        prose = pattern.sub(" ", prose)
    assert re.findall(r"[^\s]*\d[^\s]*", prose) == typed


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_two_to_four_quick_checks_per_chapter(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    found = quick_checks(chapter)
    assert 2 <= len(found) <= 4, f"{chapter}: {len(found)} quick checks (want 2-4)"
    # every quick-check admonition was recognised (none outside the Exercises section)
    assert text.count(":class: quick-check") == len(found)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_quick_check_reveals_a_computed_answer(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    glued = set(re.findall(r"glue\(\s*[\"']([\w]+)[\"']", text))
    glued_prefixes = [re.sub(r"\{.*", "", p) for p in
                      re.findall(r"glue\(\s*f[\"']([^\"']+)[\"']", text)]
    for qc in quick_checks(chapter):
        title = qc.group("title").strip()
        body = qc.group("body")
        dropdowns = list(DROPDOWN.finditer(body))
        assert len(dropdowns) == 1, f"{chapter}: '{title}' needs one reveal dropdown"
        reveal = dropdowns[0]
        assert ":open:" not in reveal.group("opts"), f"{chapter}: '{title}' reveal is open"
        question = body[:reveal.start()]
        assert question.strip(), f"{chapter}: '{title}' has no question before its reveal"
        keys = GLUE.findall(reveal.group("body"))
        assert keys, f"{chapter}: '{title}' reveals no glued (computed) value"
        for key in GLUE.findall(body):
            assert key in glued or any(key.startswith(p) for p in glued_prefixes), (
                f"{chapter}: '{title}' uses {key!r}, which no cell of the chapter glues")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_typed_numbers_in_quick_checks(chapter):
    for qc in quick_checks(chapter):
        prose = DROPDOWN.sub(lambda m: m.group("body"), qc.group("body"))
        for pattern in NOT_TYPED:
            prose = pattern.sub(" ", prose)
        digits = re.findall(r"[^\s]*\d[^\s]*", prose)
        assert not digits, (f"{chapter}: quick check '{qc.group('title').strip()}' types "
                            f"numbers {digits}: glue them from gpulab")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_quick_checks_in_the_built_book(chapter, skip_or_fail):
    page = HTML / f"{chapter}.html"
    if not page.is_file():
        skip_or_fail(f"book not built: {page} is missing")
    html = page.read_text(encoding="utf-8")
    n = len(quick_checks(chapter))
    blocks = re.findall(r'<div class="quick-check admonition">(.*?)</details>', html, re.S)
    assert len(blocks) == n, f"{chapter}: {len(blocks)} quick checks in the HTML, {n} in source"
    for block in blocks:
        assert "<details" in block and "<details open" not in block
        assert "{glue" not in block and "pasted-text" in block
