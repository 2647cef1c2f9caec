"""Oracles for gpulab.pcie's link model (pcie/link.py), written to kill surviving mutants.

Expected values are worked out by hand from the PCIe base specifications as the course data
records them (gpulab/data/pcie.csv, pcie_protocol.yaml): Gen5 runs 32 GT/s per lane with
128b/130b coding, Gen2 5 GT/s with 8b/10b, Gen6 is FLIT mode (236 TLP bytes in a 256-byte
flit, no line coding). A non-FLIT TLP costs framing + sequence number + header + LCRC
(Gen3-5: 4 + 0 + h + 4; Gen1-2: 2 + 2 + h + 4), and the DLLPs take 3% of the link.
"""
from __future__ import annotations

import pytest

from gpulab import pcie, units

PD = units.PER_DIRECTION


def test_raw_rate_is_transfer_rate_times_lanes_over_eight():
    assert pcie.raw_bandwidth(5) == units.Bandwidth(32e9 * 16 / 8, PD)       # 64 GB/s
    assert pcie.raw_bandwidth(3, 4).bytes_per_s == 8e9 * 4 / 8
    assert pcie.raw_bandwidth(1, 1).bytes_per_s == 2.5e9 / 8
    assert pcie.raw_bandwidth(6, 32).bytes_per_s == 64e9 * 32 / 8
    assert pcie.raw_bandwidth(5).direction == PD


def test_encoded_rate_applies_the_line_code():
    assert pcie.encoded_bandwidth(5).bytes_per_s == pytest.approx(64e9 * 128 / 130, rel=1e-12)
    assert pcie.encoded_bandwidth(2, 8).bytes_per_s == pytest.approx(5e9 * 8 / 8 * 0.8,
                                                                      rel=1e-12)
    assert pcie.encoded_bandwidth(6, 16).bytes_per_s == pytest.approx(128e9, rel=1e-12)


@pytest.mark.parametrize("gen, header, ecrc, expected", [
    (5, None, False, 4 + 0 + 16 + 4),       # default: a 4-DW memory-write header
    (5, 12, False, 4 + 0 + 12 + 4),
    (5, None, True, 4 + 0 + 16 + 4 + 4),    # plus ECRC
    (3, 16, False, 4 + 0 + 16 + 4),
    (2, 12, False, 2 + 2 + 12 + 4),
    (1, 16, True, 2 + 2 + 16 + 4 + 4),
    (6, None, False, 16),                    # FLIT: framing, sequence and LCRC live in the flit
    (6, 12, True, 12 + 4),
])
def test_tlp_overhead_bytes(gen, header, ecrc, expected):
    assert pcie.tlp_overhead_bytes(gen, header_bytes=header, ecrc=ecrc) == expected


def test_tlp_overhead_default_generation_is_five():
    assert pcie.tlp_overhead_bytes() == 24
    assert pcie.tlp_overhead_bytes(header_bytes=12.0) == 20       # an integral float is accepted


def test_tlp_efficiency_by_hand():
    assert pcie.tlp_efficiency() == pytest.approx(256 / (256 + 24) * 0.97, rel=1e-12)
    assert pcie.tlp_efficiency(128, generation=5) == pytest.approx(128 / 152 * 0.97, rel=1e-12)
    # a read completion carries a 3-DW header
    assert pcie.tlp_efficiency(512, read_completion=True) == pytest.approx(
        512 / (512 + 20) * 0.97, rel=1e-12)
    assert pcie.tlp_efficiency(256, header_bytes=12, read_completion=True) == pytest.approx(
        256 / 276 * 0.97, rel=1e-12)
    assert pcie.tlp_efficiency(256, ecrc=True) == pytest.approx(256 / 284 * 0.97, rel=1e-12)
    assert pcie.tlp_efficiency(256, dllp_overhead=0.0) == pytest.approx(256 / 280, rel=1e-12)
    assert pcie.tlp_efficiency(256, dllp_overhead=0.5) == pytest.approx(256 / 280 / 2, rel=1e-12)
    # Gen6 FLIT: no DLLP share by default, 236 of 256 flit bytes carry TLPs
    assert pcie.tlp_efficiency(256, generation=6) == pytest.approx(256 / 272 * 236 / 256,
                                                                   rel=1e-12)
    assert pcie.tlp_efficiency(256, generation=2) == pytest.approx(256 / 280 * 0.97, rel=1e-12)


def test_effective_bandwidth_is_the_product():
    want = 32e9 * 16 / 8 * 128 / 130 * 256 / 280 * 0.97
    assert pcie.effective_bandwidth(5).bytes_per_s == pytest.approx(want, rel=1e-12)
    want8 = 16e9 * 8 / 8 * 128 / 130 * 512 / 532 * 0.97
    assert pcie.effective_bandwidth(4, 8, 512, read_completion=True).bytes_per_s == \
        pytest.approx(want8, rel=1e-12)
    assert pcie.effective_bandwidth(5, 16, 256, ecrc=True, dllp_overhead=0.0,
                                    header_bytes=12).bytes_per_s == \
        pytest.approx(64e9 * 128 / 130 * 256 / (4 + 0 + 12 + 4 + 4 + 256), rel=1e-12)


def test_protocol_constants():
    assert pcie.protocol_constant("lcrc_bytes") == 4
    assert pcie.protocol_constant("header_bytes") == [12, 16]
    assert isinstance(pcie.protocol_constant("link_widths"), list)
    info = pcie.protocol_info("ecrc_bytes")
    assert info["value"] == 4
    info["value"] = 99                     # a copy: the data stays as it was
    assert pcie.protocol_constant("ecrc_bytes") == 4
    with pytest.raises(ValueError, match=r"^name must name a constant of pcie_protocol\.yaml "
                                         r"\(a record with a value\), not a group; "
                                         r"got 'framing_bytes'$"):
        pcie.protocol_info("framing_bytes")


def test_bad_values_name_the_parameter_and_the_choices():
    with pytest.raises(ValueError, match=r"^lanes must be one of 1, 2, 4, 8, 12, 16, 32; "
                                         r"got 3$"):
        pcie.raw_bandwidth(5, 3)
    with pytest.raises(ValueError, match=r"^max_payload_bytes must be one of 128, 256, 512, "
                                         r"1024, 2048, 4096; got 256\.5$"):
        pcie.tlp_efficiency(256.5)
    with pytest.raises(ValueError, match=r"^max_payload_bytes must be one of .*; got True$"):
        pcie.tlp_efficiency(True)
    with pytest.raises(ValueError, match=r"^header_bytes must be one of 12, 16; got 8$"):
        pcie.tlp_overhead_bytes(5, header_bytes=8)
    with pytest.raises(ValueError, match=r"^header_bytes must be one of 12, 16; got 20$"):
        pcie.tlp_efficiency(256, header_bytes=20)
    with pytest.raises(ValueError, match=r"^ecrc must be True or False; got 1$"):
        pcie.tlp_overhead_bytes(5, ecrc=1)
    with pytest.raises(ValueError, match=r"^read_completion must be True or False; got 'no'$"):
        pcie.tlp_efficiency(256, read_completion="no")
    with pytest.raises(ValueError, match=r"^header_bytes must be 12 for read completions "
                                         r"\(a completion header is 3 DW\); got 16$"):
        pcie.tlp_efficiency(256, header_bytes=16, read_completion=True)
    with pytest.raises(ValueError, match=r"^dllp_overhead must be"):
        pcie.tlp_efficiency(256, dllp_overhead=0.6)
    with pytest.raises(ValueError, match=r"^dllp_overhead must be"):
        pcie.tlp_efficiency(256, dllp_overhead=-0.01)
    assert pcie.raw_bandwidth(5, 16.0).bytes_per_s == 64e9
    assert pcie.tlp_efficiency(4096) == pytest.approx(4096 / 4120 * 0.97, rel=1e-12)


def test_staged_copy_is_two_steps_in_series():
    # 1/B = 1/B_pinned + 1/B_memcpy: 60 and 30 GB/s give 20 GB/s
    pinned = units.Bandwidth(60e9, PD)
    assert pcie.staged_bandwidth(pinned, 30e9) == units.Bandwidth(20e9, PD)
    with pytest.raises(units.DirectionError, match=(
            r"^pinned_bandwidth must be per direction; got a bidirectional figure\. Call "
            r"\.to_per_direction\(\) first if the link is symmetric\.$")):
        pcie.staged_bandwidth(pinned.to_bidirectional(), 30e9)


def test_copy_latency_defaults_to_the_hgx_h200():
    assert pcie.copy_latency(1e6) == pcie.copy_latency(1e6, "h2d", memory="pinned",
                                                       system="hgx-h200")
