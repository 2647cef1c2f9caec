"""Glossary terms against their owners' definitions and the chapters.

* lane: PCI-SIG's Lane is a transmit and a receive differential pair (one pair per
  direction); NVIDIA counts NVLink lanes per sub-link, one pair each;
* sub-link: NVIDIA's term for one direction of a link, made of that direction's lanes
  (NVAPI: a TX and an RX sub-link per link, subLinkWidth lanes each); a link has two;
* the glossary says what the NVLink and PCIe chapters say.
"""
from __future__ import annotations

from pathlib import Path

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
