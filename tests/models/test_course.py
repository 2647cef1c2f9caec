"""gpulab.course: teaching tracks, the source article's claims and the glossary.

The page-level checks (labels, boxes, lab parts that the data names) are in
tests/book/test_course_pages.py; here: the loaders, the budgets and slack, the lab blocks
against the labs' measured size, the breaks, the prompts' talking points, the rendered
agenda, the computed evidence against analytic oracles, and the errors bad input and bad
data give.
"""
from __future__ import annotations

import html
import math
import re

import pytest
import yaml

from gpulab import course, specs

CJK = re.compile(r"[\u4e00-\u9fff]")


# --- tracks -----------------------------------------------------------------------
TRACKS = ["half-day", "one-day", "serving"]
#: The tracks built around accepting a server (Lab 4); the serving track is built around
#: Lab 6.
TRAINING_TRACKS = ["half-day", "one-day"]
#: The part of the book the serving track teaches and the one-day track leaves out.
SERVING_PART = "Serving across GPUs"
#: Labels are lowercase words joined by '-' (``nvlink-3-vs-4``, ``wi-article-box``).
RAW_LABEL = re.compile(r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b")


def _visible(html_text):
    """The visible text of HTML: tags (and the labels in their href) removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


@pytest.mark.parametrize("name,hours", [("half-day", 3.5), ("one-day", 6.5),
                                        ("serving", 3.5)])
def test_track_leaves_ten_percent_slack(name, hours):
    """3.5 h and 6.5 h sessions, breaks included, of which at least 10% is unplanned."""
    t = course.track(name)
    assert t.budget == hours * 3600 and t.slack >= 0.10
    assert course.track_total(name) <= t.budget * (1 - 0.10)
    assert course.track_total(name) >= 0.8 * t.budget        # ... and not half empty


@pytest.mark.parametrize("name", TRACKS)
def test_track_total_is_the_sum_of_its_kinds_and_agenda_is_cumulative(name):
    total = course.track_total(name)
    assert math.isclose(sum(course.track_total(name, k) for k in course.ITEM_KINDS), total)
    rows = course.agenda_rows(name)
    clock = 0
    for start, minutes, item in rows:
        h, m = map(int, start.split(":"))
        assert h * 60 + m == clock
        clock += minutes
    assert clock * 60 == total


@pytest.mark.parametrize("name", TRACKS)
def test_track_has_breaks_labs_prompts_and_assessments(name):
    items = course.track(name).items
    kinds = [it.kind for it in items]
    assert kinds[0] == "assessment" and kinds[-1] == "assessment"
    assert "break" in kinds and "lab" in kinds and "discussion" in kinds
    for it in items:
        if it.kind in ("chapter", "discussion"):
            assert it.prompt, it.title
        if it.kind == "chapter":
            assert it.run, it.title
            assert not set(it.run) & set(it.skip), it.title


@pytest.mark.parametrize("name", TRACKS)
def test_every_lab_block_is_as_long_as_its_parts_measure(name):
    blocks = course.lab_block_estimates(name)
    assert blocks
    for item, need in blocks:
        assert item.duration >= need, \
            f"{name}: {item.title} has {item.duration / 60:.0f} min, its parts measure " \
            f"{need / 60:.1f} min"


def test_the_old_lab_blocks_were_too_short():
    """The measure catches what the old plan got wrong: 25-30 min for Lab 1 A+B, 30 for
    Lab 2 A+B (18 answers), 25 for Lab 3 A+B (two functions to write)."""
    minutes = {lab: course.lab_estimate(lab, ["Part A", "Part B"]) / 60
               for lab in ("lab01_link_math", "lab02_read_your_server",
                           "lab03_ring_allreduce")}
    assert minutes["lab01_link_math"] > 30
    assert minutes["lab02_read_your_server"] > 45
    assert minutes["lab03_ring_allreduce"] > 35


@pytest.mark.parametrize("name", TRACKS)
def test_no_stretch_without_a_break_is_too_long(name):
    limit = course.max_run_without_break()
    assert limit == 90 * 60
    runs = course.runs_between_breaks(name)
    assert sum(d for _, d in runs) + course.track_total(name, "break") == \
        course.track_total(name)
    for start, length in runs:
        assert length <= limit, f"{name}: {length / 60:.0f} min from {start / 60:.0f} min"


@pytest.mark.parametrize("name", TRACKS)
def test_every_prompt_has_talking_points_and_needs_no_reading(name):
    values = course.evidence_values()
    for it in course.track(name).items:
        if not it.prompt:
            continue
        points = course.talking_points(it)
        assert len(points) >= 2, it.title
        for raw, text in zip(it.talking_points, points):
            assert course.evidence_fields(raw) <= set(values), (it.title, raw)
            assert "{" not in text and "}" not in text, it.title
        assert "the article" not in it.prompt.lower(), \
            f"{it.title}: the prompt must state the claim, not cite the article"


@pytest.mark.parametrize("name", TRACKS)
def test_rendered_agenda_shows_titles_not_labels(name):
    text = _visible(str(course.agenda_table(name)))
    labels = set()
    for it in course.track(name).items:
        if it.kind == "chapter":
            for label in it.run + it.skip:
                labels.add(label)
                assert course.section_title(it.doc, label).replace("`", "") in text
    shown = set(RAW_LABEL.findall(text)) & labels
    assert not shown, f"{name}: raw labels in the agenda: {sorted(shown)}"
    # every prompt is shown with its talking points
    assert text.count("Talking points:") == sum(1 for it in course.track(name).items
                                                if it.prompt)


def test_raw_label_check_can_fail():
    page = '<td><a href="x.html#pcie-p2p">PCIe</a> and wi-article-box</td>'
    assert set(RAW_LABEL.findall(_visible(page))) == {"wi-article-box"}


def book_chapters():
    """``{chapter file name: part caption}`` of every chapter in the table of contents."""
    from instructor_kit import NON_CHAPTER_PARTS, toc
    return {d.removeprefix("book/"): c for d, c in toc()
            if c is not None and c not in NON_CHAPTER_PARTS}


def track_docs(name):
    return {it.doc for it in course.track(name).items if it.kind == "chapter"}


def untaught(chapters, tracks):
    """The chapters no track of ``tracks`` (``{name: chapter file names}``) teaches."""
    return sorted(set(chapters) - set().union(*tracks.values()))


def test_every_chapter_of_the_book_is_in_some_track():
    chapters = book_chapters()
    assert {"scale_out", "nvlink", "serving_decode", "serving_pcie"} <= set(chapters)
    missing = untaught(chapters, {n: track_docs(n) for n in course.track_names()})
    assert not missing, f"no track teaches {missing}"


def test_untaught_chapter_check_can_fail():
    chapters = dict(book_chapters(), serving_new=SERVING_PART)
    tracks = {n: track_docs(n) for n in course.track_names()}
    assert "serving_new" in untaught(chapters, tracks)
    assert "serving_new" not in untaught(book_chapters(), tracks)
    assert "serving_pcie" in untaught(book_chapters(), dict(tracks, serving=set()))


def test_one_day_has_every_training_chapter_and_serving_every_serving_one():
    chapters = book_chapters()
    assert SERVING_PART in chapters.values()                          # no stale name
    training = {d for d, c in chapters.items() if c != SERVING_PART}
    serving = {d for d, c in chapters.items() if c == SERVING_PART}
    assert "scale_out" in training and "serving_decode" in serving
    assert training <= track_docs("one-day"), \
        f"one-day track misses {sorted(training - track_docs('one-day'))}"
    assert serving <= track_docs("serving"), \
        f"serving track misses {sorted(serving - track_docs('serving'))}"
    # the full day is full: it points to the serving track instead of teaching it
    wrap_up = course.track("one-day").items[-1]
    assert wrap_up.kind == "assessment" and "serving track" in wrap_up.title


def test_one_day_covers_more_chapters_than_half_day():
    assert track_docs("half-day") < track_docs("one-day")


@pytest.mark.parametrize("name", TRAINING_TRACKS)
def test_both_tracks_are_built_around_acceptance(name):
    """Lab 4's acceptance parts, broken server included, in both tracks; the cluster part
    after the scale-out chapter in the one-day; a lab after lunch."""
    items = course.track(name).items
    lab4 = [it for it in items if it.doc == "lab04_accept_a_server"]
    runs = {p for it in lab4 for p in it.run}
    assert {f"Part {c}" for c in "ABCDEF"} <= runs
    if name == "one-day":
        cluster = [s for s in course.lab_sections(
            course.repository_root() / "labs" / "lab04_accept_a_server.ipynb")
            if "cluster" in s.title]
        assert len(cluster) == 1
        assert any(cluster[0].matches(p) for p in runs)
        lunch = next(i for i, it in enumerate(items) if it.title == "Lunch")
        assert any(it.kind == "lab" for it in items[lunch:])


def test_serving_track_is_built_around_lab6():
    """Every part of Lab 6 in the room, each after the serving sections it needs; no
    training lab; the welcome and the wrap-up ask the serving questions."""
    items = course.track("serving").items
    labs = [it for it in items if it.kind == "lab"]
    assert {it.doc for it in labs} == {"lab06_serve_70b"}
    runs = [p for it in labs for p in it.run]
    assert sorted(runs) == [f"Part {c}" for c in "ABCDE"]
    assert set(course.lab_needs("lab06_serve_70b")) == set(runs)
    first, last = items[0].title, items[-1].title
    assert "11" in first and "12" in first and "11" in last and "12" in last


@pytest.mark.parametrize("name", TRACKS)
def test_lab_parts_come_after_the_sections_they_need(name):
    presented = set()
    for it in course.track(name).items:
        if it.kind == "chapter":
            presented |= {f"{it.doc}#{label}" for label in it.run}
        elif it.kind == "lab":
            needs = course.lab_needs(it.doc)
            for part in it.run:
                missing = set(needs.get(part, ())) - presented
                assert not missing, f"{name}: {it.doc} {part} needs {sorted(missing)} first"


def test_half_day_lab1_needs_the_pam4_section():
    assert "nvlink#nvlink-signalling" in course.lab_needs("lab01_link_math")["Part B"]


def test_track_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="name"):
        course.track("two-day")
    with pytest.raises(ValueError, match="kind"):
        course.track_total("half-day", kind="lunch")
    with pytest.raises(ValueError, match="item"):
        course.talking_points("a prompt")
    with pytest.raises(ValueError, match="lab"):
        course.lab_needs("lab1")


# --- measuring a lab --------------------------------------------------------------
def _nb(*cells):
    out = []
    for kind, src, *tags in cells:
        out.append({"cell_type": kind, "source": src,
                    "metadata": {"tags": list(tags)} if tags else {}})
    return {"cells": out, "nbformat": 4}


SMALL_LAB = _nb(
    ("markdown", "# Lab 0\n\none two three four"),
    ("markdown", "## Part A — Sums\n\nfive six\n\n```bash\nnot counted here\n```"),
    ("code", "x = 1\nprint(x)"),
    ("code", "answer_1 = None  # YOUR CODE: a number"),
    ("code", "answer_1 = 2", "solution"),
    ("code", "# ✓ check (run me)\nif not check_slips(\"1\", answer_1, []):\n"
             "    check(\"1\", answer_1, 2)\ncheck('1 (unit)', answer_1, 2)"),
    ("markdown", "## Part B — A function\n\nseven"),
    ("code", "def f(x):\n    y = ...  # the sum\n    # TODO: return it\n    return y"),
)


def test_lab_sections_count_answers_prose_functions_and_cells():
    opening, a, b = course.lab_sections(SMALL_LAB)
    assert (opening.title, opening.words) == ("", 6)
    assert a.title == "Part A — Sums" and a.matches("Part A") and not a.matches("Part")
    assert a.words == 5                   # heading and prose, not the bash block
    assert a.answers == ("1", "1 (unit)")  # check_slips + check of "1" count once
    assert (a.functions, a.lines_to_write, a.cells_to_run) == (0, 1, 1)
    assert (b.functions, b.lines_to_write, b.answers) == (1, 2, ())


def test_section_minutes_follow_the_rates():
    r = course.lab_rates()
    assert r["words_per_minute"] == 150 and r["minutes_per_answer"] == 2.5
    assert r["minutes_per_function"] == 10
    _, a, b = course.lab_sections(SMALL_LAB)
    assert course.section_minutes(a) == pytest.approx(
        60 * (5 / 150 + 2 * 2.5 + 1 * r["minutes_per_cell"]))
    assert b.words == 5       # "Part B — A function seven": the dash is no word
    assert course.section_minutes(b) == pytest.approx(60 * (5 / 150 + 10))


def test_lab_estimate_counts_the_opening_once():
    whole = course.lab_estimate("lab01_link_math", ["Part A", "Part B"])
    bare = course.lab_estimate("lab01_link_math", ["Part A", "Part B"], opening=False)
    parts = {s.title: s for s in course.lab_sections(
        course.repository_root() / "labs" / "lab01_link_math.ipynb")}
    first = next(t for t in parts if t.startswith("Part A"))
    opening = [s for t, s in parts.items() if list(parts).index(t) < list(parts).index(first)]
    assert whole - bare == pytest.approx(sum(course.section_minutes(s) for s in opening))
    assert any(s.answers for s in opening)      # the quick checks come before Part A


def test_lab_measure_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="notebook"):
        course.lab_sections({"cells": None})
    with pytest.raises(ValueError, match="parts"):
        course.lab_estimate("lab01_link_math", ["Part Z"])
    with pytest.raises(ValueError, match="parts"):
        course.lab_estimate("lab01_link_math", "Part A")
    with pytest.raises(ValueError, match="lab"):
        course.lab_estimate("lab99_missing", ["Part A"])
    with pytest.raises(ValueError, match="section"):
        course.section_minutes(None)
    with pytest.raises(ValueError, match="root"):
        course.lab_estimate("lab01_link_math", ["Part A"], root="/nonexistent")


# --- section titles ---------------------------------------------------------------
def test_section_titles_from_headings_and_boxes():
    text = ("(s-a)=\n## Lanes and `links`\n\ntext\n(s-box)=\n"
            "````{admonition} What goes wrong\n:class: warning\n````\n"
            "(s-sub)=\n### Deeper\n(s-none)=\nplain paragraph\n")
    titles = course.section_titles(text)
    assert titles == {"s-a": "Lanes and `links`",
                      "s-box": "What goes wrong (in “Lanes and `links`”)",
                      "s-sub": "Deeper"}
    assert course.section_title("nvlink", "nvlink-signalling") == "Symbols, bits and PAM4"
    assert course.section_title("why_interconnect", "wi-article-box").startswith(
        "What the source article gets wrong (in “")


def test_section_title_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="label"):
        course.section_title("nvlink", "nvlink-nowhere")
    with pytest.raises(ValueError, match="doc"):
        course.section_title("no_such_chapter", "x")
    with pytest.raises(ValueError, match="text"):
        course.section_titles(None)


# --- claims -----------------------------------------------------------------------
def test_claims_number_every_claim_of_the_fact_list_once():
    n = course.article_info()["numbered_claims"]
    assert [c.id for c in course.claims()] == list(range(1, n + 1))


def test_claim_verdicts_and_counts():
    counts = course.verdict_counts()
    assert set(counts) == set(course.VERDICTS)
    assert sum(counts.values()) == len(course.claims())
    assert counts["wrong"] > 0 and counts["right"] > 0 and counts["unverifiable"] > 0
    assert course.claim(86).verdict == "wrong"          # "34% improvement"
    assert course.claim(7).verdict == "right"           # H100 NVLink 900 GB/s


def test_every_claim_has_text_a_quote_and_a_known_section_and_chapter():
    sections = {k for k, _ in course.claim_sections()}
    chapters = course.chapter_titles()
    for c in course.claims():
        assert c.en.strip() and c.zh.strip() and c.evidence.strip(), c.id
        assert c.section in sections and c.chapter in chapters, c.id
        assert len(c.zh) <= 60, f"claim {c.id}: quote only a few words of the article"


def test_evidence_fills_from_computed_values_only():
    values = course.evidence_values()
    used = set()
    for c in course.claims():
        fields = course.evidence_fields(c.evidence)
        assert fields <= set(values), (c.id, fields - set(values))
        used |= fields
        text = course.evidence_text(c)
        assert "{" not in text and "}" not in text, c.id
    assert len(used) >= 30        # most claims quote a computed number


def test_evidence_values_against_analytic_oracles():
    v = course.evidence_values()
    assert v["busbw_factor_8"] == pytest.approx(2 * 7 / 8)
    assert v["nvl4_dir"] == pytest.approx(v["nvl4_links"] * v["nvl4_link_dir"])
    assert v["nvl4_bidir"] == pytest.approx(2 * v["nvl4_dir"])
    assert v["nv_ratio"] == pytest.approx(v["nvl4_bidir"] / v["nvl2_bidir"])
    # PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 bits, per direction
    assert v["pcie5_dir"] == pytest.approx(32e9 * 16 * 128 / 130 / 8 / 1e9)
    assert v["pcie5_raw_bidir"] == pytest.approx(2 * 32 * 16 / 8)
    assert v["nic_dir"] == pytest.approx(v["nic_gbit"] / 8)
    assert v["nvl_over_nic"] == pytest.approx(v["nvl4_dir"] / v["nic_dir"])
    # speedup and slowdown of one pair: (1 + up)(1 - down) = 1
    up, down = v["speedup_pct"] / 100, v["slowdown_pct"] / 100
    assert (1 + up) * (1 - down) == pytest.approx(1.0)
    assert up == pytest.approx(3.2 / 2.1 - 1)
    assert v["gpus_equiv"] == pytest.approx(8 * 2.1 / 3.2)
    # Megatron TP: 2 forward + 2 backward per layer
    assert v["tp_ar_fwd_layer"] == 2 and v["tp_ar_fb_80"] == 2 * v["tp_ar_fwd_80"]
    assert v["tp_ar_fwd_80"] == 2 * v["layers_70b"]
    # the article's small rows: time = size / algbw
    assert v["art_t8_us"] == pytest.approx(8 / 0.02e9 * 1e6)
    assert v["art_t1k_us"] == pytest.approx(1024 / 2.1e9 * 1e6)
    # any-algorithm bound for 256 MiB at 450 GB/s, and the ring over PCIe at 63 GB/s
    assert v["ar256_any_ms"] == pytest.approx(256 * 2**20 / 450e9 * 1e3)
    assert v["ar256_pcie_ring_ms"] == pytest.approx(1.75 * 256 * 2**20 / (v["pcie5_dir"] * 1e9) * 1e3)
    assert v["gib_over_gb_pct"] == pytest.approx(100 * (2**30 / 1e9 - 1))
    assert v["zero_bytes_per_param"] == 16 and v["megatron_bytes_per_param"] == 18
    assert v["states_70b_shape_tb"] == pytest.approx(v["params_70b"] * 18 / 1e3)
    assert v["states_70b_tp8_gb"] == pytest.approx(v["states_70b_shape_tb"] * 1e3 / 8)
    assert v["states_70b_megatron_tb"] == pytest.approx(70e9 * 18 / 1e12)
    # PCIe overhead falls with the payload size, and a real copy cannot beat the protocol
    assert v["pcie_ovh_128_pct"] > v["pcie_ovh_256_pct"] > 100 * (1 - 128 / 130)
    assert v["pcie_h2d_ovh_pct"] >= v["pcie_ovh_256_pct"]


def test_impossible_article_numbers_stay_impossible():
    """The verdicts 'wrong' on claims 66 and 83 rest on these inequalities."""
    v = course.evidence_values()
    assert v["art_alg_max_pct_line"] > 100 and v["art_bus_max_pct_line"] > 100
    assert v["ar256_pcie_ring_ms"] > 2.1 and v["ar256_any_ms"] > 0.52
    assert v["art_t1k_us"] < v["latency_floor_us"]


def test_serving_values_against_analytic_oracles_and_the_statements_they_back():
    """The serving track's talking points state directions (TP8 gives fewer tokens per
    GPU, the PCIe share is larger, four NVL cards do not beat eight PCIe ones): these
    inequalities keep the statements true if a model changes."""
    v = course.evidence_values()
    assert v["srv_msg_kib"] == 32 * 8192 * 2 / 2 ** 10 and v["srv_n_ar"] == 2 * 80
    assert v["srv_kv_kib_per_token"] == 2 * 80 * 8 * 128 * 2 / 2 ** 10
    assert v["srv_kv_prompt_gb"] == pytest.approx(v["srv_kv_kib_per_token"] * 2 ** 10
                                                  * v["srv_prompt"] / 1e9)
    assert v["srv_ar_nccl_over_two"] == pytest.approx(v["srv_ar_nccl_us"] / v["srv_ar_two_us"])
    assert v["srv_ar_nccl_over_two"] > 1
    assert v["srv_nv_tpot8_ms"] < v["srv_nv_tpot4_ms"] and v["srv_nv_tok8"] < v["srv_nv_tok4"]
    assert v["srv_nv_share2_pct"] < v["srv_nv_share8_pct"] < v["srv_pc_share8_pct"]
    assert v["srv_tp_excess"] > 1 and v["srv_pcie8_over_nvl4"] > 1
    assert v["srv_kv_rdma8_pct"] < v["srv_kv_nic1_pct"]
    assert v["srv_tpd_dgx_over_pcie"] > 1 > v["srv_breakeven_pcie_price"] / v["srv_price_pcie"]
    assert v["srv_breakeven_pcie_price"] == pytest.approx(
        v["srv_price_pcie"] / v["srv_tpd_dgx_over_pcie"])


def test_claim_bad_input_names_the_parameter():
    for bad in (0, 125, True, "7", None):
        with pytest.raises(ValueError, match="claim_id"):
            course.claim(bad)
    with pytest.raises(ValueError, match="verdict"):
        course.claims("maybe")
    with pytest.raises(ValueError, match="claim_id"):
        course.evidence_text(0)
    with pytest.raises(ValueError, match="text"):
        course.evidence_fields(None)
    with pytest.raises(ValueError, match="name"):
        course.agenda_rows("weekend")


def test_article_is_identified():
    info = course.article_info()
    assert CJK.search(info["title_zh"]) and info["title_en"]
    assert "Chinese" in info["language"] and "undated" in info["date"]


# --- glossary ---------------------------------------------------------------------
def test_glossary_terms_have_chinese_and_a_one_line_definition():
    terms = course.glossary()
    assert len({t.key for t in terms}) == len(terms) >= 40
    for t in terms:
        assert CJK.search(t.zh), t.key
        assert "\n" not in t.definition and len(t.definition) < 200, t.key
        assert t.anchor == f"term-{t.key}"
    for key, _ in course.glossary_sections():
        assert course.glossary(key), key


def test_glossary_symbols_carry_code_names_and_units():
    for t in course.glossary("symbols"):
        assert t.symbol and t.code and t.unit, t.key
        assert "$" not in t.symbol          # plain text: searchable, no math rendering


def test_glossary_core_terms_follow_the_article():
    by_key = {t.key: t for t in course.glossary()}
    assert by_key["per-direction"].zh == "单向" and by_key["bidirectional"].zh == "双向"
    assert by_key["sub-link"].zh == "子链路"
    assert by_key["algbw-busbw"].zh.startswith("算法带宽")


def test_glossary_bad_section_names_the_parameter():
    with pytest.raises(ValueError, match="section"):
        course.glossary("appendix")


# --- bad data files ----------------------------------------------------------------
@pytest.fixture
def patched_data(monkeypatch):
    """Serve modified copies of the course's data files; restore the caches after."""
    real = specs.read_data_text
    edits = {}

    def fake(name):
        text = real(name)
        return edits[name](text) if name in edits else text

    monkeypatch.setattr(specs, "read_data_text", fake)
    course.clear_cache()
    yield edits
    monkeypatch.undo()
    course.clear_cache()


def _edit_yaml(func):
    def edit(text):
        doc = yaml.safe_load(text)
        func(doc)
        return yaml.safe_dump(doc, allow_unicode=True)
    return edit


def test_bad_verdict_in_data_is_refused(patched_data):
    patched_data["article_claims.yaml"] = _edit_yaml(
        lambda d: d["claims"][0].update(verdict="probably"))
    with pytest.raises(ValueError, match="verdict"):
        course.claims()


def test_bad_anchor_in_data_is_refused(patched_data):
    patched_data["article_claims.yaml"] = _edit_yaml(
        lambda d: d["claims"][3].update(anchor="nvlink"))
    with pytest.raises(ValueError, match="anchor"):
        course.claims()


def test_duplicate_claim_id_is_refused(patched_data):
    patched_data["article_claims.yaml"] = _edit_yaml(
        lambda d: d["claims"][1].update(id=1))
    with pytest.raises(ValueError, match="unique"):
        course.claims()


def test_glossary_term_without_chinese_is_refused(patched_data):
    patched_data["glossary.yaml"] = _edit_yaml(lambda d: d["terms"][0].update(zh=" "))
    with pytest.raises(ValueError, match="zh"):
        course.glossary()


def test_track_item_without_minutes_is_refused(patched_data):
    patched_data["course_tracks.yaml"] = _edit_yaml(
        lambda d: d["tracks"]["half-day"]["items"][0].update(minutes=0))
    with pytest.raises(ValueError, match="minutes"):
        course.track("half-day")


def test_bad_slack_and_talking_points_are_refused(patched_data):
    patched_data["course_tracks.yaml"] = _edit_yaml(
        lambda d: d["tracks"]["half-day"].update(slack_fraction=1.5))
    with pytest.raises(ValueError, match="slack_fraction"):
        course.track("half-day")
    patched_data["course_tracks.yaml"] = _edit_yaml(
        lambda d: d["tracks"]["half-day"]["items"][0].update(talking_points=[" "]))
    course.clear_cache()
    with pytest.raises(ValueError, match="talking_points"):
        course.track("half-day")


def test_over_budget_track_is_detected(patched_data):
    """The slack test can fail: one more hour of lab puts the half day over its limit."""
    patched_data["course_tracks.yaml"] = _edit_yaml(
        lambda d: d["tracks"]["half-day"]["items"].append(
            {"kind": "lab", "title": "extra", "doc": "lab04_accept_a_server",
             "run": ["Part G"], "minutes": 60}))
    assert course.track_total("half-day") > course.track("half-day").planned_limit


def test_short_lab_block_and_long_stretch_are_detected(patched_data):
    """The old plan's Lab 3 block (Parts A and B in 25 min), put back in the half day:
    shorter than its measure, and the stretch it sits in runs past the break rule."""
    def edit(d):
        items = d["tracks"]["half-day"]["items"]
        i = next(k for k, it in enumerate(items) if it["kind"] == "break")
        items.insert(i, {"kind": "lab", "title": "Lab 3", "doc": "lab03_ring_allreduce",
                         "run": ["Part A", "Part B"], "minutes": 25})
    patched_data["course_tracks.yaml"] = _edit_yaml(edit)
    (item, need), = [(it, s) for it, s in course.lab_block_estimates("half-day")
                     if it.doc == "lab03_ring_allreduce"]
    assert item.duration < need
    assert max(d for _, d in course.runs_between_breaks("half-day")) > \
        course.max_run_without_break()


def test_missing_prerequisite_is_detected(patched_data):
    """Without the PAM4 section before Lab 1 Part B, the needs test would fail."""
    def edit(d):
        for it in d["tracks"]["half-day"]["items"]:
            if it.get("doc") == "nvlink":
                it["run"] = [r for r in it["run"] if r != "nvlink-signalling"]
    patched_data["course_tracks.yaml"] = _edit_yaml(edit)
    presented = {f"{it.doc}#{r}" for it in course.track("half-day").items
                 if it.kind == "chapter" for r in it.run}
    assert "nvlink#nvlink-signalling" not in presented
    assert "nvlink#nvlink-signalling" in course.lab_needs("lab01_link_math")["Part B"]
