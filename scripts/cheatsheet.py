"""The one-page cheat sheet of the course (``make handouts``): every number on it is
computed by gpulab when the sheet is built, none is typed here.

Sections: units (GB against GiB, bits against bytes), the busbw factor of each collective,
the alpha-beta model, the nvidia-smi path classes (its own legend, from ``gpulab/data``), per-direction link rates (NVLink per
GPU, PCIe x16, NICs) and the acceptance thresholds (Lab 4's ``THRESHOLDS``, read from the
notebook, and the per-rail pass fraction of ``gpulab.nccltests``).

``python scripts/cheatsheet.py > cheatsheet.html`` writes the sheet alone.
"""
from __future__ import annotations

import ast
import datetime as dt
import html
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab import collectives, course, links, nccltests, pcie, specs, units  # noqa: E402
from gpulab import topology  # noqa: E402

LAB4 = ROOT / "labs" / "lab04_accept_a_server.ipynb"
RANKS = (2, 4, 8, 16)
#: nvidia-smi ``topo -m`` output whose legend explains the path classes.
TOPO_LEGEND = "topologies/layout-a.txt"


def _g(x, digits=4):
    return f"{x:.{digits}g}"


def path_legend():
    """``{class: meaning}`` from the legend nvidia-smi prints under ``topo -m``."""
    text = specs.read_data_text(TOPO_LEGEND)
    legend = dict(re.findall(r"(?m)^\s+(\S+)\s+= (.+?)\s*$", text))
    missing = [c for c in topology.PATH_CLASSES if c not in legend]
    if missing:
        raise ValueError(f"{TOPO_LEGEND}: no legend line for {missing}")
    return {c: legend[c] for c in topology.PATH_CLASSES}


def lab_thresholds(path=LAB4):
    """Lab 4's acceptance thresholds: the ``THRESHOLDS = {...}`` literal of its code."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and getattr(node.targets[0], "id", "") == "THRESHOLDS"):
                return ast.literal_eval(node.value)
    raise ValueError(f"path: {path} has no THRESHOLDS = {{...}} cell")


def table(head, rows, cls=""):
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def sections():
    """``[(title, html)]``: the boxes of the sheet."""
    out = []
    gib_gb = units.GiB / units.GB
    h100 = links.nvlink_gpu_bandwidth(4)
    out.append(("Units", table(["", "value"], [
        ["1 GB", f"10<sup>{round(math.log10(units.GB))}</sup> B = {_g(units.GB / units.GiB, 5)} GiB"],
        ["1 GiB", f"2<sup>{round(math.log2(units.GiB))}</sup> B = {_g(gib_gb, 6)} GB "
                  f"(+{100 * (gib_gb - 1):.2f}%)"],
        ["1 Gb/s", f"{_g(units.gbit_per_s_to_bytes_per_s(1) / units.GB)} GB/s "
                   "(bits ÷ 8)"],
        ["nccl-tests sizes", "binary (KiB, MiB, GiB)"],
        ["nccl-tests GB/s, link rates", f"decimal (10<sup>{round(math.log10(units.GB))}</sup> B/s)"],
        ["spec sheet 'bidirectional'", f"per direction × {_g(h100.to_bidirectional().bytes_per_s / h100.bytes_per_s)}"],
    ])))
    rows = []
    for op in collectives.BUSBW_OPS:
        rows.append([f"<code>{op}</code>"] + [
            _g(collectives.busbw_factor(op, n), 4) for n in RANKS])
    out.append(("busbw = algbw × factor(n)", table(
        ["collective"] + [f"n = {n}" for n in RANKS], rows) +
        "<p>algbw = size / time. For ring and tree, busbw ≤ the per-direction line rate "
        "of the slowest link; NVLS (in-switch reduction) can exceed it.</p>"))
    floor = course.evidence_values()["latency_floor_us"] * 1e-6
    s_half = links.half_bandwidth_size(floor, h100)
    ring = collectives.ring_allreduce_time(units.GiB, 8, h100, floor)
    out.append(("The α-β model", (
        "<p><b>t(S) = α + S / β</b>: α the fixed cost (latency) [s], β the bandwidth "
        "[B/s]. Half the bandwidth is reached at <b>S½ = α · β</b>.</p>"
        "<p>Ring all_reduce on n ranks: <b>t = 2(n−1) α + 2(n−1)/n · S / β</b>.</p>"
        f"<p>Example, H100 NVLink ({units.fmt_bandwidth(h100)}), α = "
        f"{units.fmt_time(floor)}: S½ = {units.fmt_bytes(s_half)}; 1 GiB ring "
        f"all_reduce on 8 GPUs ≈ {units.fmt_time(ring)}.</p>")))
    cls_rows = [[f"<code>{c}</code>", html.escape(m)] for c, m in path_legend().items()]
    out.append(("nvidia-smi topo -m path classes (near to far)",
                table(["class", "nvidia-smi legend"], cls_rows)))
    rows = []
    for g in specs.nvlink_generations():
        bw = links.nvlink_gpu_bandwidth(g.generation)
        rows.append([f"NVLink{g.generation} ({g.first_gpu})",
                     f"{g.links_per_gpu} × {_g(bw.gb_per_s / g.links_per_gpu)}",
                     f"<b>{_g(bw.gb_per_s)}</b>", _g(bw.to_bidirectional().gb_per_s)])
    for g in specs.pcie_generations():
        enc = pcie.encoded_bandwidth(g.generation, 16)
        raw = pcie.raw_bandwidth(g.generation, 16)
        rows.append([f"PCIe Gen{g.generation} x16", f"raw {_g(raw.gb_per_s)}",
                     f"<b>{_g(enc.gb_per_s)}</b>", _g(raw.to_bidirectional().gb_per_s)])
    for n in sorted(specs.nics(), key=lambda n: n.line_rate.bytes_per_s):
        rate = n.line_rate.to_per_direction() if n.line_rate.direction != \
            units.PER_DIRECTION else n.line_rate
        ports = f"{n.ports} port" + ("s" if n.ports > 1 else "")
        rows.append([f"{n.name} ({_g(rate.gbit_per_s)} Gb/s)", ports,
                     f"<b>{_g(rate.gb_per_s)}</b>", _g(rate.to_bidirectional().gb_per_s)])
    out.append(("Link rates [GB/s]", table(
        ["link", "detail", "per direction", "both directions"], rows, "rates") +
        "<p>NVLink: per GPU, all links. PCIe: after line encoding (raw: before), before "
        "packet overhead.</p>"))
    th = lab_thresholds()
    names = {"links": "NVLink links up × speed", "pcie_link": "PCIe link width × speed",
             "pcie_copy": "host↔GPU copy / PCIe rate",
             "p2p_copy": "GPU↔GPU copy / NVLink rate",
             "all_reduce": "all_reduce busbw / NVLink rate"}
    rows = [[names.get(k, k), f"≥ {v:.2f}"] for k, v in th.items()]
    rows.append(["each rail, ib_write_bw / NIC rate (multi-node)",
                 f"≥ {nccltests.PASS_FRACTION:.2f}"])
    out.append(("Acceptance thresholds (Lab 4)", table(["check", "pass at"], rows)))
    return out


def sheet_html(built=None):
    built = built or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    boxes = "".join(f'<section class="box"><h2>{html.escape(t)}</h2>{body}</section>'
                    for t, body in sections())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Cheat sheet: Multi-GPU Interconnects for LLM Training</title>
<style>
@page {{ size: A4; margin: 8mm; }}
body {{ font-family: "DejaVu Sans", sans-serif; font-size: 8.6pt; line-height: 1.3;
       margin: 0; color: #111; }}
h1 {{ font-size: 12pt; margin: 0 0 2mm; }}
h1 small {{ font-weight: normal; color: #555; font-size: 7.5pt; }}
.grid {{ column-count: 2; column-gap: 5mm; }}
.box {{ break-inside: avoid; border: 1px solid #bbb; border-radius: 2px;
        padding: 1.2mm 2mm; margin: 0 0 2.5mm; }}
h2 {{ font-size: 9pt; margin: 0 0 1mm; color: #0b4fa8; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .4mm 1mm; text-align: left;
          vertical-align: top; }}
th {{ background: #eef3fb; }}
table.rates td:nth-child(n+3), table.rates th:nth-child(n+3) {{ text-align: right; }}
table.rates td {{ white-space: nowrap; }}
p {{ margin: .8mm 0; }}
code {{ font-family: "DejaVu Sans Mono", monospace; font-size: 7pt; }}
</style></head><body>
<h1>Multi-GPU interconnects: cheat sheet <small>computed by gpulab, built {built}</small></h1>
<div class="grid">{boxes}</div>
</body></html>
"""


if __name__ == "__main__":
    sys.stdout.write(sheet_html())
