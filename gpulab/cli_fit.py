"""``gpulab fit``: calibrate a preset's collective model from measured sweeps.

``gpulab fit FILE... --system NAME -o my-system.yaml`` reads nccl-tests output
(text or JSON), ``python -m gpulab.bench`` output or a sweep CSV, derives for
every collective in the files the launch cost and the achieved efficiency with
:func:`gpulab.collectives.calibrate`, prints the residuals per size band before
and after the fit, and writes a systems YAML that inherits the preset
(``base: NAME``) and carries the fitted terms under ``collective_model``. The
file is accepted wherever a system is: ``gpulab predict --system
my-system.yaml``, ``gpulab compare ... --system my-system.yaml``.

Each sweep needs sizes up to 4 KiB (latency) and from 64 MiB (bandwidth). A
fit on 2 ranks keeps the preset's 8-rank efficiency (public runs) for larger
rank counts; a fit on 8 or more ranks sets both.
"""
from __future__ import annotations

import datetime as _dt
import os

import numpy as np
import yaml

from . import collectives, systems
from .cli_compare import _positive_int, _read_sweeps, band_summary

__all__ = ["fit_sweeps", "system_yaml", "register"]


def fit_sweeps(sweeps, system, transport="p2p", n_ranks=None, gpus_per_process=None):
    """Calibrate each ``(collective, sweep)`` pair; returns ``{collective: entry}``.

    ``entry`` holds ``launch_s``, ``efficiency``, the ranks, the GPUs per process
    and the sweep's sizes (for the residuals). A collective measured in several
    files is fitted on the per-size median of their times. GPUs per process:
    ``gpus_per_process`` if given, else the nccl-tests header's ``nGpus``, else
    every rank of a node (nccl-tests ``-g N``); a gpulab.bench (torchrun) run has
    one process per GPU.
    """
    system = systems.resolve(system)
    by_coll = {}
    for coll, sw in sweeps:
        n = n_ranks or sw.n_ranks
        if n is None:
            raise ValueError(f"n_ranks: {sw.source} does not say how many ranks ran")
        keep = (sw.size_bytes > 0) & np.isfinite(sw.time_s)
        g = gpus_per_process
        if g is None and str(sw.config.get("nGpus", "")).isdigit():
            g = int(sw.config["nGpus"])
        by_coll.setdefault((coll, n, g), []).append(
            dict(zip(sw.size_bytes[keep].astype(float), sw.time_s[keep])))
    out = {}
    for (coll, n, g), tables in by_coll.items():
        sizes = sorted(set().union(*tables))
        times = [float(np.median([t[s] for t in tables if s in t])) for s in sizes]
        if coll in out:
            raise ValueError(f"{coll} measured with different rank counts or GPUs per "
                             "process; fit one kind of run at a time (--ranks, "
                             "--gpus-per-process)")
        got = collectives.calibrate(coll, sizes, times, n, system, transport=transport,
                                    gpus_per_process=g)
        out[coll] = {**got, "n_ranks": n, "gpus_per_process": g,
                     "sizes": np.array(sizes), "times": np.array(times)}
    return out


def system_yaml(base, name, fits, transport, sources):
    """YAML text of a system inheriting preset ``base`` with the fitted terms."""
    entries = {}
    for coll, f in fits.items():
        e = {"launch_s": float(f"{f['launch_s']:.6g}"),
             "efficiency": float(f"{f['efficiency']:.5f}")}
        if f["n_ranks"] >= 8:
            e["efficiency_8"] = e["efficiency"]
        entries[coll] = e
    today = _dt.date.today().isoformat()
    doc = {"systems": {name: {
        "base": base,
        "description": f"{base} calibrated by gpulab fit on {', '.join(sources)}",
        "source": f"gpulab fit on measured sweeps: {', '.join(sources)}",
        "accessed": today,
        "collective_model": {
            "source": f"gpulab fit ({transport}), {today}: launch_s and efficiency per "
                      "collective from gpulab.collectives.calibrate",
            "transports": {transport: {"collectives": entries}}}}}}
    return ("# Written by gpulab fit. Inherits every field of the preset named in\n"
            "# 'base'; the collective_model section overrides the shared model.\n"
            + yaml.safe_dump(doc, sort_keys=False))


def _cmd_fit(args, out):
    from .bench import write_atomic
    from .cli import emit

    parser = args._fit_parser
    if args.system not in systems.names():
        parser.error(f"argument --system: must be a preset to inherit from "
                     f"({', '.join(systems.names())}); got {args.system!r}")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not args.output.endswith((".yaml", ".yml")) or not os.path.isdir(out_dir):
        parser.error("argument -o/--output: must be a .yaml file in an existing folder; "
                     f"got {args.output!r}")
    transport = args.transport or "p2p"
    pairs = []
    for path in args.files:
        sweeps = _read_sweeps(parser, path)
        for s in sweeps:
            coll = s.collective or args.collective
            if coll is None:
                parser.error(f"argument --collective: {path} does not name its "
                             "collective; give --collective")
            if args.collective and coll != args.collective:
                continue
            if coll not in collectives.COLLECTIVES:
                parser.error(f"argument FILE: the model covers "
                             f"{', '.join(collectives.COLLECTIVES)}, not {coll}")
            pairs.append((coll, s))
    if not pairs:
        parser.error("argument FILE: no sweep to fit")
    try:
        fits = fit_sweeps(pairs, args.system, transport, args.ranks,
                          args.gpus_per_process)
    except ValueError as exc:
        parser.error(str(exc))
    name = args.name or os.path.splitext(os.path.basename(args.output))[0]
    text = system_yaml(args.system, name, fits, transport,
                       [os.path.basename(p) for p in args.files])
    write_atomic(args.output, text)
    fitted = systems.load(args.output)[name]          # the file must load back
    rows = []
    for coll, f in fits.items():
        for label, sysm in (("before", systems.get(args.system)), ("after", fitted)):
            pred = collectives.predict(coll, f["sizes"], f["n_ranks"], sysm,
                                       transport=transport, nvls=False,
                                       gpus_per_process=f["gpus_per_process"])
            err = (pred.time / f["times"] - 1) * 100
            for band in band_summary([{"size_bytes": int(s), "time_err_pct": float(e)}
                                      for s, e in zip(f["sizes"], err)]):
                rows.append({"collective": coll, "ranks": f["n_ranks"], "fit": label,
                             "band": band["band"],
                             "mean_abs_err_pct": round(band["mean_abs_err_pct"], 1),
                             "worst_err_pct": round(band["worst_err_pct"], 1)})
    emit(rows, args.format, out)
    if args.format == "table":
        for coll, f in fits.items():
            out.write(f"# {coll}: launch {f['launch_s'] * 1e6:.2f} us, efficiency "
                      f"{f['efficiency']:.3f} of the per-direction line rate "
                      f"({f['n_ranks']} ranks)\n")
        out.write(f"# wrote {args.output} (system {name!r}, base {args.system!r}); "
                  f"use it as --system {args.output}\n")
    return 0


def register(sub, fmt):
    """Add ``gpulab fit`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "fit",
        help="calibrate a preset's collective model from measured sweeps",
        description="Fit launch cost and efficiency per collective to measured "
                    "sweeps (nccl-tests text/JSON, gpulab.bench output or CSV), "
                    "report the residuals per size band before and after, and write "
                    "a systems YAML usable as --system FILE.")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("--system", required=True, metavar="NAME",
                   help="preset the measurements came from (inherited by the output)")
    s.add_argument("-o", "--output", required=True, metavar="FILE.yaml")
    s.add_argument("--name", help="system name in the file (default: the file's stem)")
    s.add_argument("--transport", choices=collectives.TRANSPORTS,
                   help="p2p (default) or shm (the run used NCCL_P2P_DISABLE=1)")
    s.add_argument("--ranks", type=_positive_int, metavar="N",
                   help="ranks of the run (default: from the file)")
    s.add_argument("--collective", metavar="NAME", help="fit only this collective")
    s.add_argument("--gpus-per-process", type=_positive_int, metavar="G",
                   help="GPUs each process of the run drove (default: nccl-tests' "
                        "nGpus header, else all ranks of a node; give 1 for MPI or "
                        "gpulab.bench runs)")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_fit, _fit_parser=s)

