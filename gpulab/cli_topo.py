"""``gpulab topo FILE``: read `nvidia-smi topo -m` output (PCIe chapter)."""
from __future__ import annotations


def register(sub, fmt):
    """Add this module's subcommands to the ``gpulab`` parser (none yet)."""
