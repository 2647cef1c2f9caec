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

Examples::

    gpulab compare nccl_default.txt --system h200-x2-measured
    gpulab compare c_p2p_disable.txt --system h200-x2-measured --transport shm \\
        --collective all_gather --format csv
    gpulab compare my_run.txt --system hgx-h200 --ranks 8 --plot cmp.png
"""
from __future__ import annotations

import math
import sys


from .. import calibration, collectives, nccltests, systems, units
from .base import emit, nvls_enabled, positive_int, read_sweeps

__all__ = ["register"]

#: Exit status when a file's nccl-tests result checks failed (``#wrong`` > 0 or
#: ``Out of bounds values : N FAILED``): the comparison is printed, with a
#: warning per failed check (in the table and on stderr), and the exit status
#: says the measurement is not valid.
_FAILED_CHECKS = 1

def _fmt_num(x, digits):
    return "N/A" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else f"{x:.{digits}f}"




def _cmd_compare(args, out):
    parser = args._compare_parser
    try:
        system = systems.resolve(args.system)
    except ValueError as exc:
        parser.error(f"argument --system: {exc}")
    if args.collective is not None and args.collective not in nccltests.COLLECTIVE_NAMES:
        parser.error(f"argument --collective: invalid choice {args.collective!r}")
    transport = args.transport or "p2p"
    jobs = []
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
            try:
                n = s.resolve_ranks(args.ranks)
            except ValueError as exc:
                parser.error("argument --ranks: " + str(exc).removeprefix(
                    "n_ranks: ").replace("give the rank count", "give --ranks"))
            if n > system.n_gpus:
                parser.error(f"argument --ranks: {n} ranks but system {system.name} "
                             f"has {system.n_gpus} GPUs")
            keep = s.size_bytes > 0
            if not keep.any():
                parser.error(f"argument FILE: {path}: no sizes > 0 to compare")
            try:
                pred = collectives.predict(coll, s.size_bytes[keep].astype(float), n,
                                           system, transport=transport,
                                           nvls=nvls_enabled(args.nvls))
            except ValueError as exc:
                parser.error(str(exc))
            jobs.append((path, s, coll, n, pred))
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
                "system": system.name, "transport": transport,
                "failed_checks": s.failed_checks(),
                "rows": [{k: _json_num(v) for k, v in r.items()}
                         for r in calibration.compare_rows(s, pred)],
                "summary": [{k: _json_num(v) for k, v in b.items()}
                            for b in calibration.band_summary(calibration.compare_rows(s, pred))]}
               for path, s, coll, n, pred in jobs]
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
    for k, (path, s, coll, n, pred) in enumerate(jobs):
        rows = calibration.compare_rows(s, pred)
        if k:
            out.write("\n")
        out.write(f"# gpulab compare: {path}: {coll}, {n} ranks, measured vs model "
                  f"on {system.name} (transport {transport})\n"
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
                    "per size band. busbw in GB/s per direction (GB = 1e9 B).")
    s.add_argument("files", nargs="+", metavar="FILE",
                   help="nccl-tests output (text or -J JSON) or a sweep CSV")
    s.add_argument("--system", required=True, metavar="NAME|FILE",
                   help="system preset (gpulab predict --list-systems) or YAML file")
    s.add_argument("--transport", choices=collectives.TRANSPORTS,
                   help="p2p (default) or shm (the run used NCCL_P2P_DISABLE=1)")
    s.add_argument("--ranks", type=positive_int, metavar="N",
                   help="ranks of the run (default: from the file's Rank lines)")
    s.add_argument("--collective", metavar="NAME",
                   help="collective (default: from the file; picks one table of a "
                        "file that holds several)")
    s.add_argument("--nvls", choices=("auto", "on", "off"), default="auto",
                   help="model in-switch reduction as gpulab predict does "
                        "(default: auto)")
    s.add_argument("--plot", metavar="FILE.png",
                   help="also write measured vs predicted busbw to this PNG")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_compare, _compare_parser=s)
