r"""Serving a dense SwiGLU / GQA model across GPUs: decode step (TPOT), prefill (TTFT),
throughput, and the tensor-parallel all-reduce of decode-sized messages.

One decode step produces one token for each of ``batch`` sequences; with tensor
parallelism (TP) every layer does two all-reduces of ``batch x hidden x 2`` bytes (after
the attention output projection and after the MLP down projection; Megatron-LM's split,
vLLM's custom all-reduce write-up), with pipeline parallelism (PP) the stages run one
after another for one batch.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import yaml

from .. import collectives, specs, systems
from .._validate import as_number, check_choice, check_int
from ..parallelism.efficiency import layer_efficiency, peak_flops
from ..parallelism.memory import inference_memory
from ..parallelism.model import as_model
from .decode import (HEAD_DIM, PRECISIONS, RECIPES, check_heads, decode_constants,
                     decode_layer_terms, decode_terms_time, weight_element_bytes)
from .prefill import prefill_constants, prefill_layer_terms, prefill_terms_time

__all__ = ["ALLREDUCE", "ACTIVATION_BYTES", "allreduce_time", "custom_constant",
           "custom_allreduce_time", "PUBLISHED_ALLREDUCE", "allreduce_model_time",
           "allreduce_comparison", "DecodeStep", "decode_step", "Prefill", "prefill_time"]

#: All-reduce implementations: ``nccl`` (the course's collective model,
#: :func:`gpulab.collectives.collective_time`), ``oneshot`` and ``twoshot`` (the
#: custom all-reduce kernels of serving engines, modelled from their mechanism).
ALLREDUCE = ("nccl", "oneshot", "twoshot")
#: Bytes per activation element on the wire (BF16). [B]
ACTIVATION_BYTES = 2


@functools.lru_cache(maxsize=None)
def _table():
    return yaml.safe_load(specs.read_data_text("inference_assumptions.yaml"))


def custom_constant(name):
    """Value of an entry of ``data/inference_assumptions.yaml`` (``custom_allreduce/``).

    >>> custom_constant("peer_efficiency")
    0.8853
    """
    node = _table()["custom_allreduce"]
    check_choice("name", name, tuple(node))
    return node[name]["value"]


def _has_nvlink(system):
    return system.nvlink.generation is not None and system.nvlink.fabric != "none"


def _nccl_transport(system, n):
    """NCCL's transport for a ring of ``n`` GPUs inside one server: P2P over NVLink; on
    a PCIe-only server P2P only for GPUs under a common PCIe switch (NCCL's default
    ``PATH_PXB`` level), so a ring wider than ``nccl_pcie_p2p_max_ranks`` crosses the CPU
    host bridge and goes through host memory (``shm``)."""
    if _has_nvlink(system) or n <= custom_constant("nccl_pcie_p2p_max_ranks"):
        return "p2p"
    return "shm"


def allreduce_time(message_bytes, n_ranks, system, *, algorithm="nccl"):
    r"""Time of one all-reduce of a decode-sized message inside one server. [s]

    Parameters
    ----------
    message_bytes : float
        The buffer each rank holds and receives summed (nccl-tests' ``size``), e.g.
        ``batch x hidden x 2`` for a TP decode step. [B]
    n_ranks : int
        Ranks, one per GPU, at most the system's GPUs; 1 costs nothing.
    system : systems.System or str
        A preset (``gpulab predict --list-systems``), a YAML path or a System.
    algorithm : {"nccl", "oneshot", "twoshot"}

    Returns
    -------
    float
        Seconds per call.

    Notes
    -----
    ``nccl``: :func:`gpulab.collectives.collective_time` (NCCL's ring / tree / NVLS
    choice; its small-message floor is the host's launch per call as nccl-tests sees it,
    which stands in for the per-call floor under CUDA graphs: an assumption). On a
    PCIe-only server NCCL uses P2P only between GPUs under a common PCIe switch (NCCL
    ``src/graph/paths.cc``, ``ncclTopoCheckP2p``: ``PATH_PXB`` by default) and routes
    wider rings through host memory: more than ``nccl_pcie_p2p_max_ranks`` (2, assumed)
    ranks run the ``shm`` transport.
    The custom kernels (vLLM ``csrc/custom_all_reduce.cuh``, ``cross_device_reduce_1stage``
    and ``_2stage``; TensorRT-LLM's ONESHOT / TWOSHOT strategies) exchange flags and read
    the peers' buffers directly over P2P:

    .. math::

        t_\mathrm{one} = t_g + 2 t_s + \frac{(n-1) S}{e B},\qquad
        t_\mathrm{two} = t_g + 2 t_s + 2 t_r + \frac{2 (n-1)}{n} \frac{S}{e B}

    with the per-call floor :math:`t_g` under CUDA graphs, one flag barrier :math:`t_s`
    (NVLink or PCIe), one GPU-to-GPU round trip :math:`t_r`, the per-direction line rate
    :math:`B` of one GPU into the fabric (:func:`gpulab.collectives.fabric_bandwidth`:
    NVLink, or its PCIe link without NVLink; GB = 1e9 B) and the fraction :math:`e` a
    rank reads at. Both kernels have two flag barriers (one-shot: start and end;
    two-shot: start and the barrier between its stages, the kernel's exit ending it).
    One-shot reads every peer's whole buffer in one round (ingress grows with n).
    Two-shot reads 1/n of each in the reduce-scatter and again in the all-gather, and
    pays two round trips more: the all-gather's reads can start only after the middle
    barrier, and that barrier first makes the reduce-scatter's writes visible to the
    peers (a system-scope fence). ``t_g``, ``t_s`` are ASSUMED; ``t_r`` is the
    p2pBandwidthLatencyTest round trip over NVLink, scaled as ``t_s`` over PCIe
    (``data/inference_assumptions.yaml``); ``e`` is our measured P2P copy fraction.
    Messages above ``max_message_bytes`` (8 MiB, vLLM's default buffer) go to NCCL, as
    in vLLM. Checked against published H200 / H100 rows
    (``tests/models/test_inference_public.py``): one-shot where vLLM runs one-shot and
    two-shot where it runs two-shot, against vLLM's CUDA-graph rows.
    Not modelled: the kernels run on at most 36 thread blocks of 512 threads, each
    thread with one 16-byte load per peer in flight, which on two GPUs reads slower
    than ``e B`` (vLLM's 2-GPU rows grow by about 2/3 of it per byte); contention of
    PCIe peers on shared switch uplinks.
    vLLM runs the custom kernels over PCIe for two GPUs only (``custom_all_reduce.py``:
    not supported on more than two PCIe-only GPUs), and so does this model: more
    ranks without NVLink raise ``ValueError``.

    Examples
    --------
    >>> s = 32 * 8192 * 2                  # batch 32 of Llama-3-70B, BF16: 512 KiB
    >>> one = allreduce_time(s, 8, "hgx-h200", algorithm="oneshot")
    >>> two = allreduce_time(s, 8, "hgx-h200", algorithm="twoshot")
    >>> nccl = allreduce_time(s, 8, "hgx-h200")
    >>> two < one < nccl
    True
    """
    system = systems.resolve(system)
    s = as_number("message_bytes", message_bytes, low=0, allow_array=False)
    n = check_int("n_ranks", n_ranks, low=1, high=system.n_gpus)
    check_choice("algorithm", algorithm, ALLREDUCE)
    if n == 1:
        return 0.0
    if algorithm != "nccl" and n > 2 and not _has_nvlink(system):
        raise ValueError(f"algorithm {algorithm!r} needs NVLink beyond 2 ranks (vLLM "
                         f"runs its custom all-reduce over PCIe for 2 GPUs only); "
                         f"system {system.name!r} has no NVLink: use 'nccl' or n_ranks "
                         f"<= 2, got {n}")
    if algorithm == "nccl" or s > custom_constant("max_message_bytes"):
        return float(collectives.collective_time("all_reduce", s, n, system,
                                                 transport=_nccl_transport(system, n)))
    b = collectives.fabric_bandwidth(system).bytes_per_s * custom_constant("peer_efficiency")
    sync = custom_constant("sync_s" if _has_nvlink(system) else "sync_pcie_s")
    floor = custom_constant("graph_floor_s")
    if algorithm == "oneshot":
        return floor + 2 * sync + (n - 1) * s / b
    trip = custom_constant("round_trip_s") * sync / custom_constant("sync_s")
    return floor + 2 * sync + 2 * trip + 2 * (n - 1) / n * s / b


def custom_allreduce_time(message_bytes, n_ranks, system):
    """The faster of the one-shot and two-shot kernels, which is what an engine's
    size table picks. [s]

    >>> custom_allreduce_time(8192, 8, "hgx-h200") <= allreduce_time(
    ...     8192, 8, "hgx-h200", algorithm="oneshot")
    True
    """
    return min(allreduce_time(message_bytes, n_ranks, system, algorithm=a)
               for a in ("oneshot", "twoshot"))


#: Published all-reduce implementation -> the model's algorithm it is compared with.
PUBLISHED_ALLREDUCE = {"nccl": "nccl", "trtllm_custom": "custom", "vllm_custom": "custom"}


def allreduce_model_time(kind, message_bytes, n_ranks, system):
    """The model's time for a published implementation's kind: ``"nccl"`` (the
    collective model) or ``"custom"`` (:func:`custom_allreduce_time`). [s]"""
    check_choice("kind", kind, ("nccl", "custom"))
    if kind == "nccl":
        return allreduce_time(message_bytes, n_ranks, system, algorithm="nccl")
    return custom_allreduce_time(message_bytes, n_ranks, system)


def allreduce_comparison(system, n_ranks, published_system):
    """Published all-reduce rows (CUDA-graph rows for the custom kernels) of
    ``published_system`` at ``n_ranks`` GPUs beside the model on ``system``.

    Returns a list of dicts: ``implementation``, ``message_bytes``, ``published_s``,
    ``model_s``, ``error`` (model / published - 1).

    >>> rows = allreduce_comparison("hgx-h200", 8, "h200_sxm")
    >>> {r["implementation"] for r in rows} >= {"nccl"}
    True
    """
    from .published import allreduce_rows
    n_ranks = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    out = []
    for r in allreduce_rows():
        if r["system"] != published_system or r["gpus"] != n_ranks:
            continue
        if r["implementation"] != "nccl" and not r["cuda_graph"]:
            continue
        kind = PUBLISHED_ALLREDUCE.get(r["implementation"])
        if kind is None:
            continue
        pub = r["latency_ms"] * 1e-3
        m = allreduce_model_time(kind, r["message_bytes"], n_ranks, system)
        out.append({"implementation": r["implementation"],
                    "message_bytes": r["message_bytes"], "published_s": pub,
                    "model_s": m, "error": m / pub - 1})
    if not out:
        counts = sorted({r["gpus"] for r in allreduce_rows()
                         if r["system"] == published_system})
        if counts:
            raise ValueError(f"n_ranks: {published_system!r} has published rows at "
                             f"{counts} GPUs, not {n_ranks}")
        raise ValueError(f"published_system: no published rows for "
                         f"{published_system!r}")
    return out


def _dense_swiglu(m):
    if getattr(m, "num_experts", 0):
        raise ValueError(f"model must be a dense model; {m.name!r} has "
                         f"{m.num_experts} experts per layer (expert parallelism is not "
                         "modelled here)")
    if m.mlp != "swiglu":
        raise ValueError(f"model must have a SwiGLU MLP (the measured layer); "
                         f"{m.name!r} has {m.mlp!r}")
    if m.hidden != m.heads * HEAD_DIM:
        raise ValueError(f"model must have head dimension {HEAD_DIM} (hidden = heads x "
                         f"{HEAD_DIM}); {m.name!r} has {m.hidden} / {m.heads}")
    return m


def _layout(m, system, tp, pp):
    t = check_int("tp", tp, low=1, high=system.n_gpus)
    p = check_int("pp", pp, low=1, high=system.n_gpus)
    if t * p > system.n_gpus:
        raise ValueError(f"pp must be at most the system's {system.n_gpus} GPUs / tp "
                         f"({t}) = {system.n_gpus // t}; got {p} (tp x pp = {t * p})")
    check_heads(m.hidden, m.heads, m.kv_heads, m.ffn_hidden, t)
    if m.layers % p:
        raise ValueError(f"pp must divide the model's {m.layers} layers; got {p}")
    return t, p


def _lm_head(m, system, t, batch, recipe):
    """(time of the vocabulary-parallel LM head shard, time of gathering the logits)."""
    h, v = m.hidden, m.vocab
    terms = {"weight_elements": h * v / t, "weight_bytes": h * v / t * 2,
             "kv_bytes": 0.0, "gemm_flops": 2.0 * batch * h * v / t,
             "attention_flops": 0.0, "cast_elements": 0.0}
    head = float(decode_terms_time(terms, system.gpu_spec, "bf16",
                                   decode_constants(recipe)))
    gather = 0.0 if t == 1 else float(collectives.collective_time(
        "all_gather", batch * v * ACTIVATION_BYTES, t, system,
        transport=_nccl_transport(system, t)))
    return head, gather


def _p2p(system, message_bytes, pp):
    if pp == 1:
        return 0.0
    return float(collectives.collective_time("sendrecv", message_bytes, 2, system))


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a batch (see :func:`decode_step`); times in seconds,
    throughputs in tokens per second.

    Attributes
    ----------
    tpot : float
        Time per output token of each sequence (the step time). [s]
    layer_time, allreduce_time : float
        One layer shard's compute + memory time; one TP all-reduce. [s]
    compute_time, comm_time : float
        Per step: all layers and the LM head; all-reduces, stage hand-offs and the
        logits gather. [s]
    comm_share : float
        ``comm_time / tpot``. [1]
    tokens_per_s, tokens_per_s_per_gpu : float
        Output tokens per second of the whole deployment (``pp`` batches in flight)
        and per GPU. [tokens/s]
    message_bytes : float
        Bytes of one TP all-reduce (``batch x hidden x 2``). [B]
    n_gpus : int
        ``tp x pp``.
    memory_per_gpu : float
        Weights + KV cache of one GPU, ``pp`` batches in flight
        (:func:`gpulab.parallelism.inference_memory`). [B]
    fits_memory : bool
        ``memory_per_gpu`` is at most the GPU's memory (GB as marketed, 1e9 B).
    """

    tpot: float
    layer_time: float
    allreduce_time: float
    compute_time: float
    comm_time: float
    comm_share: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    message_bytes: float
    n_gpus: int
    memory_per_gpu: float
    fits_memory: bool


def decode_step(model, system, *, tp, pp=1, batch, context, precision="bf16",
                recipe="compiled", allreduce="nccl"):
    r"""Time per output token (TPOT) and throughput of a TP x PP decode step.

    Parameters
    ----------
    model : ModelSpec or str
        A dense SwiGLU model with head dimension 128 (``"llama3-70b"``; presets in
        ``data/llm_models.yaml``).
    system : systems.System or str
        Server preset (``"hgx-h200"``, ``"l40s-x8"``, ...); ``tp x pp`` GPUs of it.
    tp, pp : int
        Tensor- and pipeline-parallel degrees.
    batch : int
        Sequences decoded together per pipeline stage, in [1, 1e6].
    context : int
        Tokens in each sequence's KV cache, in [1, 1e8].
    precision : {"bf16", "fp8"}
        Weight precision (KV cache, activations and the LM head BF16).
    recipe : {"compiled", "eager"}
        Layer execution (:func:`gpulab.inference.decode_layer_time`).
    allreduce : {"nccl", "oneshot", "twoshot"}
        TP all-reduce implementation (:func:`allreduce_time`).

    Returns
    -------
    DecodeStep

    Notes
    -----
    .. math::

        \mathrm{TPOT} = L\,\bigl(t_\mathrm{layer} + 2\,t_\mathrm{AR}(b\,h\,2)\bigr)
            + (p - 1)\,t_\mathrm{p2p}(b\,h\,2) + t_\mathrm{head} + t_\mathrm{gather}

    For one batch the ``p`` stages of ``L/p`` layers run one after another, so PP does
    not shorten TPOT; with ``p`` batches in flight the deployment emits
    ``p b / TPOT`` tokens per second. :math:`t_\mathrm{head}`: the vocabulary-parallel
    LM head shard (BF16 weights ``V h / t``) with the decode model's constants;
    :math:`t_\mathrm{gather}`: NCCL all-gather of the ``b V`` BF16 logits. Stage
    hand-offs: NCCL sendrecv inside the server. Not modelled: sampling, the scheduler,
    embedding lookup, overlap of communication with compute, and the prefill of new
    requests that aggregated serving mixes into decode steps (TPOT measured under load
    with long prompts is longer than this).

    Examples
    --------
    >>> d = decode_step("llama3-70b", "hgx-h200", tp=8, batch=32, context=8192)
    >>> 10e-3 < d.tpot < 30e-3, 0.1 < d.comm_share < 0.5
    (True, True)
    """
    m = _dense_swiglu(as_model(model, "model"))
    system = systems.resolve(system)
    t, p = _layout(m, system, tp, pp)
    b = check_int("batch", batch, low=1, high=10**6)
    c = check_int("context", context, low=1, high=10**8)
    check_choice("precision", precision, PRECISIONS)
    check_choice("recipe", recipe, RECIPES)
    check_choice("allreduce", allreduce, ALLREDUCE)
    terms = decode_layer_terms(m.hidden, m.heads, m.kv_heads, m.ffn_hidden, t, b, c,
                               precision=precision)
    layer = float(decode_terms_time(terms, system.gpu_spec, precision,
                                    decode_constants(recipe)))
    msg = float(b * m.hidden * ACTIVATION_BYTES)
    ar = allreduce_time(msg, t, system, algorithm=allreduce)
    head, gather = _lm_head(m, system, t, b, recipe)
    compute = m.layers * layer + head
    comm = 2 * m.layers * ar + (p - 1) * _p2p(system, msg, p) + gather
    tpot = compute + comm
    total = p * b / tpot
    mem = inference_memory(m, t, p, batch=b * p, seq_len=c,
                           weight_bytes=weight_element_bytes(precision)).total
    return DecodeStep(tpot=tpot, layer_time=layer, allreduce_time=ar,
                      compute_time=compute, comm_time=comm, comm_share=comm / tpot,
                      tokens_per_s=total, tokens_per_s_per_gpu=total / (t * p),
                      message_bytes=msg, n_gpus=t * p, memory_per_gpu=mem,
                      fits_memory=bool(mem <= system.gpu_spec.memory_bytes))


@dataclass(frozen=True)
class Prefill:
    """The prefill of a batch of prompts (see :func:`prefill_time`).

    Attributes
    ----------
    ttft : float
        Time to first token. [s]
    compute_time, comm_time : float
        Layers and LM head; TP all-reduces and stage hand-offs. [s]
    comm_share : float
        ``comm_time / ttft``. [1]
    efficiency : float
        Fraction of the dense peak of the precision the layer shards reach, counting
        the FLOPs they do (GEMMs and causal attention). [1]
    """

    ttft: float
    compute_time: float
    comm_time: float
    comm_share: float
    efficiency: float


def _training_path_layer_time(m, gpu_spec, t, s, b, precision, recipe):
    """The naive variant: forward FLOPs with full attention at the training layer
    efficiency of ``recipe`` (:func:`gpulab.parallelism.layer_efficiency`). [s]"""
    w = decode_layer_terms(m.hidden, m.heads, m.kv_heads, m.ffn_hidden, t, 1, 1,
                           precision=precision)["weight_elements"]
    flops = 2.0 * b * s * w + 4.0 * b * s * s * (m.heads / t) * HEAD_DIM
    eta = layer_efficiency(m.hidden, m.heads, t, s, b, gpu=gpu_spec.name,
                           precision=precision, recipe=recipe)
    return flops / (eta * peak_flops(gpu_spec, precision))


def prefill_time(model, system, *, tp, pp=1, prompt, batch=1, precision="bf16",
                 recipe="compiled", allreduce="nccl"):
    r"""Time to first token (TTFT) of ``batch`` prompts of ``prompt`` tokens.

    Parameters
    ----------
    model, system, tp, pp, precision, recipe, allreduce
        As in :func:`decode_step`.
    prompt : int
        Tokens per prompt, in [1, 1e6].
    batch : int
        Prompts prefilled together, in [1, 1e4].

    Returns
    -------
    Prefill

    Notes
    -----
    Compute-bound for prompts of more than a few hundred tokens. ``recipe="compiled"``:
    each layer shard takes :math:`t_\mathrm{layer}` =
    :func:`gpulab.inference.prefill_layer_time` (GEMMs at a fitted fraction of the
    weight precision's peak, causal attention at a fitted fraction of the BF16 peak,
    activation and FP8-cast traffic, fixed costs; fitted on our 1x H200 prefill runs,
    held-out errors in :func:`gpulab.inference.prefill_checks`). ``recipe="eager"``, the
    naive variant: the forward FLOPs with full attention (Narayanan et al. 2021),
    :math:`F = 2 T N_w/t + 4 T s (a/t) 128`, at :math:`\eta P` with :math:`\eta` =
    :func:`gpulab.parallelism.layer_efficiency` of the eager training recipe (fitted to
    forward + backward shards; applying it to the forward alone is an ASSUMPTION). On
    our compiled runs that path was slower than measured, most at long prompts (it
    counts the masked half of causal attention) and in FP8 at short prompts (training
    casts its weights every micro-batch; an FP8 checkpoint does not): ``before_*`` in
    :func:`gpulab.inference.prefill_checks`. Per layer two TP all-reduces of
    ``T h 2`` bytes; ``p - 1`` stage hand-offs; the LM head on the last token of each
    prompt.

    .. math::

        \mathrm{TTFT} = L\,\bigl(t_\mathrm{layer} + 2\,t_\mathrm{AR}(T h 2)\bigr)
            + (p-1)\,t_\mathrm{p2p}(T h 2) + t_\mathrm{head} + t_\mathrm{gather}

    with :math:`T = b s` tokens. ``efficiency``: the FLOPs a layer shard does (GEMMs and
    causal attention, :func:`gpulab.inference.prefill_layer_terms`) over
    :math:`t_\mathrm{layer}` times the dense peak of ``precision``.

    Examples
    --------
    >>> f = prefill_time("llama3-70b", "hgx-h200", tp=8, prompt=2048)
    >>> 0.05 < f.ttft < 0.5
    True
    """
    m = _dense_swiglu(as_model(model, "model"))
    system = systems.resolve(system)
    t, p = _layout(m, system, tp, pp)
    s = check_int("prompt", prompt, low=1, high=10**6)
    b = check_int("batch", batch, low=1, high=10**4)
    check_choice("precision", precision, PRECISIONS)
    check_choice("recipe", recipe, RECIPES)
    check_choice("allreduce", allreduce, ALLREDUCE)
    g = system.gpu_spec
    shape = (m.hidden, m.heads, m.kv_heads, m.ffn_hidden, t, b, s)
    terms = prefill_layer_terms(*shape, precision=precision)
    if recipe == "compiled":
        layer = prefill_terms_time(terms, g, precision, prefill_constants())
    else:
        layer = _training_path_layer_time(m, g, t, s, b, precision, recipe)
    done = float(np.sum(terms["gemm_flops"])) + terms["attention_flops"]
    eta = done / (layer * peak_flops(g, precision))
    tokens = float(b * s)
    msg = tokens * m.hidden * ACTIVATION_BYTES
    ar = allreduce_time(msg, t, system, algorithm=allreduce)
    head, gather = _lm_head(m, system, t, b, recipe)
    compute = m.layers * layer + head
    comm = 2 * m.layers * ar + (p - 1) * _p2p(system, msg, p) + gather
    ttft = compute + comm
    return Prefill(ttft=ttft, compute_time=compute, comm_time=comm,
                   comm_share=comm / ttft, efficiency=float(eta))
