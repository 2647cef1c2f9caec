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


def shown_ids(w):
    """ids of every widget displayed inside ``w`` (its children, recursively)."""
    ids, stack = set(), list(w.children)
    while stack:
        c = stack.pop()
        ids.add(id(c))
        stack.extend(getattr(c, "children", ()))
    return ids


def check_explorer_factory(name):
    """The checks every explorer factory must pass; returns the built widget.

    Registered under ``name`` as ``<name>_explorer``, callable without arguments,
    a VBox showing a PNG ``Image``, no message, a summary, and every control, the
    image and the message placed in the layout.
    """
    import ipywidgets as W

    factory = widgets.explorers()[name]
    assert factory is getattr(widgets, f"{name}_explorer")
    assert not [p for p in inspect.signature(factory).parameters.values()
                if p.default is inspect.Parameter.empty]
    w = factory()
    assert isinstance(w, W.VBox)
    assert isinstance(w.view.image, W.Image) and w.view.image.format == "png"
    assert bytes(w.view.image.value).startswith(b"\x89PNG")
    assert w.message.value == "" and w.summary.value
    ids = shown_ids(w)
    assert all(id(c) in ids for c in w.controls.values())
    assert id(w.view.image) in ids and id(w.message) in ids
    return w
