"""Prefill layer-shard model (gpulab.inference.prefill_layer_time) and prefill_time.

Checked against our own 1x H200 prefill runs (``measurements/raw/h200-x1-2026-12-02-
prefill``): the constants are fitted on the Llama 3 8B / 70B rows with one prompt only
(scripts/fit_prefill.py); every row of the 5120-wide layer and every batch-4 row is held
out and bounds the error, overall and per prompt band and precision. Oracles: the model is
never faster than its GEMMs at the Tensor Core peak (nor than reading its weights once),
causal attention is half of full attention, attention's share grows with the prompt,
time grows with the tokens, TP roughly halves a shard, and prefill_time is built from it.
"""
from __future__ import annotations

import csv
import io
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import strategies  # noqa: F401  (registers the "ci" profile)
from gpulab import inference, specs
from gpulab import parallelism as par

RUN = "measurements/raw/h200-x1-2026-12-02-prefill/prefill.csv"
KEYS = ("hidden", "heads", "kv_heads", "ffn_hidden", "tp", "batch", "prompt")
ROOT = Path(__file__).resolve().parents[2]
H200 = specs.gpu("H200")
L70 = (8192, 64, 8, 28672)
L8 = (4096, 32, 8, 14336)
BANDS = {"prompt_below_2048": (1, 2047), "prompt_2048_to_8192": (2048, 8192),
         "prompt_above_8192": (8193, 10**9)}


def _rows():
    return list(csv.DictReader(io.StringIO(specs.read_data_text(RUN))))


def _held(r):
    return r["shape"] == "h5120-gqa8" or int(r["batch"]) != 1


def _err(r):
    t = inference.prefill_layer_time(*(int(r[k]) for k in KEYS),
                                      precision=r["precision"])
    return t / (float(r["layer_us"]) * 1e-6) - 1


# --- against our runs ----------------------------------------------------------------------
def test_fit_and_held_out_rows_are_disjoint():
    rows = _rows()
    held = [r for r in rows if _held(r)]
    assert len(rows) == 96 and len(held) == 32
    assert {r["shape"] for r in rows if not _held(r)} == {"llama3-8b", "llama3-70b"}
    assert any(r["shape"] != "h5120-gqa8" for r in held)       # the batch-4 rows


def test_held_out_error_overall():
    # measured at the fit of 2026-12-02: mean |error| 1.4%, worst +4.3% (32 rows);
    # bounds: mean 2%, worst 5%
    errs = [_err(r) for r in _rows() if _held(r)]
    assert statistics.mean(abs(e) for e in errs) < 0.02
    assert max(abs(e) for e in errs) < 0.05


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("band", sorted(BANDS))
def test_held_out_error_by_band_and_precision(band, precision):
    # measured: mean |error| 0.5-2.2% in each band x precision (4-8 rows each), worst
    # 4.3% (FP8, 2048-8192 tokens); bounds: mean 3%, worst 5%
    lo, hi = BANDS[band]
    errs = [_err(r) for r in _rows() if _held(r) and r["precision"] == precision
            and lo <= int(r["prompt"]) <= hi]
    assert errs
    assert statistics.mean(abs(e) for e in errs) < 0.03
    assert max(abs(e) for e in errs) < 0.05


def test_fit_error():
    # measured: mean |error| 2.0%, worst -8.3% (70B, TP 1, 32768 tokens); bounds 3%, 10%
    errs = [_err(r) for r in _rows() if not _held(r)]
    assert statistics.mean(abs(e) for e in errs) < 0.03
    assert max(abs(e) for e in errs) < 0.10


def test_stored_constants_reproduce():
    done = subprocess.run([sys.executable, "scripts/fit_prefill.py", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_stored_checks_are_what_the_model_gives():
    stored = inference.prefill_checks()["held_out"]["fp8_prompt_2048_to_8192"]
    errs = [_err(r) for r in _rows() if _held(r) and r["precision"] == "fp8"
            and 2048 <= int(r["prompt"]) <= 8192]
    assert stored["n"] == len(errs)
    assert stored["worst"] == pytest.approx(max(errs, key=abs), abs=1e-4)


def test_better_than_the_training_efficiency_path_in_every_band():
    c = inference.prefill_checks()
    for key, now in c["held_out"].items():
        before = c["before_held_out"][key]
        assert now["n"] == before["n"] and now["mean_abs"] < before["mean_abs"], key
    # the replaced path was slow: positive worst errors everywhere
    assert all(v["worst"] > 0 for v in c["before_held_out"].values())


def test_constants_are_derived_fractions():
    c = inference.prefill_constants()
    for k in ("gemm_efficiency_bf16", "gemm_efficiency_fp8", "attention_efficiency",
              "activation_bandwidth_fraction"):
        assert 0 < c[k] <= 1, k
    assert 1e-6 < c["fixed_s"] < 200e-6 and 0 < c["fp8_fixed_s"] < 200e-6


# --- analytic oracles ----------------------------------------------------------------------
def test_causal_attention_is_half_of_full():
    t = inference.prefill_layer_terms(*L70, 8, 2, 4096)
    assert t["attention_flops"] == 0.5 * 4 * (2 * 4096) * 4096 * (64 / 8) * 128


@given(shape=st.sampled_from([L8, L70, (5120, 40, 8, 27648)]),
       tp=st.sampled_from([1, 2, 4, 8]), batch=st.integers(1, 8),
       prompt=st.integers(1, 40000), gpu=st.sampled_from(["H100", "H200", "B200"]))
def test_never_faster_than_its_gemms_at_peak_or_its_weight_read(shape, tp, batch, prompt,
                                                                  gpu):
    g = specs.gpu(gpu)
    for p, peak in (("bf16", g.fp16_dense_flops), ("fp8", g.fp8_dense_flops)):
        t = inference.prefill_layer_terms(*shape, tp, batch, prompt, precision=p)
        time = inference.prefill_layer_time(*shape, tp, batch, prompt, gpu=gpu,
                                            precision=p)
        assert time > float(np.sum(t["gemm_flops"])) / peak
        assert time > float(np.sum(t["weight_bytes"])) / g.memory_bandwidth
        assert time > t["attention_flops"] / g.fp16_dense_flops


def test_attention_share_grows_with_prompt():
    c = inference.prefill_constants()
    share = []
    for s in (512, 2048, 8192, 32768):
        t = inference.prefill_layer_terms(*L70, 8, 1, s)
        attn = t["attention_flops"] / (c["attention_efficiency"] * H200.fp16_dense_flops)
        share.append(attn / inference.prefill_layer_time(*L70, 8, 1, s))
    assert all(a < b for a, b in zip(share, share[1:]))
    # GEMMs grow as s, causal attention as s^2: under 1% at 512 tokens, a fifth at 32768
    assert share[0] < 0.01 and share[-1] > 0.2


@given(shape=st.sampled_from([L8, L70]), tp=st.sampled_from([1, 2, 4, 8]),
       batch=st.integers(1, 8), prompt=st.integers(1, 20000),
       precision=st.sampled_from(["bf16", "fp8"]))
def test_time_grows_with_tokens(shape, tp, batch, prompt, precision):
    def t(b, s):
        return inference.prefill_layer_time(*shape, tp, b, s, precision=precision)
    assert t(batch, prompt + 1) > t(batch, prompt) and t(batch + 1, prompt) > t(batch, prompt)
    # the same tokens in more, shorter prompts: less attention
    assert t(2 * batch, prompt) < t(batch, 2 * prompt)


@pytest.mark.parametrize("prompt", [2048, 8192, 32768])
def test_tp_roughly_halves_a_shard(prompt):
    for tp in (1, 2, 4):
        r = (inference.prefill_layer_time(*L70, 2 * tp, 1, prompt)
             / inference.prefill_layer_time(*L70, tp, 1, prompt))
        assert 0.5 < r < 0.6       # fixed costs and full-width activations do not split


def test_fp8_gain_grows_with_the_shard():
    def gain(shape, tp):
        return (inference.prefill_layer_time(*shape, tp, 1, 4096)
                / inference.prefill_layer_time(*shape, tp, 1, 4096, precision="fp8"))
    assert gain(L70, 1) > gain(L70, 8) and gain(L70, 1) > 1.2
    assert gain(L70, 8) > gain(L8, 8)


def test_other_gpus_scale_with_peak_and_bandwidth():
    h100 = inference.prefill_layer_time(*L70, 8, 1, 2048, gpu="H100")
    h200 = inference.prefill_layer_time(*L70, 8, 1, 2048)
    b200 = inference.prefill_layer_time(*L70, 8, 1, 2048, gpu="B200")
    assert b200 < h200 < h100 < 1.2 * h200      # same peak, less HBM bandwidth


# --- prefill_time -------------------------------------------------------------------------
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_prefill_time_is_layers_times_the_shard(precision):
    m = par.model("llama3-70b")
    f = inference.prefill_time("llama3-70b", "hgx-h200", tp=8, prompt=4096,
                               precision=precision)
    layer = inference.prefill_layer_time(m.hidden, m.heads, m.kv_heads, m.ffn_hidden, 8,
                                         1, 4096, precision=precision)
    head = f.compute_time - m.layers * layer
    assert 0 < head < 0.01 * f.compute_time        # the LM head on one token per prompt
    t = inference.prefill_layer_terms(m.hidden, m.heads, m.kv_heads, m.ffn_hidden, 8, 1,
                                      4096, precision=precision)
    peak = H200.fp8_dense_flops if precision == "fp8" else H200.fp16_dense_flops
    done = float(np.sum(t["gemm_flops"])) + t["attention_flops"]
    assert f.efficiency == pytest.approx(done / (layer * peak))


def test_compiled_prefill_is_faster_than_the_training_path():
    kw = dict(tp=8, prompt=32768)
    new = inference.prefill_time("llama3-70b", "hgx-h200", **kw)
    old = inference.prefill_time("llama3-70b", "hgx-h200", recipe="eager", **kw)
    assert new.compute_time < 0.8 * old.compute_time


# --- bad input ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(prompt=0), r"prompt must be an integer in \[1, 1e\+06\]"),
    (dict(batch=10**5), r"batch must be an integer in \[1, 10000\]"),
    (dict(tp=3), r"tp must divide heads \(64\)"),
    (dict(precision="int8"), r"precision must be one of"),
    (dict(gpu="h200"), r"gpu must be one of"),
    (dict(gpu="A100", precision="fp8"), r"precision must be 'bf16' on A100"),
])
def test_bad_input(kw, match):
    args = dict(hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, tp=8, batch=1,
                prompt=2048)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        inference.prefill_layer_time(**args)
