"""Other teams' published serving measurements (gpulab.inference.published).

The tables are for checking the serving model, never for fitting it. What is checked: the
parser returns every row as published (same count, order and values, typed); every row's
source is listed in its file's header, and the header names a commit for its repository;
units are what the column names say (cross-checks between columns of the same row); a few
values are pinned to the source they were copied from; bad tables and bad input are refused
by name.
"""
from __future__ import annotations

import csv
import io
import re

import pytest

from gpulab import specs
from gpulab.inference import published as pub

FILES = {"allreduce": "serving_allreduce.csv", "end_to_end": "serving_end_to_end.csv",
         "kv_transfer": "serving_kv_transfer.csv", "ep": "serving_ep.csv"}


def _raw(table):
    text = specs.read_data_text(pub.table_file(table))
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


# --- every row as published ----------------------------------------------------------
def test_tables_and_files():
    assert pub.TABLES == tuple(FILES)
    for table, name in FILES.items():
        assert pub.table_file(table) == "measurements/public/" + name


@pytest.mark.parametrize("table", list(FILES))
def test_parser_returns_every_row_as_published(table):
    rows, raw = pub.rows(table), _raw(table)
    assert len(rows) == len(raw) > 0
    for r, s in zip(rows, raw):
        assert list(r) == list(s)
        for key, text in s.items():
            value = r[key]
            if text == "":
                assert value is None, (key, r)
            elif isinstance(value, bool):
                assert value == (text == "true")
            elif isinstance(value, int):
                assert value == int(text) and str(value) == text
            elif isinstance(value, float):
                assert value == float(text)
            else:
                assert value == text


@pytest.mark.parametrize("table", list(FILES))
def test_types_and_kind(table):
    spec_types = {"allreduce": ({"gpus", "elements", "message_bytes"}, {"latency_ms"}),
                  "end_to_end": ({"gpus"}, {"value"}),
                  "kv_transfer": ({"prompt_tokens"}, {"ttft_ms", "kv_size", "transfer_ms",
                                                      "bandwidth_gb_per_s"}),
                  "ep": ({"ep", "tokens_per_batch"}, {"bandwidth_gb_per_s"})}[table]
    ints, floats = spec_types
    for r in pub.rows(table):
        assert r["kind"] == "published"
        for k in ints:
            assert isinstance(r[k], int) and not isinstance(r[k], bool) and r[k] > 0
        for k in floats:
            assert isinstance(r[k], float) and r[k] > 0


@pytest.mark.parametrize("table", list(FILES))
def test_every_source_is_listed_in_the_header(table):
    header = pub.table_header(table)
    assert "Accessed 2026-12-02" in header
    assert re.search(r"\b[0-9a-f]{40}\b", header), "the header must name a commit"
    ids = {r["source_id"] for r in pub.rows(table)}
    for sid in ids:
        assert re.search(rf"(?m)^\s*{re.escape(sid)}\b", header) or f"{sid}:" in header, sid


def test_rows_are_copies():
    rows = pub.allreduce_rows()
    rows[0]["latency_ms"] = -1.0
    assert pub.allreduce_rows()[0]["latency_ms"] > 0


def test_wrappers_match_rows():
    assert pub.allreduce_rows() == pub.rows("allreduce")
    assert pub.end_to_end_rows() == pub.rows("end_to_end")
    assert pub.kv_transfer_rows() == pub.rows("kv_transfer")
    assert pub.ep_rows() == pub.rows("ep")


# --- units: columns of one row agree ---------------------------------------------------
def test_allreduce_units():
    rows = pub.allreduce_rows()
    for r in rows:
        assert r["message_bytes"] == 2 * r["elements"]            # fp16/bf16 elements
        assert 8 * 1024 <= r["message_bytes"] <= 8 * 2**20
        assert r["gpus"] in (2, 4, 8)
        assert r["implementation"] in ("nccl", "trtllm_custom", "vllm_custom")
        # milliseconds: between 1 us and 100 ms for these sizes
        assert 1e-3 < r["latency_ms"] < 100
    # larger messages are never faster by more than noise within one series
    series = {}
    for r in rows:
        series.setdefault((r["source_id"], r["gpus"], r["cuda_graph"]), []).append(r)
    for s in series.values():
        s.sort(key=lambda r: r["message_bytes"])
        assert s[-1]["latency_ms"] > s[0]["latency_ms"]
    # every system has NCCL and an engine's custom all-reduce on 2, 4 and 8 GPUs
    for gpu in ("H100 SXM", "H200 SXM", "B200 SXM", "L40S", "RTX PRO 6000 Blackwell Server"):
        impls = {(r["implementation"], r["gpus"]) for r in rows if r["gpu"] == gpu}
        for n in (2, 4, 8):
            assert {("nccl", n), ("trtllm_custom", n), ("vllm_custom", n)} <= impls, gpu


def test_end_to_end_units():
    units = {"tokens_per_s": "tokens/s", "tokens_per_s_inferred": "tokens/s",
             "output_tokens_per_s": "tokens/s", "ttft_ms": "ms", "tpot_ms": "ms"}
    for r in pub.end_to_end_rows():
        assert units[r["metric"]] == r["unit"], r
        tp, pp = r["tp"] or 1, r["pp"] or 1
        if r["source_id"].startswith("mlperf41"):
            assert r["gpus"] % (tp * pp) == 0          # whole replicas
        else:
            assert r["gpus"] == tp * pp
        if r["metric"] == "tpot_ms":
            assert 1 < r["value"] < 1000


def test_kv_transfer_units():
    scale = {"MB": 1e6, "GB": 1e9}
    for r in pub.kv_transfer_rows():
        gb_per_s = r["kv_size"] * scale[r["kv_size_unit"]] / (r["transfer_ms"] * 1e-3) / 1e9
        assert gb_per_s == pytest.approx(r["bandwidth_gb_per_s"], rel=0.15), r
        assert r["utilization_pct"] == pytest.approx(
            100 * r["bandwidth_gb_per_s"] / r["line_rate_gb_per_s"], abs=0.1)
        assert r["transfer_ms"] < r["ttft_ms"]


def test_ep_units():
    for r in pub.ep_rows():
        assert r["operation"] in ("dispatch", "combine")
        assert (r["latency_us"] is not None) == (r["kernel"] == "low_latency")
        assert r["bottleneck"] in ("NVLink", "RDMA")
        if r["scope"] == "intranode":
            assert r["ep"] == 8


# --- pinned values (copied from the sources named in the headers) ----------------------
def _one(rows, **match):
    hit = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(hit) == 1, (match, len(hit))
    return hit[0]


def test_pinned_values():
    e2e = pub.end_to_end_rows()
    assert _one(e2e, source_id="mlperf41-nvidia-dgx-h100", model="llama2-70b",
                scenario="offline")["value"] == 24524.9
    assert _one(e2e, source_id="mlperf41-asus-esc8000a-e12", model="llama2-70b",
                scenario="server")["value"] == 8094.27
    assert _one(e2e, source_id="mlperf41-hpe-dl380a-nvl", model="llama2-70b",
                scenario="offline")["value"] == 8858.78
    assert _one(e2e, source_id="trtllm-1.0-perf-overview", model="llama3.3-70b",
                gpu="RTX PRO 6000 Blackwell Server", pp=8, isl=128, osl=128)["value"] == 11881
    assert _one(e2e, source_id="trtllm-0.17-perf-overview", model="llama3.1-70b", gpu="L40S",
                tp=8, isl=128, osl=128)["value"] == 1464.03
    ar = pub.allreduce_rows()
    assert _one(ar, source_id="aic-h100-sxm-trtllm-1.3.0rc20", gpus=8,
                message_bytes=512 * 1024)["latency_ms"] == pytest.approx(0.0176029, abs=1e-6)
    kv = _one(pub.kv_transfer_rows(), source_id="mooncake-vllm-pd-h800", prompt_tokens=32768)
    assert (kv["kv_size"], kv["transfer_ms"], kv["ttft_ms"]) == (4.5, 31.65, 749.62)
    ep = _one(pub.ep_rows(), source_id="deepep-v1-2025-02", kernel="low_latency", ep=8,
              operation="dispatch")
    assert ep["latency_us"] == 163


# --- bad tables and bad input ------------------------------------------------------------
@pytest.mark.parametrize("bad", ["nope", "", None, 3, "Allreduce"])
def test_unknown_table_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="table"):
        pub.rows(bad)
    with pytest.raises(ValueError, match="table"):
        pub.table_file(bad)


def _with_text(monkeypatch, text):
    real = specs.read_data_text
    target = pub.table_file("ep")
    monkeypatch.setattr(specs, "read_data_text",
                        lambda name: text if name == target else real(name))


def _ep_text(**over):
    text = specs.read_data_text(pub.table_file("ep"))
    head = [ln for ln in text.splitlines() if ln.startswith("#")]
    raw = _raw("ep")
    row = dict(raw[0])
    row.update(over)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(raw[0]), lineterminator="\n")
    w.writeheader()
    w.writerow(row)
    return "\n".join(head) + "\n" + buf.getvalue()


@pytest.mark.parametrize("over, match", [
    ({"kind": "measured"}, "kind must be 'published'"),
    ({"source_id": "not-in-header"}, "not listed in the file's header"),
    ({"ep": "0"}, "ep must be a positive integer"),
    ({"ep": "8.5"}, "ep must be a positive integer"),
    ({"bandwidth_gb_per_s": "fast"}, "bandwidth_gb_per_s must be a positive number"),
    ({"bandwidth_gb_per_s": ""}, "bandwidth_gb_per_s is required"),
])
def test_malformed_rows_are_refused_with_file_and_line(monkeypatch, over, match):
    _with_text(monkeypatch, _ep_text(**over))
    with pytest.raises(ValueError, match=match) as err:
        pub.ep_rows()
    assert "serving_ep.csv line" in str(err.value)


def test_missing_column_is_refused(monkeypatch):
    text = _ep_text().replace("latency_us,", "latency,", 1)
    _with_text(monkeypatch, text)
    with pytest.raises(ValueError, match="columns missing.*latency_us"):
        pub.ep_rows()


def test_bad_boolean_is_refused(monkeypatch):
    text = specs.read_data_text(pub.table_file("allreduce"))
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("aic-"))
    lines[i] = lines[i].replace(",false,", ",no,", 1)
    real = specs.read_data_text
    monkeypatch.setattr(specs, "read_data_text",
                        lambda name: "\n".join(lines) if name.endswith("serving_allreduce.csv")
                        else real(name))
    with pytest.raises(ValueError, match="cuda_graph must be true or false"):
        pub.allreduce_rows()


def test_public_names():
    assert set(pub.__all__) == {"TABLES", "table_file", "table_header", "rows",
                                "allreduce_rows", "end_to_end_rows", "kv_transfer_rows",
                                "ep_rows"}


# --- the derived ratios of SERVING_SOURCES.md ------------------------------------------
def _e2e(source_id, model, scenario="offline"):
    return _one(pub.end_to_end_rows(), source_id=source_id, model=model,
                scenario=scenario)["value"]


def _ar_us(source_id, gpus=8, message_bytes=512 * 1024, **match):
    return 1e3 * _one(pub.allreduce_rows(), source_id=source_id, gpus=gpus,
                      message_bytes=message_bytes, **match)["latency_ms"]


def _tpot(tp, concurrency):
    return _one(pub.end_to_end_rows(), source_id="aic-silicon-sample", gpu="H200 SXM 141GB",
                metric="tpot_ms", tp=tp, concurrency=concurrency, isl=1024, osl=1024,
                software="trtllm (version not recorded in the row)")["value"]


def _trt(model, gpus, isl, osl):
    return _one(pub.end_to_end_rows(), source_id="trtllm-1.0-perf-overview", model=model,
                gpu="RTX PRO 6000 Blackwell Server", gpus=gpus, isl=isl, osl=osl)["value"]


def _t17(gpu, tp, isl, osl):
    return _one(pub.end_to_end_rows(), source_id="trtllm-0.17-perf-overview", gpu=gpu, tp=tp,
                isl=isl, osl=osl, model="llama3.1-70b")["value"]


def _ll(source_id, operation):
    return _one(pub.ep_rows(), source_id=source_id, kernel="low_latency", ep=8,
                operation=operation)["latency_us"]


def _kv_share(source_id, tokens):
    r = _one(pub.kv_transfer_rows(), source_id=source_id, prompt_tokens=tokens)
    return 100 * r["transfer_ms"] / r["ttft_ms"]


SXM, PCIE = "mlperf41-nvidia-dgx-h100", "mlperf41-asus-esc8000a-e12"
SXM_ASUS, NVL4, NVL4_BARE = ("mlperf41-asus-esc-n8-e11", "mlperf41-hpe-dl380a-nvl",
                             "mlperf41-asus-esc4000a-e12")
#: Every ratio SERVING_SOURCES.md quotes, by its id there.
DERIVED = {
    "llama_sxm_over_pcie_offline": lambda: _e2e(SXM, "llama2-70b") / _e2e(PCIE, "llama2-70b"),
    "llama_sxm_over_pcie_server": lambda: (_e2e(SXM, "llama2-70b", "server")
                                           / _e2e(PCIE, "llama2-70b", "server")),
    "llama_sxm_over_pcie_offline_asus": lambda: (_e2e(SXM_ASUS, "llama2-70b")
                                                 / _e2e(PCIE, "llama2-70b")),
    "gptj_sxm_over_pcie_offline": lambda: _e2e(SXM, "gptj-6b") / _e2e(PCIE, "gptj-6b"),
    "gptj_sxm_over_pcie_server": lambda: (_e2e(SXM, "gptj-6b", "server")
                                          / _e2e(PCIE, "gptj-6b", "server")),
    "tp_excess_offline": lambda: (DERIVED["llama_sxm_over_pcie_offline"]()
                                  / DERIVED["gptj_sxm_over_pcie_offline"]()),
    "nvl4_nvlink_over_bare_offline": lambda: (_e2e(NVL4, "llama2-70b")
                                              / _e2e(NVL4_BARE, "llama2-70b")),
    "nvl4_nvlink_over_bare_server": lambda: (_e2e(NVL4, "llama2-70b", "server")
                                             / _e2e(NVL4_BARE, "llama2-70b", "server")),
    "pcie8_over_nvl4_offline": lambda: _e2e(PCIE, "llama2-70b") / _e2e(NVL4, "llama2-70b"),
    "pcie8_over_nvl4_server": lambda: (_e2e(PCIE, "llama2-70b", "server")
                                       / _e2e(NVL4, "llama2-70b", "server")),
    "nvl4_over_pcie8_per_gpu_offline": lambda: ((_e2e(NVL4, "llama2-70b") / 4)
                                                / (_e2e(PCIE, "llama2-70b") / 8)),
    "nvl4_bare_over_pcie8_per_gpu_offline": lambda: ((_e2e(NVL4_BARE, "llama2-70b") / 4)
                                                     / (_e2e(PCIE, "llama2-70b") / 8)),
    "ar512k_rtx_over_h100_trtllm": lambda: (_ar_us("aic-rtx-pro-6000-server-trtllm-1.3.0rc20")
                                            / _ar_us("aic-h100-sxm-trtllm-1.3.0rc20")),
    "ar512k_l40s_over_h100_vllm_graph": lambda: (
        _ar_us("aic-l40s-vllm-0.14.0", cuda_graph=True)
        / _ar_us("aic-h100-sxm-vllm-0.14.0", cuda_graph=True)),
    "h200_tpot_tp1_over_tp8_c4": lambda: _tpot(1, 4) / _tpot(8, 4),
    "h200_tpot_tp1_over_tp8_c128": lambda: _tpot(1, 128) / _tpot(8, 128),
    "rtx_qwen30b_tp8_over_tp1_128_128": lambda: (_trt("qwen3-30b-a3b", 8, 128, 128)
                                                 / _trt("qwen3-30b-a3b", 1, 128, 128)),
    "rtx_qwen30b_tp8_over_tp1_128_2048": lambda: (_trt("qwen3-30b-a3b", 8, 128, 2048)
                                                  / _trt("qwen3-30b-a3b", 1, 128, 2048)),
    "rtx_llama70b_pp8_over_pp1_128_128": lambda: (_trt("llama3.3-70b", 8, 128, 128)
                                                  / _trt("llama3.3-70b", 1, 128, 128)),
    "trt017_l40s_tp8_over_tp4_128_128": lambda: (_t17("L40S", 8, 128, 128)
                                                 / _t17("L40S", 4, 128, 128)),
    "trt017_l40s_tp8_over_tp4_2048_128": lambda: (_t17("L40S", 8, 2048, 128)
                                                  / _t17("L40S", 4, 2048, 128)),
    "trt017_h100_tp8_over_tp4_128_128": lambda: (_t17("H100 80GB HBM3", 8, 128, 128)
                                                 / _t17("H100 80GB HBM3", 4, 128, 128)),
    "trt017_h100_tp8_over_tp4_2048_128": lambda: (_t17("H100 80GB HBM3", 8, 2048, 128)
                                                  / _t17("H100 80GB HBM3", 4, 2048, 128)),
    "trt017_h100x4_over_l40sx8_128_128": lambda: (_t17("H100 80GB HBM3", 4, 128, 128)
                                                  / _t17("L40S", 8, 128, 128)),
    "deepep_ll_ep8_dispatch_rdma_over_nvlink": lambda: (_ll("deepep-v1-2025-02", "dispatch")
                                                        / _ll("deepep-v1-legacy", "dispatch")),
    "deepep_ll_ep8_combine_rdma_over_nvlink": lambda: (_ll("deepep-v1-2025-02", "combine")
                                                       / _ll("deepep-v1-legacy", "combine")),
    "mooncake_vllm_32k_transfer_pct_of_ttft": lambda: _kv_share("mooncake-vllm-pd-h800", 32768),
    "mooncake_vllm_128_transfer_pct_of_ttft": lambda: _kv_share("mooncake-vllm-pd-h800", 128),
    "mooncake_sglang_32k_transfer_pct_of_ttft": lambda: _kv_share("mooncake-sglang-pd-h20",
                                                                  32768),
}


def _notes_ratios():
    text = specs.read_data_text("measurements/public/SERVING_SOURCES.md")
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\|\s*`([a-z0-9_]+)`\s*\|.*\|\s*([0-9.]+)\s*\|\s*$", text,
                                 re.M)}


def test_derived_ratios_in_the_notes_are_computed_from_the_rows():
    quoted = _notes_ratios()
    assert set(quoted) == set(DERIVED)
    for key, f in DERIVED.items():
        assert quoted[key] == pytest.approx(round(f(), 2), abs=0.005), key


def test_data_readme_lists_every_serving_file():
    text = specs.read_data_text("README.md")
    for name in (*FILES.values(), "SERVING_SOURCES.md"):
        assert f"public/{name}" in text, name
