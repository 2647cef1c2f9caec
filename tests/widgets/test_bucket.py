"""Chapter 6 (reading nccl-tests): the bucket explorer, driven headless.

Every control must reach ``gpulab.collectives.predict`` in SI units (bytes, whole
ranks, preset names), change the image, and invalid combinations must show a
message instead of a traceback. The initial state must equal the chapter's static
figure (built here exactly as ``book/reading_nccl_tests.md`` builds it).
"""
from __future__ import annotations

import math
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpulab import collectives, parallelism, plotting, systems, widgets  # noqa: E402
from tests.recorder import Recorder, check_explorer_factory, patch_everywhere  # noqa: E402,E501

MIB, GIB = 2 ** 20, 2 ** 30


@pytest.fixture
def pred(monkeypatch):
    return Recorder(monkeypatch, collectives, "predict", direct=False)


def _png(w):
    return bytes(w.view.image.value)


def _curve(w):
    return w.view.ax.lines[0].get_ydata()


# --- factory ------------------------------------------------------------------------------
def test_bucket_explorer_is_a_registered_factory():
    w = check_explorer_factory("bucket")
    assert set(w.controls) == {"system", "n_ranks", "gradient_bytes", "bucket_bytes"}
    assert list(w.controls["system"].options) == systems.names()
    assert [v for _, v in w.controls["bucket_bytes"].options] == \
        list(widgets.BUCKET_SIZES)
    assert 25 * MIB in widgets.BUCKET_SIZES and 80_000_000 in widgets.BUCKET_SIZES


@pytest.mark.parametrize("kwargs, param", [
    ({"system": "nope"}, "system"), ({"n_ranks": 1}, "n_ranks"),
    ({"n_ranks": 3}, "n_ranks"), ({"n_ranks": 2.0}, "n_ranks"),
    ({"n_ranks": True}, "n_ranks"),
    ({"gradient_bytes": 1000}, "gradient_bytes"),
    ({"bucket_bytes": 3 * MIB}, "bucket_bytes"),
])
def test_factory_refuses_bad_arguments(kwargs, param):
    with pytest.raises(ValueError, match=param):
        widgets.bucket_explorer(**kwargs)


# --- the model helper -------------------------------------------------------------------
def test_bucket_time_is_calls_times_per_call_time():
    g, b = 2 * GIB, 25 * MIB
    total, nb = parallelism.bucket_allreduce_time(g, [b, 4 * GIB], 2, "h200-x2-measured")
    k = math.ceil(g / b)
    assert nb.tolist() == [k, 1]
    full = collectives.predict("all_reduce", float(b), 2, "h200-x2-measured")
    rest = collectives.predict("all_reduce", float(g - (k - 1) * b), 2,
                               "h200-x2-measured")
    assert total[0] == pytest.approx((k - 1) * full.time_scalar + rest.time_scalar,
                                     rel=1e-12)
    one = collectives.predict("all_reduce", float(g), 2, "h200-x2-measured")
    assert total[1] == pytest.approx(one.time_scalar, rel=1e-12)
    # more, smaller buckets never help: per-call latency adds up
    grid = np.asarray(widgets.BUCKET_GRID)
    t, _ = parallelism.bucket_allreduce_time(g, grid, 2, "h200-x2-measured")
    assert t[0] > 10 * t[-1]


@pytest.mark.parametrize("args", [(0, 1), (GIB, 0), (GIB, []), (float("nan"), 1)])
def test_bucket_time_refuses_bad_sizes(args):
    with pytest.raises(ValueError, match="bytes"):
        parallelism.bucket_allreduce_time(*args, 2, "h200-x2-measured")


# --- initial state == the chapter's static figure ------------------------------------------
def test_default_state_is_the_static_figure():
    w = widgets.bucket_explorer()
    c = w.controls
    assert (c["system"].value, c["n_ranks"].value, c["gradient_bytes"].value,
            c["bucket_bytes"].value) == ("h200-x2-measured", 2, 2 * GIB, 25 * MIB)
    grid = np.asarray(widgets.BUCKET_GRID)
    total, _ = parallelism.bucket_allreduce_time(2 * GIB, grid, 2, "h200-x2-measured")
    chosen, _ = parallelism.bucket_allreduce_time(2 * GIB, 25 * MIB, 2,
                                              "h200-x2-measured")
    one = collectives.predict("all_reduce", 2 * GIB, 2, "h200-x2-measured")
    ref = plotting.plot_bucket_time(grid, total, chosen=(25 * MIB, chosen[0]),
                                    one_call_time=one.time_scalar)
    np.testing.assert_allclose(_curve(w), ref.lines[0].get_ydata(), rtol=1e-12)
    np.testing.assert_allclose(w.view.ax.lines[2].get_ydata(),
                               ref.lines[2].get_ydata(), rtol=1e-12)
    assert w.result["total_time"] == pytest.approx(chosen[0], rel=1e-12)
    assert w.result["n_buckets"] == 82
    s = w.summary.value
    assert "per direction" in s and "82" in s and "25 MiB" in s


# --- every control reaches the model in SI units -------------------------------------------
CASES = [
    ("system", "dgx-a100", "system", "dgx-a100"),
    ("system", "h100-pcie", "system", "h100-pcie"),
    ("n_ranks", 2, "n_ranks", 2),
    ("gradient_bytes", 8 * GIB, "message_bytes", None),
    ("gradient_bytes", 64 * MIB, "message_bytes", None),
    ("bucket_bytes", 80_000_000, "message_bytes", None),
    ("bucket_bytes", 2 ** 18, "message_bytes", None),
]


@pytest.mark.parametrize("control, value, param, expected", CASES,
                         ids=[f"{c}={v}" for c, v, *_ in CASES])
def test_control_reaches_model(pred, control, value, param, expected):
    w = widgets.bucket_explorer(system="hgx-h200", n_ranks=8) \
        if control == "n_ranks" else widgets.bucket_explorer()
    png, n = _png(w), w.n_updates
    pred.calls.clear()
    w.controls[control].value = value
    assert w.n_updates == n + 1 and w.message.value == ""
    assert len(pred.calls) == 2                    # buckets (vectorised) + one call
    for call in pred.calls:
        assert call["collective"] == "all_reduce"
        assert type(call["n_ranks"]) is int
        assert call["system"] == w.controls["system"].value
        if expected is not None:
            assert call[param] == expected
    bucket_call, one_call = pred.calls
    sizes = np.asarray(bucket_call["message_bytes"])
    g = w.controls["gradient_bytes"].value
    assert one_call["message_bytes"] == g and type(one_call["message_bytes"]) is int
    assert sizes.max() <= g                        # bytes, never MiB
    b = w.controls["bucket_bytes"].value
    assert min(b, g) in sizes
    assert w.result["n_buckets"] == math.ceil(g / min(b, g))
    assert _png(w) != png


def test_every_control_is_tested():
    assert set(widgets.bucket_explorer().controls) == {c for c, *_ in CASES}


def test_system_change_bounds_the_ranks_with_one_update():
    w = widgets.bucket_explorer(system="hgx-h200", n_ranks=8)
    ranks = w.controls["n_ranks"]
    n = w.n_updates
    w.controls["system"].value = "h200-x2-measured"
    assert w.n_updates == n + 1 and ranks.max == 2 and ranks.value == 2
    w.controls["system"].value = "hgx-h200-2node"
    assert ranks.max == 16 and ranks.value == 2
    ranks.value = 16
    assert w.message.value == "" and "16 GPUs" in w.summary.value


def test_invalid_state_shows_a_message(monkeypatch):
    w = widgets.bucket_explorer()

    def boom(*a, **k):
        raise ValueError("n_ranks: cannot place these ranks")

    patch_everywhere(monkeypatch, collectives, "predict", boom)
    w.controls["bucket_bytes"].value = 2 ** 20
    assert "cannot place" in w.message.value and "Traceback" not in w.message.value
