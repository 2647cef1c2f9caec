"""gpulab.systems: the checks and defaults of the YAML schema that the other tests let live.

Written to kill mutants of the loader (``parse``): each case is a small systems file built on
a preset with ``base:`` and states the outcome by hand (the value read, or the error with its
key path). ``parse`` is used rather than the cached presets, so every case reads its text anew.
"""
from __future__ import annotations

import dataclasses
import re

import pytest

from gpulab import systems

BASE = "systems:\n  s:\n    base: hgx-h200\n"


def _one(extra=""):
    """The system ``s`` of a file: the preset hgx-h200 with ``extra`` (YAML, 4 spaces)."""
    return systems.parse(BASE + extra)["s"]


def test_network_defaults_when_the_keys_are_absent():
    net = _one().network
    # hgx-h200's network section names neither topology nor oversubscription
    assert net.topology == "rail_optimized"
    assert net.oversubscription == 1.0


@pytest.mark.parametrize("value, ok", [(1000.0, True), (1000.5, False), (0.5, False)])
def test_oversubscription_is_checked_against_1_to_1000(value, ok):
    text = f"    network: {{oversubscription: {value}}}\n"
    if ok:
        assert _one(text).network.oversubscription == value
    else:
        with pytest.raises(ValueError, match=re.escape(
                f"s.network.oversubscription: must be a number in [1.0, 1000.0]; "
                f"got {value}")):
            _one(text)


def test_a_null_nic_without_a_rate_names_the_nic_key():
    with pytest.raises(ValueError, match=re.escape(
            "systems.s.network.nic: is null: give the NIC's rate in nic_gbit_per_s")):
        _one("    network: {nic: null}\n")


def test_a_null_nic_with_a_rate_is_read():
    net = _one("    network: {nic: null, nic_gbit_per_s: 200.0}\n").network
    assert net.nic is None
    assert net.nic_gbit_per_s == 200.0


def test_fabric_none_with_a_larger_domain_names_domain_gpus():
    with pytest.raises(ValueError, match=re.escape(
            "systems.s.nvlink.domain_gpus: must be 1 when fabric is 'none'; got 8")):
        _one("    nvlink: {generation: null, links_per_gpu: 0, fabric: none, nvls: false,"
             " domain_gpus: 8}\n")


def test_a_system_name_with_a_colon_is_refused_on_its_line():
    with pytest.raises(ValueError, match="^" + re.escape(
            "<text>: line 2: systems.a:b: system names must be text without ':'") + "$"):
        systems.parse("systems:\n  'a:b': {}\n")


def test_the_knee_bandwidth_has_an_upper_bound():
    # 1e6 GB/s is the loader's bound for every copy bandwidth
    with pytest.raises(ValueError, match=re.escape(
            "copy_hardware.h2d_pageable.bandwidth_above_knee_gb_per_s: must be a number "
            "in (0.0, 1000000.0]; got 2000000.0")):
        _one("    copy_hardware: {h2d_pageable: {bandwidth_above_knee_gb_per_s: 2000000.0}}\n")


def test_a_collective_model_may_give_one_protocol_and_one_transport():
    cm = _one("    collective_model:\n"
              "      source: hand-written\n"
              "      protocols: {LL: {bandwidth: 0.5}}\n"
              "      transports: {shm: {fill: 0.25}}\n").collective_model
    assert cm["source"] == "hand-written"
    assert cm["protocols"] == {"LL": {"bandwidth": 0.5}}
    assert cm["transports"] == {"shm": {"fill": 0.25}}


def test_a_copy_key_absent_from_the_section_lists_the_keys_it_has():
    # the loader requires all eight copies; a section built in code may hold fewer
    full = _one().copy_hardware
    assert [k for k, _ in full.copies][-2:] == ["d2d", "p2p"]
    hw = dataclasses.replace(full, copies=full.copies[-2:])
    want = "key 'h2d_pinned': not in this copy_hardware section (has d2d, p2p)"
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        hw.params("h2d_pinned")
