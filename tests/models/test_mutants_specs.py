"""gpulab.specs refuses data-file names that leave gpulab/data, with the right message.

Written to kill mutants of ``read_data_text``'s path check that the other tests let live: an
empty path segment or a hidden name must be refused as a bad name, not looked up.
"""
from __future__ import annotations

import re

import pytest

from gpulab import specs


@pytest.mark.parametrize("name", ["measurements//x.csv", ".hidden", "topologies/.x",
                                  "../pyproject.toml", "a/./gpus.csv", ""])
def test_names_outside_the_data_folder_are_refused_as_names(name):
    want = f"name must be a file name inside gpulab/data; got {name!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        specs.read_data_text(name)


def test_a_missing_file_is_reported_as_missing():
    with pytest.raises(ValueError, match=r"^name must be a file inside gpulab/data; "
                                         r"'no_such\.csv' not found$"):
        specs.read_data_text("no_such.csv")
    assert specs.read_data_text("pcie.csv").startswith("generation,")


# The CSV readers run once per process (their results are cached), so in a mutation run the
# shipped tables are parsed before any mutant is switched on. These tests call a reader's
# uncached body (``__wrapped__``) on a small table of their own.

NVLINK_HEADER = ("generation,first_gpu,year,modulation,bits_per_symbol,symbol_rate_gbaud,"
                 "coding_efficiency,lanes_per_direction,nominal_link_gb_per_s,"
                 "nominal_link_direction,links_per_gpu,nvidia_smi_link_gb_per_s,kind,source,"
                 "accessed")
NVLINK_ROW = "4,H100,2022,PAM4,2,53.125,{eff},2,50,per_direction,18,{smi},{kind},src,2026-12-01"


def _table(monkeypatch, text):
    """Serve ``text`` as every data file that the readers ask for."""
    monkeypatch.setattr(specs, "read_data_text", lambda name: text)


def test_a_bad_kind_is_reported_with_its_file_line_and_value(monkeypatch):
    # line 1 is the header; the bad row is the second data row, so line 3
    _table(monkeypatch, "\n".join([
        NVLINK_HEADER, NVLINK_ROW.format(eff="1", smi="", kind="spec"),
        NVLINK_ROW.format(eff="1", smi="", kind="guessed")]) + "\n")
    want = ("nvlink.csv line 3: kind must be one of spec, measured, derived, assumed; "
            "got 'guessed'")
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        specs._nvlink_table.__wrapped__()


def test_a_missing_kind_column_is_reported_as_none(monkeypatch):
    _table(monkeypatch, "name,year\nX,2020\n")
    want = "nvlink.csv line 2: kind must be one of spec, measured, derived, assumed; got None"
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        specs._nvlink_table.__wrapped__()


def test_every_kind_is_accepted(monkeypatch):
    rows = [NVLINK_ROW.format(eff="1", smi="", kind=k).replace("4,H100", f"{g},G{g}", 1)
            for g, k in enumerate(("spec", "measured", "derived", "assumed"), start=1)]
    _table(monkeypatch, "\n".join([NVLINK_HEADER, *rows]) + "\n")
    table = specs._nvlink_table.__wrapped__()
    assert [table[g].kind for g in (1, 2, 3, 4)] == ["spec", "measured", "derived", "assumed"]


def test_an_empty_optional_field_is_none_and_a_number_is_read(monkeypatch):
    _table(monkeypatch, "\n".join([
        NVLINK_HEADER,
        NVLINK_ROW.format(eff="128/130", smi="", kind="spec"),
        NVLINK_ROW.replace("4,H100", "5,B200", 1).format(eff="1", smi="26.5625",
                                                          kind="spec")]) + "\n")
    table = specs._nvlink_table.__wrapped__()
    assert table[4].nvidia_smi_link_gb_per_s is None
    assert table[5].nvidia_smi_link_gb_per_s == 26.5625
    assert table[4].coding_efficiency == 128 / 130
    # the symbol rate is stored in GBd
    assert table[4].symbol_rate == 53.125e9


def test_an_absent_optional_field_is_none():
    # csv.DictReader fills the missing trailing fields of a short row with None
    assert specs._opt_float(None) is None
    assert specs._opt_float("") is None
    assert specs._opt_float("2.5") == 2.5


def test_an_empty_fp8_field_is_none(monkeypatch):
    _table(monkeypatch, "name,variant,year,fp16_dense_tflops,fp8_dense_tflops,memory_gb,"
                        "memory_type,memory_bandwidth_gb_per_s,nvlink_generation,"
                        "nvlink_links,pcie_generation,kind,source,accessed\n"
                        "X,v,2020,100,,80,HBM3,3000,4,18,5,spec,s,2026-12-01\n")
    gpu = specs._gpu_table.__wrapped__()[("X", "v")]
    assert gpu.fp8_dense_flops is None
    assert gpu.fp16_dense_flops == 100e12
    assert gpu.memory_bytes == 80e9


@pytest.mark.parametrize("name", ["X", "X/X", "./X"])
def test_an_unknown_entry_is_reported_as_unknown_not_as_malformed(name):
    # "X" is a well-formed path that names no entry; only "", "/" or "." are malformed
    with pytest.raises(ValueError, match=r"^name must name an entry of assumptions\.yaml; 'X' is "
                                         r"not under top level"):
        specs.assumption("course", name)
    with pytest.raises(ValueError, match=r"^name must be a path in assumptions\.yaml such as "
                                         r"'a/b'; got '\./'$"):
        specs.assumption("course", "./")
