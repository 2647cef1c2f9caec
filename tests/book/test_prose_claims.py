"""Guards for statements in the book's prose that no chapter cell can check.

Each test pins one corrected statement (issue 12, item 4) so that the wrong one cannot come
back: the spec facts the introduction says are typed in prose agree with the data tables,
the source article is identified once, and phrases that were wrong stay out of the pages.
Chapter numbers are checked by the asserts in the chapters' hidden cells.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab import collectives, specs, systems, units

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "intro.md", *sorted((ROOT / "book").glob("*.md"))]
ARTICLE_TITLE = "8张H100训练一个70B模型"


def _text(path):
    return path.read_text(encoding="utf-8")


def test_spec_facts_typed_in_prose_match_the_data():
    """intro.md names these as facts written out in prose: they must be the tables' values."""
    intro = _text(ROOT / "intro.md")
    nv4 = specs.nvlink(4)
    bidir = nv4.nominal_link_bandwidth.to_bidirectional().bytes_per_s * nv4.links_per_gpu
    assert bidir / units.GB == pytest.approx(900)
    assert "900 GB/s bidirectional" in intro
    assert systems.get("dgx-h100").nvlink.switch_chips == 4
    assert "four NVSwitch chips" in intro
    assert specs.gpu("H100").memory_bytes / units.GB == pytest.approx(80)
    assert "80 GB" in intro


def test_source_article_is_identified_once():
    hits = [p.name for p in PAGES if ARTICLE_TITLE in _text(p)]
    assert hits == ["intro.md"]
    intro = _text(ROOT / "intro.md")
    assert "Chinese" in intro and "no author and no" in intro


@pytest.mark.parametrize("phrase, page", [
    ("does not benchmark", "book/setup.md"),
    ("never typed by hand", "intro.md"),
    ("links run straight to the other GPU", "book/nvlink.md"),
    ("raw line rate", "book/nvlink.md"),
    ("raw line rate", "book/hardware_tables.md"),
    ("raw line rate", "labs/lab01_link_math.ipynb"),
    ("NCCL uses NVLS only for **AllReduce**", "book/in_network_reduction.md"),
    ("That is why NCCL uses trees", "book/in_network_reduction.md"),
    ("NCCL models NVLS at", "book/in_network_reduction.md"),
    ("most platforms do not forward peer traffic", "book/pcie.md"),
    ("takes the switch's single uplink\ntwice", "book/pcie.md"),
    ("served through host memory over one PCIe Gen3", "book/nvswitch.md"),
    ("have no link fall back to PCIe", "book/nvswitch.md"),
    ("raw per-direction line rate", "book/nvlink.md"),
    ("per-link line rate", "book/nvlink.md"),
    ("course-wide end-to-end assumption", "book/tensor_parallel.md"),
    ("about the same time", "book/tensor_parallel.md"),
    ("physically impossible ({ref}`ch-pcie`)", "book/nvlink_roi.md"),
])
def test_corrected_statement_stays_out(phrase, page):
    assert phrase not in _text(ROOT / page)


def test_p2p_reason_does_not_claim_most_platforms():
    """The unsourced "most platforms do not forward peer traffic" is out of the model's
    reason too (what gpulab topo and the PCIe chapter's table print for SYS pairs)."""
    from gpulab import topology
    ok, why = topology.p2p_possible(topology.layout_a(), "gpu0", "gpu4")
    assert not ok and why.startswith("SYS")
    assert "most platforms" not in why and "depends on the CPU" in why


def test_nvswitch_history_and_dgx1_relay():
    """DGX-1's link-less peers are relayed by NCCL through another GPU over NVLink (paths.cc,
    PATH_NVB), and NVSwitch first shipped in DGX-2 before DGX A100 replaced the 8-GPU mesh."""
    text = re.sub(r"\s+", " ", _text(ROOT / "book" / "nvswitch.md"))
    assert "PATH_NVB" in text and "over NVLink" in text
    first = text.index("first shipped in the DGX-2")
    assert first < text.index("A100 then replaced the mesh")


def test_line_rate_is_the_data_rate():
    """nvlink.md defines "line rate" as the per-direction data rate (the spec), the value the
    collective model divides by; the raw signalling rate nvidia-smi reports is larger."""
    line = collectives.fabric_bandwidth("hgx-h200")
    nv4 = specs.nvlink(4)
    spec = nv4.nominal_link_bandwidth.to_per_direction().bytes_per_s * nv4.links_per_gpu
    assert line.direction == "per_direction"
    assert line.bytes_per_s == pytest.approx(spec)
    assert nv4.nvidia_smi_link_gb_per_s * nv4.links_per_gpu * units.GB > spec
    assert "**Line rate**, in this course" in _text(ROOT / "book" / "nvlink.md")
    # the glossary gives the same definition (it used to call the line rate the raw rate)
    from gpulab import course
    term = next(t for t in course.glossary() if t.key == "line-rate")
    assert "data rate" in term.definition and "per-direction" in term.definition
    assert not term.definition.startswith("The raw signalling rate")


def test_glossary_nvls_is_not_allreduce_only():
    """NCCL has NVLS kernels for AllReduce, AllGather and ReduceScatter (generate.py)."""
    from gpulab import course
    term = next(t for t in course.glossary() if t.key == "nvls")
    for name in ("AllReduce", "AllGather", "ReduceScatter"):
        assert name in term.definition


def test_nccl_source_constants_are_labelled_as_nccls():
    """The book quotes NCCL's own latencies from data (tuning.cc), never the course's fit."""
    ring8 = (collectives.model_constant("nccl_source/ring_ll_base_latency_s")
             + collectives.ring_steps("all_reduce", 8)
             * collectives.model_constant("nccl_source/ring_ll_nvlink_hop_s"))
    assert ring8 == pytest.approx(15.0e-6)
    assert collectives.model_constant("nccl_source/nvls_nvlink_latency_s") == pytest.approx(25e-6)
    assert collectives.model_constant("nccl_source/nvls_off_max_gpus_2_28_3") == 2
    # nvls.cc: "gpuCount <= 2" at v2.28.3-1, "gpuCount < 2" from v2.28.7-1 on
    assert collectives.model_constant("nccl_source/nvls_off_max_gpus_2_28_7") == 1
    assert set(collectives.model_constant("nccl_source/nvls_collectives")) == {
        "all_reduce", "all_gather", "reduce_scatter"}
    assert specs.assumption_record("nccl", "nccl_source")["kind"] == "spec"


NCCL_1455 = re.compile(r"nccl#1455|nccl/issues/1455|nccl issues? 1455|issues 1455")
CITING_FILES = [*PAGES, *sorted((ROOT / "labs").glob("*.ipynb")),
                *sorted((ROOT / "gpulab").rglob("*.py")),
                *sorted((ROOT / "gpulab" / "data").rglob("*.yaml")),
                *sorted((ROOT / "gpulab" / "data").rglob("*.md"))]


def _sentences(text):
    """Sentences of a text, line breaks and JSON string quoting flattened."""
    flat = re.sub(r'\\n",?\s*"', " ", text)
    flat = re.sub(r"\s+", " ", flat)
    return re.split(r"(?<=[.;])\s+(?=[A-Z*(-])", flat)


def test_nccl_1455_is_cited_as_what_it_is():
    """NVIDIA/nccl#1455 is a user's nccl-tests runs on 8x H100 SXM (ring and NVLS busbw by
    GPU count), not an NCCL maintainer's statement: a sentence that cites it and names a
    maintainer also says whose runs 1455 holds. The maintainer's figures (370 GB/s ring, 480 GB/s NVLS on 8 GPUs) are
    cited to nccl-tests#212. The bibliography names both threads by their titles."""
    wrong = [f"{path.relative_to(ROOT)}: {s[:120]}"
             for path in CITING_FILES
             for s in _sentences(_text(path))
             if NCCL_1455.search(s.lower()) and "maintainer" in s.lower()
             and "user" not in s.lower()]
    assert not wrong, wrong
    bib = _text(ROOT / "book" / "references.bib")
    assert "https://github.com/NVIDIA/nccl/issues/1455" in bib
    assert "intranode allreduce performance with {SHArP}" in bib
    assert "https://github.com/NVIDIA/nccl-tests/issues/212" in bib
    assert "{H100} all reduce performance is poor" in bib


def _paragraphs(text):
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_nvls_threshold_is_an_observation_not_nccls_rule():
    """NCCL's source switches NVLS off only on nodes of <= 2 GPUs (nvls.cc); the model's
    min_ranks is what public runs saw NCCL's tuner do on 8x H100/H200. Every paragraph
    that quotes the model's threshold says it is an observation and gives NCCL's rule or
    says NCCL may still choose NVLS; no page states the observation as NCCL's."""
    observed = collectives.model_constant("nvls/min_ranks")
    nccl_off = collectives.model_constant("nccl_source/nvls_off_max_gpus_2_28_3")
    assert observed > nccl_off + 1                    # two different numbers
    assert "not ours" in specs.assumption_record("nccl", "nvls")["min_ranks_source"]
    chapter = _text(ROOT / "book" / "in_network_reduction.md")
    quoting = [p for p in _paragraphs(chapter) if "in_nvls_min`" in p]
    assert quoting, "the chapter no longer quotes the model's NVLS threshold"
    for para in quoting:
        assert "observ" in para, para[:200]
        assert "in_nccl_nvls_off`" in para or "NCCL itself" in para, para[:200]
    assert "in_nccl_nvls_off`" in chapter
    for page in PAGES:
        text = re.sub(r"\s+", " ", _text(page))
        for wrong in ("NCCL uses NVLS from", "NCCL enables NVLS from", "NVLS from 5",
                      "NVLS from five", "NVLS needs at least", "NCCL disables NVLS below"):
            assert wrong not in text, (page.name, wrong)


# A number with a hardware unit, written out in prose (not a {glue} role, not in a code
# cell). Message sizes (KiB, MiB, GiB) are scenario choices, not hardware facts, and are
# not matched; neither are the article's own numbers quoted without a unit.
TYPED = re.compile(r"(?<![\w.`{-])(\d[\d,]*(?:\.\d+)?)\s?(GB/s|TB/s|GB|TFLOP/s|TFLOPS|µs|ns"
                   r"|ms|GT/s|Gb/s|GBd|W)(?![\w/])")
CODE_CELL = re.compile(r"```\{code-cell\}.*?```", re.S)


def _typed_numbers(page):
    prose = CODE_CELL.sub("", _text(page))
    return [(m.group(0), float(m.group(1).replace(",", "")), m.group(2))
            for m in TYPED.finditer(prose)]


def test_numbers_typed_in_the_book_are_rows_of_the_data_tables():
    """intro.md says the only numbers written out in the prose are spec-sheet facts that
    name the hardware, each a row of the data tables: every number with a hardware unit
    typed in a book page must equal one of these values, computed from the tables."""
    nv4 = specs.nvlink(4)
    allowed = {
        ("GB/s", nv4.nominal_link_bandwidth.to_bidirectional().bytes_per_s
         * nv4.links_per_gpu / units.GB),                        # NVLink4 per GPU, bidir
        ("GB", specs.gpu("H100").memory_bytes / units.GB),        # H100 SXM 80 GB
        ("GB", specs.gpu("H200").memory_bytes / units.GB),        # H200 SXM 141 GB
        ("Gb/s", specs.nic("ConnectX-7").line_rate.bytes_per_s * 8 / 1e9),   # NDR port
    }
    assert allowed == {("GB/s", 900), ("GB", 80), ("GB", 141), ("Gb/s", 400)}
    stray = [f"{page.relative_to(ROOT)}: {text!r}"
             for page in PAGES for text, value, unit in _typed_numbers(page)
             if (unit, value) not in allowed]
    assert not stray, stray


def test_typed_number_scan_finds_typed_numbers(tmp_path):
    """The scan above can fail: it sees a typed rate and skips glued ones and code cells."""
    page = tmp_path / "probe.md"
    page.write_text("A link of 450 GB/s per direction, {glue:text}`x:.0f` GB/s, "
                    "and 141GB.\n```{code-cell} ipython3\nx = '3 µs'\n```\n",
                    encoding="utf-8")
    assert [(t, u) for t, _v, u in _typed_numbers(page)] == [
        ("450 GB/s", "GB/s"), ("141GB", "GB")]
