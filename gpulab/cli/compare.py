"""``gpulab compare``: measured nccl-tests sweeps vs the model, per size.

``gpulab compare FILE [FILE...] --system NAME`` reads each FILE with
:func:`gpulab.nccltests.read_all` (nccl-tests text or ``-J`` JSON output, or our
CSVs), predicts every measured size with :func:`gpulab.collectives.predict` for
the file's collective and rank count, and prints per size the measured and
predicted time and busbw with the relative error ``(predicted - measured) /
measured`` (the busbw error follows from the times, since printed busbw is
rounded), then the mean and worst error of the time per size band (8 B-32 KiB,
64-512 KiB, 1-8 MiB, 16 MiB and up). ``--plot FILE.png`` draws measured vs
predicted busbw. Times in us, busbw in GB/s (1e9 B/s) per direction.

The rank count comes from the file's ``#  Rank`` lines (one per rank, numbered
from 0; under MPI rank 0 prints every rank's line). A header that misses some
ranks (an excerpt) does not say the count: give ``--ranks``. A ``--ranks`` that
disagrees with the file is refused. When nccl-tests' result check failed (a
``#wrong`` above 0 or ``Out of bounds values : N FAILED``) the comparison is
still printed, with a warning line per failed check (also on stderr), and the
exit status is 1.

Across nodes, ``--system`` also takes a cluster preset
(:data:`gpulab.network.CLUSTER_PRESETS`) and ``--nodes/--nics/--fabric/--sharp``
as in ``gpulab predict``: ``--nodes`` must match the file's ranks (nodes x GPUs
per node), and a file without Rank lines is taken to have run on every GPU of
the ``--nodes`` cluster; the header names the cluster model used. The process
model is the file's ``nGpus`` (nccl-tests ``-g``), else ``--gpus-per-process``,
else one process per GPU. When the Rank lines name a GPU other than the one the
system models (``Tesla V100-SXM3-32GB`` against an H200 preset), one warning
line goes to stderr.

Examples::

    gpulab compare azure_2x8_all_reduce.txt --system dgx-a100-spod --nodes 2
    gpulab compare tests/data/nccltests/h100_2x8_all_reduce.txt --system gcp-a3-mega \
        --nodes 2
    gpulab compare nccl_default.txt --system h200-x2-measured
    gpulab compare c_p2p_disable.txt --system h200-x2-measured --transport shm \\
        --collective all_gather --format csv
    gpulab compare my_run.txt --system hgx-h200 --ranks 8 --plot cmp.png
"""
from __future__ import annotations

import argparse
import math
import sys


from .. import calibration, collectives, nccltests, network, units
from .base import (add_network_args, check_network_flags, check_nvls, describe_network,
                   emit, gpu_mismatch, nvls_enabled, one_line, positive_int,
                   read_sweeps, resolve_system, scale_unit)

__all__ = ["register"]

#: The repository's sample two-node run with the cluster preset it ran on (the
#: help's example; START.ipynb points new users at the file).
SAMPLE_COMMAND = ("gpulab compare tests/data/nccltests/h100_2x8_all_reduce.txt "
                  "--system gcp-a3-mega --nodes 2")

#: Exit status when a file's nccl-tests result checks failed (``#wrong`` > 0 or
#: ``Out of bounds values : N FAILED``): the comparison is printed, with a
#: warning per failed check (in the table and on stderr), and the exit status
#: says the measurement is not valid.
_FAILED_CHECKS = 1

def _fmt_num(x, digits):
    return "N/A" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else f"{x:.{digits}f}"




def _gpus_per_process(text):
    """An argparse type: GPUs per process, an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid gpus-per-process {text!r}: must be "
                                         "an integer >= 1")
    return value


def _process_model(parser, args, sweep, path, n, system):
    """(GPUs per process, how it was decided): ``--gpus-per-process``, else the
    file's ``nGpus``, else one process per GPU (as ``gpulab predict``)."""
    high = min(n, system.gpus_per_node)
    g_file = sweep.gpus_per_process
    if args.gpus_per_process is not None:
        g = args.gpus_per_process
        if g_file is not None and g_file != g:
            parser.error(f"argument --gpus-per-process: {g} disagrees with {path}, "
                         f"whose header says nGpus {g_file} (nccl-tests -g "
                         f"{g_file}); give --gpus-per-process {g_file} or leave it out")
        if g > high or n % g:
            parser.error(f"argument --gpus-per-process: must be 1 to {high} and "
                         f"divide the {n} ranks; got {g}")
        return g, f"nccl-tests -g {g}, from --gpus-per-process"
    if g_file is not None and g_file <= high and n % g_file == 0:
        return g_file, f"nccl-tests -g {g_file}, from the file's nGpus"
    if g_file is not None:
        return 1, (f"one process per GPU: the file's nGpus {g_file} does not fit "
                   f"{system.gpus_per_node} GPUs per node of {args.system}")
    return 1, ("one process per GPU: the file does not say; --gpus-per-process N "
               "if it ran nccl-tests -g N")


def _cmd_compare(args, out):
    parser = args._compare_parser
    system = resolve_system(args, parser)
    check_nvls(parser, args, system)
    if args.collective is not None and args.collective not in nccltests.COLLECTIVE_NAMES:
        parser.error(f"argument --collective: invalid choice {args.collective!r}")
    transport = args.transport or "p2p"
    nvls = nvls_enabled(args.nvls)
    jobs, notes, gpu_warnings = [], [], {}
    for path in args.files:
        sweeps = read_sweeps(parser, path)
        if args.collective is not None:
            named = [s for s in sweeps if s.collective == args.collective]
            if not named and all(s.collective is None for s in sweeps):
                named = sweeps
            if not named:
                have = ", ".join(sorted({str(s.collective) for s in sweeps}))
                parser.error(f"argument --collective: {path} has no "
                             f"{args.collective} table (it has: {have})")
            sweeps = named
        for s in sweeps:
            coll = s.collective or args.collective
            if coll is None:
                parser.error(f"argument --collective: {path} does not name its "
                             "collective; give --collective")
            if coll not in collectives.COLLECTIVES:
                parser.error(f"argument --collective: the model covers "
                             f"{', '.join(collectives.COLLECTIVES)}, not {coll}")
            ranks, ranks_how = args.ranks, ""
            if ranks is None and s.n_ranks is None and args.nodes is not None:
                # the file does not list its ranks: every GPU of the --nodes cluster
                ranks = system.n_gpus
                ranks_how = (f" (--nodes {args.nodes} x "
                             f"{system.n_gpus // args.nodes} GPUs; "
                             "the file does not list its ranks)")
            try:
                n = s.resolve_ranks(ranks)
            except ValueError as exc:
                parser.error("argument --ranks: " + one_line(exc).removeprefix(
                    "n_ranks: ").replace("give the rank count", "give --ranks"))
            # GPUs per scale-out unit: a node, or an NVLink domain spanning nodes
            per_node = (system.n_gpus // args.nodes if args.nodes is not None
                        else system.scale_up_domain)
            if args.nodes is not None and n != system.n_gpus:
                fit = (f"give --nodes {n // per_node}" if n % per_node == 0
                       else f"{n} ranks are not whole nodes of {per_node} GPUs")
                parser.error(f"argument --nodes: {args.nodes} "
                             f"{scale_unit(system, args.nodes)} x {per_node} GPUs "
                             f"= {system.n_gpus} ranks, but {path} ran {n} ranks; "
                             f"{fit}")
            if n > system.n_gpus:
                hint = ""
                if n % per_node == 0 and (system.network is not None
                                          or args.system in network.CLUSTER_PRESETS):
                    hint = (f"; give --nodes {n // per_node} to model {n // per_node} "
                            f"{scale_unit(system, n // per_node)}")
                parser.error(f"argument --ranks: {n} ranks but system {system.name} "
                             f"has {system.n_gpus} GPUs{hint}")
            check_network_flags(parser, args, system, n)
            g, g_how = _process_model(parser, args, s, path, n, system)
            keep = s.size_bytes > 0
            if not keep.any():
                parser.error(f"argument FILE: {path}: no sizes > 0 to compare")
            try:
                pred = collectives.predict(coll, s.size_bytes[keep].astype(float), n,
                                           system, transport=transport, nvls=nvls,
                                           gpus_per_process=g,
                                           algorithm=args.algorithm or "auto",
                                           protocol=args.protocol or "auto")
                cluster = describe_network(system, n, nvls=nvls)
            except ValueError as exc:
                parser.error(one_line(exc))
            warning = gpu_mismatch(s, system)
            if warning:
                gpu_warnings.setdefault(str(path), warning)
            jobs.append((path, s, coll, n, pred))
            notes.append({"ranks_how": ranks_how, "gpus_per_process": g,
                          "process_model": g_how, "cluster": cluster})
    for line in gpu_warnings.values():
        sys.stderr.write(f"gpulab compare: warning: {line}\n")
    failed = [f"{path}: {s.collective or coll}: nccl-tests result check failed: "
              f"{check}" for path, s, coll, n, pred in jobs
              for check in s.failed_checks()]
    for line in failed:
        sys.stderr.write(f"gpulab compare: warning: {line}\n")
    status = _FAILED_CHECKS if failed else 0
    if args.plot:
        _plot(jobs, args.plot, parser)
    if args.format == "json":
        import json
        doc = [{"file": str(path), "collective": coll, "n_ranks": n,
                "system": system.name, "nodes": system.nodes, "transport": transport,
                "algorithm": args.algorithm or "auto", "protocol": args.protocol or "auto",
                "gpus_per_process": note["gpus_per_process"],
                "process_model": note["process_model"],
                "cluster": note["cluster"] or None,
                "gpu_warning": gpu_warnings.get(str(path)),
                "failed_checks": s.failed_checks(),
                "rows": [{k: _json_num(v) for k, v in r.items()}
                         for r in calibration.compare_rows(s, pred)],
                "summary": [{k: _json_num(v) for k, v in b.items()}
                            for b in calibration.band_summary(calibration.compare_rows(s, pred))]}
               for (path, s, coll, n, pred), note in zip(jobs, notes)]
        json.dump(doc, out, indent=2)
        out.write("\n")
        return status
    if args.format == "csv":
        rows = []
        for path, s, coll, n, pred in jobs:
            for r in calibration.compare_rows(s, pred):
                rows.append({"file": str(path), "collective": coll, "n_ranks": n,
                             **_text_row(r)})
        emit(rows, "csv", out)
        return status
    for k, ((path, s, coll, n, pred), note) in enumerate(zip(jobs, notes)):
        rows = calibration.compare_rows(s, pred)
        if k:
            out.write("\n")
        cluster = (f"; cluster model: {system.name}, {note['cluster']}"
                   if note["cluster"] else "")
        forced = "".join(f"; {name} {value} (forced)" for name, value in
                         (("algorithm", args.algorithm), ("protocol", args.protocol))
                         if value not in (None, "auto"))
        out.write(f"# gpulab compare: {path}: {coll}, {n} ranks{note['ranks_how']}, "
                  f"measured vs model on {system.name} (transport {transport}"
                  f"{forced}{cluster}; process model: {note['gpus_per_process']} GPU(s) per "
                  f"process, {note['process_model']})\n"
                  "# time in us; busbw in GB/s per direction (GB = 1e9 B); err = "
                  "(model - measured) / measured\n")
        text = [_text_row(r) for r in rows]
        widths = {c: max(len(c), *(len(r[c]) for r in text)) for c in text[0]}
        text = [{c: (v.rjust(widths[c]) if c != "model_algo" else v)
                 for c, v in r.items()} for r in text]
        emit(text, "table", out)
        for b in calibration.band_summary(rows):
            out.write(f"# {b['band']:>10s}: mean |time error| "
                      f"{b['mean_abs_err_pct']:5.1f}%, worst "
                      f"{b['worst_err_pct']:+6.1f}% at "
                      f"{units.fmt_bytes(b['worst_at_bytes'], binary=True)} "
                      f"({b['sizes']} sizes)\n")
        for check in s.failed_checks():
            out.write(f"# WARNING: nccl-tests result check failed: {check}; "
                      "these times measure a run that returned wrong data\n")
    return status


def _json_num(v):
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 4)
    return v


def _text_row(r):
    return {"size_bytes": str(r["size_bytes"]),
            "time_us": _fmt_num(r["time_us"], 2),
            "model_time_us": _fmt_num(r["model_time_us"], 2),
            "time_err_pct": _fmt_num(r["time_err_pct"], 1),
            "busbw_GBps": _fmt_num(r["busbw_GBps"], 2),
            "model_busbw_GBps": _fmt_num(r["model_busbw_GBps"], 2),
            "busbw_err_pct": _fmt_num(r["busbw_err_pct"], 1),
            "model_algo": r["model_algo"]}


def _plot(jobs, path, parser):
    if not str(path).lower().endswith(".png"):
        parser.error(f"argument --plot: {path!r} must end in .png")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plotting import plot_compare

    fig, axes = plt.subplots(len(jobs), 1, figsize=(6.4, 3.2 * len(jobs)),
                             squeeze=False)
    for ax, (_, s, coll, n, pred) in zip(axes[:, 0], jobs):
        if s.collective is None or s.n_ranks is None:
            s.collective, s.n_ranks = coll, n
        plot_compare(s, pred, ax=ax)
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=110)
    except OSError as exc:
        parser.error(f"argument --plot: cannot write {path!r}: {exc.strerror}")
    finally:
        plt.close(fig)


def register(sub, fmt):
    """Add ``gpulab compare`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "compare",
        help="measured nccl-tests sweeps vs the model, per size, with the error",
        description="Compare measured collective sweeps (nccl-tests text or JSON "
                    "output, or CSV with size_bytes,time_us,...) with "
                    "gpulab.collectives.predict: per size the measured and "
                    "predicted time and busbw and the relative error, and a summary "
                    "per size band. busbw in GB/s per direction (GB = 1e9 B).",
        epilog=f"Example, the sample two-node file (2x8 H100 on Google Cloud A3 Mega, "
               f"GPUDirect-TCPXO): {SAMPLE_COMMAND}")
    s.add_argument("files", nargs="+", metavar="FILE",
                   help="nccl-tests output (text or -J JSON) or a sweep CSV")
    s.add_argument("--system", required=True, metavar="NAME|FILE",
                   help="system preset or cluster preset (gpulab predict "
                        "--list-systems) or YAML file")
    s.add_argument("--transport", choices=collectives.TRANSPORTS,
                   help="p2p (default) or shm (the run used NCCL_P2P_DISABLE=1)")
    s.add_argument("--ranks", type=positive_int, metavar="N",
                   help="ranks of the run, all nodes (default: from the file's Rank "
                        "lines; with --nodes and a file that lists none: nodes x GPUs "
                        "per node)")
    s.add_argument("--gpus-per-process", type=_gpus_per_process, metavar="G",
                   help="GPUs one process drove (nccl-tests -g G; default: the file's "
                        "nGpus, else 1: one process per GPU)")
    s.add_argument("-g", dest="gpus_per_process", type=_gpus_per_process, metavar="G",
                   help="same as --gpus-per-process (nccl-tests' -g)")
    s.add_argument("--collective", metavar="NAME",
                   help="collective (default: from the file; picks one table of a "
                        "file that holds several)")
    s.add_argument("--algorithm", choices=("auto",) + collectives.ALGORITHMS,
                   help="the algorithm the run forced (NCCL_ALGO); default: auto, "
                        "as NCCL's tuner picks")
    s.add_argument("--protocol", choices=("auto",) + collectives.PROTOCOLS,
                   help="the protocol the run forced (NCCL_PROTO); default: auto")
    s.add_argument("--nvls", choices=("auto", "on", "off"), default="auto",
                   help="model in-switch reduction as gpulab predict does "
                        "(default: auto)")
    add_network_args(s, what="")
    s.add_argument("--plot", metavar="FILE.png",
                   help="also write measured vs predicted busbw to this PNG")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_compare, _compare_parser=s)
