"""Oracles for gpulab.links written to kill the mutants the other link tests let live.

Expected values by hand: an NVLink4 lane runs 53.125 GBd PAM4 (2 bits per symbol), a link
has 2 lanes per direction and a 16/17 line code, so one link carries
53.125e9 × 2 × 2 × 16/17 / 8 = 25e9 B/s per direction (26.5625e9 raw).
"""
from __future__ import annotations

import pytest

from gpulab import links, units
from gpulab.units import Bandwidth, DirectionError

PD, BD = units.PER_DIRECTION, units.BIDIRECTIONAL


def test_nvlink_link_bandwidth_applies_the_line_code_by_default():
    assert links.nvlink_link_bandwidth(4).bytes_per_s == pytest.approx(25e9, rel=1e-12)
    assert links.nvlink_link_bandwidth(4, raw=True).bytes_per_s == pytest.approx(26.5625e9,
                                                                                 rel=1e-12)
    assert links.nvlink_gpu_bandwidth(4).bytes_per_s == pytest.approx(18 * 25e9, rel=1e-12)


def test_gpu_bandwidth_overflow_names_both_inputs():
    with pytest.raises(ValueError, match=r"^link, n_links: too large: the result overflows a "
                                         r"float \(not finite\) for link=1e\+308, "
                                         r"n_links=1024; give smaller values$"):
        links.gpu_bandwidth(Bandwidth(1e308, PD), 1024)


def test_rates_below_one_byte_per_second_are_rates():
    assert links.per_direction_rate(0.5) == 0.5
    assert links.transfer_time(1.0, 0.0, 0.5) == 2.0
    with pytest.raises(ValueError, match=r"^bandwidth must be > 0"):
        links.per_direction_rate(0.0)


def test_bidirectional_figure_is_refused_with_the_way_out():
    with pytest.raises(DirectionError, match=(
            r"^bandwidth must be per direction for a transfer time; got a bidirectional "
            r"figure\. Call \.to_per_direction\(\) first if the link is symmetric\.$")):
        links.transfer_time(1.0, 0.0, Bandwidth(1e9, BD))
