"""Hardware data: CSV schema, spec-derived oracles, loaders."""
from __future__ import annotations

import csv
import datetime as dt
import fractions
import io

import pytest
import yaml

from gpulab import links, specs, units

# Oracles from the vendor documents (NVIDIA P100/V100/A100/H100 whitepapers, Blackwell
# brief; PCI-SIG base specs). They are deliberately literal here: tests are where the
# spec-derived oracles live, and the data files must agree with them.
NVLINK_GPU_BIDIR_GB_PER_S = {1: 160, 2: 300, 3: 600, 4: 900, 5: 1800}
NVLINK4_RAW_LINK_GB_PER_S = 26.5625          # 53.125 GBd x PAM4 x 2 lanes / 8
PCIE5_X16_PER_DIRECTION = 32e9 * 16 * 128 / 130 / 8   # [B/s]

KEYS = {"nvlink.csv": ("generation",), "pcie.csv": ("generation",),
        "gpus.csv": ("name", "variant"), "nics.csv": ("name",), "cpu_links.csv": ("name",)}
NUMERIC = {
    "nvlink.csv": ["generation", "year", "bits_per_symbol", "symbol_rate_gbaud",
                   "lanes_per_direction", "nominal_link_gb_per_s", "links_per_gpu",
                   "nvidia_smi_link_gb_per_s"],
    "pcie.csv": ["generation", "year", "transfer_rate_gt_per_s"],
    "gpus.csv": ["year", "fp16_dense_tflops", "fp8_dense_tflops", "memory_gb",
                 "memory_bandwidth_gb_per_s", "nvlink_generation", "nvlink_links",
                 "pcie_generation", "power_limit_w", "compute_capability"],
    "nics.csv": ["year", "line_rate_gbit_per_s", "ports"],
}
OPTIONAL = {"nvidia_smi_link_gb_per_s", "fp8_dense_tflops", "power_limit_w"}
EFFICIENCY = {"nvlink.csv": "coding_efficiency", "pcie.csv": "encoding_efficiency"}


def _rows(name):
    return list(csv.DictReader(io.StringIO(specs.read_data_text(name))))


# --- schema ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_row_has_source_and_iso_date(name):
    rows = _rows(name)
    assert rows
    for r in rows:
        assert r["source"].strip(), r
        d = dt.date.fromisoformat(r["accessed"])        # raises if not ISO
        assert r["accessed"] == d.isoformat()
        assert dt.date(2015, 1, 1) <= d <= dt.date(2030, 1, 1)
        assert None not in r, f"row has more fields than the header: {r}"
        assert all(v is not None for v in r.values()), f"row is short: {r}"


@pytest.mark.parametrize("name", sorted(KEYS))
def test_no_duplicate_keys(name):
    keys = [tuple(r[k] for k in KEYS[name]) for r in _rows(name)]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_numeric_columns_positive(name):
    for r in _rows(name):
        for col in NUMERIC[name]:
            if col in OPTIONAL and r[col] == "":
                continue
            if name == "gpus.csv" and col == "nvlink_links":
                assert float(r[col]) >= 0, r        # 0: a PCIe-only card
                continue
            assert float(r[col]) > 0, (name, col, r[col])


@pytest.mark.parametrize("name", sorted(EFFICIENCY))
def test_coding_efficiency_in_unit_interval(name):
    for r in _rows(name):
        eta = float(fractions.Fraction(r[EFFICIENCY[name]]))
        assert 0 < eta <= 1, r


def test_nvlink_directions_and_modulation_valid():
    for r in _rows("nvlink.csv"):
        assert r["nominal_link_direction"] in units.DIRECTIONS
        bits = {"NRZ": 1, "PAM4": 2}[r["modulation"]]
        assert int(r["bits_per_symbol"]) == bits


def test_nic_directions_valid():
    for r in _rows("nics.csv"):
        assert r["direction"] in units.DIRECTIONS


def test_nic_oracles():
    # Ethernet / InfiniBand port rates are per direction: 400 Gb/s = 50 GB/s
    cx7 = specs.nic("ConnectX-7")
    assert cx7.line_rate.direction == units.PER_DIRECTION
    assert cx7.line_rate.gb_per_s == pytest.approx(50.0, rel=1e-12)
    assert specs.nic("ConnectX-8").line_rate.gbit_per_s == pytest.approx(800.0)
    # one ConnectX-7 is a ninth of an H100's NVLink per direction
    assert links.nvlink_gpu_bandwidth(4) / cx7.line_rate == pytest.approx(9.0)
    names = [n.name for n in specs.nics()]
    assert names[:2] == ["ConnectX-7", "ConnectX-8"] and len(set(names)) == len(names)


def test_gpu_foreign_keys_exist():
    gens = {g.generation for g in specs.nvlink_generations()}
    pcie = {g.generation for g in specs.pcie_generations()}
    for g in specs.gpus():
        assert g.nvlink_generation in gens and g.pcie_generation in pcie
        assert g.nvlink_links <= g.nvlink.links_per_gpu


def test_generations_are_contiguous_and_sorted():
    assert [g.generation for g in specs.nvlink_generations()] == [1, 2, 3, 4, 5]
    assert [g.generation for g in specs.pcie_generations()] == [1, 2, 3, 4, 5, 6]
    years = [g.year for g in specs.nvlink_generations()]
    assert years == sorted(years)
    rates = [g.transfer_rate_gt_per_s for g in specs.pcie_generations()]
    assert rates == [2.5, 5, 8, 16, 32, 64]        # GT/s per lane, PCI-SIG


# --- oracles --------------------------------------------------------------------------
@pytest.mark.parametrize("gen, total", sorted(NVLINK_GPU_BIDIR_GB_PER_S.items()))
def test_nvlink_per_gpu_bidirectional(gen, total):
    bw = links.nvlink_gpu_bandwidth(gen)
    assert bw.direction == units.PER_DIRECTION
    assert bw.to_bidirectional().gb_per_s == pytest.approx(total, rel=1e-12)
    # and the data's nominal per-link figure times the links agrees with the SerDes
    g = specs.nvlink(gen)
    nominal = g.nominal_link_bandwidth.to_bidirectional() * g.links_per_gpu
    assert nominal.gb_per_s == pytest.approx(total, rel=1e-12)


def test_nvlink4_raw_link_rate():
    assert links.nvlink_link_bandwidth(4, raw=True).gb_per_s == pytest.approx(
        NVLINK4_RAW_LINK_GB_PER_S, rel=1e-12)
    g = specs.nvlink(4)
    assert (g.symbol_rate, g.bits_per_symbol, g.lanes_per_direction) == (53.125e9, 2, 2)
    assert g.modulation == "PAM4"
    # nvidia-smi prints the raw rate rounded to 3 decimals
    assert g.nvidia_smi_link_gb_per_s == pytest.approx(NVLINK4_RAW_LINK_GB_PER_S,
                                                       abs=5e-4)


def test_nominal_link_bandwidth_is_a_bandwidth():
    for g in specs.nvlink_generations():
        assert isinstance(g.nominal_link_bandwidth, units.Bandwidth)
    assert specs.nvlink(4).nominal_link_bandwidth.to_per_direction().gb_per_s == 25.0


def test_pcie_gen5_x16_per_direction():
    g = specs.pcie(5)
    per_dir = g.transfer_rate_gt_per_s * 1e9 * 16 * g.encoding_efficiency / 8
    assert per_dir == pytest.approx(PCIE5_X16_PER_DIRECTION, rel=1e-12)
    assert per_dir / 1e9 == pytest.approx(63.015, abs=1e-3)
    assert g.encoding == "128b/130b"
    assert specs.pcie(1).encoding_efficiency == 0.8


def test_gpu_like_for_like_ratios():
    v100, h100 = specs.gpu("V100"), specs.gpu("H100")
    assert h100.fp16_dense_flops / v100.fp16_dense_flops == pytest.approx(7.9, abs=0.05)
    assert h100.fp8_dense_flops / v100.fp16_dense_flops == pytest.approx(15.8, abs=0.1)
    assert v100.fp8_dense_flops is None


def test_gpu_record_units():
    h200 = specs.gpu("H200")
    assert h200.memory_bytes == 141e9
    assert h200.memory_bandwidth == 4.8e12
    assert h200.fp16_dense_flops == pytest.approx(989.4e12)
    assert h200.nvlink.generation == 4
    assert specs.gpu_names() == list(dict.fromkeys(g.name for g in specs.gpus()))
    assert specs.gpu_names()[:3] == ["V100", "A100", "H100"]
    assert len(set(specs.gpu_names())) == len(specs.gpu_names())


# --- loaders --------------------------------------------------------------------------
def test_loaders_return_cached_objects():
    assert specs.nvlink(4) is specs.nvlink(4)
    assert specs.pcie(5) is specs.pcie(5)
    assert specs.gpu("H100") is specs.gpu("H100")
    assert specs.nvlink_generations()[3] is specs.nvlink(4)
    assert specs.gpus()[0] is specs.gpu("V100")
    assert specs.nics()[0] is specs.nic("ConnectX-7")
    before = specs._gpu_table.cache_info().misses
    specs.gpus()
    specs.gpu("A100")
    assert specs._gpu_table.cache_info().misses == before


def test_list_loaders_return_fresh_lists():
    a = specs.gpus()
    a.clear()
    assert specs.gpus()


@pytest.mark.parametrize("call, param", [
    (lambda: specs.nvlink(6), "generation"),
    (lambda: specs.nvlink(0), "generation"),
    (lambda: specs.pcie(7), "generation"),
    (lambda: specs.gpu("H300"), "name"),
    (lambda: specs.gpu("h100"), "name"),
    (lambda: specs.gpu("H100", "PCIe"), "variant"),
    (lambda: specs.gpu("H100", 3), "variant"),
    (lambda: specs.gpu_variants("H300"), "name"),
    (lambda: specs.nic("ConnectX-9"), "name"),
    (lambda: specs.read_data_text("nope.csv"), "name"),
    (lambda: specs.read_data_text("../specs.py"), "name"),
    (lambda: specs.read_data_text(".hidden"), "name"),
])
def test_unknown_names_raise_value_error_naming_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


def test_read_data_text_reads_package_data():
    assert specs.read_data_text("nvlink.csv").startswith("generation,")


# --- where each number comes from -----------------------------------------------------
#: The assumption tables made of ``{value, kind, meaning, source, accessed}`` records:
#: every record must say what kind of number it is. nccl_model.yaml keeps plain values
#: with one kind and one source per block (checked below by block).
KIND_TABLES = tuple(t for t in specs.ASSUMPTION_TABLES if t != "nccl")
CSV_FILES = ("gpus.csv", "nvlink.csv", "pcie.csv", "nics.csv", "cpu_links.csv")


def _records(node, path=()):
    """Every ``{value, ...}`` record under ``node`` with its path. A plain value outside
    a record (``name: 3``, which would carry no kind or source) comes back as a record
    without ``kind`` so that the provenance check reports it."""
    if isinstance(node, dict) and "value" in node:
        yield "/".join(path), node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _records(v, path + (str(k),))
    else:
        yield "/".join(path), {"value": node}


def _assumption_records(tables=None):
    out = []
    for table in tables or KIND_TABLES:
        doc = yaml.safe_load(specs.read_data_text(specs.ASSUMPTION_TABLES[table]))
        out += [(table, path, rec) for path, rec in _records(doc)]
    return out


def _nccl_blocks(doc):
    """(block, kind, source, accessed) of every block of nccl_model.yaml: a top-level
    mapping; its kind and source sit inside it or beside it as ``<block>_kind`` and
    ``<block>_source``; its date inside it or the file's top-level ``accessed``."""
    return [(name, block.get("kind", doc.get(f"{name}_kind")),
             block.get("source", doc.get(f"{name}_source")),
             block.get("accessed", doc.get("accessed")))
            for name, block in doc.items() if isinstance(block, dict)]


def _check_provenance(where, kind, source, accessed):
    assert kind in specs.KINDS, f"{where}: kind {kind!r} not in {specs.KINDS}"
    assert isinstance(source, str) and source.strip(), f"{where}: empty source"
    assert isinstance(accessed, str), f"{where}: accessed must be an ISO date string"
    d = dt.date.fromisoformat(accessed)
    assert accessed == d.isoformat(), f"{where}: accessed {accessed!r} is not ISO"
    assert dt.date(2015, 1, 1) <= d <= dt.date(2030, 1, 1)


@pytest.mark.parametrize("name", CSV_FILES)
def test_every_csv_row_declares_kind_source_and_date(name):
    header = next(csv.reader(io.StringIO(specs.read_data_text(name))))
    assert "kind" in header and "source" in header and "accessed" in header
    for i, r in enumerate(_rows(name), start=2):
        _check_provenance(f"{name} line {i}", r["kind"], r["source"], r["accessed"])


def test_every_assumption_record_declares_kind_source_and_date():
    recs = _assumption_records()
    assert {t for t, _, _ in recs} == set(KIND_TABLES)
    assert len(recs) > 60                       # the walk found the records
    for table, path, rec in recs:
        _check_provenance(f"{table}:{path}", rec.get("kind"), rec.get("source"),
                          rec.get("accessed"))
        assert rec.get("meaning", "").strip(), f"{table}:{path}: no meaning"


def test_every_nccl_model_block_declares_kind_and_source():
    doc = yaml.safe_load(specs.read_data_text(specs.ASSUMPTION_TABLES["nccl"]))
    blocks = _nccl_blocks(doc)
    assert {b[0] for b in blocks} >= {"protocols", "transports", "nccl_tuning", "nvls",
                                      "audit", "nccl_source"}
    for name, kind, source, accessed in blocks:
        _check_provenance(f"nccl_model.yaml:{name}", kind, source, accessed)
    kinds = {b[0]: b[1] for b in blocks}
    assert kinds["nccl_source"] == "spec"       # read from NCCL's code
    assert kinds["nvls"] == "assumed"           # min_ranks: a public observation, applied


def test_provenance_checks_catch_a_record_without_kind(monkeypatch):
    """The walks above fail on a record that lacks ``kind``, on a bare value outside a
    record, and on an nccl_model.yaml block without a kind."""
    doc = {"a": {"value": 1, "meaning": "m", "source": "s", "accessed": "2026-12-01"},
           "b": {"c": 2}}
    found = dict(_records(doc))
    assert set(found) == {"a", "b/c"}
    for rec in found.values():
        with pytest.raises(AssertionError, match="kind"):
            _check_provenance("x", rec.get("kind"), rec.get("source"), rec.get("accessed"))
    nccl = {"accessed": "2026-12-01", "blk": {"x": 1}, "blk_source": "somewhere"}
    (_, kind, source, accessed), = _nccl_blocks(nccl)
    with pytest.raises(AssertionError, match="kind"):
        _check_provenance("blk", kind, source, accessed)
    real = specs.read_data_text
    monkeypatch.setattr(specs, "read_data_text", lambda name: real(name).replace(
        "  kind: assumed\n", "", 1) if name == "parallelism_assumptions.yaml" else real(name))
    with pytest.raises(AssertionError, match="kind"):
        test_every_assumption_record_declares_kind_source_and_date()


def test_kind_is_exposed_on_every_record():
    for g in (specs.gpus() + specs.nvlink_generations() + specs.pcie_generations()
              + specs.nics()):
        assert g.kind in specs.KINDS
    assert specs.gpu("H100", "PCIe 80GB").kind == "derived"     # nvlink_links derived
    assert specs.nvlink(3).kind == "spec" and specs.nvlink(4).kind == "derived"


def test_kind_check_catches_a_bad_row(monkeypatch):
    text = specs.read_data_text("pcie.csv").replace(",spec,", ",published,", 1)
    monkeypatch.setattr(specs, "read_data_text", lambda name: text)
    with pytest.raises(ValueError, match="kind must be one of"):
        specs._rows("pcie.csv")


def test_derived_rows_say_what_is_derived():
    """A derived or assumed row names the fields that are not spec in its source."""
    for name in CSV_FILES:
        for r in _rows(name):
            if r["kind"] in ("derived", "assumed"):
                assert "derived" in r["source"].lower() or "assum" in r["source"].lower(), r


def test_nvlink_derived_line_rates_reproduce_nvidia_smi():
    """The back-solved symbol rates and coding ratios give the nvidia-smi link rate
    (GB/s per direction) and, with the coding, the published data rate."""
    for g in specs.nvlink_generations():
        raw = g.symbol_rate * g.bits_per_symbol * g.lanes_per_direction / 8
        nominal = g.nominal_link_bandwidth.to_per_direction().bytes_per_s
        assert raw * g.coding_efficiency == pytest.approx(nominal, rel=1e-12)
        if g.nvidia_smi_link_gb_per_s is not None:
            assert raw / 1e9 == pytest.approx(g.nvidia_smi_link_gb_per_s, abs=5e-4)
        if g.coding_efficiency != 1:
            assert g.kind == "derived"


def test_ring_step_latency_is_the_model_prediction_it_says():
    """assumptions.yaml's ring_step_latency_s is derived from gpulab.collectives: a
    32 KiB all_reduce on hgx-h200 (8 GPUs, one process each, NVLS off) over 14 steps."""
    from gpulab import collectives
    t = collectives.predict("all_reduce", 32768, 8, system="hgx-h200", nvls=False,
                            gpus_per_process=1).time_scalar
    step = specs.assumption("course", "ring_step_latency_s")
    assert specs.assumption_record("course", "ring_step_latency_s")["kind"] == "derived"
    assert step == pytest.approx(t / 14, rel=0.02)


def test_h100_pcie_card_oracle():
    """NVIDIA H100 whitepaper / datasheet, H100 PCIe column: 756 dense BF16, 1513 dense
    FP8, 80 GB HBM2e at 2.0 TB/s, PCIe Gen5, NVLink bridge 600 GB/s = 12 NVLink4 links."""
    pcie, sxm = specs.gpu("H100", "PCIe 80GB"), specs.gpu("H100")
    assert sxm.variant == "SXM5 80GB" and specs.gpu_variants("H100")[0] == sxm.variant
    assert pcie.fp16_dense_flops == pytest.approx(756e12)
    assert pcie.fp8_dense_flops == pytest.approx(1513e12)
    assert (pcie.memory_bytes, pcie.memory_type, pcie.memory_bandwidth) == (
        80e9, "HBM2e", 2.0e12)
    assert pcie.pcie_generation == 5
    bridge = links.nvlink_gpu_bandwidth(pcie.nvlink_generation, pcie.nvlink_links)
    assert bridge.to_bidirectional().gb_per_s == pytest.approx(600.0)
    assert pcie.fp16_dense_flops / sxm.fp16_dense_flops == pytest.approx(756 / 989.4)


def test_nvls_threshold_keeps_nccls_rule_apart_from_the_observation():
    """The model's min_ranks is labelled an observation; NCCL's own rule (NVLS off at
    <= 2 GPUs, src/transport/nvls.cc) is recorded separately."""
    nv = specs.assumption_record("nccl", "nvls")
    assert nv["nccl_rule_min_gpus"] == 3
    assert "nvls.cc" in nv["nccl_rule_source"]
    assert "Observed" in nv["min_ranks_source"]
    assert nv["min_ranks"] >= nv["nccl_rule_min_gpus"]
