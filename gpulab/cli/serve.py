"""``gpulab serve``: time per output token (TPOT), time to first token (TTFT),
tokens/s and the communication share of serving a dense model with TP x PP
(:mod:`gpulab.inference`)."""
from __future__ import annotations

from .. import inference, parallelism, systems
from .base import emit, int_type, name_flag, one_line

#: Model error prefixes -> the flag behind them.
FLAGS = {"model": "--model", "name": "--system", "system": "--system", "tp": "--tp",
         "pp": "--pp", "batch": "--batch", "context": "--context", "prompt": "--prompt",
         "precision": "--precision", "recipe": "--recipe", "algorithm": "--allreduce",
         "n_ranks": "--tp"}
#: Default prompt length of the TTFT line. [tokens]
DEFAULT_PROMPT = 2048


def register(sub, fmt):
    """Add ``gpulab serve`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "serve", help="decode and prefill time of a model served with TP x PP",
        description="Time per output token (TPOT), time to first token (TTFT), "
                    "tokens/s (total and per GPU) and the communication share of a "
                    "dense SwiGLU model served with tensor (TP) and pipeline (PP) "
                    "parallelism (gpulab.inference). Times in ms, GB = 1e9 bytes.")
    s.add_argument("--model", required=True, metavar="NAME",
                   help="model preset (dense SwiGLU, head dimension 128): "
                        f"{', '.join(_models())}")
    s.add_argument("--system", required=True, metavar="NAME|FILE",
                   help=f"system preset ({', '.join(systems.names())}) or a systems "
                        "YAML file")
    s.add_argument("--tp", type=int_type("tp", 1, 4096), default=1,
                   help="tensor-parallel degree (default 1)")
    s.add_argument("--pp", type=int_type("pp", 1, 4096), default=1,
                   help="pipeline-parallel degree (default 1; PP batches in flight)")
    s.add_argument("--batch", type=int_type("batch", 1, 10**6), required=True,
                   help="sequences decoded together per pipeline stage")
    s.add_argument("--context", type=int_type("context", 1, 10**8), required=True,
                   help="tokens in each sequence's KV cache")
    s.add_argument("--prompt", type=int_type("prompt", 1, 10**6), default=DEFAULT_PROMPT,
                   help=f"prompt tokens of the TTFT line (default {DEFAULT_PROMPT}; "
                        "one prompt)")
    s.add_argument("--precision", choices=inference.PRECISIONS, default="bf16",
                   help="weight precision (default bf16; KV cache BF16)")
    s.add_argument("--recipe", choices=inference.RECIPES, default="compiled",
                   help="layer execution: compiled (torch.compile + CUDA graphs, "
                        "default) or eager")
    s.add_argument("--allreduce", choices=inference.ALLREDUCE, default="nccl",
                   help="TP all-reduce: nccl (default), oneshot or twoshot (custom "
                        "kernels)")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_serve)


def _models():
    return [n for n in parallelism.model_names()
            if not parallelism.model(n).num_experts
            and parallelism.model(n).mlp == "swiglu"]


def _rows(args):
    system = systems.resolve(args.system)
    kw = dict(tp=args.tp, pp=args.pp, precision=args.precision, recipe=args.recipe,
              allreduce=args.allreduce)
    d = inference.decode_step(args.model, system, batch=args.batch,
                              context=args.context, **kw)
    f = inference.prefill_time(args.model, system, prompt=args.prompt, **kw)
    rows = [("TPOT", d.tpot * 1e3, "ms"),
            ("layer compute + memory", d.layer_time * 1e6, "us per layer"),
            ("TP all-reduce", d.allreduce_time * 1e6,
             f"us per call ({d.message_bytes / 2**10:g} KiB)"),
            ("decode communication share", d.comm_share * 100, "% of TPOT"),
            ("tokens/s total", d.tokens_per_s, "tokens/s"),
            ("tokens/s per GPU", d.tokens_per_s_per_gpu, f"tokens/s ({d.n_gpus} GPUs)"),
            (f"TTFT ({args.prompt}-token prompt)", f.ttft * 1e3, "ms"),
            ("prefill communication share", f.comm_share * 100, "% of TTFT"),
            ("memory per GPU", d.memory_per_gpu / 1e9,
             f"GB (GPU has {system.gpu_spec.memory_bytes / 1e9:g})")]
    return system, d, [{"metric": k, "value": v, "unit": u} for k, v, u in rows]


def _cmd_serve(args, out):
    try:
        system, d, rows = _rows(args)
    except ValueError as exc:
        raise ValueError(name_flag(one_line(exc), FLAGS)) from None
    if args.format == "table":
        rows = [dict(r, value=f"{r['value']:.4g}") for r in rows]
        out.write(f"# {args.model} on {system.name} ({system.n_gpus}x "
                  f"{system.gpu_spec.name}), TP {args.tp} x PP {args.pp}, batch "
                  f"{args.batch}, context {args.context}, {args.precision}, "
                  f"{args.recipe}, all-reduce {args.allreduce}\n")
    emit(rows, args.format, out)
    if args.format == "table":
        if not d.fits_memory:
            out.write("# warning: weights + KV cache exceed the GPU's memory\n")
        out.write("# model: gpulab.inference (decode fitted on 1x H200; other GPUs "
                  "scaled by HBM bandwidth and peak, assumed); KiB = 1024 B\n")
    return 0
