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
rank counts; a fit on 8 or more ranks sets both. The rank count is the files'
(``--ranks`` must agree with it); a sweep whose nccl-tests result check failed
(``#wrong`` above 0, ``Out of bounds values : N FAILED``) is refused.
"""
from __future__ import annotations

import os


from .. import calibration, collectives, systems
from ..files import write_atomic
from .base import emit, int_type, name_flag, positive_int, read_sweeps

__all__ = ["register"]


def _cmd_fit(args, out):
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
        sweeps = read_sweeps(parser, path)
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
            failed = s.failed_checks()
            if failed:
                parser.error(f"argument FILE: {path}: {coll}: nccl-tests result check "
                             f"failed ({'; '.join(failed)}); a run that returned wrong "
                             "data is no measurement to fit")
            pairs.append((coll, s))
    if not pairs:
        parser.error("argument FILE: no sweep to fit")
    try:
        fits = calibration.fit_sweeps(pairs, args.system, transport, args.ranks,
                          args.gpus_per_process)
    except ValueError as exc:
        parser.error(name_flag(str(exc), {"n_ranks": "argument --ranks"}).replace(
            "give the rank count", "give --ranks"))
    name = args.name or os.path.splitext(os.path.basename(args.output))[0]
    text = calibration.system_yaml(args.system, name, fits, transport,
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
            for band in calibration.band_summary([{"size_bytes": int(s), "time_err_pct": float(e)}
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
    s.add_argument("--ranks", type=positive_int, metavar="N",
                   help="ranks of the run (default: from the file)")
    s.add_argument("--collective", metavar="NAME", help="fit only this collective")
    s.add_argument("--gpus-per-process", type=int_type("gpus-per-process"), metavar="G",
                   help="GPUs each process of the run drove (default: nccl-tests' "
                        "nGpus header, else all ranks of a node; give 1 for MPI or "
                        "gpulab.bench runs)")
    s.add_argument("--format", **fmt)
    s.set_defaults(func=_cmd_fit, _fit_parser=s)

