"""In JupyterLab, after a control of a live explorer moves, the numbers it shows are the model's.

For each case: run the lab in a real JupyterLab (fixtures ``lab_server`` and ``lab_ui`` in
``conftest.py``), find the explorer by the label of its control, move that control once, wait
until the explorer's text summary changes, then read the new setting off the page (the
slider's readout or the selected option) and compare every number of the summary with gpulab
called here for that setting, formatted as the explorer formats it. Lab 1's link explorer
(symbol-rate slider) and Lab 2's PCIe explorer (generation drop-down) are driven.
"""
from __future__ import annotations

import re

import pytest

from gpulab import links, pcie, specs, units

pytestmark = pytest.mark.jupyterlab

RUN_ALL_TIMEOUT = 180  # s
CHANGE_TIMEOUT = 15  # s

SUMMARY_JS = """
(area) => Array.from(area.querySelectorAll(".widget-html-content"))
  .map(e => e.innerText).join("\\n")
"""


def _explorer(page, lab_ui, label, summary_start):
    """The output area whose control is labelled ``label`` and whose summary text starts
    with ``summary_start``."""
    areas = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output") \
        .filter(has=page.locator(".widget-label")) \
        .filter(has_text=re.compile(re.escape(summary_start)))
    for _ in range(60):                       # widget views render after the kernel idles
        for i in range(areas.count()):
            if lab_ui.find_control(page, areas.nth(i), label).count():
                return areas.nth(i)
        page.wait_for_timeout(500)
    raise AssertionError(f"no explorer with a control {label!r} and a summary "
                         f"starting {summary_start!r}")


def _move_and_read(page, lab_ui, area, label, how):
    area.scroll_into_view_if_needed()
    before = area.evaluate(SUMMARY_JS)
    for _attempt in range(3):                 # a key press can land before the focus
        lab_ui.move(page, area, label, how)
        try:
            page.wait_for_function(
                f"([a, b]) => ({SUMMARY_JS})(a) !== b", arg=[area.element_handle(), before],
                timeout=CHANGE_TIMEOUT * 1000 / 3)
            break
        except Exception:
            pass
    after = area.evaluate(SUMMARY_JS)
    assert after != before, f"moving {label!r} did not change the summary: {before!r}"
    return after


def _readout(page, lab_ui, area, label) -> str:
    return lab_ui.find_control(page, area, label).first.locator(".widget-readout") \
        .first.inner_text().strip()


def _gbs(bw):
    """The PCIe explorer's display rule: 3 significant digits below 10 GB/s, else 0.1."""
    v = bw.gb_per_s
    return f"{v:.3g} GB/s" if v < 10 else f"{v:.1f} GB/s"


def _check_link_explorer(page, lab_ui, area):
    label = "Symbol rate [GBd]"
    before = float(_readout(page, lab_ui, area, label))
    summary = _move_and_read(page, lab_ui, area, label, "right")
    gbd = float(_readout(page, lab_ui, area, label))
    g = specs.nvlink(4)                       # the lab builds link_explorer(): NVLink4 preset
    assert gbd == pytest.approx(g.symbol_rate / 1e9 + 0.125), (before, gbd)
    assert int(_readout(page, lab_ui, area, "Lanes per direction")) == g.lanes_per_direction
    assert int(_readout(page, lab_ui, area, "Links per GPU")) == g.links_per_gpu
    link = links.link_bandwidth(gbd * 1e9, g.bits_per_symbol, g.lanes_per_direction,
                                g.coding_efficiency)
    gpu = links.gpu_bandwidth(link, g.links_per_gpu)
    lane = links.lane_rate(gbd * 1e9, g.bits_per_symbol)
    want = [f"Lane: {lane / 1e9:.6g} Gb/s raw",
            f"Link: {units.fmt_bandwidth(link)}",
            f"GPU ({g.links_per_gpu} links): {units.fmt_bandwidth(gpu)} = "
            f"{units.fmt_bandwidth(gpu.to_bidirectional())}"]
    shown = [line for line in summary.splitlines() if line.strip()]
    assert shown[:3] == want
    # and by hand: 53.25 GBd × 2 bits × 2 lanes × 16/17 / 8 bits per byte
    assert link.bytes_per_s == pytest.approx(53.25e9 * 2 * 2 * 16 / 17 / 8, rel=1e-12)


def _check_pcie_explorer(page, lab_ui, area):
    label = "Generation"
    summary = _move_and_read(page, lab_ui, area, label, "select")
    select = lab_ui.find_control(page, area, label).first.locator("select").first
    chosen = select.evaluate("s => s.options[s.selectedIndex].text")
    gen = int(re.match(r"Gen(\d)", chosen).group(1))
    head = re.search(r"PCIe Gen(\d) x(\d+), max payload (\d+) B, (\d)-DW headers(, ECRC)?:",
                     summary)
    assert head, summary
    assert int(head.group(1)) == gen
    lanes, mps, dw, ecrc = (int(head.group(2)), int(head.group(3)), int(head.group(4)),
                            bool(head.group(5)))
    raw = pcie.raw_bandwidth(gen, lanes)
    enc = pcie.encoded_bandwidth(gen, lanes)
    eff = pcie.effective_bandwidth(gen, lanes, mps, header_bytes=4 * dw, ecrc=ecrc)
    want = (f"{_gbs(raw)} raw → {_gbs(enc)} encoded → {_gbs(eff)} effective, per "
            f"direction ({eff / raw:.0%} of raw).")
    assert want in summary, (want, summary)
    assert f"{_gbs(raw.to_bidirectional())} raw bidirectional" in summary
    if (gen, lanes, mps, dw, ecrc) == (6, 16, 256, 4, False):
        # by hand: 64 GT/s × 16 lanes / 8, no line code, FLIT: 256/(256+16) × 236/256
        assert "128.0 GB/s raw → 128.0 GB/s encoded → 111.1 GB/s effective" in summary


CASES = {
    "lab01_link_math.ipynb": ("Symbol rate [GBd]", "Lane:", _check_link_explorer),
    "lab02_read_your_server.ipynb": ("Generation", "PCIe Gen", _check_pcie_explorer),
}


@pytest.mark.parametrize("notebook", sorted(CASES))
def test_explorer_shows_the_model_after_a_move(notebook, lab_server, lab_ui, browser,
                                               make_offline):
    base, token, _root = lab_server
    label, summary_start, check = CASES[notebook]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = make_offline(context.new_page())
    try:
        problems = lab_ui.run_all(page, base, token, notebook, RUN_ALL_TIMEOUT)
        assert not problems, "\n---\n".join(problems)
        area = _explorer(page, lab_ui, label, summary_start)
        check(page, lab_ui, area)
        assert page.external_requests == []
    finally:
        context.close()
        lab_ui.shut_down_kernel(base, token, notebook)
