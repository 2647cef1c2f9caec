"""Precomputed charts of the collectives topic: one collective's predicted
nccl-tests curve (the collective explorer) and every algorithm on a fabric (the
fabric explorer)."""
from __future__ import annotations

import functools

import altair as alt

from .base import Control, build, bytes_x, picked
from .. import collectives, systems, units

#: Grid of the collective chart: systems, collectives, ranks, marked sizes [B].
COLLECTIVE_SYSTEMS = ("hgx-h200", "h100-pcie")
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
COLLECTIVE_RANKS = (2, 4, 8)
COLLECTIVE_MARKS = tuple(2 ** k for k in (10, 13, 16, 20, 23, 26, 30, 32))  # 1 KiB..4 GiB
#: Message sizes of each predicted curve: powers of two, 8 B to 16 GiB. [B]
COLLECTIVE_CURVE = tuple(2 ** k for k in range(3, 35))
#: Grid of the fabric chart: systems, ranks and sizes [B] (all_reduce).
FABRIC_SYSTEMS = ("hgx-h200", "hgx-h200-2node", "h100-pcie")
FABRIC_RANKS = (2, 4, 8, 16)
FABRIC_MARKS = tuple(4 ** k for k in range(5, 17))            # 1 KiB .. 4 GiB


def _size_control(name, values, value):
    return Control(name, "Message size", values, value,
                   labels=tuple(units.fmt_bytes(v) for v in values))


def collective_chart(system="hgx-h200", collective="all_reduce", n_ranks=8,
                     message_bytes=64 * units.MiB):
    """Predicted busbw of one collective over message sizes, NCCL's algorithm and
    protocol at a marked size. Precomputed by :func:`gpulab.collectives.predict`
    over :data:`COLLECTIVE_CURVE` for every combination of
    :data:`COLLECTIVE_SYSTEMS`, :data:`COLLECTIVE_OPS` and :data:`COLLECTIVE_RANKS`
    (one process for a node's GPUs, P2P transport); the summary at each of
    :data:`COLLECTIVE_MARKS`. The arguments pick the initial point."""
    controls = (
        Control("system", "System", COLLECTIVE_SYSTEMS, system),
        Control("collective", "Collective", COLLECTIVE_OPS, collective),
        Control("n_ranks", "GPUs", COLLECTIVE_RANKS, n_ranks, kind="radio"),
        _size_control("size", COLLECTIVE_MARKS, message_bytes),
    )

    @functools.lru_cache(maxsize=None)
    def curve(system, collective, n_ranks):
        return (collectives.predict(collective, COLLECTIVE_CURVE, n_ranks, system),
                collectives.fabric_bandwidth(system))

    def point(system, collective, n_ranks, size):
        pred, line = curve(system, collective, n_ranks)
        rows = [{"bytes": b, "busbw": float(pred.busbw[i]) / units.GB}
                for i, b in enumerate(COLLECTIVE_CURVE)]
        i = COLLECTIVE_CURVE.index(size)
        bus = float(pred.busbw[i])
        text = (f"{collective} of {units.fmt_bytes(size)} on {n_ranks} GPUs of {system}: "
                f"{units.fmt_time(float(pred.time[i]))} per call, algbw "
                f"{float(pred.algbw[i]) / units.GB:.1f} GB/s, busbw "
                f"{bus / units.GB:.1f} GB/s per direction.\n"
                f"NCCL's choice in the model: {pred.algorithm[i]} with the "
                f"{pred.protocol[i]} protocol.\nLine rate per GPU: "
                f"{line.gb_per_s:.0f} GB/s per direction"
                + (" (busbw above it: the switch does the additions)."
                   if bus > line.bytes_per_s else "."))
        return rows, text

    def plot(base):
        x = bytes_x()
        y = alt.Y("busbw:Q", title="busbw [GB/s, per direction]")
        line = base.mark_line(point=True).encode(
            x=x, y=y, tooltip=[alt.Tooltip("bytes:Q", format=","),
                               alt.Tooltip("busbw:Q", format=".4g")])
        mark = base.transform_filter(picked("bytes", "size")).mark_point(
            size=160, color="#d62728", filled=True).encode(x=x, y=y)
        return line + mark

    return build("collective", "Predicted nccl-tests busbw of one collective",
                 controls, point, plot, rows_by=("system", "collective", "n_ranks"),
                 note="one process for a node's GPUs, P2P transport")


def fabric_chart(system="hgx-h200", n_ranks=8, message_bytes=64 * units.MiB):
    """all_reduce time per algorithm on a system, NCCL's choice named. Precomputed by
    :func:`gpulab.collectives.predict` (auto and each of
    :data:`gpulab.collectives.ALGORITHMS`) for :data:`FABRIC_SYSTEMS`,
    :data:`FABRIC_RANKS` and :data:`FABRIC_MARKS`; points the model refuses (more
    ranks than the system has) say so. The arguments pick the initial point."""
    controls = (
        Control("system", "System", FABRIC_SYSTEMS, system),
        Control("n_ranks", "Ranks (GPUs)", FABRIC_RANKS, n_ranks, kind="radio"),
        _size_control("size", FABRIC_MARKS, message_bytes),
    )

    @functools.lru_cache(maxsize=None)
    def sweep(system, n_ranks, algorithm):
        try:
            return collectives.predict("all_reduce", FABRIC_MARKS, n_ranks, system,
                                       algorithm=algorithm)
        except ValueError as exc:
            return exc

    def point(system, n_ranks, size):
        s = systems.get(system)
        if n_ranks > s.n_gpus or not collectives.ranks_fit_domains(s, n_ranks):
            return [], (f"{system} has {s.n_gpus} GPUs: the model cannot place "
                        f"{n_ranks} ranks there.\nPick fewer ranks or another system; "
                        f"Message size changes nothing here.\n ")
        i = FABRIC_MARKS.index(size)
        best = sweep(system, n_ranks, "auto")
        chosen = str(best.algorithm[i])
        rows = []
        for algo in collectives.ALGORITHMS:
            p = sweep(system, n_ranks, algo)
            if isinstance(p, ValueError):
                continue
            rows.append({"algorithm": algo, "ms": float(p.time[i]) * 1e3,
                         "chosen": algo == chosen})
        t = float(best.time[i])
        line = collectives.fabric_bandwidth(s)
        ring = sweep(system, n_ranks, "ring")
        lines = [f"all_reduce of {units.fmt_bytes(size)} on {n_ranks} ranks of {system}: "
                 f"NCCL's choice in the model is {chosen} ({best.protocol[i]}), "
                 f"{units.fmt_time(t)};",
                 f"busbw {float(best.busbw[i]) / units.GB:.1f} GB/s per direction "
                 f"against a {line.gb_per_s:.0f} GB/s per-direction line rate per GPU."]
        if chosen != "ring" and not isinstance(ring, ValueError):
            rt = float(ring.time[i])
            lines.append(f"The ring alone would take {units.fmt_time(rt)} "
                         f"({rt / t:.1f}× NCCL's choice).")
        else:
            lines.append(" ")
        return rows, "\n".join(lines)

    def plot(base):
        bars = base.mark_bar().encode(
            y=alt.Y("algorithm:N", sort=list(collectives.ALGORITHMS), title=None),
            x=alt.X("ms:Q", title="Time per call [ms]"),
            color=alt.condition("datum.chosen", alt.value("#d62728"),
                                alt.value("#4c78a8")),
            tooltip=["algorithm:N", alt.Tooltip("ms:Q", format=".4g")])
        return bars

    return build("fabric", "all_reduce time per algorithm (red: NCCL's choice)",
                 controls, point, plot, height=150,
                 note="all_reduce; algorithms the model does not apply there have no bar")
