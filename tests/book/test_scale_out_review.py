"""Statements about multi-node networking that were corrected, kept corrected.

The pages are read as text (no build): a corrected wording must not come back, and the
corrected statement must stay computed (glued) where it carries a number.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab import collectives, network
from gpulab import parallelism as par

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
SCALE_OUT = "scale_out.md"
NVSWITCH = "nvswitch.md"
NVLINK = "nvlink.md"
MISC = "instructor/misconceptions.md"
ASSESS = "instructor/assessment.md"


def _text(page):
    return (BOOK / page).read_text(encoding="utf-8")


def _prose(page):
    """The page without its code cells (```{code-cell} ... ```)."""
    return re.sub(r"```\{code-cell\}.*?\n```", "", _text(page), flags=re.S)


# --- wordings that were wrong, or said more than the model knows ---------------------
@pytest.mark.parametrize("page, phrase", [
    # NCCL 2.30.7's GDR level defaults to P2C (paths.cc, ncclTopoCheckGdr), not PXB
    (SCALE_OUT, "PXB by default"),
    # the model takes NCCL's latencies and choice, not its whole cost model
    (SCALE_OUT, "evaluates NCCL's own cost model"),
    (SCALE_OUT, "The model is NCCL's cost model"),
    # EFA's value is the adapters' ceiling, RoCE's and TCPXO's are assumed
    (SCALE_OUT, "NCCL's share of the line rate"),
    # the fabrics' extra latencies are assumptions of the model
    (SCALE_OUT, "Both add tens of microseconds"),
    # staging without GDR loses about a fifth of the busbw; the NICs are not what binds
    (SCALE_OUT, "costs little bandwidth"),
    (SCALE_OUT, "limited by the NICs either way"),
    # "up to 32 nodes, X GB/s" contradicted the two-node NVLSTree figure
    (SCALE_OUT, "nodes (one leaf group) the busbw"),
    # the per-GPU NIC ratio is not the speed of a collective across nodes
    (MISC, "Across nodes a GPU's NIC carries"),
    (ASSESS, "across nodes each GPU's NIC has"),
    (NVSWITCH, "once the network binds, as for the ring, each GPU has"),
    # the model's large-message rate on every fabric is the model's, not the runs':
    # public EFA runs on AWS p5 sit below it from four nodes on
    (SCALE_OUT, "large ones run at the cards' rate on all four"),
    (SCALE_OUT, "Same cards, different transport: large messages run"),
    (SCALE_OUT, "the cards decide the large ones"),
])
def test_corrected_wording_stays_out(page, phrase):
    assert phrase not in _text(page), f"{page} says again: {phrase!r}"


@pytest.mark.parametrize("page", [MISC, ASSESS, NVSWITCH, NVLINK])
def test_nic_ratio_is_taught_as_per_gpu_and_not_as_the_slowdown(page):
    prose = _prose(page)
    assert "per GPU" in prose
    # "not N times slower/as long", N glued (the NVLink/NIC ratio), never typed
    assert re.search(r"not\s+(?:run\s+)?\{glue:text\}`\w+:\.0f` times", prose), page
    assert not re.search(r"\b(nine|9) times\b", prose), page


@pytest.mark.parametrize("page, key", [(MISC, "mc_tp16_over_tp8"),
                                       (ASSESS, "as_tp16_over_tp8")])
def test_two_node_tp16_ring_ratio_is_glued_from_the_model(page, key):
    text = _text(page)
    assert f'glue("{key}", ring16.time_scalar / one8.time_scalar' in text
    assert 'network.scale_out("dgx-h100-spod", 2)' in text or \
        "network.scale_out(SPOD, 2)" in text
    assert f"{{glue:text}}`{key}:.2f`" in _prose(page)


def test_two_node_tp16_ring_is_a_little_slower_not_nine_times():
    # what the pages say, from the model: the ring crosses the network on two of its
    # sixteen edges, each node's NICs together carrying about one GPU's NVLink share
    two = network.scale_out("dgx-h100-spod", 2)
    msg = 1 * par.model("70b").seq_len * par.model("70b").hidden * 2
    ring16 = collectives.predict("all_reduce", msg, 16, two, algorithm="ring")
    one8 = collectives.predict("all_reduce", msg, 8, "dgx-h100")
    assert 1 < ring16.time_scalar / one8.time_scalar < 3


def test_misconceptions_cover_the_multi_node_beliefs():
    prose = _prose(MISC)
    for belief in ("Two nodes run at one NIC's rate", "Oversubscription does not matter",
                   "RoCE behaves like InfiniBand", "GPUDirect RDMA is automatic"):
        entry = re.search(rf'\*\*"{re.escape(belief)}\."\*\*(.*?)(?=\n\n|\Z)', prose, re.S)
        assert entry, belief
        assert "*Show:*" in entry.group(1), belief        # where it is taught


# --- the scale-out chapter's statements that rest on sources or assumptions ----------
def test_gdr_default_names_p2c_with_its_condition_and_source():
    prose = _prose(SCALE_OUT)
    para = prose[prose.index("NCCL_NET_GDR_LEVEL"):][:900]
    for needed in ("`P2C`", "ncclTopoCheckGdr", "src/graph/paths.cc", "v2.30.7-1",
                   "NCCL_NET_GDR_C2C=0", "Grace", "x86", "`PHB`"):
        assert needed in para, needed
    assert network.nccl_version().startswith("2.30.7")


def test_model_parts_say_what_is_nccls_and_what_is_ours():
    text = _text(SCALE_OUT)
    box = text[text.index("(scale-out-model-parts)="):]
    box = box[:box.index("\n```\n")]
    for needed in ("**NCCL's**", "**Ours**", "so_nvls_eff_ours", "so_nvls_eff_nccl",
                   "(nCh − 1)/nCh", "LL128", "CollNet Direct is left out",
                   "oversubscription"):
        assert needed in box, needed


def test_fabric_table_labels_each_efficiency_with_its_kind():
    text = _text(SCALE_OUT)
    assert "Efficiency in the model (kind: basis)" in text
    assert "network.record(f'fabrics/{info.name}/efficiency')['kind']" in text
    kinds = {f: network.record(f"fabrics/{f}/efficiency")["kind"]
             for f in ("infiniband", "roce", "efa", "tcpx")}
    assert kinds["roce"] == kinds["tcpx"] == "assumed"      # what the table shows


def test_scale_out_caveats_are_stated_with_glued_numbers():
    prose = _prose(SCALE_OUT)
    # the fabrics' extra latency: an assumption with its basis
    assert "{glue:text}`so_efa_extra_kind`" in prose and "fi_pingpong" in prose
    assert "{glue:text}`so_tcpx_extra_kind`" in prose
    # oversubscription: the model's worst case
    assert prose.count("worst case") >= 2
    # the two-node NVLSTree figure: an upper bound beside public runs
    i = prose.index("{glue:text}`so_k2_busbw:.0f`")
    assert "upper bound" in prose[i:i + 900]
    assert "{glue:text}`so_pub2_lo:.0f`" in prose[i:i + 900]
    assert "{glue:text}`so_pub2_hi:.0f`" in prose[i:i + 900]
    # the public figures come from the data, none typed into a code cell
    assert "PUB_H20_NVLSTREE_GB" not in _text(SCALE_OUT)
    # GDR off: the loss as a glued percentage, and the right limit in the caption
    assert prose.count("{glue:text}`so_gdr_loss_pct:.0f`%") >= 2
    assert "GPUs' PCIe links, which\n      carry every staged byte twice" in _text(SCALE_OUT)
    # and no copy per network step (NCCL's kernels stage through pinned host buffers)
    assert "no copy per step" in _text(SCALE_OUT)
    # sequence parallelism's extra TP time: an estimate calibrated on two GPUs
    j = prose.index("turns sequence parallelism on")
    assert "calibrated on two GPUs" in prose[j:j + 900]
    assert "moe_layer.py" in prose[j:j + 900]


def test_fabric_section_sets_the_models_large_message_rate_beside_public_efa_runs():
    prose = _prose(SCALE_OUT)
    section = prose[prose.index("(scale-out-fabrics)="):prose.index("(scale-out-fattree)=")]
    takeaway = section[section.index("Same cards, different transport"):]
    for part in (section, takeaway):
        assert "in the model large" in part.lower() or "in the model" in part
        assert "{glue:text}`so_p5_big_lo:.0f`" in part
        assert "{glue:text}`so_p5_big_hi:.0f`" in part
    # the glued numbers come from the public runs, and say the model is above them
    text = _text(SCALE_OUT)
    assert 'e["system"] == "aws-p5" and e["nodes"] >= K_FAB' in text
    p5 = [e for e in network.public_errors()
          if e["system"] == "aws-p5" and e["nodes"] >= 4
          and e["band"] == network.BANDS[2][0]]
    assert len(p5) >= 2 and min(e["median_error"] for e in p5) > 0


def test_sequence_parallel_extra_time_is_stated_as_an_estimate():
    """tensor_parallel: SP's extra TP time rests on reduce-scatter/all-gather latencies
    and fills calibrated on our 2-GPU runs; the page says so beside the percentage."""
    prose = _prose("tensor_parallel.md")
    i = prose.index("{glue:text}`tpc_comm_sp_extra_pct:.0f`% more: two collectives")
    near = prose[i:i + 1500]
    assert "Read the percentage as an estimate" in near
    assert "calibrated on our 2x H200 runs" in near
    assert "no\n8-GPU run of ours checks them" in near or \
        "no 8-GPU run of ours checks them" in " ".join(near.split())
    # every place the percentage appears says it is the model's estimate
    for j in [m.start() for m in re.finditer(r"`tpc_comm_sp_extra_pct:\.0f`", prose)]:
        around = " ".join(prose[max(0, j - 120):j + 800].split())
        assert "estimate" in around, around


def test_public_section_states_the_targets_and_the_middle_band():
    """The comparison with published runs names its targets (median per source and
    band, every point) and what the middle band, 64 KiB-1 GiB, does, all glued."""
    prose = _prose(SCALE_OUT)
    section = prose[prose.index("(scale-out-public)="):prose.index("(scale-out-experts)=")]
    for needed in ("{glue:text}`so_target_big:.0f`%", "{glue:text}`so_point_target:.0f`%",
                   "{glue:text}`so_band_mid`", "{glue:text}`so_pub_mid_ok`",
                   "{glue:text}`so_pub_mid_n`", "{glue:text}`so_pub_mid_est_ok`",
                   "The middle band is still the weakest"):
        assert needed in section, needed
    text = _text(SCALE_OUT)
    assert 'glue("so_band_mid", network.BANDS[1][0]' in text
    assert network.BANDS[1][1] == 64 * 1024 and network.BANDS[1][2] == 2**30
