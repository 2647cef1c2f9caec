"""The claims appendix's verdicts: "misleading / oversimplified" apart from "wrong".

* the verdict exists in the schema, is counted, and is rendered with its own mark;
* the claims re-judged as misleading are those whose fact-list note says misleading,
  oversimplified, overstated or optimistic and that hold in part (claim 31 is a rule of
  thumb); the ones whose numbers or mechanism are false stay wrong;
* claim 92 (KV cache plus activations, 50-100 GB) is wrong: training has no KV cache, and
  the activations at the article's micro-batch, recomputed here from Korthikanti et al.'s
  formula, are above the range;
* a verdict outside the schema is refused with a message that names the new one.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulab import course, specs
from gpulab.parallelism import model

ROOT = Path(__file__).resolve().parents[2]

#: Re-judged from "wrong": they hold in part or as a rule of thumb.
MISLEADING = {21, 31, 32, 44, 77, 81}
#: Notes say misleading too, but a number or the mechanism is false: still wrong.
STILL_WRONG = {54, 123}


def test_misleading_is_a_verdict_of_its_own_and_counted():
    assert "misleading" in course.VERDICTS and "wrong" in course.VERDICTS
    counts = course.verdict_counts()
    assert {c.id for c in course.claims("misleading")} == MISLEADING
    assert counts["misleading"] == len(MISLEADING)
    assert sum(counts.values()) == len(course.claims())
    assert all(course.claim(i).verdict == "wrong" for i in STILL_WRONG)


def test_misleading_evidence_says_what_holds():
    for c in course.claims("misleading"):
        text = course.evidence_text(c).lower()
        assert any(w in text for w in ("oversimplified", "overstated", "optimistic",
                                       "rule of thumb", "right conclusion")), c.id


def test_claim_31_is_a_rule_of_thumb_not_wrong():
    c = course.claim(31)
    assert c.verdict == "misleading" and "rule of thumb" in course.evidence_text(c)


def test_claim_92_is_wrong_with_computed_activations():
    c = course.claim(92)
    assert c.verdict == "wrong"
    ev = course.evidence_values()
    m = model("70b")
    b = ev["art_micro_batch"]
    assert b == 2                                   # --micro-batch-size 2, section 6.2
    # Korthikanti et al. 2022: s b h (34 + 5 a s / h) per layer; FlashAttention drops
    # the 5 a s / h score term; 16-bit activations, no parallelism
    by_hand = m.layers * m.seq_len * b * m.hidden * 34 / 1e9
    assert ev["act_70b_mb_gb"] == pytest.approx(by_hand)
    assert ev["act_70b_mb1_gb"] == pytest.approx(by_hand / b)
    assert ev["act_70b_mb_gb"] > 100 >= ev["act_70b_mb1_gb"] >= 50   # the claim's range
    text = course.evidence_text(c)
    assert "KV cache" in text and f"{ev['act_70b_mb_gb']:.0f} GB" in text


def test_appendix_renders_every_verdict():
    page = (ROOT / "book" / "article_claims.md").read_text(encoding="utf-8")
    assert '"misleading": "≈ misleading / oversimplified"' in page
    assert "{glue:text}`ac_n_misleading`" in page
    assert "misleading as stated\n  ({glue:text}`ac_n_wrong`)" not in page


def test_unknown_verdict_is_refused_naming_the_new_one(monkeypatch):
    real = specs.read_data_text

    def fake(name):
        text = real(name)
        if name != "article_claims.yaml":
            return text
        doc = yaml.safe_load(text)
        doc["claims"][0]["verdict"] = "oversimplified"
        return yaml.safe_dump(doc, allow_unicode=True)

    monkeypatch.setattr(specs, "read_data_text", fake)
    course.clear_cache()
    try:
        with pytest.raises(ValueError, match="misleading"):
            course.claims()
    finally:
        monkeypatch.undo()
        course.clear_cache()
    with pytest.raises(ValueError, match="verdict"):
        course.claims("oversimplified")
