"""Glossary terms against their owners' definitions and the chapters.

* lane: PCI-SIG's Lane is a transmit and a receive differential pair (one pair per
  direction); NVIDIA counts NVLink lanes per sub-link, one pair each;
* sub-link: NVIDIA's term for one direction of a link, made of that direction's lanes
  (NVAPI: a TX and an RX sub-link per link, subLinkWidth lanes each); a link has two;
* the glossary says what the NVLink and PCIe chapters say;
* the serving terms say what their sources say (vLLM, DeepEP), the serving chapters use
  them, and every subscripted letter of the serving chapters' equations is a row of the
  notation page's serving symbols.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab import course, specs

ROOT = Path(__file__).resolve().parents[2]


def term(key):
    return next(t for t in course.glossary() if t.key == key)


def test_lane_is_pci_sigs_pair_per_direction_with_nvlinks_usage_named():
    d = term("lane").definition
    assert "PCIe" in d and "transmit" in d and "receive" in d and "one pair per direction" in d
    assert "NVLink" in d and "sub-link" in d
    # the old definition, true only of NVLink, is gone
    assert d != "One differential pair carrying one direction of a serial link"
    assert "一个差分对" not in term("lane").zh


def test_sub_link_is_one_direction_made_of_lanes():
    d = term("sub-link").definition
    assert "one direction" in d and "lanes" in d and "two" in d
    assert "not a group of pairs" not in d
    link = term("link").definition
    assert "transmit" in link and "receive" in link


def test_glossary_agrees_with_the_chapters():
    nvlink = (ROOT / "book" / "nvlink.md").read_text(encoding="utf-8")
    pcie = (ROOT / "book" / "pcie.md").read_text(encoding="utf-8")
    assert "call the lanes of one direction a **sub-link**" in nvlink
    assert "a PCIe lane is two differential pairs, one per direction" in pcie


def test_lanes_per_direction_matches_the_data():
    """An NVLink4 sub-link is two lanes (pairs); the glossary's symbol counts pairs per
    direction, which for PCIe is the link width."""
    assert specs.nvlink(4).lanes_per_direction == 2
    d = term("lanes-per-direction").definition
    assert "sub-link" in d and "PCIe" in d


# --- serving -------------------------------------------------------------------------
SERVING_TERMS = ("prefill", "decode", "kv-cache", "cuda-graph", "one-shot-two-shot",
                 "custom-allreduce", "disaggregated-serving", "dispatch-combine",
                 "low-latency-kernel", "tpot", "ttft")
#: ``X_\text{sub}``, ``X_y`` and ``\eta_y`` in an equation's TeX.
SUBSCRIPTED = re.compile(r"(\\eta|[A-Za-z])_(?:\\text\{(\w+)\}|(\w))")
#: ``\text{NAME}_\text{sub}`` (a named quantity with a subscript, ``TTFT_\text{layerwise}``).
TEXT_SUBSCRIPTED = re.compile(r"\\text\{(\w+)\}_(?:\\text\{(\w+)\}|(\w))")


def serving_chapters():
    """The text of every serving chapter (``book/serving_*.md``), by file name."""
    return {p.name: p.read_text(encoding="utf-8")
            for p in sorted((ROOT / "book").glob("serving_*.md"))}


def equation(label):
    """The TeX of the ``{math}`` block labelled ``label`` in a serving chapter."""
    pattern = r"```\{math\}\n:label: " + re.escape(label) + r"\n(.*?)```"
    found = [m.group(1) for text in serving_chapters().values()
             for m in [re.search(pattern, text, re.S)] if m]
    assert len(found) == 1, f"equation {label}: in {len(found)} serving chapters"
    return found[0]


def symbols_in(tex):
    """The subscripted symbols of TeX as the glossary writes them (HTML, plain text)."""
    out = set()
    for base, sub_text, sub_char in SUBSCRIPTED.findall(tex):
        sym = "η" if base == "\\eta" else f"<i>{base}</i>"
        out.add(f"{sym}<sub>{sub_text or sub_char}</sub>")
    for name, sub_text, sub_char in TEXT_SUBSCRIPTED.findall(tex):
        out.add(f"{name}<sub>{sub_text or sub_char}</sub>")
    return out


def test_serving_terms_follow_their_sources():
    defs = {k: term(k).definition for k in SERVING_TERMS}
    assert "reduce-scatter" in defs["one-shot-two-shot"] and "all-gather" in defs[
        "one-shot-two-shot"] and "every peer" in defs["one-shot-two-shot"]
    assert "first" in defs["tpot"] and "excludes the first token" in defs["tpot"]
    assert "first output token" in defs["ttft"]
    assert "RDMA" in defs["low-latency-kernel"] and "decode" in defs["low-latency-kernel"]
    assert "all-to-alls" in defs["dispatch-combine"]
    assert "KV cache" in defs["disaggregated-serving"]
    assert "two GPUs only" in defs["custom-allreduce"]
    assert "compute-bound" in defs["prefill"] and "KV cache" in defs["prefill"]


def test_the_serving_chapters_use_the_serving_terms():
    decode = (ROOT / "book" / "serving_decode.md").read_text(encoding="utf-8")
    for phrase in ("CUDA graph", "one-shot", "two-shot", "KV cache", "TPOT", "Prefill",
                   "time to first token"):
        assert phrase.lower() in decode.lower(), phrase
    serving = " ".join(serving_chapters().values()).lower()
    for phrase in ("dispatch", "combine", "low-latency", "disaggregated", "TTFT"):
        assert phrase.lower() in serving, phrase


def test_serving_symbols_carry_code_names_and_units():
    terms = course.glossary("serving-symbols")
    assert len(terms) >= 10
    for t in terms:
        assert t.symbol and t.code and t.unit, t.key
        assert "$" not in t.symbol


@pytest.mark.parametrize("label", ["eq-decode-layer", "eq-sd-custom", "eq-sp-kv",
                                   "eq-se-ep-bytes", "eq-se-ep-time", "eq-se-ttft"])
def test_every_subscripted_symbol_of_the_serving_equations_is_on_the_notation_page(label):
    wanted = symbols_in(equation(label))
    assert wanted
    table = " ".join(t.symbol for t in course.glossary("serving-symbols"))
    missing = sorted(s for s in wanted if s not in table)
    assert not missing, f"{label}: no serving symbol for {missing}"


def test_symbol_check_can_fail():
    assert symbols_in(r"t_\text{layer} = t_0 + \eta_g P_\text{new}") == {
        "<i>t</i><sub>layer</sub>", "<i>t</i><sub>0</sub>", "η<sub>g</sub>",
        "<i>P</i><sub>new</sub>"}
    assert symbols_in(r"\text{TTFT}_\text{new} = p") == {"TTFT<sub>new</sub>"}
    table = " ".join(t.symbol for t in course.glossary("serving-symbols"))
    assert "<i>P</i><sub>new</sub>" not in table
