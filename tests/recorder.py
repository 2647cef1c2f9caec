"""Shared by the widget tests: record the SI arguments the widgets pass to the models."""
from __future__ import annotations

import inspect
import sys

from gpulab import widgets


def patch_everywhere(monkeypatch, module, name, replacement):
    """Replace ``module.name`` and every gpulab module's own reference to it.

    A model package re-exports its functions and its modules call each other by
    their own names: patching only the package attribute would miss those calls.
    """
    real = getattr(module, name)
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("gpulab") and getattr(mod, name, None) is real:
            monkeypatch.setattr(mod, name, replacement)
    monkeypatch.setattr(module, name, replacement)


def _from_widgets(direct):
    """Whether the current model call was made by gpulab.widgets: directly (the caller
    is a widget module) or, with ``direct=False``, through other model functions (some
    frame up the stack is a widget module) but not by a plot function."""
    frame = sys._getframe(2)
    name = frame.f_globals.get("__name__", "")
    if direct or name.startswith("gpulab.plotting"):
        return name.startswith(widgets.__name__)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(widgets.__name__):
            return True
        frame = frame.f_back
    return False


class Recorder:
    """Wrap a model function: record its bound arguments when gpulab.widgets calls it
    (``direct=False``: also through another model function, e.g. the step times that
    ``parallelism.tp_degree_rows`` computes for the TP explorer).

    Calls made by plot_* functions are not recorded (they call some model functions
    too, e.g. links.link_bandwidth for the reference generations).
    """

    def __init__(self, monkeypatch, module, name, *, direct=True):
        self.real = getattr(module, name)
        self.calls = []
        sig = inspect.signature(self.real)

        def wrapper(*args, **kwargs):
            if _from_widgets(direct):
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                self.calls.append(dict(bound.arguments))
            return self.real(*args, **kwargs)

        patch_everywhere(monkeypatch, module, name, wrapper)

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
