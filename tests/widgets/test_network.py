"""Beyond one server: the network explorer, driven headless.

Every control must reach ``gpulab.network.scale_out`` as the model's own values (the
cluster preset's name, a node count, ``"8x400G"``-style NICs or None for the preset's,
a fabric name or None), the message size must reach the plot as bytes, the image must
change, and the initial state must equal the chapter's static figure (built here as
``book/scale_out.md`` builds it). Published points are those of
``gpulab/data/measurements/public_multinode.csv`` for the same configuration.
"""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import collectives, network, plotting, units, widgets  # noqa: E402
from tests.recorder import Recorder, check_explorer_factory  # noqa: E402

GIB = 2 ** 30


@pytest.fixture
def scale(monkeypatch):
    return Recorder(monkeypatch, network, "scale_out")


def _png(w):
    return bytes(w.view.image.value)


def test_factory_and_registration():
    w = check_explorer_factory("network")
    assert "network" in widgets.EXPLORER_NAMES
    c = w.controls
    assert (c["cluster"].value, c["nodes"].value, c["nics"].value, c["fabric"].value,
            c["message_bytes"].value) == ("dgx-h100-spod", 2, "preset", "preset", GIB)


def test_controls_reach_the_model_in_its_own_units(scale):
    w = widgets.network_explorer()
    w.controls["nodes"].value = 8
    assert scale.last["system"] == "dgx-h100-spod" and scale.last["nodes"] == 8
    assert scale.last["nics"] is None and scale.last["fabric"] is None
    w.controls["nics"].value = "4x400G"
    assert scale.last["nics"] == "4x400G"
    w.controls["fabric"].value = "roce"
    assert scale.last["fabric"] == "roce"
    w.controls["cluster"].value = "aws-p5"
    assert scale.last["system"] == "aws-p5"
    # a cloud's fabric is fixed by its provider: the widget says so, no traceback
    assert "fabric cannot be" in w.message.value and "Traceback" not in w.message.value
    w.controls["cluster"].value = "dgx-a100-spod"
    assert w.message.value == ""
    # the prediction is the model's for every GPU of the cluster
    want = network.scale_out("dgx-a100-spod", 8, nics="4x400G", fabric="roce")
    assert w.system.n_gpus == want.n_gpus == 64
    ref = collectives.predict("all_reduce", w.sizes, want.n_gpus, want)
    assert np.allclose(w.prediction.time, ref.time, rtol=1e-12)


def test_every_control_changes_the_image():
    w = widgets.network_explorer()
    for name, value in (("nodes", 16), ("nics", "8x200G"), ("fabric", "tcpx"),
                        ("cluster", "dgx-a100-spod"), ("message_bytes", 2 ** 10)):
        before = _png(w)
        w.controls[name].value = value
        assert _png(w) != before, name
        assert w.message.value == "", (name, w.message.value)


def test_summary_names_the_marked_size_and_nccl_pick():
    w = widgets.network_explorer("dgx-h100-spod", 4, message_bytes=8)
    i = widgets.NETWORK_SIZES.index(8)
    assert "8 B" in w.summary.value
    assert str(w.prediction.algorithm[i]) in w.summary.value
    assert units.fmt_time(float(w.prediction.time[i])) in w.summary.value
    # half the NICs: the node's cards, and a large all_reduce takes about twice as long
    w.controls["message_bytes"].value = GIB
    t_full = float(w.prediction.time[widgets.NETWORK_SIZES.index(GIB)])
    w.controls["nics"].value = "4x400G"
    t_half = float(w.prediction.time[widgets.NETWORK_SIZES.index(GIB)])
    assert "4 NICs of 400 Gb/s" in w.summary.value
    assert 1.6 < t_half / t_full < 2.2


def test_published_points_are_those_of_the_configuration():
    rows = [r for r in network.public_results()
            if r["system"] == "gcp-a3-mega" and r["nodes"] == 2
            and r["collective"] == "all_reduce" and r["busbw_gbps"]]
    assert rows, "the course's data has a two-node A3 Mega run"
    label, sizes, busbw = widgets.published_points("gcp-a3-mega", 2)
    assert label == "published"
    assert sorted(sizes) == sorted(float(r["size_bytes"]) for r in rows)
    by_size = {r["size_bytes"]: r["busbw_gbps"] for r in rows}
    assert np.allclose(busbw, [by_size[int(s)] * 1e9 for s in sizes])
    # another NIC set or fabric is another configuration: no points
    assert widgets.published_points("gcp-a3-mega", 2, nics="8x400G") is None
    assert widgets.published_points("gcp-a3-mega", 2, fabric="ib") is None
    assert widgets.published_points("gcp-a3-mega", 128) is None
    w = widgets.network_explorer("gcp-a3-mega", 2)
    pub = [ln for ln in w.view.ax.lines if ln.get_label() == "published"]
    assert len(pub) == 1 and pub[0].get_visible()
    assert np.allclose(pub[0].get_ydata(), busbw / 1e9)
    assert "Published:" in w.summary.value and "model" in w.summary.value
    w.controls["nodes"].value = 64
    assert not pub[0].get_visible()


def test_initial_state_is_the_chapters_figure():
    """book/scale_out.md draws fig-so-public with these calls."""
    c = network.scale_out("gcp-a3-mega", 2)
    pred = collectives.predict("all_reduce", 2 ** np.arange(3, 35), c.n_gpus, c)
    path = network.network_path(c, c.n_gpus)
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    plotting.plot_scale_out(pred, message_bytes=GIB,
                            published=widgets.published_points("gcp-a3-mega", 2),
                            line_rates=[("NICs of one node", units.Bandwidth(
                                path.nics * path.nic_rate, units.PER_DIRECTION), "ib")],
                            ax=ax)
    w = widgets.network_explorer("gcp-a3-mega", 2)
    got, want = w.view.ax.get_lines(), ax.get_lines()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert np.allclose(a.get_xydata(), b.get_xydata(), rtol=1e-12)
    plt.close(fig)


@pytest.mark.parametrize("kw, msg", [
    ({"cluster": "no-such"}, "cluster"), ({"nodes": 3}, "nodes"),
    ({"nics": "3x7G"}, "nics"), ({"fabric": "carrier-pigeon"}, "fabric"),
    ({"message_bytes": 1000}, "message_bytes")])
def test_bad_arguments_name_the_parameter(kw, msg):
    with pytest.raises(ValueError, match=msg):
        widgets.network_explorer(**kw)
