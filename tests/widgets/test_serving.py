"""The serving (buying) explorer, driven headless: every control reaches
``gpulab.inference.roi.buying_table`` in SI units, changes the image, and bad input
shows a message instead of a traceback. The initial state equals the chapter figure."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402

from gpulab.inference import roi  # noqa: E402
from gpulab.widgets.serving import serving_explorer  # noqa: E402
from tests.recorder import Recorder  # noqa: E402


@pytest.fixture
def w():
    return serving_explorer()


@pytest.fixture
def table(monkeypatch):
    return Recorder(monkeypatch, roi, "buying_table")


def test_frame_and_initial_state(w):
    assert isinstance(w, W.VBox) and w.view.image.format == "png"
    assert bytes(w.view.image.value).startswith(b"\x89PNG")
    assert w.message.value == "" and "illustrative" in w.summary.value
    want = roi.buying_table("llama3-70b", roi.EXAMPLE_PRICES, tpot_target=0.05,
                            context=4096)
    assert [r["tokens_per_usd"] for r in w.rows] == pytest.approx(
        [r["tokens_per_usd"] for r in want])
    widths = [p.get_width() for p in w.view.ax.patches]
    assert widths == pytest.approx([r["tokens_per_usd"] / 1e6 for r in want])


@pytest.mark.parametrize("control, value, key, expected", [
    ("tpot_ms", 30.0, "tpot_target", 0.03),
    ("context", 8192, "context", 8192),
    ("model", "llama3-8b", "model", "llama3-8b"),
    ("price:h100-pcie", 1.5, "prices", None),
])
def test_controls_reach_model_in_si(w, table, control, value, key, expected):
    before = bytes(w.view.image.value)
    w.controls[control].value = value
    assert w.message.value == ""
    if key == "prices":
        assert table.last["prices"]["h100-pcie"] == 1.5
    else:
        assert table.last[key] == pytest.approx(expected) if key != "model" \
            else table.last[key] == expected
    assert bytes(w.view.image.value) != before


def test_price_halved_doubles_tokens_per_usd(w):
    before = {r["system"]: r["tokens_per_usd"] for r in w.rows}
    w.controls["price:hgx-h200"].value = roi.EXAMPLE_PRICES["hgx-h200"] / 2
    after = {r["system"]: r["tokens_per_usd"] for r in w.rows}
    assert after["hgx-h200"] == pytest.approx(2 * before["hgx-h200"])
    assert after["l40s-x8"] == pytest.approx(before["l40s-x8"])


@pytest.mark.parametrize("value", [0.0, -2.0, 5000.0])
def test_bad_price_is_a_message_not_a_traceback(w, value):
    w.controls["price:l40s-x8"].value = value
    assert "price of l40s-x8" in w.message.value and w.summary.value == ""
    assert w.rows is None
    w.controls["price:l40s-x8"].value = 2.0            # recovers
    assert w.message.value == "" and w.rows is not None


def test_target_nobody_meets_is_reported(w):
    w.controls["tpot_ms"].value = 5.0
    assert w.message.value == ""
    assert "no layout meets" in w.summary.value


@pytest.mark.parametrize("kw, name", [
    (dict(model="gpt3-175b"), "model"),
    (dict(tpot_ms=1.0), "tpot_ms"),
    (dict(context=1000), "context"),
    (dict(prices={"dgx-a100": 1.0}), "prices"),
    (dict(prices={"hgx-h200": -1.0}), "prices"),
])
def test_factory_refuses_bad_arguments(kw, name):
    with pytest.raises(ValueError, match=name):
        serving_explorer(**kw)
