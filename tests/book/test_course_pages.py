"""The course data (gpulab.course) against the pages it points into.

* every chapter section and lab part a teaching track names exists;
* every claim's anchor exists in its chapter, and the chapter titles match;
* every "What the source article gets wrong" box of a chapter has a label, the claims
  anchored to it are named in it, and none of them is marked right in the appendix;
* with the book built (``_build/html``; a skip, or a failure under ``make test``): the anchors are in the HTML, the glossary's terms
  and anchors are text in notation.html and in the search index;
* with ``GPULAB_SOURCE_FACTS`` pointing at the fact list of the article (a Markdown file of
  numbered table rows), every numbered claim of it is in ``article_claims.yaml``; with
  ``GPULAB_SOURCE_ARTICLE`` pointing at the article's text, every Chinese quote is verbatim.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gpulab import course

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
BOX_TITLE = "{admonition} What the source article gets wrong"


def labels(text):
    return set(re.findall(r"^\(([A-Za-z0-9_-]+)\)=\s*$", text, flags=re.M))


def chapter(doc):
    return (BOOK / f"{doc}.md").read_text(encoding="utf-8")


def boxes(text):
    """``{label: box text}`` of every "gets wrong" box; a box without a label is keyed None.

    A box runs from its opening fence to the next line that is exactly that fence.
    """
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if BOX_TITLE in line:
            fence = line.split("{")[0]
            end = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == fence)
            m = re.match(r"^\(([A-Za-z0-9_-]+)\)=\s*$", lines[i - 1]) if i else None
            out.setdefault(m.group(1) if m else None, "\n".join(lines[i:end]))
    return out


def lab_parts(name):
    nb = json.loads((ROOT / "labs" / f"{name}.ipynb").read_text(encoding="utf-8"))
    heads = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            heads += [ln[3:].strip() for ln in "".join(cell["source"]).splitlines()
                      if ln.startswith("## ")]
    return heads


# --- tracks -----------------------------------------------------------------------
@pytest.mark.parametrize("name", course.track_names())
def test_track_sections_and_lab_parts_exist(name):
    for item in course.track(name).items:
        if item.kind == "chapter":
            have = labels(chapter(item.doc))
            missing = [s for s in item.run + item.skip if s not in have]
            assert not missing, f"{name}: {item.doc}.md has no label {missing}"
        elif item.kind == "lab":
            parts = lab_parts(item.doc)
            for p in item.run + item.skip:
                assert any(h == p or h.startswith(p + " ") for h in parts), \
                    f"{name}: labs/{item.doc}.ipynb has no heading '## {p}'"


def test_lab_part_check_can_fail():
    assert not any(h.startswith("Part Z ") for h in lab_parts("lab01_link_math"))


def test_the_three_tracks_are_checked():
    assert {"half-day", "one-day", "serving"} <= set(course.track_names())


def test_lab_needs_name_sections_that_exist():
    """Every ``chapter#label`` a lab part needs is a label of that chapter."""
    import yaml

    from gpulab import specs
    needs = yaml.safe_load(specs.read_data_text("course_tracks.yaml"))["lab_needs"]
    assert "lab06_serve_70b" in needs
    for lab, parts in needs.items():
        for part, anchors in parts.items():
            assert any(h == part or h.startswith(part + " ") for h in lab_parts(lab)), \
                f"labs/{lab}.ipynb has no heading '## {part}'"
            for anchor in anchors:
                doc, _, label = anchor.partition("#")
                assert label in labels(chapter(doc)), f"{lab} {part}: no ({label})= in {doc}.md"


def test_instructor_pages_are_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for page in ("index", "tracks", "misconceptions", "assessment", "classroom"):
        assert f"book/instructor/{page}" in toc
        assert (BOOK / "instructor" / f"{page}.md").is_file()
    assert "file: book/article_claims" in toc


# --- claims against the chapters ----------------------------------------------------
def test_every_claim_anchor_exists_in_its_chapter():
    for c in course.claims():
        assert c.label in labels(chapter(c.chapter)), f"claim {c.id}: no ({c.label})= in {c.chapter}.md"


def test_chapter_titles_match_the_h1():
    for doc, title in course.chapter_titles().items():
        h1 = re.search(r"^# (.+)$", chapter(doc), flags=re.M).group(1).strip()
        assert h1 == title, doc


def test_every_gets_wrong_box_is_labelled_and_linked():
    anchored = {c.label for c in course.claims()}
    for path in sorted(BOOK.glob("*.md")):
        for label in boxes(path.read_text(encoding="utf-8")):
            assert label is not None, f"{path.name}: a 'gets wrong' box without a (label)="
            assert label in anchored, f"{path.name}: no claim of the appendix links to {label}"


def test_boxed_claims_are_named_in_their_box_and_not_marked_right():
    """The appendix and the chapters cannot disagree: a claim the appendix sends to a
    'gets wrong' box is named in that box (its box_key) and is wrong, misleading or
    unverifiable."""
    n = 0
    for c in course.claims():
        box = boxes(chapter(c.chapter)).get(c.label)
        if box is None:
            assert not c.box_key, f"claim {c.id}: box_key but {c.label} is not a box"
            continue
        n += 1
        assert c.box_key and c.box_key in box, f"claim {c.id}: {c.box_key!r} not in {c.label}"
        assert c.verdict in ("wrong", "misleading", "unverifiable"), \
            f"claim {c.id} is in a 'gets wrong' box"
    assert n >= 40


def test_box_parser_finds_a_missing_label_and_key():
    text = "intro\n```" + BOX_TITLE + "\n:class: warning\n- **claim A**\n```\nafter\n"
    assert boxes(text) == {None: "```" + BOX_TITLE + "\n:class: warning\n- **claim A**"}
    labelled = boxes("(x-box)=\n" + text.split("\n", 1)[1])
    assert "claim A" in labelled["x-box"] and "claim B" not in labelled["x-box"]


def test_fact_list_claims_are_all_in_the_data():
    path = os.environ.get("GPULAB_SOURCE_FACTS")
    if not path:
        pytest.skip("set GPULAB_SOURCE_FACTS to the article's fact list to compare")
    ids = {int(m) for m in re.findall(r"^\| (\d+) \|", Path(path).read_text(encoding="utf-8"),
                                      flags=re.M)}
    assert ids and ids == {c.id for c in course.claims()}


def test_quotes_are_the_article_s_own_words():
    """Each claim's Chinese quote and each glossary term's article wording is a verbatim
    substring of the article (its text is not part of the repository)."""
    path = os.environ.get("GPULAB_SOURCE_ARTICLE")
    if not path:
        pytest.skip("set GPULAB_SOURCE_ARTICLE to the article's text to compare")
    article = Path(path).read_text(encoding="utf-8")
    missing = [c.id for c in course.claims() if c.zh not in article]
    missing += [t.key for t in course.glossary()
                for part in t.article_zh.split(" | ") if part and part not in article]
    assert not missing


# --- the built book (the html_dir fixture: a skip, or a failure under make test) ----
def test_built_anchors_exist(html_dir):
    for c in course.claims():
        page = (html_dir / "book" / f"{c.chapter}.html").read_text(encoding="utf-8")
        assert f'id="{c.label}"' in page, (c.id, c.label)
    for name in course.track_names():
        for item in course.track(name).items:
            if item.kind == "chapter":
                page = (html_dir / "book" / f"{item.doc}.html").read_text(encoding="utf-8")
                for s in item.run + item.skip:
                    assert f'id="{s}"' in page, (item.doc, s)


def test_built_glossary_is_text_with_anchors_and_searchable(html_dir):
    page = (html_dir / "book" / "notation.html").read_text(encoding="utf-8")
    index = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    for t in course.glossary():
        assert f'id="{t.anchor}"' in page, t.key
        assert t.zh.split("（")[0] in page, t.key
    # the index holds words as JSON keys (non-ASCII escaped): each term must be a word
    for word in ("双向", "单向", "子链路", "算法带宽", "流水线气泡", "busbw"):
        assert json.dumps(word) in index, word
    claims_page = (html_dir / "book" / "article_claims.html").read_text(encoding="utf-8")
    assert all(f'id="claim-{c.id}"' in claims_page for c in course.claims())


# --- instructor pages -------------------------------------------------------------
def test_assessment_has_8_to_12_questions_each_with_a_hidden_answer():
    text = (BOOK / "instructor" / "assessment.md").read_text(encoding="utf-8")
    questions = [int(n) for n in re.findall(r"^```\{admonition\} Question (\d+):", text, re.M)]
    answers = re.findall(r"^```\{admonition\} Answer (\d+)\n:class: dropdown$", text, re.M)
    assert 8 <= len(questions) <= 12 and questions == list(range(1, len(questions) + 1))
    assert [int(n) for n in answers] == questions


def test_assessment_glues_its_answers_and_has_poll_sheet_and_scoring():
    """Every question's numbers are glued from gpulab.assessment (none typed with a unit in
    the prose), and the page has the poll, the printable sheet and the scoring guide."""
    from gpulab import assessment
    text = (BOOK / "instructor" / "assessment.md").read_text(encoding="utf-8")
    glued = re.findall(r"\{glue:text\}`as_(q\d+_\w+?)(?::[^`]*)?`", text)
    assert glued and set(glued) <= set(assessment.answers()), set(glued) - set(assessment.answers())
    for n in (1, 2, 3, 4, 7, 10):
        block = text.split(f"Answer {n}\n", 1)[1].split("```", 1)[0]
        assert f"as_q{n}_" in block, f"answer {n} glues no computed value"
    prose = re.sub(r"```\{code-cell\}.*?```", "", text, flags=re.S)
    typed = re.findall(r"(?<![\w.`{-])\d[\d,]*(?:\.\d+)?\s?(?:GB/s|Gb/s|GB|TB)(?![\w/])", prose)
    assert not typed, typed
    for label in ("assess-poll", "assess-sheet", "assess-scoring"):
        assert f"({label})=" in text
    assert all(f"{{glue:text}}`as_poll_{n}`" in text for n in range(1, 11))
    assert "assessment.poll()" in text and "assessment.score" in text


def test_assessment_names_the_questions_each_track_asks():
    """The page's "the half-day track uses questions ..." is what the track's agenda asks."""
    text = re.sub(r"\s+", " ", (BOOK / "instructor" / "assessment.md").read_text(encoding="utf-8"))
    asked = {m for it in course.track("half-day").items
             for m in re.findall(r"\(questions ([^)]+)\)", it.title)}
    assert len(asked) == 1, asked
    assert f"half-day track uses questions {asked.pop()}," in text


def test_each_misconception_points_at_a_figure_or_section():
    text = (BOOK / "instructor" / "misconceptions.md").read_text(encoding="utf-8")
    entries = re.split(r"\n\n(?=\*\*\")", text)[1:]
    assert len(entries) >= 10
    for e in entries:
        assert "*Show:*" in e and re.search(r"\{(numref|ref)\}`", e), e[:60]
    for topic in ("per-direction", "busbw", "GiB", "across nodes", "bus", "always faster"):
        assert topic.lower() in text.lower(), topic


def misconception_cards():
    text = (BOOK / "instructor" / "misconceptions.md").read_text(encoding="utf-8")
    return [e for e in re.split(r"\n\n(?=\*\*\")", text)[1:]]


def book_targets():
    """Every section label and figure name of the book's pages."""
    out = set()
    for path in BOOK.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        out |= labels(text) | set(re.findall(r"^\s*name: ([A-Za-z0-9_-]+)\s*$", text, re.M))
    return out


def test_misconceptions_are_vote_cards_with_live_pointers():
    """Each card: the belief, a vote, the answer, a computed number where one exists, and a
    figure or section of the course that exists."""
    targets = book_targets()
    cards = misconception_cards()
    for card in cards:
        for part in ("*Vote:*", "*Answer:*", "*In numbers:*", "*Show:*"):
            assert part in card, (part, card[:60])
        refs = re.findall(r"\{(?:numref|ref)\}`(?:[^`<]*<)?([A-Za-z0-9_-]+)>?`", card)
        assert refs and set(refs) <= targets, (card[:60], set(refs) - targets)
    assert "fig-does-not-exist" not in targets and "rn-busbw" in targets


@pytest.mark.parametrize("belief", [
    "Two nodes run at one NIC's rate", "Oversubscription does not matter",
    "RoCE behaves like InfiniBand", "GPUDirect RDMA is automatic",
    "every NVLink is up", "always trains at Gen5 x16", "-g 8",
])
def test_misconceptions_hold_the_beliefs_engineers_bring(belief):
    assert any(belief in card.split("*Vote:*")[0] for card in misconception_cards()), belief


def test_line_rate_card_says_only_algbw_is_impossible():
    card = next(c for c in misconception_cards() if "line rate means a wrong table" in c)
    answer = card.split("*Answer:*")[1]
    assert "only **algbw**" in answer and "NVLS" in answer and "across nodes" in answer
    assert "fig-so-nodes" in card and "fig-rn-audit" in card


def test_article_only_mistakes_are_not_cards():
    """The article's own slips, which engineers do not bring, live in the claims appendix."""
    beliefs = " ".join(c.split("*Vote:*")[0] for c in misconception_cards())
    for phrase in ("enable ACS", "after QKV and FC1", "Sequence parallelism cuts"):
        assert phrase not in beliefs, phrase


@pytest.mark.browser
def test_assessment_answers_hidden_until_opened(page, site_url):
    page.goto(f"{site_url}/book/instructor/assessment.html", wait_until="load")
    answer = page.locator("div.dropdown.admonition").first
    body = answer.locator("p").nth(1)
    page.wait_for_timeout(500)                      # sphinx-togglebutton runs on load
    assert not body.is_visible()
    answer.locator(".admonition-title").click()
    body.wait_for(state="visible", timeout=5_000)
    assert "per direction" in body.inner_text()


@pytest.mark.browser
def test_glossary_term_anchor_scrolls_to_its_row(page, site_url):
    page.goto(f"{site_url}/book/notation.html#term-bidirectional", wait_until="load")
    row = page.locator("#term-bidirectional").locator("xpath=ancestor::tr")
    assert "双向" in row.inner_text()
    assert row.is_visible()
