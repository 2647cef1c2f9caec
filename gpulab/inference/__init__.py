"""Serving across GPUs."""
