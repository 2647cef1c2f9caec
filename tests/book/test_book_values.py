"""Numbers glued into the built book's prose equal the model's values.

Each case opens one chapter of ``_build/html`` in headless Chromium (offline, fixtures in
``tests/conftest.py``), finds the paragraph or list item whose text matches ``anchor``, reads
the glued numbers in it (``span.pasted-text``, in reading order) and compares the first ones
with gpulab called here with the chapter's arguments, formatted with the format the chapter's
``{glue:text}`` role uses: the page must show exactly the model's value at the glue's rounding.
Where the prose states an arithmetic relation between its numbers (links × per-link rate,
per direction × 2, f = 2(n − 1)/n), the numbers read off the page are checked against it too,
so a glue key wired to the wrong value cannot pass.

Run: build the book, then ``pytest tests/book/test_book_values.py`` (or ``-m browser``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import pytest

from gpulab import collectives, links, parallelism, pcie, specs

pytestmark = pytest.mark.browser


def _nvlink4():
    gen = next(g for g in specs.nvlink_generations() if g.generation == 4)
    link = links.link_bandwidth(gen.symbol_rate, gen.bits_per_symbol, gen.lanes_per_direction,
                                gen.coding_efficiency)
    gpu = links.gpu_bandwidth(link, gen.links_per_gpu)
    return gen, link, gpu


@dataclass(frozen=True)
class Glued:
    page: str                                    # chapter, relative to _build/html/book
    anchor: str                                  # regex matching the paragraph's text
    expected: Callable[[], list[tuple[float, str]]]  # (model value, glue format) in order
    relation: Callable[[list[float]], bool] | None = None  # the prose's arithmetic
    why: str = ""


CASES = [
    Glued("nvlink", r"H100: \d+ links ×",
          lambda: [(_nvlink4()[0].links_per_gpu, ""), (_nvlink4()[1].gb_per_s, ".0f"),
                   (_nvlink4()[2].gb_per_s, ".0f"),
                   (_nvlink4()[2].to_bidirectional().gb_per_s, ".0f")],
          lambda v: v[0] * v[1] == v[2] and 2 * v[2] == v[3],
          "links × GB/s per link = GB/s per direction = half the bidirectional figure"),
    Glued("nvswitch", r"Each NVLink4 link carries",
          lambda: [(links.nvlink_link_bandwidth(4).gb_per_s, ".0f"),
                   (links.nvlink_gpu_bandwidth(4).gb_per_s, ".0f"),
                   (links.nvlink_gpu_bandwidth(4).to_bidirectional().gb_per_s, ".0f")],
          lambda v: 2 * v[1] == v[2], "bidirectional = 2 × per direction"),
    Glued("pcie", r"Spec sheets give a PCIe 5\.0 x16 link as",
          lambda: [(pcie.raw_bandwidth(5).to_bidirectional().gb_per_s, ".0f")],
          # 32 GT/s × 16 lanes / 8 bits, both directions added
          lambda v: v[0] == 2 * 32 * 16 / 8, "raw Gen5 x16, both directions"),
    Glued("reading_nccl_tests", r"busbw = algbw × f \(f = 2\(n−1\)/n",
          lambda: [(collectives.busbw_factor("all_reduce", 2), ".0f"),
                   (collectives.busbw_factor("all_reduce", 8), ".2f")],
          lambda v: v == [2 * (2 - 1) / 2, 2 * (8 - 1) / 8], "f = 2(n − 1)/n"),
    Glued("parallel_strategies", r"^\s*TP needs \d+ all-reduces per layer",
          lambda: [(parallelism.tp_allreduce_count(), ".0f")],
          lambda v: v[0] == 2 + 2, "two in the forward pass, two in the backward pass"),
    Glued("tensor_parallel", r"Model states cost \d+ bytes per parameter",
          lambda: [(parallelism.model_state_bytes()["total"], ".0f")],
          # BF16 weight 2 + FP32 gradient 4 + FP32 master 4 + Adam momentum and variance 8
          lambda v: v[0] == 2 + 4 + 4 + 8, "Megatron-LM's mixed-precision Adam"),
]


def _read_glued(page, site_url: str, case: Glued) -> tuple[list[str], str]:
    page.goto(f"{site_url}/book/{case.page}.html")
    blocks = page.locator("article p, article li").filter(has_text=re.compile(case.anchor))
    assert blocks.count() >= 1, f"{case.page}: no paragraph matches {case.anchor!r}"
    block = blocks.first
    return block.locator(".pasted-text").all_inner_texts(), block.inner_text()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.page}:{c.anchor[:30]}" for c in CASES])
def test_glued_number_equals_model(offline_page, site_url, case):
    texts, paragraph = _read_glued(offline_page, site_url, case)
    expected = case.expected()
    assert len(texts) >= len(expected), (
        f"{case.page}: expected {len(expected)} glued numbers in {paragraph[:200]!r}, "
        f"found {texts}")
    shown = texts[:len(expected)]
    want = [format(value, spec) for value, spec in expected]
    assert shown == want, (f"{case.page}: the page shows {shown} where gpulab gives {want} "
                           f"in {paragraph[:200]!r}")
    if case.relation is not None:
        numbers = [float(t) for t in shown]
        assert case.relation(numbers), (
            f"{case.page}: the numbers on the page {numbers} break the prose's relation: "
            f"{case.why}")
    assert offline_page.external_requests == []


def test_cases_read_distinct_pages():
    """The cases cover several chapters (not six numbers of one page)."""
    assert len({c.page for c in CASES}) >= 5
