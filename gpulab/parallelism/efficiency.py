r"""Compute efficiency of a tensor-parallel layer shard, from its shape.

The step model used to multiply FLOPs by one flat MFU. On one H200 a TP shard of a GPT
layer (forward + backward) reaches anywhere from 6% to 67% of the dense BF16 peak,
depending on the hidden size per TP rank and the tokens per micro-batch
(``data/measurements/raw/h200-x1-2026-12-01-layers``). This module models the shard's
time from its GEMM, attention and memory-traffic work, with constants fitted to those
runs only (``scripts/fit_layer_efficiency.py`` writes ``data/layer_efficiency.yaml``).

The model (one TP shard of one layer, forward + backward, no recomputation)
---------------------------------------------------------------------------
With T tokens per micro-batch (``seq_len x micro_batch``), hidden h, TP degree t and the
four linear layers (k -> n per rank: QKV h -> 3h/t, attention output h/t -> h, fc1
h -> 4h/t, fc2 4h/t -> h for a GPT layer):

.. math::

    g = \frac{P_\text{ref}}{P}\left[\frac{\sum_j 6Tk_jn_j\,(1 + n_0/\min(k_j,n_j))}
        {\eta_\text{gemm}P_\text{ref}} + \frac{12Tsh/t}{\eta_\text{attn}P_\text{ref}}\right]
      + \frac{B_\text{ref}}{B}\left[c_h\,Th + c_{ht}\,Th/t + c_w\textstyle\sum_j k_jn_j\right]

    t_\text{shard} = \left(t_0^{\,p} + g^{\,p}\right)^{1/p}

* GEMMs: a fixed efficiency :math:`\eta_\text{gemm}` of the peak, reduced for a thin GEMM
  by :math:`d/(d+n_0)`, :math:`d` its smaller weight dimension (the fitted
  :math:`n_0` is about 90 elements in bf16, 230 in fp8);
* attention (flash, causal, head dim 128): its Narayanan FLOPs :math:`12Tsh/t` at
  :math:`\eta_\text{attn}`;
* memory-bound work per element: LayerNorms, residual adds (full width, :math:`Th`),
  GeLU and biases (:math:`Th/t`), and per weight element (in the fp8 path: the per-call
  re-cast and transposes of the weights);
* :math:`t_0`: the floor of an eager PyTorch shard (CPU launch cost; no shard took less
  than 1.18 ms in bf16), joined to the GPU work by a smooth maximum of exponent
  :math:`p`.

The constants (per precision) are fitted by least squares on log time over the fit
grid (hidden 2048-25600, TP 1-8, tokens 2048-16384, 192 shapes per precision); a
held-out grid of 64 shapes per precision (hidden 3072-14336, tokens 3072-12288, none
of them in the fit) gives the error quoted in ``data/layer_efficiency.yaml`` and tested
in ``tests/models/test_efficiency.py``: mean |error| of the efficiency 1.5% (bf16) and
1.8% (fp8), worst 18% and 16% (the smallest, launch-bound shards: hidden/tp below 1024).

What the numbers are
--------------------
* Measured on 1x H200 SXM at its 700 W power limit (SM clock ~1.5 GHz under load, not
  1.98 GHz), with eager PyTorch 2.11 (cuBLAS GEMMs, flash attention through SDPA). The
  large-shape ceiling (:math:`\eta_\text{gemm}` about 0.68 in bf16) is below the
  standalone GEMM check (0.80 of 989 TFLOP/s at 4096-8192 cubed) because the layer
  also runs narrower GEMMs, bias gradients and memory-bound kernels.
* ``fp8``: plain eager ``torch._scaled_mm`` with per-call, unfused casts of weights and
  activations -- NOT Transformer Engine. Against the FP8 dense peak the shard reaches
  at most ~0.45; it is slower than bf16 at small shapes. A fused FP8 recipe would do
  better; this model describes what we measured.
* Other GPUs (A100, H100, B200, ...): the GEMM and attention terms are scaled by
  the ratio of dense peaks and the memory terms by the ratio of HBM bandwidths, so the
  efficiency curve is a fraction of each GPU's own peak *transferred from the H200
  measurements* -- an assumption, not a measurement. H100 SXM has the same SMs and
  peak as H200 but less HBM bandwidth (3.35 vs 4.8 TB/s), so its memory-bound terms
  take longer. The launch floor :math:`t_0` is kept (it is the host's, not the GPU's).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import measurements, specs
from .._validate import check_choice, check_int
from .model import NORMS, model as model_preset
from .power import clock_factor

#: Precisions of the layer-shard model.
PRECISIONS = ("bf16", "fp8")
#: Execution recipes: ``"compiled"`` is what training frameworks run (torch.compile;
#: for FP8, torchao's float8 training with tensorwise scaling, casts fused by the
#: compiler), ``"compiled-rowwise"`` the same with torchao's rowwise scaling (one scale
#: per row of each operand; BF16 is the same as ``"compiled"``), ``"eager"`` the naive
#: variant (eager PyTorch; for FP8, per-call unfused ``torch._scaled_mm`` casts).
RECIPES = ("compiled", "compiled-rowwise", "eager")


#: Attention kernels: ``"flash"`` (PyTorch SDPA's flash backend, what our shard runs and
#: torchtitan's Llama use) or ``"cudnn"`` (cuDNN's fused attention, which Transformer Engine
#: prefers on Hopper and later: ``get_attention_backend`` in
#: ``transformer_engine/pytorch/attention/dot_product_attention/utils.py`` lines 1118-1124 at
#: v2.9).
ATTENTION_BACKENDS = ("flash", "cudnn")
#: The head shape of ``measurements.attention_kernels`` whose runs set the cuDNN/flash time
#: ratio; the other shape (Llama 3.1 405B at TP8) is held out.
ATTENTION_FIT_SHAPE = "llama3-8b-tp1"


@functools.lru_cache(maxsize=None)
def _ratio_points(shape):
    k = measurements.attention_kernels()
    pts = sorted((s, k[("cudnn", sh, kind, s)]["fwd_bwd_s"] / v["fwd_bwd_s"])
                 for (b, sh, kind, s), v in k.items()
                 if b == "flash" and sh == shape and kind == "causal")
    return tuple(pts)


def _interp_ratio(pts, seq_len):
    """Linear in log2 of the length between the points, the end values outside them."""
    return float(np.interp(math.log2(seq_len), [math.log2(s) for s, _ in pts],
                           [r for _, r in pts]))


def attention_backend_ratio(seq_len, backend="cudnn"):
    """Time of ``backend``'s attention kernels over the flash backend's (forward +
    backward, causal, one sequence of ``seq_len`` tokens).

    Measured on our H200 (``measurements.attention_kernels``, the Llama 3 8B TP1 head
    shape), interpolated in log2 of the length between the measured 2K-256K points and
    held at the end values outside them. ``"flash"`` is 1. The shard model's attention
    term was fitted on flash-backend runs, so a cuDNN shard gets that term times this
    ratio. Held-out check on the other head shape: :func:`attention_backend_check`.

    Parameters
    ----------
    seq_len : int
        Query tokens per sequence on the GPU (>= 1; with context parallelism its share).
    backend : {"flash", "cudnn"}

    Returns
    -------
    float

    Examples
    --------
    >>> attention_backend_ratio(8192, "flash")
    1.0
    >>> [round(attention_backend_ratio(s), 2) for s in (2048, 8192, 131072)]
    [0.6, 0.57, 0.6]
    """
    s = check_int("seq_len", seq_len, low=1, high=10**8)
    check_choice("backend", backend, ATTENTION_BACKENDS)
    if backend == "flash":
        return 1.0
    return _interp_ratio(_ratio_points(ATTENTION_FIT_SHAPE), s)


def attention_backend_check():
    """The cuDNN/flash ratio of :func:`attention_backend_ratio` against the held-out head
    shape (Llama 3.1 405B at TP8: 16 query heads, 1 KV head), per measured length.

    Returns
    -------
    list of dict
        ``seq_len``, ``measured`` and ``model`` (time ratios) and ``error``
        (model / measured - 1), by length.

    Examples
    --------
    >>> rows = attention_backend_check()
    >>> [r["seq_len"] for r in rows][:3], max(abs(r["error"]) for r in rows[2:]) < 0.05
    ([2048, 4096, 8192], True)
    """
    out = []
    for s, measured in _ratio_points("llama3-405b-tp8"):
        model = attention_backend_ratio(s)
        out.append({"seq_len": s, "measured": measured, "model": model,
                    "error": model / measured - 1.0})
    return out


#: The head shapes of ``measurements.attention_kernels``: (model preset, TP degree).
ATTENTION_SHAPES = {"llama3-8b-tp1": ("llama3-8b", 1), "llama3-405b-tp8": ("llama3-405b", 8)}


def attention_time_check(backend="flash"):
    """The shard model's attention term against the attention kernels timed alone.

    For every causal sequence of ``measurements.attention_kernels`` (2K-256K tokens, both
    head shapes, one sequence), the attention term of the layer model
    (:func:`recipe_shard_time`: Narayanan's FLOPs at the fitted efficiency, times
    :func:`attention_backend_ratio` for ``"cudnn"``) on the H200 beside the measured
    forward + backward time. Not a fit: the term was fitted on whole layer shards of
    2048-16384 tokens.

    Parameters
    ----------
    backend : {"flash", "cudnn"}

    Returns
    -------
    list of dict
        ``shape``, ``seq_len``, ``measured_s``, ``model_s`` and ``error``
        (model / measured - 1), by shape and length.

    Examples
    --------
    >>> rows = attention_time_check()
    >>> long = [r["error"] for r in rows if r["seq_len"] >= 32768]
    >>> 0.15 < min(long) <= max(long) < 0.3     # the model is slower than the kernels
    True
    """
    check_choice("backend", backend, ATTENTION_BACKENDS)
    k = measurements.attention_kernels()
    g = specs.gpu("H200")
    out = []
    for shape, (name, tp) in ATTENTION_SHAPES.items():
        m = model_preset(name)
        for (b, sh, kind, s), v in sorted(k.items(), key=lambda kv: kv[0][3]):
            if b != backend or sh != shape or kind != "causal":
                continue
            model_s = spec_attention_time(m, tp, s, 1, g, attention=backend)
            out.append({"shape": shape, "seq_len": s, "measured_s": v["fwd_bwd_s"],
                        "model_s": model_s, "error": model_s / v["fwd_bwd_s"] - 1.0})
    return out


def shard_terms(hidden, tp, seq_len, micro_batch, *, qkv_out=None, ffn_hidden=None,
                swiglu=False, kv_len=None, norm="layernorm"):
    """Work terms of one TP shard of one layer, forward + backward (dict).

    ``qkv_out``: QKV output width of the whole layer (default 3 x hidden, multi-head);
    ``ffn_hidden``: MLP inner size (default 4 x hidden); ``swiglu``: fc1 is 2 x wide;
    ``kv_len``: keys each query attends over (default ``seq_len``; with context
    parallelism a rank holds ``seq_len / cp`` queries of a sequence of ``kv_len``);
    ``norm``: the layer's norm (``"layernorm"`` or ``"rmsnorm"``; it decides where the
    compiled FP8 recipe's fused norm kernel spills, :func:`mix_order_spills`).
    """
    check_choice("norm", norm, NORMS)
    h, t = float(hidden), float(tp)
    tokens = float(seq_len) * float(micro_batch)
    keys = float(seq_len if kv_len is None else kv_len)
    qkv = 3.0 * h if qkv_out is None else float(qkv_out)
    f = 4.0 * h if ffn_hidden is None else float(ffn_hidden)
    fc1 = (2.0 if swiglu else 1.0) * f
    dims = [(h, qkv / t), (h / t, h), (h, fc1 / t), (f / t, h)]
    gemm = sum(6.0 * tokens * k * n for k, n in dims)
    thin = sum(6.0 * tokens * k * n / min(k, n) for k, n in dims)
    return {"gemm_flops": gemm, "gemm_thin": thin,
            "cast_elements": tokens * sum(k + n for k, n in dims),
            "norm_rows": tokens, "norm_width": h, "sequences": float(micro_batch),
            "rms_norm": float(norm == "rmsnorm"),
            "attention_flops": 12.0 * tokens * keys * h / t, "q_len": float(seq_len),
            "full_width_elements": tokens * h, "shard_width_elements": tokens * h / t,
            "weight_elements": sum(k * n for k, n in dims)}


@functools.lru_cache(maxsize=None)
def coefficients(precision):
    """The fitted constants of ``precision`` from ``data/layer_efficiency.yaml`` (dict)."""
    check_choice("precision", precision, PRECISIONS)
    names = ("floor_s", "floor_exponent", "gemm_efficiency", "gemm_half_dim",
             "attention_efficiency", "full_width_s_per_element",
             "shard_width_s_per_element", "weight_s_per_element")
    c = {n: float(specs.assumption("layer_efficiency", f"{precision}/{n}"))
         for n in names}
    c["peak_flops"] = float(specs.assumption("layer_efficiency",
                                             f"reference/{precision}_peak_flops"))
    c["hbm_bandwidth"] = float(specs.assumption("layer_efficiency",
                                                "reference/hbm_bandwidth"))
    return c


def peak_flops(gpu_spec, precision):
    """Dense Tensor Core peak of ``gpu_spec`` in ``precision`` [FLOP/s]."""
    if precision == "fp8":
        if not gpu_spec.fp8_dense_flops:
            raise ValueError(f"precision must be 'bf16' on {gpu_spec.name} (it has no "
                             f"FP8 Tensor Cores); got 'fp8'")
        return gpu_spec.fp8_dense_flops
    return gpu_spec.fp16_dense_flops


def shard_time(terms, gpu_spec, precision, coef=None, attention_scale=1.0):
    """Modelled time of one shard (forward + backward) from :func:`shard_terms`. [s]

    ``coef``: constants as :func:`coefficients` returns them (default: the fitted ones;
    the fitting script passes trial values). ``attention_scale`` multiplies the attention
    term (:func:`attention_backend_ratio` for another attention backend)."""
    c = coefficients(precision) if coef is None else coef
    peak = peak_flops(gpu_spec, precision)
    compute = ((terms["gemm_flops"] + c["gemm_half_dim"] * terms["gemm_thin"])
               / (c["gemm_efficiency"] * peak)
               + attention_scale * terms["attention_flops"]
               / (c["attention_efficiency"] * peak)) / clock_factor(gpu_spec, precision)
    memory = (c["full_width_s_per_element"] * terms["full_width_elements"]
              + c["shard_width_s_per_element"] * terms["shard_width_elements"]
              + c["weight_s_per_element"] * terms["weight_elements"]) \
        * c["hbm_bandwidth"] / gpu_spec.memory_bandwidth
    p = c["floor_exponent"]
    return (c["floor_s"] ** p + (compute + memory) ** p) ** (1.0 / p)


#: Names of the compiled-recipe constants in ``data/layer_recipes.yaml`` ("compiled/<name>").
RECIPE_CONSTANTS = ("bf16_gemm_scale", "memory_scale", "fixed_s", "fp8_gemm_scale",
                    "fp8_weight_s_per_element", "fp8_activation_s_per_element",
                    "fp8_fixed_s", "fp8_mix_order_s_per_element",
                    "fp8_mix_order_spill_s_per_row", "host_bf16_s",
                    "host_fp8_s", "host_exponent")
#: The FP8 constants fitted again for rowwise scaling ("compiled-rowwise/<name>").
ROWWISE_CONSTANTS = ("fp8_gemm_scale", "fp8_weight_s_per_element",
                     "fp8_activation_s_per_element", "fp8_fixed_s")
#: Inductor's mix-order reduction rule (PyTorch 2.11.0, ``torch/_inductor/scheduler.py``,
#: ``MixOrderReduction.can_fuse``, lines 268-370): a row reduction and a column reduction
#: of the same rows x width tensor are fused into one persistent kernel when rows x width
#: >= 5 * 2**20 (line 326), rows >= 2 width (line 332), rows >= 4096 (line 338) and
#: width <= 16384 (line 356); on by default (``config.py`` line 1781).
MIX_ORDER_MIN_ELEMENTS = 5 * 2 ** 20
MIX_ORDER_MIN_ROWS = 4096
MIX_ORDER_MAX_WIDTH = 16384
#: The widest norm, per kind, whose fused mix-order kernel did not spill registers in our
#: profiles; wider ones spill (:func:`mix_order_spills`).
MIX_ORDER_SPILL_FREE_WIDTH = {"layernorm": 8192, "rmsnorm": 6144}


def mix_order_fused(rows, width, sequences=1):
    """Whether compiled FP8 fuses a norm's backward with the FP8 cast of its output.

    Inductor's mix-order reduction (PyTorch 2.11) fuses the row reduction and the column
    reduction of one ``rows x width`` tensor -- here the norm's backward and the
    transposed FP8 copy of its output -- into one persistent kernel when ``rows x width
    >= 5 * 2**20``, ``rows >= 2 width``, ``rows >= 4096`` and ``width <= 16384``
    (:data:`MIX_ORDER_MIN_ELEMENTS` and the rest). In our runs it did so only with one
    sequence per micro-batch; with 2 or 4 it kept the two apart.

    Parameters
    ----------
    rows : int
        Tokens that enter the norm on this GPU (sequence x micro-batch, over CP).
    width : int
        The norm's width (the hidden size; the full width without sequence parallelism).
    sequences : int
        Sequences per micro-batch.

    Examples
    --------
    >>> mix_order_fused(8192, 4096), mix_order_fused(4096, 4096), mix_order_fused(
    ...     8192, 4096, sequences=2)
    (True, False, False)
    """
    check_int("rows", rows, low=1)
    check_int("width", width, low=1)
    check_int("sequences", sequences, low=1)
    return (sequences == 1 and rows >= MIX_ORDER_MIN_ROWS and rows >= 2 * width
            and rows * width >= MIX_ORDER_MIN_ELEMENTS and width <= MIX_ORDER_MAX_WIDTH)


def mix_order_spills(width, norm="layernorm"):
    r"""Whether the fused mix-order kernel of a norm this wide spills registers.

    The kernel holds a whole row per thread block: Inductor (PyTorch 2.11) rounds the
    width up to a power of two :math:`R` and launched it with :math:`R / 1024` warps in
    every profile (8 at 8192, 16 at 16384), so each thread keeps 32 values of every
    row-long tensor it needs, and an SM's 65,536 registers leave it
    :math:`\min(255, 2^{21}/R)`. Triton reported, for that kernel: LayerNorm at 8192,
    255 registers and 6 spilled; LayerNorm at 16384, the 128 allowed and 212 spilled;
    RMSNorm at 8192, 594 spilled. A spilling kernel then costs about a microsecond per
    row (``fp8_mix_order_spill_s_per_row``), ten times the kernels it replaces. RMSNorm
    at 6144 cost per element what the kernels that fit cost.

    The rule is read from those profiles, not derived: at most
    :data:`MIX_ORDER_SPILL_FREE_WIDTH` per norm does not spill, wider does. Widths past
    8192 (16 warps, 128 registers) spill for both norms, as the LayerNorm kernel that
    needed 255 registers at 8192 must; RMSNorm between 6144 and 8192 was taken to spill
    like 8192. Profiled after the rule was set (held out): RMSNorm at 7168 (32 registers,
    582 spilled) and LayerNorm at 12288 (272 spilled) spill and cost the per-row term
    within 8%; RMSNorm at 6144 kept 255 registers (64 spilled) and its per-element cost.
    The Triton source of the 6144 and 7168 kernels differs only in the width: the register
    allotment is the backend compiler's, which is why the rule is read, not derived.

    Parameters
    ----------
    width : int
        The norm's width (the hidden size).
    norm : {"layernorm", "rmsnorm"}

    Examples
    --------
    >>> mix_order_spills(8192), mix_order_spills(8192, "rmsnorm"), mix_order_spills(16384)
    (False, True, True)
    """
    check_int("width", width, low=1)
    check_choice("norm", norm, NORMS)
    return width > MIX_ORDER_SPILL_FREE_WIDTH[norm]


def _terms_fused(terms):
    # rows may fall below one (tokens / tp with sequence parallelism): no fusion there
    return terms["norm_rows"] >= 1 and mix_order_fused(
        int(terms["norm_rows"]), int(terms["norm_width"]), int(terms["sequences"]))


#: How the host drives a compiled shard: ``"ahead"`` (the host issues ahead of the GPU,
#: as inside a model of many layers: the GPU's time) or ``"synced"`` (one shard timed on
#: its own, the host issuing while the GPU runs: the host's issue time is a floor).
HOSTS = ("ahead", "synced")


@functools.lru_cache(maxsize=None)
def recipe_coefficients(recipe="compiled"):
    """The fitted constants of a compiled recipe (``data/layer_recipes.yaml``).

    ``"compiled-rowwise"``: the compiled constants with the FP8 ones
    (``ROWWISE_CONSTANTS``) fitted to the rowwise runs.
    """
    check_choice("recipe", recipe, ("compiled", "compiled-rowwise"))
    c = {n: float(specs.assumption("layer_recipes", f"compiled/{n}"))
         for n in RECIPE_CONSTANTS}
    if recipe == "compiled-rowwise":
        c.update({n: float(specs.assumption("layer_recipes", f"compiled-rowwise/{n}"))
                  for n in ROWWISE_CONSTANTS})
    return c


def recipe_shard_time(terms, gpu_spec, precision, recipe, coef=None, host="ahead",
                      attention="flash"):
    r"""Modelled time of one shard under an execution recipe. [s]

    * ``"eager"``: :func:`shard_time` (BF16, or FP8 through unfused ``_scaled_mm``):
      the GPU's time with the host issuing each kernel as it goes (a launch floor).
    * ``"compiled"`` (torch.compile; in FP8 torchao's float8 training with tensorwise
      scaling): the time of the shard's kernels back to back, as in a model whose
      host runs ahead of the GPU (no launch floor):

      .. math::

          g = \frac{g_\text{gemm}}{s_p} + g_\text{attn}^{bf16} + m\,g_\text{mem}^{bf16}
              + t_0 \;\Big[ + \frac{B_\text{ref}}{B}\left(c_W W + c_A A\right) + t_8
              \Big]_\text{fp8}

      :math:`g_\text{gemm}` is the GEMM term of the eager fit in precision :math:`p`
      (the same cuBLAS / ``_scaled_mm`` kernels) and :math:`s_p` its fitted speed-up
      when the kernels run back to back; :math:`m` scales the eager fit's memory
      terms (norms, activations, residuals that the compiler fuses); :math:`t_0` is a
      fixed GPU cost per shard. In FP8, :math:`W` is the shard's weight elements
      (amax, cast and transposed copy of each weight, every micro-batch),
      :math:`A = T\sum_j (k_j + n_j)` the activation and gradient elements that
      cross a cast, :math:`t_8` the recipe's extra fixed cost. Fitted by
      ``scripts/fit_layer_recipes.py`` on our static-compile H200 runs; the host's
      own issue time (3-5 ms per shard step in those runs) is not in :math:`g`: a
      shard shorter than that is host-bound unless CUDA graphs replay it.

    Other GPUs: as in :func:`shard_time`, the FLOP terms scale with the GPU's own dense
    peaks and the memory and cast terms with its HBM bandwidth; the scales and fixed
    costs are carried over from the H200 runs unchanged -- an assumption. A GH100 board
    held at a lower power limit than our H200's 700 W runs the FLOP terms at its
    power-limited clock (:func:`gpulab.parallelism.power.clock_factor`). On B200 the
    FP8 peak of ``data/gpus.csv`` (NVIDIA DGX B200 datasheet) serves both per-tensor
    FP8 and MXFP8 (one E8M0 scale per 32 values, applied natively by Blackwell's
    Tensor Cores: Transformer Engine user guide, "MXFP8"); the same peak for both is
    an assumption, and the model does not tell them apart.

    One sequence per micro-batch (``"compiled"`` FP8 only): Inductor (PyTorch 2.11) fuses
    the norm's backward and the FP8 cast of its transposed output into one persistent
    "mix-order" reduction when the rows and the norm's width meet its rule
    (:data:`MIX_ORDER_MIN_ROWS` and the rest: rows >= max(4096, 2 width), rows x width
    >= 5 * 2**20, width <= 16384); that kernel writes the transposed FP8 copy one byte
    per row, column by column, and costs :math:`c_m` per element of rows x width more
    than the kernels it replaces (``fp8_mix_order_s_per_element``, measured with the
    fusion on and off, ``TORCHINDUCTOR_MIX_ORDER_REDUCTION=0``, on our H200; not fitted).
    With two or more sequences per micro-batch our runs never showed it. Where that kernel
    spills registers (:func:`mix_order_spills`: RMSNorm wider than 6144, LayerNorm wider
    than 8192) it costs instead :math:`c_r` per row (``fp8_mix_order_spill_s_per_row``,
    measured the same way; taken as it is on other GPUs, an assumption). Rowwise scaling meets the
    same fusion, but there it saved time in our profile, and ``"compiled-rowwise"``
    carries no such term.

    ``host="synced"`` (compiled only): one shard timed alone, host issuing while the
    GPU runs, :math:`(g^q + h^q)^{1/q}` with :math:`h` the host's issue time of one
    compiled shard step (BF16 or FP8) and :math:`q` fitted to the synced times of our
    runs (the host floor of a thin shard; a model of many thin layers without CUDA
    graphs is host-bound in the same way).

    ``"compiled-rowwise"``: the same equation with the FP8 constants (:math:`s_8`,
    :math:`c_W`, :math:`c_A`, :math:`t_8`) fitted again to our runs of torchao's rowwise
    scaling (one scale per row of each GEMM operand), which are 18-51% slower than
    tensorwise on the same shapes; BF16 is unchanged.

    ``coef``: the compiled constants (default: the fitted ones of ``recipe``).
    ``attention``: the attention kernels (:data:`ATTENTION_BACKENDS`); ``"cudnn"`` scales
    the attention term by :func:`attention_backend_ratio` at the shard's query length.
    """
    check_choice("recipe", recipe, RECIPES)
    check_choice("host", host, HOSTS)
    check_choice("attention", attention, ATTENTION_BACKENDS)
    a_scale = attention_backend_ratio(max(1, int(terms.get("q_len", 1))), attention) \
        if attention != "flash" else 1.0
    if recipe == "eager":
        return shard_time(terms, gpu_spec, precision, attention_scale=a_scale)
    k = recipe_coefficients(recipe) if coef is None else coef
    cb, cp = coefficients("bf16"), coefficients(precision)
    scale = k["fp8_gemm_scale"] if precision == "fp8" else k["bf16_gemm_scale"]
    gemm = (terms["gemm_flops"] + cp["gemm_half_dim"] * terms["gemm_thin"]) \
        / (cp["gemm_efficiency"] * scale * peak_flops(gpu_spec, precision)
           * clock_factor(gpu_spec, precision))
    attn = a_scale * terms["attention_flops"] \
        / (cb["attention_efficiency"] * peak_flops(gpu_spec, "bf16")
           * clock_factor(gpu_spec, "bf16"))
    bw = cb["hbm_bandwidth"] / gpu_spec.memory_bandwidth
    memory = k["memory_scale"] * bw * (
        cb["full_width_s_per_element"] * terms["full_width_elements"]
        + cb["shard_width_s_per_element"] * terms["shard_width_elements"]
        + cb["weight_s_per_element"] * terms["weight_elements"])
    g = gemm + attn + memory + k["fixed_s"]
    if precision == "fp8":
        g += bw * (k["fp8_weight_s_per_element"] * terms["weight_elements"]
                   + k["fp8_activation_s_per_element"] * terms["cast_elements"]) \
            + k["fp8_fixed_s"]
        if recipe == "compiled" and _terms_fused(terms):
            norm = "rmsnorm" if terms["rms_norm"] else "layernorm"
            if mix_order_spills(int(terms["norm_width"]), norm):
                g += k["fp8_mix_order_spill_s_per_row"] * terms["norm_rows"]
            else:
                g += bw * k["fp8_mix_order_s_per_element"] \
                    * terms["norm_rows"] * terms["norm_width"]
    if host == "synced":
        h, q = k[f"host_{precision}_s"], k["host_exponent"]
        g = (g ** q + h ** q) ** (1.0 / q)
    return g


def gemm_efficiency(k, n, gpu_spec, precision):
    """Fraction of the dense peak one GEMM with weight k x n reaches (forward + backward).

    The GEMM part of the layer model alone: ``gemm_efficiency / (1 + n0 / min(k, n))``,
    no launch floor and no memory term. Used for the logits layer.
    """
    peak_flops(gpu_spec, precision)
    c = coefficients(precision)
    return c["gemm_efficiency"] / (1.0 + c["gemm_half_dim"] / min(k, n)) \
        * clock_factor(gpu_spec, precision)


def narayanan_shard_flops(hidden, tp, seq_len, micro_batch):
    """72 b s h^2 (1 + s/(6h)) / t: Narayanan et al. eq. 3 per layer, one TP shard. [FLOP]"""
    tokens = float(seq_len) * float(micro_batch)
    h = float(hidden)
    return 72.0 * tokens * h * h * (1.0 + seq_len / (6.0 * h)) / tp


def layer_efficiency(hidden, heads, tp, seq_len, micro_batch, *, gpu="H200",
                     precision="bf16", recipe="compiled", host="ahead"):
    r"""Fraction of the dense peak one TP shard of a GPT layer reaches (fwd + bwd).

    Parameters
    ----------
    hidden : int
        Hidden size h (FFN 4h, multi-head attention, head dim ``hidden / heads``).
    heads : int
        Attention heads; ``hidden`` must be a multiple and ``tp`` must divide it.
    tp : int
        Tensor-parallel degree t.
    seq_len : int
        Sequence length s. [tokens]
    micro_batch : int
        Sequences per micro-batch b.
    gpu : str
        A GPU of ``data/gpus.csv`` (``"H200"``, ``"H100"``, ``"A100"``, ...).
    precision : {"bf16", "fp8"}
        Precision of the four linear layers' GEMMs. Attention, norms and activations
        stay BF16 in both.
    recipe : {"compiled", "compiled-rowwise", "eager"}
        How the shard runs (:func:`recipe_shard_time`). ``"compiled"`` (default, what
        training frameworks run): torch.compile, and for FP8 torchao's float8 training
        (dynamic tensorwise scaling, casts and amax reductions fused). ``"eager"``: the
        naive variant, eager PyTorch, FP8 through per-call unfused ``_scaled_mm`` casts.
    host : {"ahead", "synced"}
        Compiled recipe only: ``"ahead"`` (default) the GPU's time inside a model whose
        host runs ahead; ``"synced"`` one shard timed on its own, with the host's issue
        time as a floor (:func:`recipe_shard_time`).

    Returns
    -------
    float
        :math:`F / (t_\text{shard} P)` in (0, 1): :math:`F = 72bsh^2(1 + s/(6h))/t`
        (Narayanan et al. 2021, eq. 3 per layer, no recomputation, no logits, one TP
        shard), :math:`P` the GPU's dense peak in ``precision``
        (``fp16_dense_flops`` or ``fp8_dense_flops``), :math:`t_\text{shard}` the
        modelled time.

    Notes
    -----
    The time model and its constants are described in this module's docstring: a
    roofline per part (GEMMs at a fitted efficiency that falls for thin GEMMs,
    attention, memory-bound elementwise work) joined by a smooth maximum with the
    launch floor of an eager shard, fitted ONLY to our 1x H200 SXM layer-shard runs
    (700 W power limit, eager PyTorch). ``recipe="compiled"`` (the default) takes the
    same terms with the constants fitted to our static-compile runs, kernels back to
    back and no launch floor (:func:`recipe_shard_time`). On other GPUs the curve is transferred from
    H200 (an assumption): compute terms scale with the GPU's own dense peak, memory
    terms with its HBM bandwidth (H100 SXM: same SMs and peak as H200, 3.35 instead
    of 4.8 TB/s). Head dimension is taken as measured (128); ``heads`` is only
    checked. Fitted range: hidden 2048-25600, TP 1-8, tokens 2048-16384; outside it
    the model extrapolates.

    Examples
    --------
    >>> small = layer_efficiency(2048, 16, 8, 2048, 1, recipe="eager")
    >>> large = layer_efficiency(25600, 200, 1, 2048, 8, recipe="eager")
    >>> small < 0.2 < 0.55 < large < 0.8
    True
    >>> layer_efficiency(2048, 16, 8, 2048, 1) > 2 * small     # no launch floor
    True
    >>> layer_efficiency(2048, 16, 8, 2048, 1, host="synced") < small   # host floor
    True
    >>> h100 = layer_efficiency(4096, 32, 4, 2048, 1, gpu="H100")
    >>> h100 < layer_efficiency(4096, 32, 4, 2048, 1)      # less HBM bandwidth
    True

    FP8 pays on a wide shard, not on a thin one (time ratio BF16 / FP8):

    >>> def speedup(h, tp, **kw):
    ...     f = narayanan_shard_flops(h, tp, 2048, 4)
    ...     t = {p: f / (layer_efficiency(h, h // 128, tp, 2048, 4, precision=p, **kw)
    ...                  * peak_flops(specs.gpu("H200"), p)) for p in PRECISIONS}
    ...     return t["bf16"] / t["fp8"]
    >>> speedup(16384, 2) > 1.15 > 1.0 > speedup(4096, 8)
    True
    >>> speedup(16384, 2, recipe="eager") < speedup(16384, 2)
    True
    """
    h = check_int("hidden", hidden, low=1, high=10**7)
    a = check_int("heads", heads, low=1, high=10**7)
    if a > h:
        raise ValueError(f"heads must be at most hidden: each head has hidden / heads "
                         f"dimensions; got heads={a}, hidden={h}")
    if h % a:
        raise ValueError(f"heads must divide hidden ({h}); got {a}")
    t = check_int("tp", tp, low=1, high=a)
    if a % t:
        raise ValueError(f"tp must divide heads ({a}); got {t}")
    s = check_int("seq_len", seq_len, low=1, high=10**8)
    b = check_int("micro_batch", micro_batch, low=1, high=10**6)
    check_choice("gpu", gpu, specs.gpu_names())
    check_choice("precision", precision, PRECISIONS)
    check_choice("recipe", recipe, RECIPES)
    g = specs.gpu(gpu)
    peak = peak_flops(g, precision)
    time = recipe_shard_time(shard_terms(h, t, s, b), g, precision, recipe, host=host)
    return narayanan_shard_flops(h, t, s, b) / (time * peak)


#: Head dimension of the measured layer shards (``heads = hidden / HEAD_DIM`` by default).
HEAD_DIM = 128


def stage_compute_time(hidden, layers, seq_len, micro_batch, *, heads=None, tp=1,
                       gpu="H200", precision="bf16", recipe="compiled"):
    r"""Forward + backward time of one micro-batch through one pipeline stage. [s]

    ``layers`` GPT layers of one TP shard each (hidden, heads, tp as in
    :func:`layer_efficiency`): their Narayanan et al. (2021, eq. 3) FLOPs divided by the
    GPU's dense peak in ``precision`` times :func:`layer_efficiency` of that shape,

    .. math::

        T_\text{stage} = L_\text{stage}\,\frac{72\,b s h^2 (1 + s/(6h))/t}
            {P\,\eta(h, t, s, b)}.

    No logits or embedding layer, no recomputation, no communication: a middle stage.

    Parameters
    ----------
    hidden, tp, seq_len, micro_batch, gpu, precision, recipe
        As in :func:`layer_efficiency`.
    layers : int
        GPT layers in the stage.
    heads : int, optional
        Attention heads; default ``hidden / HEAD_DIM`` (head dimension 128, as measured).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    A 7B-like model (h = 4096, 32 heads, 32 layers) in four stages, one 4096-token
    sequence per micro-batch, on H100: 8 layers.

    >>> t = stage_compute_time(4096, 8, 4096, 1, gpu="H100")
    >>> flops = 8 * narayanan_shard_flops(4096, 1, 4096, 1)
    >>> round(flops / (t * specs.gpu("H100").fp16_dense_flops), 3) == round(
    ...     layer_efficiency(4096, 32, 1, 4096, 1, gpu="H100"), 3)
    True
    """
    n = check_int("layers", layers, low=1, high=10**5)
    if heads is None:
        h = check_int("hidden", hidden, low=HEAD_DIM, high=10**7)
        if h % HEAD_DIM:
            raise ValueError(f"hidden must be a multiple of {HEAD_DIM} (the head "
                             f"dimension) when heads is not given; got {h}")
        heads = h // HEAD_DIM
    eff = layer_efficiency(hidden, heads, tp, seq_len, micro_batch, gpu=gpu,
                           precision=precision, recipe=recipe)
    flops = narayanan_shard_flops(hidden, tp, seq_len, micro_batch)
    return n * flops / (peak_flops(specs.gpu(gpu), precision) * eff)


def _spec_terms(m, tp, seq_len, micro_batch, cp, sp=False):
    d = m.hidden // m.heads
    terms = shard_terms(m.hidden, tp, seq_len // cp, micro_batch,
                        qkv_out=m.hidden + 2 * m.kv_heads * d,
                        ffn_hidden=m.ffn_hidden, swiglu=m.mlp == "swiglu", kv_len=seq_len,
                        norm=m.norm)
    if sp and tp > 1:                  # sequence parallelism: the norm holds 1/tp of the rows
        terms["norm_rows"] = terms["norm_rows"] / tp
    return terms


def spec_shard_efficiency(m, tp, seq_len, micro_batch, gpu_spec, precision, layer_flops,
                          recipe="compiled", cp=1, attention="flash", sp=False):
    """Efficiency of one shard of preset ``m``'s layer: its own shapes (GQA, SwiGLU),
    ``layer_flops`` (per layer, no recompute, whole layer) over shard time x peak.

    ``cp``: context-parallel degree; the shard holds ``seq_len / cp`` tokens of each
    sequence and attends over all ``seq_len`` keys (balanced causal split: 1/cp of the
    attention work), so it does ``layer_flops / (tp cp)``. ``sp``: sequence parallelism
    (the norms hold ``1/tp`` of the rows, which matters only to :func:`mix_order_fused`)."""
    terms = _spec_terms(m, tp, seq_len, micro_batch, cp, sp)
    time = recipe_shard_time(terms, gpu_spec, precision, recipe, attention=attention)
    return layer_flops / (tp * cp) / (time * peak_flops(gpu_spec, precision))


def spec_attention_time(m, tp, seq_len, micro_batch, gpu_spec, cp=1, attention="flash"):
    """Time of the attention kernels (forward + backward, BF16) of one shard of preset
    ``m``'s layer, the attention term of :func:`recipe_shard_time`; with ``cp`` the
    rank's share of the causal work (1/cp). [s]"""
    terms = _spec_terms(m, tp, seq_len, micro_batch, cp)
    return attention_backend_ratio(seq_len // cp, attention) * terms["attention_flops"] \
        / (coefficients("bf16")["attention_efficiency"] * peak_flops(gpu_spec, "bf16")
           * clock_factor(gpu_spec, "bf16"))


def logits_efficiency(k, n, gpu_spec, precision, recipe="compiled"):
    """Efficiency of the logits GEMM as a fraction of the ``precision`` peak.

    Under the compiled recipe the output layer stays BF16 in FP8 training (torchao's
    float8 conversion in torchtitan skips it; Megatron's output layer is not a
    Transformer Engine layer), so its BF16 efficiency is expressed against the FP8 peak.
    """
    check_choice("recipe", recipe, RECIPES)
    if precision == "fp8" and recipe != "eager":
        return gemm_efficiency(k, n, gpu_spec, "bf16") \
            * peak_flops(gpu_spec, "bf16") / peak_flops(gpu_spec, "fp8")
    return gemm_efficiency(k, n, gpu_spec, precision)
