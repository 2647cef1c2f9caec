"""Explorers of the collectives topic: one collective on one system, and every
algorithm on a scale-up or scale-out fabric.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import html

import ipywidgets as W
from .base import Explorer, PNGView, set_ranks, system_ranks_controls
from .. import collectives, plotting, systems, units


#: Message sizes of the collective explorer: powers of two, 8 B to 16 GiB. [B]
COLLECTIVE_SIZES = tuple(2 ** k for k in range(3, 35))


#: Launch options of the collective explorer: who issues the calls.
COLLECTIVE_LAUNCH = (("one process per GPU (MPI, torchrun)", "gpu"),
                     ("one process for a node's GPUs (nccl-tests -g N)", "node"))


class _CollectiveExplorer(Explorer):
    def __init__(self, message_bytes, n_ranks, system, collective, algorithm,
                 transport, metric, launch):
        import numpy as np
        style = {"description_width": "initial"}
        n_max = systems.get(system).n_gpus
        controls = {
            "message_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(s), s) for s in COLLECTIVE_SIZES],
                value=message_bytes, description="Message size",
                style=style, layout=W.Layout(width="420px")),
            "n_ranks": W.IntSlider(value=n_ranks, min=2, max=max(2, n_max),
                                   description="GPUs", style=style),
            "system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style,
                                 layout=W.Layout(width="250px")),
            "collective": W.Dropdown(options=collectives.COLLECTIVES,
                                     value=collective, description="Collective",
                                     style=style, layout=W.Layout(width="250px")),
            "algorithm": W.Dropdown(options=("auto",) + collectives.ALGORITHMS,
                                    value=algorithm, description="Algorithm",
                                    style=style, layout=W.Layout(width="230px")),
            "transport": W.ToggleButtons(options=collectives.TRANSPORTS,
                                         value=transport, description="Transport",
                                         style=style),
            "metric": W.ToggleButtons(options=[("busbw", "busbw"),
                                               ("time", "time")],
                                      value=metric, description="Plot",
                                      style=style),
            "launch": W.Dropdown(options=COLLECTIVE_LAUNCH, value=launch,
                                 description="Launch", style=style,
                                 layout=W.Layout(width="420px")),
        }
        self.sizes = np.array(COLLECTIVE_SIZES, dtype=float)
        self.prediction = None
        super().__init__(controls, PNGView(figsize=(6.4, 3.4)))
        controls["system"].observe(self._on_system, names="value")
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["message_bytes"], c["n_ranks"]), (c["system"], c["collective"]),
                (c["algorithm"], c["transport"]), (c["metric"],), (c["launch"],)]

    def _on_system(self, change):
        n_max = max(2, systems.get(change["new"]).n_gpus)   # the GPU slider follows
        set_ranks(self, n_max, min(self.controls["n_ranks"].value, n_max))
        self.update()

    def _on_change(self, change=None):
        if change is not None and change["owner"] is self.controls["system"]:
            return                                  # handled by _on_system
        super()._on_change(change)

    def _update(self):
        c = self.controls
        size, n = c["message_bytes"].value, c["n_ranks"].value
        system, transport = c["system"].value, c["transport"].value
        try:
            pred = collectives.predict(
                c["collective"].value, self.sizes, n, system,
                transport=transport, algorithm=c["algorithm"].value,
                gpus_per_process=1 if c["launch"].value == "gpu" else "node")
            line = collectives.fabric_bandwidth(system, transport)
        except ValueError:
            self.summary.value = ""
            raise
        self.prediction = pred
        self.view.render(lambda ax: plotting.plot_collective_prediction(
            pred, message_bytes=size, metric=c["metric"].value, line_rate=line,
            ax=ax))
        i = COLLECTIVE_SIZES.index(size)
        busbw = pred.busbw[i]
        factor = busbw / pred.algbw[i]
        lines = [
            f"{c['collective'].value} of {units.fmt_bytes(size)} on {n} GPUs "
            f"of {html.escape(system)} ({transport}): "
            f"<b>{units.fmt_time(pred.time[i])} per call</b>, "
            f"algbw {pred.algbw[i] / units.GB:.1f} GB/s, "
            f"<b>busbw {busbw / units.GB:.1f} GB/s</b> "
            f"(= algbw × {factor:.3g}).",
            f"NCCL's choice in the model: <b>{pred.algorithm[i]}</b> with the "
            f"<b>{pred.protocol[i]}</b> protocol. Line rate per GPU: "
            f"{line.gb_per_s:.0f} GB/s per direction.",
            "Calls issued by one process per GPU." if c["launch"].value == "gpu" else
            "Calls issued by one process for all GPUs of a node: small messages "
            "pay every GPU's launch.",
        ]
        if busbw > line.bytes_per_s:
            lines.append("busbw above the line rate: the switch does the "
                         "additions, so busbw counts traffic a ring would "
                         "have sent; algbw stays below the line rate.")
        self.summary.value = "<br>".join(lines)


def collective_explorer(message_bytes=64 * units.MiB, n_ranks=8, system="hgx-h200",
                        collective="all_reduce", algorithm="auto", transport="p2p",
                        *, metric="busbw", launch="gpu"):
    """Predicted nccl-tests curve of one collective: size x GPUs x algorithm.

    Controls: message size (powers of two, 8 B-16 GiB), GPUs (2 up to the
    system's), system preset, collective, algorithm (``auto`` = NCCL's choice
    in the model), transport (``p2p`` or ``shm``), what to plot (busbw or
    time per call) and who launches the calls (``gpu``, the default: one
    process per GPU, as torchrun and ``mpirun -g 1``; ``node``: one process for
    the GPUs of a node, as nccl-tests ``-g N``). Calls :func:`gpulab.collectives.predict` over
    :data:`COLLECTIVE_SIZES` (bytes, SI) and
    :func:`gpulab.plotting.plot_collective_prediction`; the summary gives
    time, algbw, busbw and the chosen algorithm and protocol at the marked
    size. Combinations the model refuses (``nvls`` without an NVLS switch,
    ``tree`` for all_gather...) show its message.
    """
    if message_bytes not in COLLECTIVE_SIZES:
        raise ValueError("message_bytes must be a power of two from 8 B to 16 GiB; "
                         f"got {message_bytes!r}")
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; "
                         f"got {system!r}")
    n_max = max(2, systems.get(system).n_gpus)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) \
            or not 2 <= n_ranks <= n_max:
        raise ValueError(f"n_ranks must be an integer from 2 to {n_max} for "
                         f"{system}; got {n_ranks!r}")
    for name, value, choices in (
            ("collective", collective, collectives.COLLECTIVES),
            ("algorithm", algorithm, ("auto",) + collectives.ALGORITHMS),
            ("transport", transport, collectives.TRANSPORTS),
            ("metric", metric, ("busbw", "time")),
            ("launch", launch, tuple(v for _, v in COLLECTIVE_LAUNCH))):
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}; "
                             f"got {value!r}")
    return _CollectiveExplorer(int(message_bytes), n_ranks, system, collective,
                               algorithm, transport, metric, launch)

#: Row labels of the fabric explorer's figure, one per collectives.ALGORITHMS entry.
FABRIC_LABELS = {"ring": "ring", "tree": "tree", "direct": "direct (one-shot)",
                 "nvls": "NVLS (in-switch)", "nvlstree": "NVLSTree (across nodes)",
                 "collnet": "CollNet (SHARP)"}
#: Message sizes of the fabric explorer: 1 KiB to 16 GiB, powers of two. [B]
FABRIC_SIZES = tuple(2 ** k for k in range(10, 35))


def _fabric_reason(algorithm, collective, system, exc):
    """Why an algorithm has no bar: short UI text."""
    if collective != "all_reduce":
        return "modelled for all_reduce only"
    if algorithm == "nvls":
        return "in-switch reduction stays inside one NVLink domain" \
            if system.nvlink.nvls else "no in-switch reduction on this system"
    if algorithm in ("nvlstree", "collnet"):
        return "needs ranks in several NVLink domains" if "across nodes" in str(exc) \
            else str(exc)[:70]
    return str(exc)[:70]


class _FabricExplorer(Explorer):
    def __init__(self, system, n_ranks, message_bytes, collective):
        style = {"description_width": "initial"}
        controls = {
            **system_ranks_controls(system, n_ranks, "Ranks (GPUs)", style),
            "message_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(v), v) for v in FABRIC_SIZES],
                value=message_bytes, description="Message size", style=style),
            "collective": W.Dropdown(options=list(collectives.COLLECTIVES),
                                     value=collective, description="Collective",
                                     style=style),
        }
        super().__init__(controls, PNGView(figsize=(7.0, 3.0)))
        self.view.fig.subplots_adjust(left=0.2, right=0.97, top=0.9, bottom=0.16)
        self.highlighted = None
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["system"], c["collective"]), (c["n_ranks"], c["message_bytes"])]

    def _system_changed(self):
        """Bound the ranks slider by the new system; keep a rank count it can place."""
        s = systems.get(self.controls["system"].value)
        n = min(self.controls["n_ranks"].value, s.n_gpus)
        while n > 2 and not collectives.ranks_fit_domains(s, n):
            n -= 1
        set_ranks(self, s.n_gpus, n)

    def _update(self):
        c = self.controls
        name, n = c["system"].value, c["n_ranks"].value
        size, coll = c["message_bytes"].value, c["collective"].value
        s = systems.get(name)
        if n > s.n_gpus:
            raise ValueError(f"n_ranks: {name} has {s.n_gpus} GPUs; got {n}")
        d = s.scale_up_domain
        k = (n + d - 1) // d                # NVLink domains (nodes) the ranks fill
        if not collectives.ranks_fit_domains(s, n):
            raise ValueError(
                f"{n} ranks on {name}: beyond one NVLink domain ({d} GPUs) the model "
                f"splits the ranks evenly over the {k} domains they fill; choose at "
                f"most {d} or a multiple of {k}")
        best = collectives.predict(coll, size, n, name)
        chosen = str(best.algorithm[0])
        rows, found = [], {}
        for algo in collectives.ALGORITHMS:
            p = best if algo == chosen else None
            if p is None:
                try:
                    p = collectives.predict(coll, size, n, name, algorithm=algo)
                except ValueError as exc:
                    rows.append((FABRIC_LABELS[algo], None, None,
                                 _fabric_reason(algo, coll, s, exc)))
                    continue
            found[algo] = p
            rows.append((FABRIC_LABELS[algo], float(p.time[0]), float(p.busbw[0]),
                         ""))
        multi = k > 1
        line = collectives.fabric_bandwidth(s)
        nv = s.nvlink.fabric != "none"
        line_label = "NVLink per GPU" if nv else \
            f"PCIe Gen{s.pcie.generation} x{s.pcie.lanes} per GPU"
        rates = [(line_label, line, "nvlink" if nv else "pcie")]
        net = None
        if multi:
            net = collectives.fabric_bandwidth(s, scope="inter")
            rates.append((f"network per GPU ({s.network.nic})", net, "ib"))
        high = list(collectives.ALGORITHMS).index(chosen) \
            if chosen in collectives.ALGORITHMS else None
        self.highlighted = high
        self.view.render(lambda ax: plotting.plot_fabric_algorithms(
            rows, line_rates=rates, highlight=high, ax=ax))
        t, bus = float(best.time[0]), float(best.busbw[0])
        where = f"{k} NVLink domains (nodes), {n // k} ranks each" if multi else \
            ("one NVLink domain" if nv else "one node, no NVLink")
        lines = [
            f"<b>{coll}</b> of {units.fmt_bytes(size)} on {n} ranks of <b>{name}</b> "
            f"({where}). NCCL's choice in the model: <b>{chosen}</b> "
            f"({best.protocol[0]}), {units.fmt_time(t)}; algbw "
            f"{best.algbw[0] / units.GB:.1f} GB/s, busbw {bus / units.GB:.1f} GB/s "
            f"per direction = {bus / line.bytes_per_s:.0%} of the "
            f"{line.gb_per_s:.0f} GB/s per-direction {line_label.split(' per')[0]} "
            "line rate."]
        if coll == "all_reduce" and "ring" in found and chosen != "ring":
            rt = float(found["ring"].time[0])
            lines.append(f"The ring alone would take {units.fmt_time(rt)} "
                         f"({rt / t:.1f}× NCCL's choice).")
        if bus > line.bytes_per_s:
            lines.append("busbw above the line rate: nccl-tests' busbw factor assumes "
                         "a ring, and in-switch reduction sends less per GPU.")
        if net is not None:
            lines.append(f"Between nodes each GPU has {net.gb_per_s:.0f} GB/s per "
                         f"direction of network, 1/{line / net:.0f} of its "
                         f"{line.gb_per_s:.0f} GB/s per direction inside the node.")
        self.summary.value = "<br>".join(lines)


def fabric_explorer(system="hgx-h200", n_ranks=8, message_bytes=64 * 2 ** 20,
                    collective="all_reduce"):
    """Collective time and busbw per algorithm on a system preset.

    Controls: system (a :func:`gpulab.systems.names` preset), ranks (bounded by
    the system's GPUs), message size (powers of two, 1 KiB to 16 GiB) and
    collective. Calls :func:`gpulab.collectives.predict` once for NCCL's choice
    and once per other algorithm, and draws
    :func:`gpulab.plotting.plot_fabric_algorithms` with the per-direction NVLink
    (or PCIe) line rate and, across nodes, the network share of one GPU.
    """
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    s = systems.get(system)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) \
            or not 2 <= n_ranks <= s.n_gpus:
        raise ValueError(f"n_ranks must be an integer in [2, {s.n_gpus}] for "
                         f"{system}; got {n_ranks!r}")
    if message_bytes not in FABRIC_SIZES:
        raise ValueError("message_bytes must be a power of two from 1 KiB to 16 GiB; "
                         f"got {message_bytes!r}")
    if collective not in collectives.COLLECTIVES:
        raise ValueError(f"collective must be one of "
                         f"{', '.join(collectives.COLLECTIVES)}; got {collective!r}")
    return _FabricExplorer(system, n_ranks, message_bytes, collective)
