"""gpulab.course: teaching tracks, the source article's claims and the glossary.

The page-level checks (labels, boxes, lab parts that the data names) are in
tests/book/test_course_pages.py; here: the loaders, the budgets, the computed evidence
against analytic oracles, and the errors bad input and bad data give.
"""
from __future__ import annotations

import math
import re

import pytest
import yaml

from gpulab import course, specs

CJK = re.compile(r"[\u4e00-\u9fff]")


# --- tracks -----------------------------------------------------------------------
@pytest.mark.parametrize("name,hours,tol_min", [("half-day", 3.5, 10), ("one-day", 6.5, 15)])
def test_track_fits_its_budget(name, hours, tol_min):
    """The issue's budgets: 3.5 h ± 10 min and 6.5 h ± 15 min, breaks included."""
    t = course.track(name)
    assert t.budget == hours * 3600 and t.tolerance == tol_min * 60
    assert abs(course.track_total(name) - hours * 3600) <= tol_min * 60


@pytest.mark.parametrize("name", ["half-day", "one-day"])
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


@pytest.mark.parametrize("name", ["half-day", "one-day"])
def test_track_has_breaks_labs_prompts_and_assessments(name):
    items = course.track(name).items
    kinds = [it.kind for it in items]
    assert kinds[0] == "assessment" and kinds[-1] == "assessment"
    assert kinds.count("break") >= 2 and "lab" in kinds and "discussion" in kinds
    for it in items:
        if it.kind == "chapter":
            assert it.run and it.prompt, it.title
            assert not set(it.run) & set(it.skip), it.title


def test_one_day_covers_more_chapters_than_half_day():
    def docs(name):
        return {it.doc for it in course.track(name).items if it.kind == "chapter"}
    assert docs("half-day") < docs("one-day")


def test_track_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="name"):
        course.track("two-day")
    with pytest.raises(ValueError, match="kind"):
        course.track_total("half-day", kind="lunch")


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


def test_over_budget_track_is_detected(patched_data):
    """The budget test can fail: one more hour of lab puts the half day over."""
    patched_data["course_tracks.yaml"] = _edit_yaml(
        lambda d: d["tracks"]["half-day"]["items"].append(
            {"kind": "lab", "title": "extra", "doc": "lab04_accept_a_server", "minutes": 60}))
    t = course.track("half-day")
    assert course.track_total("half-day") - t.budget > t.tolerance

