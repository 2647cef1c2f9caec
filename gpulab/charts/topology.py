"""Precomputed chart of the topology topic: the GPU pairs of an ``nvidia-smi topo -m``
sample by path class and NCCL transport (the topology explorer's table), over the
samples, the ACS P2P redirect and the IOMMU mode."""
from __future__ import annotations

from importlib import resources

import altair as alt

from .base import Control, build
from .. import measurements, topology

#: The measured sample: its name and (run, file) in the raw measurements.
TOPOLOGY_MEASURED = ("h200-x2 (measured)", ("h200-x2-2026-11-30", "topo-m.txt"))


def topology_texts():
    """``{name: nvidia-smi topo -m text}``: the files of ``gpulab/data/topologies`` by
    stem and the real 2x H200 capture (:data:`TOPOLOGY_MEASURED`)."""
    folder = resources.files("gpulab").joinpath("data", "topologies")
    out = {p.name[:-4]: p.read_text(encoding="utf-8")
           for p in sorted(folder.iterdir(), key=lambda p: p.name)
           if p.name.endswith(".txt")}
    name, (run, file) = TOPOLOGY_MEASURED
    out[name] = measurements.raw_capture(run, file)
    return out


def topology_chart(sample="dgx-h100", *, acs_enabled=False, iommu="off"):
    """GPU pairs per path class and NCCL transport of a sample. Precomputed by
    :func:`gpulab.topology.parse_topo_matrix` and :func:`gpulab.topology.pair_table`
    for every sample of :func:`topology_texts`, ACS off/on and every
    :data:`gpulab.topology.IOMMU_MODES`; the arguments pick the initial point."""
    texts = topology_texts()
    topos = {k: topology.parse_topo_matrix(v) for k, v in texts.items()}
    controls = (
        Control("sample", "Sample", tuple(texts), sample),
        Control("acs", "ACS P2P redirect", ("off", "on"),
                "on" if acs_enabled else "off", kind="radio"),
        Control("iommu", "IOMMU", tuple(topology.IOMMU_MODES), iommu, kind="radio"),
    )

    def point(sample, acs, iommu):
        pairs = topology.pair_table(topos[sample], acs_enabled=acs == "on", iommu=iommu)
        counts = {}
        for r in pairs:
            key = (r["class"], r["nccl_transport"])
            counts[key] = counts.get(key, 0) + 1
        rows = [{"class": c, "transport": t, "pairs": n} for (c, t), n in counts.items()]
        n_p2p = sum(r["p2p"] == "yes" for r in pairs)
        slow = min(pairs, key=lambda r: r["bottleneck"].bytes_per_s)
        topo = topos[sample]
        text = (f"{sample}: {len(topo.gpus)} GPUs, {len(pairs)} GPU pairs; P2P DMA "
                f"possible for {n_p2p} of them (ACS {acs}, IOMMU {iommu}).\n"
                + ", ".join(f"{n} {t}" for t, n in sorted(
                    {t: sum(v for (_c, tt), v in counts.items() if tt == t)
                     for _c, t in counts}.items())) + " (NCCL transports).\n"
                f"Slowest pair {slow['pair']} ({slow['class']}): "
                f"{slow['bottleneck'].gb_per_s:.1f} GB/s per direction bottleneck.")
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("class:N", title="Path class"),
            x=alt.X("sum(pairs):Q", title="GPU pairs"),
            color=alt.Color("transport:N", title="NCCL transport",
                            legend=alt.Legend(orient="bottom")),
            tooltip=["class:N", "transport:N", "pairs:Q"])

    return build("topology", "GPU pairs by path class and NCCL transport", controls,
                 point, plot, height=120,
                 note="line rates: PCIe Gen5 x16 and NVLink4 assumed where the matrix "
                      "does not say")
