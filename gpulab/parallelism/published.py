"""The step-time model beside other teams' published FP8 training throughput.

``data/measurements/public/fp8_training.csv`` holds tokens per second per GPU that
NVIDIA (NeMo, Megatron-Bridge) and PyTorch (torchtitan) published for LLM
pre-training with FP8 linear layers on H100, H200 and B200, with the BF16 cells of the
same tables. The rows were never used to fit the model; here each one is run through
:func:`step_time` with its own model, GPU count and layout, and the model's throughput
is set beside the published one.

How a row becomes a call (the choices are ours, stated in each result):

* layout ``TP x PP x CP x DP`` with ``DP = GPUs / (TP x PP x CP)`` and the row's
  virtual-pipeline size; context parallelism as :class:`Layout`'s ``cp`` (Transformer
  Engine's p2p KV ring; torchtitan's all-gather of the same bytes is modelled the
  same way);
* a torchtitan row of December 2024 without a published global batch gets local batch
  x DP (that torchtitan had no gradient accumulation: ``train.py`` line 243 at
  9dec370 logs the global batch as ``batch_size * dp_degree``);
* Megatron practice: sequence parallelism wherever TP > 1, the distributed optimizer
  (``zero=1``); a row with FSDP is run as ZeRO-3 (``zero=3``);
* activation recomputation as the source ran it: ``"full"`` where its notes say full
  activation checkpointing, ``"per-op"`` for torchtitan's per-op selective checkpointing
  (its policy, read in ``parallelize_llama.py``, recomputes every second matmul of a
  layer), ``"selective"`` for other selective recomputation, else ``"none"``; whether
  the layout fits is judged with the attention scores left out of memory
  (``recompute="selective"``'s memory where the row runs none), since every one of
  these frameworks runs flash attention, which never stores them;
* the system is the 8-GPU preset of the row's GPU (H100: ``dgx-h100``, H200:
  ``hgx-h200``, B200: ``hgx-b200``), scaled to ``GPUs / 8`` nodes by :func:`cluster`;
  a machine other than the preset is modelled as the preset, and ``notes`` says so; the
  H100 96 GB HBM2e of the torchtitan tables runs as its own variant of ``data/gpus.csv``
  (2.4 TB/s, the bandwidth its source states; the SXM5 peaks as an upper bound), its
  compute at the clock of its 500 W limit (:func:`gpulab.parallelism.power.clock_factor`;
  ``power_limits=False`` runs every GPU at our 700 W H200's clock);
* torchtitan's interleaved 1F1B without published split points runs two stages per GPU
  (``virtual=2``), its default then (``pipelining_utils.py`` lines 24-27 at 9dec370);
* ``precision`` from the row; ``recipe`` (``"compiled"``, torch.compile with torchao
  float8, or ``"eager"``, unfused casts) from the caller, for both precisions (compiled
  BF16 runs its kernels back to back and fuses its elementwise work); under
  ``"compiled"`` a row whose source ran without torch.compile keeps ``"eager"``;
* memory of the Transformer Engine FP8 rows with the linear layers' inputs saved in FP8
  (``fp8_saved_inputs``), as TE does; torchtitan's torchao keeps them in BF16;
* gradients in BF16 (``grad_bytes=2``) on the Megatron-Bridge rows, whose performance
  configurations turn off FP32 gradient reduction; FP32 elsewhere;
* attention kernels: cuDNN's fused attention on the Transformer Engine rows (NeMo,
  Megatron-Bridge; TE prefers it on Hopper and later), PyTorch's flash backend on the
  torchtitan rows (:func:`step_time`'s ``attention_backend``);
* Transformer Engine's TP communication overlap as the configuration NVIDIA published
  for the run sets it (the table's ``tp_comm_overlap`` column, its source in ``notes``):
  :func:`step_time`'s ``tp_overlap_method``. PyTorch's async TP (torchtitan rows) and
  the pipeline sends that these configurations overlap (``overlap_p2p_comm``) are not
  modelled: those rows keep their TP and PP communication exposed;
* torchtitan's FP8 rows with TP and tensorwise scaling gather in FP8: its float8
  tensor-parallel styles cast before each all-gather (``step_time``'s
  ``fp8_tp_gather``; torchtitan ``parallelize_llama.py`` lines 146-168 at 9dec370, the
  tensorwise-only condition at lines 62-65 of ``models/llama3/parallelize_llama.py`` at
  820504e); the reduce-scatters stay BF16. Transformer Engine does the same in FP8 with
  sequence parallelism (v1.9: ``module/layernorm_linear.py`` lines 137-140 and 168-170,
  the norm writes FP8 and that is gathered; ``module/base.py`` lines 753-773, the output
  gradient is cast, then gathered; v2.9: ``layernorm_linear.py`` lines 198-204 and
  248-265, gathered through the input quantizer), so its FP8 rows with TP gather in FP8
  too.

Units: tokens per second per GPU; errors are ``model / published - 1``.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import math
import statistics

from .. import specs, systems
from .._validate import check_choice
from .efficiency import RECIPES
from .layout import Layout, cluster
from .model import check_flag, model, model_names
from .power import ignoring_limits
from .step import RECOMPUTE_COSTS, step_time

__all__ = ["PUBLISHED_FP8", "published_fp8_rows", "published_fp8_check",
           "published_fp8_summary"]

#: The published table, a file of ``gpulab/data``.
PUBLISHED_FP8 = "measurements/public/fp8_training.csv"

_INT_COLUMNS = ("gpus", "seq_len", "global_batch", "micro_batch", "grad_accum", "tp",
                "pp", "cp", "vp", "ep", "local_batch")
_FLOAT_COLUMNS = ("tokens_per_s_per_gpu", "tflops_per_gpu")
_BOOL_COLUMNS = ("fsdp",)
_REQUIRED = ("source_id", "model", "gpu", "gpus", "precision", "tokens_per_s_per_gpu")
#: The 8-GPU preset that stands for each GPU of the table.
_GPU_SYSTEMS = {"H100": "dgx-h100", "H200": "hgx-h200", "B200": "hgx-b200"}
#: (gpu, system) of the table that are the preset's own machine (no note needed).
_PRESET_MACHINES = {("H100 SXM5 80GB", "DGX H100"), ("B200", "DGX B200")}
#: GPUs of the table that are another variant of the preset's GPU (``data/gpus.csv``):
#: the preset runs with that variant's memory, bandwidth and peaks.
_GPU_VARIANTS = {"H100 96GB HBM2e": "SXM5 96GB HBM2e"}
_GPUS_PER_NODE = 8
_WITHIN = 0.25
#: Sources that ran Transformer Engine (its attention: cuDNN's fused kernels).
_TE_SOURCES = ("nemo", "mbridge")
#: Sources whose framework had no gradient accumulation: global batch = local x DP.
_NO_ACCUMULATION = ("torchtitan-2024-12",)
_COLUMNS = (_REQUIRED + _INT_COLUMNS + _FLOAT_COLUMNS + _BOOL_COLUMNS
            + ("system", "recipe", "notes", "kind", "tp_comm_overlap"))


def _parse(name, line, value):
    if value is None or value.strip() == "":
        return None
    v = value.strip()
    try:
        if name in _INT_COLUMNS:
            n = int(v)
        elif name in _FLOAT_COLUMNS:
            n = float(v)
        else:
            n = None
    except ValueError:
        n = float("nan")
    if n is not None:
        if not n > 0 or not math.isfinite(n):
            raise ValueError(f"{PUBLISHED_FP8} line {line}: {name} must be a "
                             f"positive {'integer' if name in _INT_COLUMNS else 'number'}"
                             f" or empty; got {value!r}")
        return n
    if name in _BOOL_COLUMNS:
        if v.lower() not in ("true", "false"):
            raise ValueError(f"{PUBLISHED_FP8} line {line}: {name} must be true, false "
                             f"or empty; got {value!r}")
        return v.lower() == "true"
    return v


def _text():
    return specs.read_data_text(PUBLISHED_FP8)


@functools.lru_cache(maxsize=4)
def _rows(text):
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1)
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{PUBLISHED_FP8} has no header row")
    reader = csv.DictReader(io.StringIO("\n".join(ln for _, ln in lines)))
    missing = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"{PUBLISHED_FP8}: columns missing from the header: "
                         f"{', '.join(missing)}")
    out = []
    for raw in reader:
        line = lines[reader.line_num - 1][0]
        if None in raw or any(v is None for v in raw.values()):
            raise ValueError(f"{PUBLISHED_FP8} line {line}: wrong number of fields")
        if raw.get("kind") != "published":
            raise ValueError(f"{PUBLISHED_FP8} line {line}: kind must be 'published'; "
                             f"got {raw.get('kind')!r}")
        row = {k: _parse(k, line, v) for k, v in raw.items()}
        for key in _REQUIRED:
            if row.get(key) is None:
                raise ValueError(f"{PUBLISHED_FP8} line {line}: {key} is required")
        if row["precision"] not in ("bf16", "fp8"):
            raise ValueError(f"{PUBLISHED_FP8} line {line}: precision must be 'bf16' or "
                             f"'fp8'; got {row['precision']!r}")
        out.append(row)
    return tuple(out)


def published_fp8_rows():
    """The published FP8 (and same-table BF16) training throughput rows.

    Returns
    -------
    list of dict
        One per data row of ``data/measurements/public/fp8_training.csv``, keyed by
        its columns. ``gpus``, ``seq_len``, ``global_batch``, ``micro_batch``,
        ``grad_accum``, ``tp``, ``pp``, ``cp``, ``vp`` and ``ep`` are ``int``;
        ``tokens_per_s_per_gpu`` and ``tflops_per_gpu`` ``float``; ``fsdp`` ``bool``;
        an empty field is ``None``; the rest are strings.

    Raises
    ------
    ValueError
        If a row is malformed or its kind is not ``published``.

    Examples
    --------
    >>> rows = published_fp8_rows()
    >>> r = rows[0]
    >>> r["source_id"], r["model"], r["gpus"], r["precision"], r["tokens_per_s_per_gpu"]
    ('nemo-24.07-h100', 'gpt3-5b', 64, 'fp8', 23406.0)
    >>> {r["kind"] for r in rows}
    {'published'}
    """
    return [dict(r) for r in _rows(_text())]


def _layout_text(tp, pp, cp, dp, vp, fsdp):
    parts = [f"TP{tp}", f"PP{pp}"]
    if cp > 1:
        parts.append(f"CP{cp}")
    parts.append(f"DP{dp}" if dp is not None else "DP?")
    if vp > 1:
        parts.append(f"v{vp}")
    if fsdp:
        parts.append("FSDP")
    return " ".join(parts)


def _system_for(gpu_text, gpus):
    """(preset name, system) for a row, or raise ValueError with the reason."""
    name = (gpu_text or "").split(" ")[0]
    preset = _GPU_SYSTEMS.get(name)
    if preset is None:
        raise ValueError(f"no system preset for GPU {gpu_text!r}")
    base = systems.get(preset)
    if base.gpu != name or base.n_gpus != _GPUS_PER_NODE:
        raise ValueError(f"preset {preset!r} is not an 8x {name} node")
    if gpus < _GPUS_PER_NODE or gpus % _GPUS_PER_NODE:
        raise ValueError(f"{gpus} GPUs is not a whole number of {_GPUS_PER_NODE}-GPU "
                         f"{preset} nodes")
    variant = next((v for k, v in _GPU_VARIANTS.items() if gpu_text.startswith(k)), None)
    if variant is not None:
        base = dataclasses.replace(base, gpu_variant=variant)
    return preset, cluster(base if variant else preset, gpus // _GPUS_PER_NODE)


def _overlap_method(text):
    """The ``tp_overlap_method`` of a row's ``tp_comm_overlap`` field."""
    if not text or text == "off":
        return "none"
    if "=" not in text:
        return text
    return dict(pair.split("=", 1) for pair in text.split(";"))


def _check_row(r, recipe, tp_overlap=True, recompute_cost="flops", fp8_gather=True):
    tp, pp = r["tp"] or 1, r["pp"] or 1
    cp, vp = r["cp"] or 1, r["vp"] or 1
    fsdp = bool(r["fsdp"])
    gpus = r["gpus"]
    group = tp * pp * cp
    dp = gpus // group if gpus and gpus % group == 0 else None
    out = {"source_id": r["source_id"], "model": r["model"], "gpu": r["gpu"],
           "gpus": gpus, "precision": r["precision"], "source_recipe": r["recipe"],
           "layout": _layout_text(tp, pp, cp, dp, vp, fsdp), "system": None,
           "seq_len": r["seq_len"], "global_batch": r["global_batch"],
           "micro_batch": r["micro_batch"] or 1, "zero": 3 if fsdp else 1,
           "published_tokens_per_s_per_gpu": r["tokens_per_s_per_gpu"],
           "model_tokens_per_s_per_gpu": None, "step_s": None, "mfu": None,
           "error": None, "fits": None, "reason": None, "recompute": None,
           "tp_overlap_method": None, "memory_gb": None,
           "preset_hardware": (r["gpu"], r["system"]) in _PRESET_MACHINES,
           "notes": []}
    notes = out["notes"]
    try:
        if r["model"] not in model_names():
            raise ValueError(f"no model preset {r['model']!r}")
        if dp is None:
            raise ValueError(f"TP{tp} x PP{pp} x CP{cp} does not divide {gpus} GPUs")
        global_batch, local = r["global_batch"], r.get("local_batch")
        titan = r["source_id"].startswith(_NO_ACCUMULATION)
        if global_batch is None and titan and local:
            global_batch = local * dp
            out["global_batch"] = global_batch
            notes.append(f"global batch = local batch x DP = {global_batch} (this "
                         "torchtitan has no gradient accumulation: train.py line 243 "
                         "at 9dec370)")
        if global_batch is None:
            raise ValueError("the source gives no global batch")
        if titan and pp > 1 and r["micro_batch"] is None and local:
            if local % pp:
                raise ValueError(f"local batch {local} does not split into PP{pp} "
                                 "micro-batches")
            out["micro_batch"] = local // pp
            notes.append(f"micro-batch = local batch / PP = {out['micro_batch']} "
                         "(torchtitan's default of one micro-batch per stage: "
                         "pipelining_utils.py lines 79-81 at 9dec370)")
        if titan and pp > 1 and r["vp"] is None \
                and "'interleaved 1f1b'" in (r["notes"] or "").lower():
            vp = 2
            out["layout"] = _layout_text(tp, pp, cp, dp, vp, fsdp)
            notes.append("interleaved 1F1B with two stages per rank (torchtitan's default "
                         "when no split points are given: pipelining_utils.py lines 24-27 "
                         "at 9dec370)")
        split = "even"
        spec = model(r["model"])
        if spec.layers % (pp * vp):
            split = "uneven"
            notes.append(f"{spec.layers} layers over PP{pp}: uneven stages, the busiest "
                         f"with {-(-spec.layers // pp)} layers (torchtitan's generated "
                         "split; Megatron-Bridge's 405B recipe counts embedding and loss "
                         "as layers)")
        preset, system = _system_for(r["gpu"], gpus)
        out["system"] = system.name
        if (r["gpu"], r["system"]) not in _PRESET_MACHINES:
            g = system.gpu_spec
            notes.append(f"{r['gpu']} in {r['system']} modelled as the {preset} preset "
                         f"with the {g.name} {g.variant} "
                         f"({g.memory_bytes / 1e9:.0f} GB, "
                         f"{g.memory_bandwidth / 1e12:.2f} TB/s"
                         + (", its Tensor Core peaks an upper bound, computing at "
                            f"the clock of its {g.power_limit:.0f} W limit)"
                            if g.kind == "assumed" and g.power_limit else
                            ", its Tensor Core peaks an upper bound)"
                            if g.kind == "assumed" else ")"))
        if r["seq_len"] is None:
            out["seq_len"] = model(r["model"]).seq_len
            notes.append(f"sequence length not published: the preset's default "
                         f"{out['seq_len']} used")
        if fsdp:
            notes.append("FSDP modelled as ZeRO-3")
        src = (r["notes"] or "").lower()
        recompute = "none"
        if "full activation checkpointing" in src:
            recompute = "full"
        elif "selective" in src and "checkpointing" in src:
            recompute = "per-op" if r["source_id"].startswith("torchtitan") \
                else "selective"
            if recompute == "per-op":
                notes.append("torchtitan's per-op selective checkpointing: its policy "
                             "recomputes every second matmul of a layer (wk, wo, w3)")
        out["recompute"] = recompute
        row_recipe = recipe
        src_recipe = (r["recipe"] or "").lower()
        if recipe == "compiled" and "rowwise" in src_recipe:
            row_recipe = "compiled-rowwise"
            notes.append("the source's rowwise FP8 scaling modelled by the "
                         "compiled-rowwise recipe")
        elif recipe == "compiled" and "no torch.compile" in src_recipe:
            row_recipe = "eager"
            notes.append("the source ran without torch.compile: the eager recipe")
        overlap = _overlap_method(r.get("tp_comm_overlap")) if tp_overlap else "none"
        if overlap != "none" and tp > 1:
            notes.append(f"TP communication overlap as the run's configuration sets it "
                         f"({r['tp_comm_overlap']})")
        out["tp_overlap_method"] = overlap
        if cp > 1:
            notes.append(f"CP{cp} as Transformer Engine's p2p ring (torchtitan's "
                         "default all-gathers the same KV bytes)"
                         if r["source_id"].startswith("torchtitan") else
                         f"CP{cp} as Transformer Engine's p2p ring (Megatron's default)")
        kw = dict(global_batch=global_batch, micro_batch=out["micro_batch"],
                  seq_len=out["seq_len"], zero=out["zero"], sequence_parallel=tp > 1,
                  precision=r["precision"], recipe=row_recipe,
                  tp_overlap_method=overlap if tp > 1 else "none")
        lay = Layout(tp, pp, dp, vp, cp)
        kw["pipeline_split"] = split
        if recompute_cost == "compiled" and r["source_id"].startswith("torchtitan") \
                and row_recipe != "eager" and recompute in ("per-op", "full"):
            kw["recompute_cost"] = "compiled"
            notes.append("recomputation at what it cost our torch.compile'd whole-model "
                         "runs with PyTorch 2.11 (step_time's recompute_cost='compiled')")
        if r["precision"] == "fp8" and tp > 1:
            titan = r["source_id"].startswith("torchtitan") and "rowwise" not in src_recipe
            te = r["source_id"].startswith(_TE_SOURCES)
            kw["fp8_tp_gather"] = bool(fp8_gather and (titan or te))
            if kw["fp8_tp_gather"] and titan:
                notes.append("TP all-gathers in FP8, reduce-scatters in BF16: torchtitan's "
                             "float8 TP styles for tensorwise scaling (step_time's "
                             "fp8_tp_gather)")
            elif kw["fp8_tp_gather"]:
                notes.append("TP all-gathers in FP8, reduce-scatters in BF16: Transformer "
                             "Engine quantizes the norm's output and the output gradient "
                             "before gathering them (step_time's fp8_tp_gather)")
        if r["source_id"].startswith("mbridge"):
            kw["grad_bytes"] = 2.0
            notes.append("BF16 gradients: Megatron-Bridge's performance configurations "
                         "set grad_reduce_in_fp32 = False (scripts/performance/configs/"
                         "llama/llama3_llm_pretrain.py lines 73-74 and "
                         "llama31_llm_pretrain.py lines 58-59 at 5776a6d; lines 43-44 "
                         "and 42-43 at v0.4.2)")
        if r["source_id"].startswith(_TE_SOURCES) and r["precision"] == "fp8":
            kw["fp8_saved_inputs"] = True
            notes.append("memory: the linear layers' inputs saved as FP8 casts, as "
                         "Transformer Engine does")
        if r["source_id"].startswith(_TE_SOURCES):
            kw["attention_backend"] = "cudnn"
            notes.append("attention as cuDNN's fused kernels, which Transformer Engine "
                         "prefers on Hopper and later")
        st = step_time(r["model"], system, lay, recompute=recompute, **kw)
        # memory judged without the attention scores (flash attention never stores
        # them): selective recomputation's memory where the row runs none
        st_mem = st if recompute != "none" else step_time(
            r["model"], system, lay, recompute="selective", **kw)
    except ValueError as exc:
        out["reason"] = str(exc)
        return out
    model_tps = st.tokens_per_s / gpus
    out.update(model_tokens_per_s_per_gpu=model_tps, step_s=st.total, mfu=st.mfu,
               error=model_tps / r["tokens_per_s_per_gpu"] - 1.0, fits=st_mem.fits,
               memory_gb=st_mem.memory.total / 1e9)
    mem_note = [n for n in st_mem.notes if n.startswith("needs ")]
    notes.extend([n for n in st.notes if not n.startswith("needs ")] + mem_note)
    return out


@functools.lru_cache(maxsize=16 * len(RECIPES))
def _check(text, recipe, tp_overlap=True, power_limits=True, recompute_cost="flops",
           fp8_gather=True):
    with contextlib.nullcontext() if power_limits else ignoring_limits():
        return tuple(_check_row(r, recipe, tp_overlap, recompute_cost, fp8_gather)
                     for r in _rows(text))


def published_fp8_check(recipe="compiled", *, tp_overlap=True, power_limits=True,
                        recompute_cost="flops", fp8_gather=True):
    """Each published row beside the step-time model's throughput for it.

    Parameters
    ----------
    recipe : {"compiled", "compiled-rowwise", "eager"}
        Execution recipe of :func:`step_time` (``"compiled"``: torch.compile, and
        torchao float8 in FP8, as frameworks run it, tensorwise scaling except on the
        rows whose source ran rowwise scaling, which get ``"compiled-rowwise"``;
        ``"eager"``: the naive model, unfused casts), for BF16 and FP8 rows alike.
    tp_overlap : bool
        Run each row with the TP communication overlap its configuration sets (default);
        False runs every row without it, to show what the overlap is worth.
    power_limits : bool
        Run GH100 boards at their own power limit's clock (default;
        :func:`gpulab.parallelism.power.clock_factor`); False runs every GPU at the
        clock of our 700 W H200, the model before it knew power limits.
    recompute_cost : {"flops", "compiled"}
        What recomputation costs on the torchtitan rows: its FLOP charge (default), or
        what it cost our whole-model runs with torch.compile'd blocks
        (:func:`step_time`'s ``recompute_cost="compiled"``). Those runs used PyTorch
        2.11 and torchao 0.18; the torchtitan rows ran the PyTorch of December 2024 and
        June 2025, whose compiler may recompute differently, so the default keeps the
        FLOP charge and this switch shows the difference.
    fp8_gather : bool
        Gather in FP8 where the row's framework does (default: Transformer Engine's and
        torchtitan's tensorwise FP8 rows with TP, :func:`step_time`'s
        ``fp8_tp_gather``); False gathers every row in BF16, the model before it did.

    Returns
    -------
    list of dict
        One per row of :func:`published_fp8_rows`, in its order: ``source_id``,
        ``model``, ``gpu``, ``gpus``, ``precision``, ``source_recipe`` (the source's
        words), ``layout`` (e.g. ``"TP4 PP8 DP16 v6"``, with ``CP`` and ``FSDP`` where
        the source uses them), ``system`` (the preset cluster), ``seq_len``,
        ``global_batch``, ``micro_batch``, ``zero``,
        ``published_tokens_per_s_per_gpu``, ``model_tokens_per_s_per_gpu`` (the
        step's tokens / step time / GPUs), ``step_s``, ``mfu``, ``error``
        (model / published - 1), ``fits`` (the layout's memory fits the preset's GPU;
        the time is reported either way), ``reason`` (None, or why the row is not
        predicted: then the model fields are None) and ``notes`` (list of str:
        every choice that departs from the source, and the model's own notes),
        ``recompute`` and ``tp_overlap_method`` (as run through :func:`step_time`),
        ``memory_gb`` (per GPU, judged as ``fits`` is) and ``preset_hardware`` (the row
        ran on the preset's own machine).

    Raises
    ------
    ValueError
        If ``recipe`` is not one of ``"compiled"``, ``"compiled-rowwise"``, ``"eager"``.

    Examples
    --------
    >>> rows = published_fp8_check()
    >>> r = rows[2]
    >>> r["model"], r["gpus"], r["layout"], r["system"]
    ('gpt3-175b', 128, 'TP4 PP8 DP4 v6', 'dgx-h100 x16 nodes')
    >>> r["reason"] is None and r["error"] > -1
    True
    >>> [(r["reason"], r["layout"]) for r in rows if r["model"] == "llama3-8b"
    ...  and r["source_id"] == "nemo-24.07-h100"]
    [(None, 'TP1 PP1 CP2 DP4')]
    """
    check_choice("recipe", recipe, RECIPES)
    out = []
    check_choice("recompute_cost", recompute_cost, RECOMPUTE_COSTS)
    for r in _check(_text(), recipe, check_flag("tp_overlap", tp_overlap),
                    check_flag("power_limits", power_limits), recompute_cost,
                    check_flag("fp8_gather", fp8_gather)):
        d = dict(r)
        d["notes"] = list(r["notes"])
        out.append(d)
    return out


def _stats(rows):
    errs = [r["error"] for r in rows if r["error"] is not None]
    base = {"rows": len(rows), "predicted": len(errs),
            "not_fitting": sum(1 for r in rows if r["fits"] is False)}
    if not errs:
        return dict(base, median_error=None, mean_abs_error=None, within_25=None)
    return dict(base, median_error=statistics.median(errs),
                mean_abs_error=math.fsum(abs(e) for e in errs) / len(errs),
                within_25=sum(1 for e in errs if abs(e) <= _WITHIN) / len(errs))


def published_fp8_summary(recipe="compiled"):
    """Error of the step-time model on the published rows, per source and overall.

    Parameters
    ----------
    recipe : {"compiled", "compiled-rowwise", "eager"}
        As in :func:`published_fp8_check`.

    Returns
    -------
    dict
        ``{"overall": stats, "by_source": {source_id: stats}, "by_hardware":
        {"preset": stats, "other": stats}}`` (``"preset"``: the rows that ran on the
        preset's own machine, DGX H100 or DGX B200; ``"other"``: the others, such as
        torchtitan's 500 W HBM2e H100s, modelled on the nearest preset) where ``stats`` is a
        dict: ``rows`` (published rows), ``predicted`` (rows with an error),
        ``not_fitting`` (predicted rows whose memory does not fit the preset's GPU,
        counted among ``predicted``), ``median_error``, ``mean_abs_error`` and
        ``within_25`` (share of predicted rows with ``|error| <= 0.25``); the last
        three are None where nothing is predicted.

    Raises
    ------
    ValueError
        If ``recipe`` is not one of ``"compiled"``, ``"compiled-rowwise"``, ``"eager"``.

    Examples
    --------
    >>> s = published_fp8_summary()
    >>> sorted(s), s["overall"]["rows"] == len(published_fp8_rows())
    (['by_hardware', 'by_source', 'overall'], True)
    >>> 0 < s["overall"]["predicted"] <= s["overall"]["rows"]
    True
    >>> 0 <= s["overall"]["within_25"] <= 1
    True
    """
    rows = published_fp8_check(recipe)
    by = {}
    for r in rows:
        by.setdefault(r["source_id"], []).append(r)
    return {"overall": _stats(rows),
            "by_source": {k: _stats(v) for k, v in by.items()},
            "by_hardware": {
                "preset": _stats([r for r in rows if r["preset_hardware"]]),
                "other": _stats([r for r in rows if not r["preset_hardware"]])}}
