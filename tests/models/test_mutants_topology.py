"""gpulab.topology: the words a learner reads about a path, written to kill mutants.

A pair of GPUs under different CPU sockets (path class SYS in ``nvidia-smi topo -m``) gets
no PCIe peer access on most platforms, and a topology read from a ``topo -m`` capture says
where it came from.
"""
from __future__ import annotations

import pytest

from gpulab import specs, topology


def test_sys_path_refuses_peer_access_and_says_why():
    t = topology.layout_a()                         # two CPUs, four GPUs under each
    assert topology.path_class(t, "gpu0", "gpu4") == "SYS"
    assert topology.p2p_possible(t, "gpu0", "gpu4") == (
        False, "SYS: the path crosses the CPU-to-CPU link; whether peer traffic is "
               "forwarded between sockets depends on the CPU and chipset, and the model does "
               "not count on it")


def test_topology_from_a_capture_is_named_after_it():
    m = topology.read_topo_matrix(specs.read_data_text("topologies/layout-a.txt"))
    assert m.to_topology().name == "from nvidia-smi topo -m"


def test_a_row_out_of_place_is_named():
    text = specs.read_data_text("topologies/layout-a.txt").replace("\nGPU1\t", "\nGPUX\t", 1)
    with pytest.raises(ValueError, match=r"^text: line 3: expected the row of GPU1, "
                                         r"found 'GPUX': 'GPUX\\tPIX"):
        topology.read_topo_matrix(text)
