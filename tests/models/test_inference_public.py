"""The serving model against other teams' published measurements (checks, never fits).

Tables: ``gpulab/data/measurements/public/serving_*.csv`` (AIConfigurator's measured
all-reduce tables and its end-to-end TTFT/TPOT sample), read by
``gpulab.inference.published``. The decode model was fitted only on our 1x H200 layer
shards, the custom all-reduce constants are assumed: these rows are the first check of
the whole step. Bounds carry the errors measured when written.
"""
from __future__ import annotations

import statistics

import pytest

from gpulab import inference
from gpulab.inference import published

SYSTEM = {"h200_sxm": "hgx-h200", "h100_sxm": "dgx-h100"}


def _tpot_errors(isl, software="vllm"):
    out = []
    for r in published.end_to_end_rows():
        if (r["source_id"] != "aic-silicon-sample" or r["metric"] != "tpot_ms"
                or r["isl"] != isl or not r["software"].startswith(software)
                or r["system"] not in SYSTEM or r["pp"] != 1):
            continue
        d = inference.decode_step(
            "llama3-70b", SYSTEM[r["system"]], tp=r["tp"], batch=r["concurrency"],
            context=r["isl"] + r["osl"] // 2, precision=r["precision"],
            allreduce="oneshot" if r["tp"] > 1 else "nccl")
        out.append(d.tpot * 1e3 / r["value"] - 1)
    return out


def test_tpot_of_vllm_with_short_prompts():
    # Llama-3.1-70B FP8, vLLM, H200 and H100 SXM, TP 1-8, concurrency 4-64, 1024-token
    # prompts, context = prompt + half the output. When written: 70 rows, mean |error|
    # 5.0%, worst +17.4%
    errs = _tpot_errors(1024)
    assert len(errs) >= 60
    assert statistics.mean(abs(e) for e in errs) < 0.08
    assert max(abs(e) for e in errs) < 0.25


def test_long_prompts_add_prefill_work_the_model_leaves_out():
    # Aggregated serving mixes the prefill of new 8192-token prompts into decode steps;
    # decode_step models decode alone, so it is faster than these rows (median -26%
    # when written) and the gap grows with concurrency
    errs = _tpot_errors(8192)
    assert len(errs) >= 30 and statistics.median(errs) < -0.1


def _allreduce(impl, system, keep):
    return [r for r in published.allreduce_rows()
            if r["implementation"] == impl and r["system"] == system
            and r["cuda_graph"] == (impl != "nccl") and keep(r)
            and (impl != "vllm_custom" or "vllm-0.14" in r["source_id"])]


def _vllm_one_shot_region(r):
    """Where vLLM's kernel runs one-shot on full NVLink (csrc/custom_all_reduce.cuh):
    2 GPUs always (up to 2 MiB here), 4 GPUs below 512 KiB, 8 GPUs below 256 KiB."""
    n, s = r["gpus"], r["message_bytes"]
    return (n == 2 and s <= 2**21) or (n == 4 and s < 2**19) or (n == 8 and s < 2**18)


@pytest.mark.parametrize("system", ["h200_sxm", "h100_sxm"])
def test_one_shot_against_vllm_cuda_graph_rows(system):
    rows = _allreduce("vllm_custom", system, _vllm_one_shot_region)
    assert len(rows) >= 20
    errs = [inference.allreduce_time(r["message_bytes"], r["gpus"], SYSTEM[system],
                                     algorithm="oneshot") / (r["latency_ms"] * 1e-3) - 1
            for r in rows]
    # when written: mean |error| 6.9% (H200) and 7.1% (H100), worst -17.6%
    assert statistics.mean(abs(e) for e in errs) < 0.12
    assert max(abs(e) for e in errs) < 0.25


def _vllm_two_shot_region(r):
    """Where vLLM's kernel runs two-shot on full NVLink (csrc/custom_all_reduce.cuh):
    4 GPUs from 512 KiB, 8 GPUs from 256 KiB (up to 2 MiB here)."""
    n, s = r["gpus"], r["message_bytes"]
    return s <= 2**21 and ((n == 4 and s >= 2**19) or (n == 8 and s >= 2**18))


@pytest.mark.parametrize("system", ["h200_sxm", "h100_sxm"])
def test_two_shot_against_vllm_cuda_graph_rows(system):
    rows = [r for r in published.allreduce_rows()
            if r["implementation"] == "vllm_custom" and r["system"] == system
            and r["cuda_graph"] and _vllm_two_shot_region(r)]
    errs = {v: [inference.allreduce_time(r["message_bytes"], r["gpus"], SYSTEM[system],
                                         algorithm="twoshot") / (r["latency_ms"] * 1e-3) - 1
                for r in rows if f"vllm-{v}" in r["source_id"]] for v in ("0.14", "0.24")}
    assert len(errs["0.24"]) >= 6 and len(errs["0.14"]) >= 6
    # vLLM 0.24, when written: mean |error| 3.3% (H200), 5.9% (H100), worst -9%. The
    # model before it charged two-shot one barrier more instead of two round trips and
    # was 13-26% fast here
    assert statistics.mean(abs(e) for e in errs["0.24"]) < 0.08
    assert max(abs(e) for e in errs["0.24"]) < 0.15
    # vLLM 0.14 (H200: a 0.14.1 dev build whose 1 MiB row is slower than its 2 MiB
    # row) is up to 31% (H100) and 69% (H200) slower than the model from 256 KiB on 8
    # GPUs; the model is a lower bound there, never more than 10% slow
    assert max(errs["0.14"]) < 0.10


def test_nccl_on_l40s_against_nccl_tests():
    # 2 GPUs over PCIe P2P, 4 and 8 through host memory (NCCL's PXB rule,
    # inference.allreduce_time). When written: mean |error| 19% (2 GPUs), 24% (4 GPUs);
    # the model that kept 4 GPUs on P2P was 35-53% fast
    rows = _allreduce("nccl", "l40s", lambda r: r["message_bytes"] <= 2**20)
    errs = {n: [inference.allreduce_time(r["message_bytes"], n, "l40s-x8")
                / (r["latency_ms"] * 1e-3) - 1 for r in rows if r["gpus"] == n]
            for n in (2, 4, 8)}
    for n in (2, 4):
        assert len(errs[n]) >= 6
        assert statistics.mean(abs(e) for e in errs[n]) < 0.30
        assert max(abs(e) for e in errs[n]) < 0.50
    # 8 GPUs: the latency-bound 8 KiB row within 25% (host-memory hops), but from
    # 32 KiB the rows are 2-4x slower than the model (median -65% when written): a gap
    # the model leaves open, its host-memory constants come from 2 GPUs each on its own
    # PCIe link, and the rows' host is not described
    (small,) = [inference.allreduce_time(r["message_bytes"], 8, "l40s-x8")
                / (r["latency_ms"] * 1e-3) - 1 for r in rows
                if r["gpus"] == 8 and r["message_bytes"] == 8 * 1024]
    assert abs(small) < 0.25
    assert statistics.median(errs[8]) < -0.4


@pytest.mark.parametrize("system", ["h200_sxm", "h100_sxm"])
def test_nccl_decode_sizes_against_nccl_tests(system):
    rows = _allreduce("nccl", system, lambda r: r["message_bytes"] <= 2**20)
    assert len(rows) >= 20
    errs = [inference.allreduce_time(r["message_bytes"], r["gpus"], SYSTEM[system])
            / (r["latency_ms"] * 1e-3) - 1 for r in rows]
    # when written: mean |error| 15.7% (H200), 15.6% (H100); worst -32% (H100, 4 GPUs,
    # 16 KiB)
    assert statistics.mean(abs(e) for e in errs) < 0.22
    assert max(abs(e) for e in errs) < 0.40


def test_ttft_of_vllm_at_low_concurrency():
    # TTFT of one prompt (1024 or 8192 tokens) against vLLM's rows at concurrency 4,
    # where a prompt rarely waits for another; queueing is not modelled. With the
    # prefill layer model fitted to our H200 runs (2026-12-02), 21 rows: at 8192 tokens
    # (7 rows) mean |error| 8.2%, worst +18% (H100, TP8); at 1024 tokens (14 rows) the
    # model is faster on every row, by 12-34% (mean 25%): per-request costs of the
    # engine (scheduler, tokenizer, the decode steps of the other three requests) that
    # a layer model leaves out weigh most on a short prompt.
    errs = {1024: [], 8192: []}
    for r in published.end_to_end_rows():
        if (r["source_id"] != "aic-silicon-sample" or r["metric"] != "ttft_ms"
                or r["concurrency"] != 4 or not r["software"].startswith("vllm")
                or r["system"] not in SYSTEM):
            continue
        f = inference.prefill_time(
            "llama3-70b", SYSTEM[r["system"]], tp=r["tp"], prompt=r["isl"],
            precision=r["precision"], allreduce="oneshot" if r["tp"] > 1 else "nccl")
        errs[r["isl"]].append(f.ttft * 1e3 / r["value"] - 1)
    assert len(errs[1024]) >= 10 and len(errs[8192]) >= 5
    assert statistics.mean(abs(e) for e in errs[8192]) < 0.12
    assert max(abs(e) for e in errs[8192]) < 0.25
    assert all(-0.40 < e < -0.05 for e in errs[1024])
