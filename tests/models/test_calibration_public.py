"""The quoted published figures: one file, each with its source; chapters read them."""
from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from gpulab import calibration

ROOT = Path(__file__).resolve().parents[2]


def test_every_quoted_figure_has_a_value_a_kind_and_a_source():
    figs = calibration.quoted_figures()
    assert {"h100_ring_gb", "h100_nvls_gb", "two_node_busbw_gb"} <= set(figs)
    for key, f in figs.items():
        assert re.fullmatch(r"[a-z0-9_]+", key)
        assert f["value"] > 0 and f["unit"]
        assert f["kind"] in ("published", "spec"), key
        assert len(f["source"]) > 40 and f["url"].startswith("https://"), key
        datetime.date.fromisoformat(f["accessed"])
    # NVLS on 8 H100s beats the ring, as the maintainer's reply says
    assert figs["h100_nvls_gb"]["value"] > figs["h100_ring_gb"]["value"]


def test_callers_get_copies():
    a = calibration.quoted_figures()
    a["h100_ring_gb"]["value"] = -1.0
    assert calibration.quoted_figures()["h100_ring_gb"]["value"] == 370.0


@pytest.mark.parametrize("chapter", ["nvswitch.md"])
def test_chapters_read_quoted_figures_instead_of_typing_them(chapter):
    text = (ROOT / "book" / chapter).read_text(encoding="utf-8")
    assert "calibration.quoted_figures()" in text
    for key in calibration.quoted_figures():
        assert not re.search(rf'"{key}"\s*:\s*[0-9]', text), key
