"""The EP explorer (expert parallelism and disaggregated serving chapter), driven
headless: every control reaches ``gpulab.inference.ep.moe_calls`` and changes the image;
a state the model refuses clears the figure and says why; the initial state is the
model's dispatch and combine at the factory's defaults."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

from gpulab import widgets  # noqa: E402
from gpulab.inference import ep  # noqa: E402
from tests.recorder import Recorder, check_explorer_factory  # noqa: E402


@pytest.fixture
def calls(monkeypatch):
    return Recorder(monkeypatch, ep, "moe_calls")


def test_ep_explorer_is_a_registered_factory():
    w = check_explorer_factory("ep")
    assert "Dispatch" in w.summary.value and "DeepEP" in w.summary.value


def test_initial_state_is_the_model():
    w = widgets.ep_explorer()
    want = ep.moe_calls("hgx-h200", 32, 128, "low_latency_nvlink")
    assert w.pair == want
    # two bars per call (NVLink and RDMA legs) after the fixed cost: 8 patches
    widths = sorted(round(p.get_width(), 6) for p in w.view.ax.patches)
    legs = sorted(round(x, 6) for _, d in want for x in (d.latency * 1e6, d.latency * 1e6,
                                                         d.nvlink_time * 1e6,
                                                         d.rdma_time * 1e6))
    assert widths == pytest.approx(legs)


@pytest.mark.parametrize("name, value, arg", [
    ("system", "gb200-nvl72", "system"), ("kernel", "normal", "kernel"),
    ("ep", 16, "ep"), ("tokens", 4096, "tokens")])
def test_each_control_reaches_the_model(calls, name, value, arg):
    w = widgets.ep_explorer()
    before = bytes(w.view.image.value)
    w.controls[name].value = value
    assert calls.last[arg] == value
    assert w.message.value == ""
    assert bytes(w.view.image.value) != before


def test_refused_state_clears_the_figure_and_says_why():
    w = widgets.ep_explorer(system="gb200-nvl72")
    w.controls["ep"].value = 128                  # not a multiple of the 72-GPU domain
    assert "gpus_per_node" in w.message.value and "Traceback" not in w.message.value
    assert w.pair is None and w.summary.value == ""
    assert not w.view.ax.patches
    w.controls["ep"].value = 64                   # back inside the domain
    assert w.message.value == "" and w.pair is not None and w.view.ax.patches


def test_bad_factory_argument_names_the_parameter():
    with pytest.raises(ValueError, match="tokens must be one of"):
        widgets.ep_explorer(tokens=3)
    with pytest.raises(ValueError, match="system must be one of"):
        widgets.ep_explorer(system="h100-pcie")
