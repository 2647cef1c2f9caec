"""``gpulab predict``: predicted copy and collective times (PCIe and collectives chapters)."""
from __future__ import annotations


def register(sub, fmt):
    """Add this module's subcommands to the ``gpulab`` parser (none yet)."""
