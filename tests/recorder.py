"""Shared by the widget tests: record the SI arguments the widgets pass to the models."""
from __future__ import annotations

import inspect
import sys

from gpulab import widgets


class Recorder:
    """Wrap a model function: record its bound arguments when gpulab.widgets calls it.

    Only calls made by gpulab.widgets itself are recorded (plot_* functions call some
    model functions too, e.g. links.link_bandwidth for the reference generations).
    """

    def __init__(self, monkeypatch, module, name):
        self.real = getattr(module, name)
        self.calls = []
        sig = inspect.signature(self.real)

        def wrapper(*args, **kwargs):
            if sys._getframe(1).f_globals.get("__name__") == widgets.__name__:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                self.calls.append(dict(bound.arguments))
            return self.real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    @property
    def last(self):
        return self.calls[-1]
