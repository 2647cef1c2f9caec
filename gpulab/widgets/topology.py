"""Explorer of the server-topology topic: read a server's ``nvidia-smi topo -m``.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import functools
import html
import io

import ipywidgets as W
from .base import Explorer, PNGView, gpu_label
from .. import measurements, plotting, topology


_MEASURED_SAMPLE = "h200-x2 (measured)"
_CAPTURE = ("h200-x2-2026-11-30", "topo-m.txt")


def topology_samples():
    """Sample ``nvidia-smi topo -m`` outputs: ``{name: text}``.

    The hand-written files of ``gpulab/data/topologies`` (by file stem) and the
    real capture of our 2x H200 machine, ``"h200-x2 (measured)"``.
    """
    from importlib import resources
    folder = resources.files("gpulab").joinpath("data", "topologies")
    out = {p.name[:-4]: p.read_text(encoding="utf-8")
           for p in sorted(folder.iterdir(), key=lambda p: p.name)
           if p.name.endswith(".txt")}
    out[_MEASURED_SAMPLE] = measurements.raw_capture(*_CAPTURE)
    return out


class _TopologyExplorer(Explorer):
    _CACHE_SIZE = 8

    def __init__(self, text, sample, acs_enabled, iommu):
        style = {"description_width": "initial"}
        self.samples = topology_samples()
        controls = {
            "sample": W.Dropdown(options=list(self.samples), value=sample,
                                 description="Sample", style=style),
            "text": W.Textarea(value=text, continuous_update=False,
                               placeholder="Paste the output of `nvidia-smi topo -m` "
                                           "here (it replaces the sample)",
                               layout=W.Layout(width="100%", height="110px")),
            "acs": W.Checkbox(value=acs_enabled, indent=False,
                              description="ACS P2P redirect on"),
            "iommu": W.Dropdown(options=list(topology.IOMMU_MODES), value=iommu,
                                description="IOMMU", style=style,
                                layout=W.Layout(width="200px")),
        }
        self.table = W.HTML()
        self.source = None               # "sample <name>" or "pasted text"
        self.topology = None
        self._drawn = {}                 # text -> (Figure, Axes, PNG bytes)
        self.draw_ms = {}                # text -> time to draw it the first time
        super().__init__(controls, PNGView(figsize=(6.4, 3.4), dpi=90))
        self.children = (*self.children, self.table)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["sample"], c["acs"], c["iommu"]), (c["text"],)]


    def _draw(self, text, topo, source):
        """Draw ``topo`` on a figure of its own, once per text (cached)."""
        import time

        import matplotlib as mpl
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if text in self._drawn:
            self._drawn[text] = self._drawn.pop(text)     # most recently used
            return self._drawn[text]
        t0 = time.perf_counter()
        with mpl.rc_context(plotting.STYLE):
            fig = Figure(dpi=self.view.fig.dpi)
            FigureCanvasAgg(fig)
            ax = fig.add_subplot()
            plotting.plot_topology(topo, ax=ax)
            (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
            width = max(6.4, 0.56 * (x1 - x0 - 0.6))
            height = 2.2 + 0.7 * (y1 - y0)
            fig.set_size_inches(width, height)
            fig.subplots_adjust(left=0.01, right=0.99, top=0.99,
                                bottom=0.75 / height)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight",
                        pil_kwargs={"compress_level": 1})
        self.draw_ms[source] = (time.perf_counter() - t0) * 1e3
        if len(self._drawn) >= self._CACHE_SIZE:
            self._drawn.pop(next(iter(self._drawn)))
        self._drawn[text] = (fig, ax, buf.getvalue())
        return self._drawn[text]

    def _update(self):
        c = self.controls
        pasted = c["text"].value
        if pasted.strip():
            text, source = pasted, "your pasted text"
        else:
            text, source = self.samples[c["sample"].value], \
                f"sample {c['sample'].value}"
        topo = _parse_topology(text)    # TopoParseError (a ValueError) -> message
        groups = _pair_groups(topo, c["acs"].value, c["iommu"].value)
        fig, ax, png = self._draw(text, topo, source)
        self.view.fig, self.view.ax = fig, ax
        if self.view.image.value != png:
            self.view.image.value = png
        self.topology, self.source = topo, source
        self.table.value = _pair_table_html(groups)
        parts = []
        for k, word in (("cpus", "CPU"), ("switches", "PCIe switch"),
                        ("gpus", "GPU"), ("nics", "NIC"),
                        ("nvswitches", "NVSwitch fabric")):
            n = len(getattr(topo, k))
            if n:
                plural = "es" if word.endswith("h") else "s"
                parts.append(f"{n} {word}{plural if n > 1 else ''}")
        self.summary.value = (f"Read from {html.escape(source)}: "
                              f"{', '.join(parts)}. Bandwidths are line rates "
                              "per direction (PCIe Gen5 x16, NVLink4 assumed: "
                              "the matrix does not say).")


@functools.lru_cache(maxsize=32)
def _parse_topology(text):
    """``topology.parse_topo_matrix``, cached per text (errors are not cached)."""
    return topology.parse_topo_matrix(text)


def _pair_groups(topo, acs_enabled, iommu):
    """GPU pairs of ``topo`` grouped by (class, P2P, transport, bandwidth)."""
    groups = {}
    gpus = topo.gpus
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            cls = topology.path_class(topo, a, b)
            ok, why = topology.p2p_possible(topo, a, b, acs_enabled=acs_enabled,
                                            iommu=iommu)
            transport, why_t = topology.nccl_transport(
                topo, a, b, acs_enabled=acs_enabled, iommu=iommu)
            bw = topology.bottleneck_bandwidth(topo, a, b)
            key = (cls, ok, why, transport, why_t, round(bw.gb_per_s, 6))
            groups.setdefault(key, []).append(f"{gpu_label(a)}–{gpu_label(b)}")
    return groups


def _pair_table_html(groups):
    head = ("<tr><th>GPU pairs</th><th>Path</th><th>P2P DMA</th>"
            "<th>NCCL transport</th><th>Bottleneck<br>[GB/s per direction]</th>"
            "</tr>")
    body = []
    for (cls, ok, why, transport, why_t, bw), pairs in groups.items():
        shown = ", ".join(pairs[:6]) + (f", … ({len(pairs)} pairs)"
                                        if len(pairs) > 6 else "")
        body.append(
            f"<tr><td>{html.escape(shown)}</td><td><b>{cls}</b></td>"
            f"<td>{'yes' if ok else '<b>no</b>'}<br><small>{html.escape(why)}"
            f"</small></td><td>{transport}<br><small>{html.escape(why_t)}"
            f"</small></td><td>{bw:.1f}</td></tr>")
    return ('<table class="table" style="font-size:90%"><thead>' + head
            + "</thead><tbody>" + "".join(body) + "</tbody></table>")


def topology_explorer(text=None, *, sample="dgx-h100", acs_enabled=False,
                      iommu="off"):
    """Read an ``nvidia-smi topo -m`` output: drawing, path classes, P2P, NCCL.

    Controls: a sample (the files of ``gpulab/data/topologies`` and the real
    2x H200 capture), a text area for your own output (non-empty text wins over
    the sample), the ACS P2P redirect and the IOMMU mode. Shows
    :func:`gpulab.plotting.plot_topology` of
    :func:`gpulab.topology.parse_topo_matrix` and, in ``.table``, the GPU pairs
    grouped by path class, :func:`gpulab.topology.p2p_possible`,
    :func:`gpulab.topology.nccl_transport` and
    :func:`gpulab.topology.bottleneck_bandwidth`. A parse error shows its
    message, naming the line. Drawings are cached per text: the ACS and IOMMU
    controls only rebuild the table.
    """
    samples = topology_samples()
    if sample not in samples:
        raise ValueError(f"sample must be one of {', '.join(samples)}; "
                         f"got {sample!r}")
    if not isinstance(acs_enabled, bool):
        raise ValueError(f"acs_enabled must be True or False; got {acs_enabled!r}")
    if iommu not in topology.IOMMU_MODES:
        raise ValueError(f"iommu must be one of {', '.join(topology.IOMMU_MODES)}; "
                         f"got {iommu!r}")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"text must be a str or None; got {type(text).__name__}")
    return _TopologyExplorer(text or "", sample, acs_enabled, iommu)
