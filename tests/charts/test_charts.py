"""The precomputed charts (gpulab.charts): grid, spec and HTML of every chart, and a
sample of grid points recomputed independently (analytic oracles where the model has
one, the public model function called directly otherwise).

Each chart is built once per session (the ROI chart runs the layout chooser: seconds).
"""
from __future__ import annotations

import itertools
import json
import math
import random
import re

import jsonschema
import numpy as np
import pytest

import gpulab.charts as C
from gpulab import collectives, parallelism, pcie, scaling, specs, systems, \
    topology, units
from gpulab.charts.base import Control, round_sig


@pytest.fixture(scope="session")
def built():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = C.charts()[name]()
        return cache[name]
    return get


def rel(a, b, tol=1e-3):
    """Equal to 4 significant digits (the charts round their data)."""
    return math.isclose(a, b, rel_tol=tol, abs_tol=1e-12)


def flat(text):
    """The summary text without its line wrapping."""
    return " ".join(text.split())


def sample_points(chart, k=6, seed=0):
    rng = random.Random(seed)
    return rng.sample(chart.summary, min(k, len(chart.summary)))


def rows_at(chart, point, names=None):
    names = names or [c.name for c in chart.controls]
    return [r for r in chart.rows if all(r.get(n) == point[n] for n in names)]


# --- every chart: grid, spec, HTML ----------------------------------------------------
def test_every_explorer_has_a_chart():
    from gpulab.widgets import EXPLORER_NAMES
    assert C.CHART_NAMES == EXPLORER_NAMES


@pytest.fixture(scope="session")
def vega_lite_schema():
    from altair.vegalite.v6.schema import core
    return core.load_schema()


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_spec_is_valid_vega_lite_with_bound_params(built, name, vega_lite_schema):
    chart = built(name)
    spec = json.loads(json.dumps(chart.spec, allow_nan=False))
    jsonschema.Draft7Validator(vega_lite_schema).validate(spec)
    assert spec["$schema"].endswith(f"/vega-lite/{C.VEGA_LITE_VERSION}.json")
    params = {p["name"]: p for p in spec["params"]}
    assert set(params) == {c.name for c in chart.controls}
    for c in chart.controls:
        p = params[c.name]
        assert p["value"] == c.value, c.name
        bind = p["bind"]
        if c.kind == "slider":    # steps exactly over the grid points, nothing between
            assert bind["input"] == "range"
            assert (bind["min"], bind["max"]) == (c.values[0], c.values[-1])
            n = (bind["max"] - bind["min"]) / bind["step"]
            assert round(n) + 1 == len(c.values) and abs(n - round(n)) < 1e-9
            assert np.allclose(bind["min"] + bind["step"] * np.arange(len(c.values)),
                               c.values)
        else:
            assert bind["input"] == c.kind
            assert bind["options"] == list(c.values)
            assert len(bind["labels"]) == len(c.values)
    assert set(spec["datasets"]) == {f"{chart.name}_rows", f"{chart.name}_summary"}


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_grid_is_complete_and_small(built, name):
    chart = built(name)
    names = [c.name for c in chart.controls]
    keys = [tuple(r[n] for n in names) for r in chart.summary]
    assert sorted(map(repr, keys)) == sorted(
        map(repr, itertools.product(*(c.values for c in chart.controls))))
    assert all(isinstance(r["text"], str) and r["text"].strip() for r in chart.summary)
    # wrapped to the figure: no summary line longer than the chart's text width
    assert max(len(line) for r in chart.summary for line in r["text"].split("\n")) <= 80
    assert 10 <= len(chart.summary) <= 2000 and len(chart.rows) <= 3000
    # keep pages light (the largest, network, is about 166 000 characters: its summary
    # says at every cloud point that the Fabric control draws the provider's own; its
    # published crosses are those at the curve's sizes)
    assert len(chart.to_html()) < 170_000, "keep pages light"
    # the note names every grid point count and says nothing is interpolated
    assert f"at {len(chart.summary)} points" in chart.note
    assert "interpolated" in chart.note
    for c in chart.controls:
        assert c.label in chart.note


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_html_is_offline_and_embeds_the_spec(built, name):
    chart = built(name)
    page = chart.to_html()
    assert not re.search(r"<script[^>]+src=", page)
    m = re.search(r'<script type="application/json" id="gpulab-chart-(\w+)-spec">(.*?)'
                  r"</script>", page, re.S)
    assert m and m.group(1) == chart.name
    assert json.loads(m.group(2)) == json.loads(json.dumps(chart.spec))
    assert 'data-spec="gpulab-chart-' in page and "Precomputed by gpulab" in page


def test_vendored_vega_lite_is_the_version_of_the_specs():
    """scripts/vendor_js.sh vendors the Vega-Lite that altair writes specs for."""
    from pathlib import Path
    script = (Path(__file__).resolve().parents[2] / "scripts" / "vendor_js.sh").read_text()
    m = re.search(r"^VEGA_LITE=vega-lite@(\S+)$", script, re.M)
    assert m and f"v{m.group(1)}" == C.VEGA_LITE_VERSION
    assert re.search(r"^VEGA=vega@6\.", script, re.M)


def test_point_lookup_and_bad_points(built):
    chart = built("scaling")
    got = chart.point(n_gpus=8, params=7e9, overlap=0.0)
    assert got["n_gpus"] == 8 and "8 GPUs" in flat(got["text"])
    with pytest.raises(ValueError, match="not a grid point"):
        chart.point(n_gpus=7, params=7e9, overlap=0.0)


# --- the controls refuse what they cannot show ----------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(name="Bad Name", label="x", values=(1, 2)), "name"),
    (dict(name="x", label="x", values=(1,)), "values"),
    (dict(name="x", label="x", values=(1, 1)), "values"),
    (dict(name="x", label="x", values=(1, 2), value=3), "value"),
    (dict(name="x", label="x", values=(1, 2), labels=("a",)), "labels"),
    (dict(name="x", label="x", values=(1, 2), kind="knob"), "kind"),
    (dict(name="x", label="x", values=(1, 2, 4), kind="slider"), "slider"),
    (dict(name="x", label="x", values=("a", "b"), kind="slider"), "slider"),
])
def test_control_refuses_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        Control(**kw)


def test_round_sig_keeps_integers_and_rounds_floats():
    assert round_sig(2 ** 26) == 2 ** 26                # byte counts stay exact keys
    assert round_sig(123456.789) == 123500.0
    assert round_sig(0.000123456) == 0.0001235
    assert round_sig(float("inf")) == float("inf")


def test_bad_initial_point_is_refused():
    with pytest.raises(ValueError, match="value of 'overlap'"):
        C.scaling_chart(overlap=0.3)
    with pytest.raises(ValueError, match="layout"):
        C.layout_chart(layout=(3, 1, 1))


# --- sample points recomputed independently -------------------------------------------
def test_link_chart_matches_serdes_arithmetic(built):
    chart = built("link")
    for p in sample_points(chart, 8):
        g = specs.nvlink(p["generation"])
        # analytic: baud x bits per symbol x lanes x coding / 8 bits, times links
        want = (g.symbol_rate * g.bits_per_symbol * g.lanes_per_direction
                * g.coding_efficiency / 8 * p["n_links"] / 1e9)
        mine = [r for r in rows_at(chart, p) if r["name"] == "this GPU"]
        assert len(mine) == 1 and rel(mine[0]["gbs"], want)
        assert f"GPU with {p['n_links']} links" in flat(p["text"])


def test_pcie_chart_matches_line_rate_arithmetic(built):
    chart = built("pcie")
    for p in sample_points(chart, 8):
        g = specs.pcie(p["generation"])
        rows = {r["stage"]: r["gbs"] for r in rows_at(chart, p)}
        # analytic: GT/s x lanes / 8 bits per byte
        assert rel(rows["raw"], g.transfer_rate_gt_per_s * p["lanes"] / 8)
        eff = pcie.effective_bandwidth(p["generation"], p["lanes"], p["payload"],
                                       header_bytes=16)
        assert rel(rows["effective"], eff.gb_per_s)
        assert rows["raw"] >= rows["encoded"] >= rows["after TLP framing"] \
            >= rows["effective"] > 0


def test_scaling_chart_matches_the_model(built):
    chart = built("scaling")
    for p in sample_points(chart, 6):
        got = {r["gpu"]: r for r in rows_at(chart, p)}
        for gpu in ("V100", "A100", "H100", "B200"):
            s = scaling.data_parallel_step(gpu, p["n_gpus"], p["params"], 4096,
                                           overlap=p["overlap"])
            assert rel(got[gpu]["compute"], s.compute_time * 1e3)
            assert rel(got[gpu]["exposed communication"], s.exposed_comm_time * 1e3)
    # full overlap hides all communication (analytic)
    full = [r for r in chart.rows if r["overlap"] == 1.0]
    assert full and all(r["exposed communication"] == 0 for r in full)


def test_collective_chart_matches_predict(built):
    chart = built("collective")
    for p in sample_points(chart, 5):
        one = collectives.predict(p["collective"], p["size"], p["n_ranks"], p["system"])
        curve = rows_at(chart, p, ["system", "collective", "n_ranks"])
        assert len(curve) == len(C.COLLECTIVE_CURVE)
        at = [r for r in curve if r["bytes"] == p["size"]]
        assert len(at) == 1 and rel(at[0]["busbw"], float(one.busbw[0]) / units.GB)
        assert f"busbw {float(one.busbw[0]) / units.GB:.1f} GB/s" in flat(p["text"])
        assert str(one.algorithm[0]) in flat(p["text"])


def test_fabric_chart_names_the_fastest_algorithm(built):
    chart = built("fabric")
    for p in sample_points(chart, 8, seed=1):
        rows = rows_at(chart, p)
        s = systems.get(p["system"])
        if p["n_ranks"] > s.n_gpus:
            assert rows == [] and "cannot place" in flat(p["text"])
            continue
        best = collectives.predict("all_reduce", p["size"], p["n_ranks"], p["system"])
        chosen = [r for r in rows if r["chosen"]]
        assert len(chosen) == 1 and chosen[0]["algorithm"] == str(best.algorithm[0])
        assert rel(chosen[0]["ms"], float(best.time[0]) * 1e3)


def test_bucket_chart_counts_buckets(built):
    chart = built("bucket")
    for p in sample_points(chart, 8, seed=2):
        if p["n_ranks"] > systems.get(p["system"]).n_gpus:
            assert "no" in flat(p["text"])
            continue
        k = math.ceil(p["gradient"] / p["bucket"])          # analytic bucket count
        assert f"in {k} bucket(s)" in flat(p["text"])
        total, nb = parallelism.bucket_allreduce_time(p["gradient"],
                                                      np.array([float(p["bucket"])]),
                                                      p["n_ranks"], p["system"])
        assert int(nb[0]) == k
        curve = rows_at(chart, p, ["system", "n_ranks", "gradient"])
        at = [r for r in curve if r["bytes"] == p["bucket"]]
        assert len(at) == 1 and rel(at[0]["ms"], float(total[0]) * 1e3)


def test_layout_chart_matches_step_time(built):
    chart = built("layout")
    for p in sample_points(chart, 5, seed=3):
        tp, pp, dp = (int(x) for x in re.findall(r"\d+", p["layout"]))
        assert tp * pp * dp == 8
        st = parallelism.step_time(p["model"], "dgx-h100", parallelism.Layout(tp, pp, dp),
                                   global_batch=p["batch"], micro_batch=1, zero=1)
        got = {r["part"]: r["s"] for r in rows_at(chart, p)}
        assert rel(sum(got.values()), st.total, 2e-3)
        assert rel(got["compute"], st.compute)
        assert f"{st.total:.2f} s per step" in flat(p["text"])


def test_tp_chart_matches_tp_degree_rows(built):
    chart = built("tp")
    by = ["model", "seq_len", "sp", "precision"]
    points = sample_points(chart, 5, seed=4) + [
        chart.point(model="70b", seq_len=4096, sp="off", precision=pr, tp=1)
        for pr in ("bf16", "fp8")]
    for p in points:
        rows, steps, _ = parallelism.tp_degree_rows(
            p["model"], "hgx-h200", seq_len=p["seq_len"],
            sequence_parallel=p["sp"] == "on", precision=p["precision"])
        got = {r["degree"]: r for r in rows_at(chart, p, by)}
        assert list(got) == [r[0] for r in rows]
        for label, comp, _comm, expo, _ in rows:
            assert rel(got[label]["compute"], comp * 1e3)
            assert rel(got[label]["exposed"], expo * 1e3) or expo == 0
        assert f"in {p['precision'].upper()}" in flat(p["text"])


def test_tp_chart_precision_control(built):
    """FP8 lowers the 70b layer's compute at TP1 (sequence 4096, H200); on a GPU
    without FP8 the FP8 points carry the model's refusal and no bars."""
    chart = built("tp")
    c = {x.name: x for x in chart.controls}["precision"]
    assert (c.values, c.value, c.kind) == (("bf16", "fp8"), "bf16", "radio")
    at = {pr: {r["degree"]: r["compute"] for r in rows_at(
        chart, {"model": "70b", "seq_len": 4096, "sp": "off", "precision": pr},
        ["model", "seq_len", "sp", "precision"])} for pr in ("bf16", "fp8")}
    assert at["fp8"]["TP1 × DP8"] < at["bf16"]["TP1 × DP8"]
    a100 = C.tp_chart("70b", 1, precision="fp8", system="dgx-a100")
    with pytest.raises(ValueError) as exc:
        parallelism.tp_degree_rows("70b", "dgx-a100", seq_len=4096, precision="fp8")
    for p in a100.summary:
        fp8 = p["precision"] == "fp8"
        assert (str(exc.value) in flat(p["text"])) == fp8
        assert bool(rows_at(a100, p, ["model", "seq_len", "sp", "precision"])) != fp8
    assert len(a100.to_html()) < 160_000
    with pytest.raises(ValueError, match="precision"):
        C.tp_chart(precision="fp16")


def test_roi_chart_matches_roi_comparison(built):
    chart = built("roi")
    price_slow = parallelism.ROI_EXAMPLE_PRICES["slow"]
    for p in sample_points(chart, 4, seed=5):
        try:
            roi, _ = parallelism.roi_comparison(
                "70b", p["nodes"], p["fast"], "h100-pcie", price_fast=p["price"],
                price_slow=price_slow, project_tokens=p["tokens"])
        except ValueError as exc:
            assert str(exc) in flat(p["text"])
            continue
        got = {r["system"]: r["kUSD"] for r in rows_at(chart, p)}
        assert rel(got[p["fast"]], roi.cost_fast / 1e3)
        assert rel(got["h100-pcie"], roi.cost_slow / 1e3)
        # analytic: the cheaper side flips where the price ratio crosses break-even
        cheaper = p["fast"] if p["price"] / price_slow < roi.breakeven_price_ratio \
            else "h100-pcie"
        assert f"{cheaper} is cheaper" in flat(p["text"])


def test_topology_chart_counts_every_pair_once(built):
    chart = built("topology")
    texts = C.topology_texts()
    for p in chart.summary:
        topo = topology.parse_topo_matrix(texts[p["sample"]])
        n = len(topo.gpus)
        assert sum(r["pairs"] for r in rows_at(chart, p)) == n * (n - 1) // 2
        assert f"{n * (n - 1) // 2} GPU pairs" in flat(p["text"])


def test_pipeline_chart_agrees_with_the_explorer(built):
    """Same placement, same numbers as the pipeline explorer's summary (placement (c)
    is its default: layout A, GPU3 -> GPU4)."""
    from gpulab.widgets import pipeline_explorer
    chart = built("pipeline")
    ex = pipeline_explorer()
    want = re.search(r"Per micro-batch: ([^,]+),", ex.summary.value).group(1)
    p = chart.point(hidden=4096, seq_len=4096, micro_batch=1, dtype="BF16")
    assert f"(c) {want}" in flat(p["text"])
    # transfer time grows linearly with the message at large sizes (analytic: 2x bytes
    # -> close to 2x time on every path)
    small = {r["placement"]: r["ms"] for r in rows_at(chart, p)}
    big = {r["placement"]: r["ms"] for r in rows_at(
        chart, chart.point(hidden=8192, seq_len=4096, micro_batch=1, dtype="BF16"))}
    for k in small:
        assert 1.9 < big[k] / small[k] <= 2.0 + 1e-9


def test_network_chart_matches_the_model_and_the_published_runs(built):
    from gpulab import network
    chart = built("network")
    for p in sample_points(chart, 6, seed=2):
        fab = None if p["fabric"] == "preset" else p["fabric"]
        c = network.scale_out(p["cluster"], p["nodes"], fabric=fab)
        one = collectives.predict("all_reduce", p["size"], c.n_gpus, c)
        curve = [r for r in rows_at(chart, p, ["cluster", "nodes", "fabric"])
                 if r["algorithm"] != "published"]
        assert len(curve) == len(C.NETWORK_CURVE)
        at = [r for r in curve if r["bytes"] == p["size"]]
        assert len(at) == 1 and rel(at[0]["busbw"], float(one.busbw[0]) / units.GB)
        assert at[0]["algorithm"] == str(one.algorithm[0])
        assert f"busbw {float(one.busbw[0]) / units.GB:.1f} GB/s" in flat(p["text"])
    # the two-node A3 Mega run is overlaid on its own configuration only, at the
    # curve's sizes
    pub = [r for r in network.public_results() if r["system"] == "gcp-a3-mega"
           and r["nodes"] == 2 and r["collective"] == "all_reduce" and r["busbw_gbps"]
           and r["size_bytes"] in C.NETWORK_CURVE]
    assert pub
    point = {"cluster": "gcp-a3-mega", "nodes": 2, "fabric": "preset"}
    shown = [r for r in rows_at(chart, point, list(point))
             if r["algorithm"] == "published"]
    assert sorted(r["bytes"] for r in shown) == sorted(r["size_bytes"] for r in pub)
    other = {"cluster": "gcp-a3-mega", "nodes": 2, "fabric": "ib"}
    assert not [r for r in rows_at(chart, other, list(other))
                if r["algorithm"] == "published"]
    text = chart.point(cluster="gcp-a3-mega", nodes=2, fabric="preset",
                       size=2 ** 30)["text"]
    assert "Published:" in text and "in time" in text


# --- controls and layout in the page: radio spacing, labels, narrow screens ----------
def css_rules(page):
    """{selector: {property: value}} of the chart's own <style> (media rules keyed
    ``"@media ... | selector"``)."""
    m = re.search(r"<style>(.*?)</style>", page, re.S)
    assert m, "the chart carries its own style"
    css, rules = m.group(1), {}
    for media, body in re.findall(r"@media([^{]*)\{((?:[^{}]*\{[^}]*\})*)\}", css):
        for sel, decl in re.findall(r"([^{}]+)\{([^}]*)\}", body):
            rules[f"@media{media.strip()} | {sel.strip()}"] = dict(
                (k.strip(), v.strip()) for k, v in
                (d.split(":", 1) for d in decl.split(";") if d.strip()))
    css = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^}]*\})*\}", "", css)
    for sel, decl in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        rules[sel.strip()] = dict((k.strip(), v.strip()) for k, v in
                                  (d.split(":", 1) for d in decl.split(";") if d.strip()))
    return rules


def em(value):
    """The four sides of a CSS margin in em (0 for 0)."""
    parts = [0.0 if p == "0" else float(p.removesuffix("em")) for p in value.split()]
    top, right, bottom, left = (parts * 4)[:4] if len(parts) == 1 else \
        (parts + parts[:2])[:4] if len(parts) == 2 else parts
    return top, right, bottom, left


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_radio_option_circle_and_text_read_as_one_unit(built, name):
    """Vega writes each radio option as <label><input>text</label>: the text sits
    right after its own circle, the space comes after the text (before the next
    circle), and an option never breaks between circle and text."""
    rules = css_rules(built(name).to_html())
    s = f"#gpulab-chart-{name}"
    label = rules[f"{s} .vega-bind-radio label"]
    circle = rules[f"{s} .vega-bind-radio label input"]
    assert label["white-space"] == "nowrap" and label["display"] == "inline-block"
    _, after_option, _, before_option = em(label["margin"])
    _, circle_to_text, _, circle_left = em(circle["margin"])
    assert before_option == 0 and circle_left == 0
    assert after_option >= 3 * circle_to_text > 0
    # nothing styles a radio input by :first-child (every input is its label's first)
    assert not [k for k in rules if "first-child" in k]


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_control_names_keep_apart_from_their_inputs(built, name):
    """A control's name keeps a margin from its input (the browser drops the name's
    trailing space when the name is wider than its column), and sits on its own line
    on a narrow page."""
    rules = css_rules(built(name).to_html())
    s = f"#gpulab-chart-{name}"
    names = rules[f"{s} .vega-bind-name"]
    assert em(names["margin-right"] + " 0")[0] >= 0.5 and names["min-width"]
    narrow = [v for k, v in rules.items()
              if k.startswith("@media") and k.endswith(f"{s} .vega-bind-name")]
    assert narrow and narrow[0]["display"] == "block"
    width = int(re.search(r"max-width:(\d+)px", next(
        k for k in rules if k.startswith("@media") and k.endswith(".vega-bind-name")))
        .group(1))
    assert width >= 390 + 100            # a phone of 390 px gets the stacked layout
    assert rules[f"{s} .vega-bind input[type=range]"]["margin"].split()[1] != "0"


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_chart_is_usable_on_a_390px_phone(built, name):
    """The figure (a fixed width of about 690 px) scrolls sideways in its own box;
    the controls are bound into a div outside that box, so they wrap to the page."""
    chart = built(name)
    page = chart.to_html()
    ident = f"gpulab-chart-{name}"
    rules = css_rules(page)
    box = rules[f"#{ident} .gpulab-chart-scroll"]
    assert box["overflow-x"] == "auto" and box["max-width"] == "100%"
    m = re.search(r'<div class="gpulab-chart-scroll"><div class="gpulab-chart-view">'
                  r'.*?</div></div><form class="gpulab-chart-controls vega-bindings" '
                  rf'id="{ident}-controls"></form>', page, re.S)
    assert m, "figure in the scroll box, controls after it, outside (in a form: radio " \
        "groups of the same name in two charts of a page stay apart)"
    for p in chart.spec["params"]:
        assert p["bind"]["element"] == f"#{ident}-controls", p["name"]


def changes_nothing(chart):
    """{control: [points]} where moving that control alone changes neither the
    summary text nor the drawn rows and the text does not name the control."""
    names = [c.name for c in chart.controls]
    cols = [n for n in names if chart.rows and n in chart.rows[0]]
    drawn = {}
    for r in chart.rows:
        drawn.setdefault(tuple(r[n] for n in cols), []).append(
            json.dumps({k: v for k, v in r.items() if k not in names}, sort_keys=True))
    texts = {tuple(r[n] for n in names): r["text"] for r in chart.summary}
    found = {}
    for key, text in texts.items():
        point = dict(zip(names, key))
        for c in chart.controls:
            seen = set()
            for v in c.values:
                q = {**point, c.name: v}
                seen.add((texts[tuple(q[n] for n in names)],
                          tuple(sorted(drawn.get(tuple(q[n] for n in cols), [])))))
            if len(seen) == 1 and c.label not in flat(text):
                found.setdefault(c.name, []).append(point)
    return found


@pytest.mark.parametrize("name", C.CHART_NAMES)
def test_a_control_that_changes_nothing_says_so(built, name):
    found = changes_nothing(built(name))
    assert not found, {k: (len(v), v[0]) for k, v in found.items()}


def test_roi_at_one_node_says_why_the_prices_change_nothing(built):
    """70b does not fit on one node of either system: no bars at any price or project,
    and the text says the price and project controls act once it fits."""
    chart = built("roi")
    labels = {c.name: c.label for c in chart.controls}
    for fast in ("dgx-h100", "hgx-h200"):
        texts = {flat(chart.point(nodes=1, fast=fast, price=p, tokens=t)["text"])
                 for p in C.ROI_PRICES for t in C.ROI_TOKENS}
        assert len(texts) == 1
        text = texts.pop()
        assert "does not fit" in text and "change nothing" in text
        assert labels["price"] in text and labels["tokens"] in text
        assert not rows_at(chart, {"nodes": 1, "fast": fast}, ["nodes", "fast"])
    # where the model fits, the price moves the cost
    fits = rows_at(chart, chart.point(nodes=8, fast="dgx-h100", price=2.0, tokens=200e9))
    dear = rows_at(chart, chart.point(nodes=8, fast="dgx-h100", price=4.0, tokens=200e9))
    assert fits != dear
