"""PCIe link rates, TLP efficiency and the host<->device copy model.

Oracles are computed here from the specification formulas with the constants typed
in this file (not read from gpulab/data), so a wrong data file cannot pass.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from strategies import latencies, per_direction_bandwidths, sizes

from gpulab import links, measurements, pcie, specs, systems
from gpulab.units import GB, Bandwidth, DirectionError, GiB, KiB, MiB

PD = "per_direction"

# Spec-derived constants of the oracles (PCI-SIG base specifications).
GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 1.0}
TLP_WRAP = 8            # framing + sequence number + LCRC around the header, Gen1-5
DLLP = 0.03             # documented default share of DLLPs and SKP ordered sets
MPS = (128, 256, 512, 1024, 2048, 4096)
WIDTHS = (1, 2, 4, 8, 12, 16, 32)


# --- link rates ---------------------------------------------------------------------------
def test_gen5_x16_encoded_oracle():
    bw = pcie.encoded_bandwidth(5, 16)
    assert bw.direction == PD
    assert bw.bytes_per_s == pytest.approx(32e9 * 16 * 128 / 130 / 8, rel=1e-15)
    assert round(bw.gb_per_s, 1) == 63.0                # source-facts item 24


def test_nvidia_128_gb_s_is_raw_bidirectional():
    raw = pcie.raw_bandwidth(5, 16)
    assert raw.gb_per_s == 64.0                          # H100 whitepaper 4.7.3
    assert raw.to_bidirectional().gb_per_s == 128.0
    # ... and the encoded bidirectional figure is less than NVIDIA's round number
    assert pcie.encoded_bandwidth(5).to_bidirectional().gb_per_s == pytest.approx(
        126.03, abs=0.01)


@pytest.mark.parametrize("gen", sorted(GT_PER_S))
@pytest.mark.parametrize("lanes", WIDTHS)
def test_raw_and_encoded_oracles_every_generation_and_width(gen, lanes):
    raw = pcie.raw_bandwidth(gen, lanes)
    enc = pcie.encoded_bandwidth(gen, lanes)
    assert raw.bytes_per_s == pytest.approx(GT_PER_S[gen] * 1e9 * lanes / 8, rel=1e-15)
    assert enc.bytes_per_s == pytest.approx(raw.bytes_per_s * ENCODING[gen], rel=1e-15)
    assert raw.direction == enc.direction == PD


def test_gen1_gen2_use_8b10b():
    assert pcie.encoded_bandwidth(1, 1).bytes_per_s == pytest.approx(250e6)
    assert pcie.encoded_bandwidth(2, 1).bytes_per_s == pytest.approx(500e6)
    assert pcie.encoded_bandwidth(1, 16).gb_per_s == pytest.approx(4.0)


@pytest.mark.parametrize("gen", [1, 3, 4])
def test_each_generation_doubles_except_gen2_to_gen3(gen):
    ratio = pcie.encoded_bandwidth(gen + 1) / pcie.encoded_bandwidth(gen)
    assert ratio == pytest.approx(2.0, rel=1e-15)
    assert pcie.raw_bandwidth(gen + 1) / pcie.raw_bandwidth(gen) == pytest.approx(2.0)


def test_gen6_doubles_the_raw_rate_and_drops_line_encoding():
    assert pcie.raw_bandwidth(6) / pcie.raw_bandwidth(5) == pytest.approx(2.0)
    assert pcie.encoded_bandwidth(6) / pcie.encoded_bandwidth(5) == pytest.approx(
        2 * 130 / 128)


def test_gen3_to_gen5_quadruples():
    assert pcie.encoded_bandwidth(5) / pcie.encoded_bandwidth(3) == pytest.approx(4.0)


def test_gen2_to_gen3_is_less_than_double_of_raw_but_nearly_double_encoded():
    raw = pcie.raw_bandwidth(3) / pcie.raw_bandwidth(2)
    enc = pcie.encoded_bandwidth(3) / pcie.encoded_bandwidth(2)
    assert raw == pytest.approx(1.6)                     # 8 vs 5 GT/s
    assert enc == pytest.approx(8 * 128 / 130 / (5 * 0.8))   # 128b/130b pays back


@given(st.sampled_from(sorted(GT_PER_S)), st.sampled_from(WIDTHS),
       st.sampled_from(WIDTHS))
def test_bandwidth_linear_in_lanes(gen, a, b):
    ra, rb = pcie.encoded_bandwidth(gen, a), pcie.encoded_bandwidth(gen, b)
    assert ra.bytes_per_s * b == pytest.approx(rb.bytes_per_s * a, rel=1e-12)


# --- TLP efficiency -----------------------------------------------------------------------
def _oracle(p, header=16, dllp=DLLP, ecrc=0):
    return p / (p + TLP_WRAP + header + ecrc) * (1 - dllp)


@pytest.mark.parametrize("p, expected", [
    (128, 128 / 152 * 0.97), (256, 256 / 280 * 0.97), (512, 512 / 536 * 0.97)])
def test_tlp_efficiency_oracles_gen5_default(p, expected):
    assert pcie.tlp_efficiency(p) == pytest.approx(expected, rel=1e-12)
    assert pcie.tlp_efficiency(p) == pytest.approx(_oracle(p), rel=1e-12)


@pytest.mark.parametrize("gen", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("p", MPS)
@pytest.mark.parametrize("header", [12, 16])
@pytest.mark.parametrize("ecrc", [False, True])
def test_tlp_efficiency_formula_all_non_flit(gen, p, header, ecrc):
    got = pcie.tlp_efficiency(p, generation=gen, header_bytes=header, ecrc=ecrc)
    assert got == pytest.approx(_oracle(p, header, ecrc=4 * ecrc), rel=1e-12)


def test_intel_an456_posted_write_example():
    # AN 456: 256-byte payload, 3-DW header, five dwords of overhead -> 92 %
    eff = pcie.tlp_efficiency(256, header_bytes=12, dllp_overhead=0)
    assert eff == pytest.approx(256 / 276, rel=1e-12)
    assert round(eff * 100) == 93 and int(eff * 100) == 92


def test_tlp_overhead_is_header_plus_8_in_both_framing_families():
    for gen in (1, 2, 3, 4, 5):
        assert pcie.tlp_overhead_bytes(gen, header_bytes=12) == 20
        assert pcie.tlp_overhead_bytes(gen, header_bytes=16) == 24
        assert pcie.tlp_overhead_bytes(gen, header_bytes=16, ecrc=True) == 28
    assert pcie.tlp_overhead_bytes(6, header_bytes=16) == 16     # flit: header only


def test_source_facts_25_ranges():
    # ~91-93 % with 256 B max payload before DLLPs, ~95 % at 512 B
    for h in (12, 16):
        assert 0.91 <= pcie.tlp_efficiency(256, header_bytes=h, dllp_overhead=0) <= 0.93
        assert 0.95 <= pcie.tlp_efficiency(512, header_bytes=h, dllp_overhead=0) <= 0.97
    assert pcie.tlp_efficiency(256) == pytest.approx(0.887, abs=5e-4)


@pytest.mark.parametrize("p", MPS)
def test_flit_mode_oracle(p):
    expected = 236 / 256 * p / (p + 16)         # PCI-SIG 6.0: 236 of 256 flit bytes
    assert pcie.tlp_efficiency(p, generation=6) == pytest.approx(expected, rel=1e-12)
    assert pcie.tlp_efficiency(p, generation=6, header_bytes=12, ecrc=True) == \
        pytest.approx(236 / 256 * p / (p + 16), rel=1e-12)


def test_flit_constants_add_up():
    f = {k: pcie.protocol_constant(f"flit.{k}")
         for k in ("flit_bytes", "tlp_bytes", "dlp_bytes", "crc_bytes", "fec_bytes")}
    assert f == {"flit_bytes": 256, "tlp_bytes": 236, "dlp_bytes": 6, "crc_bytes": 8,
                 "fec_bytes": 6}
    assert f["tlp_bytes"] + f["dlp_bytes"] + f["crc_bytes"] + f["fec_bytes"] == 256


def test_read_completion_uses_3dw_header():
    assert pcie.tlp_efficiency(256, read_completion=True) == pytest.approx(
        _oracle(256, header=12), rel=1e-12)
    with pytest.raises(ValueError, match="header_bytes"):
        pcie.tlp_efficiency(256, read_completion=True, header_bytes=16)


@given(st.sampled_from(MPS), st.sampled_from(MPS), st.sampled_from(sorted(GT_PER_S)),
       st.sampled_from([12, 16]), st.booleans(),
       st.floats(0, 0.5, allow_nan=False))
def test_tlp_efficiency_monotonic_in_payload(a, b, gen, header, ecrc, dllp):
    assume(a < b)
    kw = dict(generation=gen, header_bytes=header, ecrc=ecrc, dllp_overhead=dllp)
    ea, eb = pcie.tlp_efficiency(a, **kw), pcie.tlp_efficiency(b, **kw)
    assert 0 < ea < eb < 1


@given(st.sampled_from(MPS), st.sampled_from(sorted(GT_PER_S)),
       st.floats(0, 0.5, allow_nan=False), st.floats(0, 0.5, allow_nan=False))
def test_tlp_efficiency_decreases_with_overheads(p, gen, d1, d2):
    assume(d1 + 1e-9 < d2)
    assert pcie.tlp_efficiency(p, generation=gen, dllp_overhead=d1) > \
        pcie.tlp_efficiency(p, generation=gen, dllp_overhead=d2)
    assert pcie.tlp_efficiency(p, generation=gen, header_bytes=12) > \
        pcie.tlp_efficiency(p, generation=gen, header_bytes=16)
    assert pcie.tlp_efficiency(p, generation=gen, ecrc=False) > \
        pcie.tlp_efficiency(p, generation=gen, ecrc=True)


@given(st.sampled_from(sorted(GT_PER_S)), st.sampled_from(WIDTHS), st.sampled_from(MPS))
def test_effective_is_encoded_times_efficiency(gen, lanes, p):
    eff = pcie.effective_bandwidth(gen, lanes, p)
    assert eff.direction == PD
    assert eff.bytes_per_s == pytest.approx(
        pcie.encoded_bandwidth(gen, lanes).bytes_per_s
        * pcie.tlp_efficiency(p, generation=gen), rel=1e-12)
    assert eff < pcie.encoded_bandwidth(gen, lanes) <= pcie.raw_bandwidth(gen, lanes)


def test_protocol_ceiling_explains_the_measured_88_percent():
    run = measurements.copy_bandwidth()
    enc = pcie.encoded_bandwidth(5)
    for kind in ("h2d_pinned", "d2h_pinned"):
        plateau = run.peak(kind)
        share = plateau / enc
        assert 0.86 <= share <= 0.90                    # "~88 % of 63.0"
        # the protocol ceiling (MPS 256, 4-DW header, 3 % DLLPs) is within 2 %
        assert plateau / pcie.effective_bandwidth(5) == pytest.approx(1.0, abs=0.02)


def test_every_protocol_constant_has_source_and_date():
    raw = yaml.safe_load(specs.read_data_text("pcie_protocol.yaml"))
    names = []

    def walk(tree, prefix):
        for k, v in tree.items():
            if isinstance(v, dict) and "value" in v:
                names.append(prefix + k)
            else:
                walk(v, prefix + k + ".")
    walk(raw, "")
    assert len(names) >= 15
    for n in names:
        info = pcie.protocol_info(n)
        assert set(info) == {"value", "kind", "meaning", "source", "accessed"}, n
        assert info["source"].strip() and info["meaning"].strip(), n
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", info["accessed"]), n


def test_no_protocol_numbers_typed_in_the_module():
    import inspect

    code = inspect.getsource(pcie)
    body = re.sub(r'(?s)""".*?"""|r""".*?"""|#[^\n]*', "", code)
    for number in ("236", "128 / 130", "0.03", " 20)", "4096"):
        assert number not in body, number


# --- copy model ---------------------------------------------------------------------------
@given(sizes, latencies, per_direction_bandwidths())
def test_host_copy_time_without_floor_is_alpha_beta(s, a, bw):
    assert pcie.host_copy_time(s, a, bw) == links.transfer_time(s, a, bw)


@given(latencies, per_direction_bandwidths(), latencies)
def test_host_copy_time_limits(a, bw, floor):
    assert pcie.host_copy_time(0, a, bw, issue_floor=floor) == max(a, floor)
    big = 1e7 * bw.bytes_per_s * max(a, floor) + 1e6
    t = pcie.host_copy_time(big, a, bw, issue_floor=floor)
    assert big / t == pytest.approx(bw.bytes_per_s, rel=1e-6)     # bandwidth-bound


@given(st.lists(sizes, min_size=2, max_size=20), latencies, per_direction_bandwidths(),
       latencies)
def test_host_copy_time_monotonic_and_broadcasts(ss, a, bw, floor):
    ss = np.sort(np.array(ss))
    t = pcie.host_copy_time(ss, a, bw, issue_floor=floor)
    assert t.shape == ss.shape
    assert np.all(np.diff(t) >= 0) and np.all(t >= floor)


def test_host_copy_time_refuses_bidirectional():
    with pytest.raises(DirectionError):
        pcie.host_copy_time(1e6, 1e-6, Bandwidth(1e9, "bidirectional"))


@given(per_direction_bandwidths(), per_direction_bandwidths())
def test_staged_bandwidth_properties(b, m):
    s = pcie.staged_bandwidth(b, m)
    assert s.direction == PD
    assert s.bytes_per_s <= min(b.bytes_per_s, m.bytes_per_s) * (1 + 1e-12)
    assert s.bytes_per_s == pytest.approx(1 / (1 / b.bytes_per_s + 1 / m.bytes_per_s))
    assert s.isclose(pcie.staged_bandwidth(m, b), rel_tol=1e-12)


def test_staged_bandwidth_tends_to_pinned():
    b = Bandwidth(55e9, PD)
    assert pcie.staged_bandwidth(b, 1e18).bytes_per_s == pytest.approx(55e9, rel=1e-6)


@pytest.mark.parametrize("name", systems.names())
def test_copy_bandwidth_of_every_preset(name):
    s = systems.get(name)
    enc = pcie.encoded_bandwidth(s.pcie.generation, s.pcie.lanes)
    for d in ("h2d", "d2h"):
        pinned = pcie.copy_bandwidth(d, system=name)
        pageable = pcie.copy_bandwidth(d, memory="pageable", system=name)
        assert pinned.bytes_per_s == pytest.approx(
            s.host_copy.params("pinned", d).efficiency * enc.bytes_per_s)
        assert pageable < pinned < pcie.effective_bandwidth(5) * 1.01
    p2p = pcie.copy_bandwidth("p2p", system=name)
    if s.p2p.via == "nvlink":
        nominal = links.nvlink_gpu_bandwidth(s.nvlink.generation,
                                             s.nvlink_links_to_peer)
    else:
        nominal = enc
    assert p2p.bytes_per_s == pytest.approx(s.p2p.params.efficiency * nominal.bytes_per_s)


def test_copy_time_agrees_with_host_copy_time_and_accepts_system_objects():
    s = systems.get("dgx-h100")
    sizes_ = np.array([8.0, 64 * KiB, 16 * MiB, GiB])
    t = pcie.copy_time(sizes_, "d2h", system=s)
    prm = s.host_copy.params("pinned", "d2h")
    expected = pcie.host_copy_time(sizes_, prm.latency_s,
                                   pcie.copy_bandwidth("d2h", system=s),
                                   issue_floor=prm.issue_floor_s)
    np.testing.assert_allclose(t, expected)
    assert pcie.copy_time(GiB, "d2h", system="dgx-h100") == pytest.approx(t[-1])


def test_nvlink_p2p_is_much_faster_than_pcie_p2p():
    big = 1 * GiB
    nv = pcie.copy_time(big, "p2p", system="dgx-h100")
    pc = pcie.copy_time(big, "p2p", system="h100-pcie")
    assert pc / nv > 5                                     # ~378 vs ~53 GB/s


def test_p2p_refuses_pageable_memory():
    with pytest.raises(ValueError, match="memory"):
        pcie.copy_time(1e6, "p2p", memory="pageable")


# --- calibration --------------------------------------------------------------------------
@given(st.floats(1e-7, 1e-4), st.floats(1e9, 1e12), st.floats(1e-6, 1e-4))
def test_calibrate_copy_recovers_synthetic_parameters(alpha, rate, floor):
    s = np.array([2.0**k for k in range(10, 34, 2)])
    t = np.maximum(floor, alpha + s / rate)
    assume(np.sum(t >= 2 * t.min()) >= 2)
    fit = pcie.calibrate_copy(s, t)
    assert fit.bandwidth.bytes_per_s == pytest.approx(rate, rel=1e-6)
    assert fit.latency == pytest.approx(alpha, rel=1e-4, abs=1e-12)
    model = pcie.host_copy_time(s, fit.latency, fit.bandwidth,
                                issue_floor=fit.issue_floor)
    big = t >= 2 * t.min()
    np.testing.assert_allclose(model[big], t[big], rtol=1e-6)


def test_calibrate_copy_needs_bandwidth_bound_points():
    with pytest.raises(ValueError, match="times"):
        pcie.calibrate_copy([1e3, 1e4, 1e5], [1e-5, 1.1e-5, 1.2e-5])


def test_calibrate_copies_reproduces_systems_yaml():
    cal = pcie.calibrate_copies()
    s = systems.get("h200-x2-measured")
    for mem in ("pinned", "pageable"):
        for d in ("h2d", "d2h"):
            prm, c = s.host_copy.params(mem, d), cal[mem][d]
            assert prm.latency_s == pytest.approx(c["latency_s"], rel=2e-3)
            assert prm.issue_floor_s == pytest.approx(c["issue_floor_s"], rel=2e-3)
            if mem == "pinned":
                assert prm.efficiency == pytest.approx(c["efficiency"], rel=2e-3)
            else:
                assert prm.host_memcpy_bandwidth.gb_per_s == pytest.approx(
                    c["host_memcpy_gb_per_s"], rel=2e-3)
    assert s.p2p.params.efficiency == pytest.approx(cal["p2p"]["efficiency"], rel=2e-3)
    assert s.p2p.params.latency_s == pytest.approx(cal["p2p"]["latency_s"], rel=2e-3)
    assert s.p2p.params.issue_floor_s == pytest.approx(cal["p2p"]["issue_floor_s"],
                                                       rel=2e-3)
    assert "calibrate_copies" in s.host_copy.source and "calibrate_copies" in \
        s.p2p.source


# Model-vs-measured error bands (worst |model - measured| / measured), asserted and
# printed (pytest -s) for the chapter's closing note.
BANDS = {  # kind: (system kind, memory, worst >= 1 MiB, worst < 1 MiB)
    "h2d_pinned": ("h2d", "pinned", 0.10, 0.25),
    "d2h_pinned": ("d2h", "pinned", 0.10, 0.25),
    "h2d_pageable": ("h2d", "pageable", 0.15, 1.0),
    "d2h_pageable": ("d2h", "pageable", 0.15, 1.5),
}


def _errors(kind, copy_kind, memory):
    run = measurements.copy_bandwidth()
    s, t = run.kinds[kind][0], run.times[kind]
    model = pcie.copy_time(s, copy_kind, memory=memory, system="h200-x2-measured")
    return s, (model - t) / t


@pytest.mark.parametrize("kind", sorted(BANDS))
def test_model_reproduces_measured_copies(kind):
    copy_kind, memory, tol_big, tol_small = BANDS[kind]
    s, err = _errors(kind, copy_kind, memory)
    big = s >= MiB
    worst_big, worst_small = np.abs(err[big]).max(), np.abs(err[~big]).max()
    print(f"{kind}: worst error >= 1 MiB {worst_big:.1%}, < 1 MiB {worst_small:.1%}")
    assert worst_big <= tol_big
    assert worst_small <= tol_small
    # the plateau (largest copy) within 3 %
    assert abs(err[-1]) <= 0.03


def test_model_reproduces_measured_p2p_plateau():
    s, err = _errors("p2p", "p2p", "pinned")
    print("p2p errors by size:", {int(a): f"{e:+.0%}" for a, e in zip(s, err)})
    assert np.abs(err[s >= 64 * MiB]).max() <= 0.10      # bandwidth-bound sizes
    assert np.abs(err[s < MiB]).max() <= 0.25            # issue-bound sizes


def test_measured_plateaus_match_the_brief():
    run = measurements.copy_bandwidth()
    assert run.peak("h2d_pinned").gb_per_s == pytest.approx(55.5, abs=0.5)
    assert run.peak("h2d_pageable").gb_per_s == pytest.approx(18.9, abs=1.0)
    assert run.peak("d2h_pageable").gb_per_s == pytest.approx(14.6, abs=1.5)
    assert pcie.copy_bandwidth("h2d", system="h200-x2-measured").gb_per_s == \
        pytest.approx(run.peak("h2d_pinned").gb_per_s, rel=0.01)


def test_gb_is_decimal():
    # Gen5 x16 by hand: 32 GT/s x 16 lanes x 128/130 / 8 bits = 63.015... x 1e9 B/s per
    # direction (GB = 1e9 B, not 2**30: that would print 58.69)
    bw = pcie.encoded_bandwidth(5)
    assert bw.direction == "per_direction"
    assert bw.bytes_per_s == pytest.approx(63.01538461538461e9, rel=1e-12)
    assert bw.gb_per_s == pytest.approx(63.01538461538461, rel=1e-12)
    assert GB == 1e9
