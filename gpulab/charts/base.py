"""What every precomputed chart shares: its controls (the grid), the Vega-Lite spec
with bound parameters, and the HTML the book embeds.

A chart is evaluated by the model layer at build time at every point of a small grid
(the product of its controls' values). Each point gets its plot rows and one summary
text (key numbers and verdict). The page filters both tables on the values the reader
picks; sliders step exactly over the grid points, so nothing between them is shown.
"""
from __future__ import annotations

import html
import itertools
import json
import math
import re
import textwrap
from dataclasses import dataclass, field

import altair as alt

#: Vega-Lite version of the specs (the one altair writes and scripts/vendor_js.sh vendors).
VEGA_LITE_VERSION = alt.SCHEMA_VERSION
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
KINDS = ("slider", "select", "radio")


def round_sig(x, digits=4):
    """A float ``x`` rounded to ``digits`` significant digits (keeps the inline data
    small); anything else (integers: byte counts, grid keys) as it is."""
    if not isinstance(x, float) or x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


@dataclass(frozen=True)
class Control:
    """One control of a chart: its grid points and how the reader moves over them.

    ``values`` are the grid points (numbers or strings) in display order; ``labels``
    their display texts (a slider shows the value itself); ``kind`` is "slider"
    (evenly spaced numbers only), "select" or "radio".
    """

    name: str
    label: str
    values: tuple
    value: object = None
    labels: tuple = ()
    kind: str = "select"

    def __post_init__(self):
        if not _NAME_RE.match(self.name):
            raise ValueError(f"name must be a lower-case identifier; got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        values = tuple(self.values)
        if len(values) < 2 or len(set(values)) != len(values):
            raise ValueError(f"values of {self.name!r} must be at least 2 distinct points; "
                             f"got {values!r}")
        object.__setattr__(self, "values", values)
        if self.value is None:
            object.__setattr__(self, "value", values[0])
        if self.value not in values:
            raise ValueError(f"value of {self.name!r} must be one of {values!r}; "
                             f"got {self.value!r}")
        labels = tuple(self.labels) or tuple(fmt_value(v) for v in values)
        if len(labels) != len(values):
            raise ValueError(f"labels of {self.name!r} must match its {len(values)} values")
        object.__setattr__(self, "labels", labels)
        if self.kind == "slider":
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                          for v in values)
            steps = {round_sig(float(b - a), 9) for a, b in zip(values, values[1:])} \
                if numbers else set()
            if len(steps) != 1 or min(steps) <= 0:
                raise ValueError(f"a slider needs evenly spaced increasing numbers; "
                                 f"{self.name!r} has {values!r}")

    @property
    def step(self):
        return self.values[1] - self.values[0] if self.kind == "slider" else None

    def binding(self, element=None):
        """The Vega-Lite binding; ``element``: CSS selector of the element the input
        goes into (default: under the figure, inside vega-embed's container)."""
        where = {} if element is None else {"element": element}
        if self.kind == "slider":
            return alt.binding_range(min=self.values[0], max=self.values[-1],
                                     step=self.step, name=self.label + " ", **where)
        bind = alt.binding_radio if self.kind == "radio" else alt.binding_select
        return bind(options=list(self.values), labels=list(self.labels),
                    name=self.label + " ", **where)

    def test(self):
        """Vega expression: does a row's column equal this control's current value?"""
        if isinstance(self.values[0], str):
            return f"datum.{self.name} === {self.name}"
        tol = min(abs(b - a) for a, b in zip(self.values, self.values[1:])) * 1e-3
        return f"abs(datum.{self.name} - toNumber({self.name})) < {tol!r}"

    def describe(self):
        """The grid points in words, for the chart's note."""
        if self.kind == "slider":
            return (f"{self.label} {fmt_value(self.values[0])} to "
                    f"{fmt_value(self.values[-1])} in steps of {fmt_value(self.step)}")
        return f"{self.label} " + ", ".join(self.labels)


#: Vega label expression for a byte axis with binary prefixes (powers of two).
BYTES_LABEL_EXPR = ("datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + ' GiB'"
                    " : datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' MiB'"
                    " : datum.value >= 1024 ? format(datum.value / 1024, '~g') + ' KiB'"
                    " : format(datum.value, '~g') + ' B'")


def bytes_x(field="bytes:Q", title="Message size"):
    """Altair x encoding of a message-size axis: log base 2, ticks every 16x from 8 B
    to 16 GiB, labelled with binary prefixes."""
    import altair as alt

    return alt.X(field, scale=alt.Scale(type="log", base=2),
                 axis=alt.Axis(values=[2 ** k for k in range(3, 35, 4)],
                               labelExpr=BYTES_LABEL_EXPR),
                 title=title)


def picked(column, control):
    """Vega expression: ``datum[column]`` equals the value of the control (parameter)
    named ``control``, for a layer that marks the picked point of a curve."""
    return f"datum.{column} == toNumber({control})"


def fmt_value(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(repr=False)
class StaticChart:
    """A chart precomputed at every point of its controls' grid.

    ``rows``: the plot's data (each row carries the control values of its point);
    ``summary``: one row per grid point with its control values and ``text``;
    ``spec``: the Vega-Lite spec (a dict); ``note``: where it was computed.
    """

    name: str
    controls: tuple
    rows: list
    summary: list
    spec: dict
    note: str
    _index: dict = field(default_factory=dict, repr=False)

    def point(self, **values):
        """The summary row at one grid point (every control's value given)."""
        if not self._index:
            names = [c.name for c in self.controls]
            self._index.update({tuple(r[n] for n in names): r for r in self.summary})
        key = tuple(values[c.name] for c in self.controls)
        if key not in self._index:
            raise ValueError(f"{values!r} is not a grid point of chart {self.name!r}")
        return self._index[key]

    def to_html(self):
        """The chart as HTML: a div with its own style, the figure in a horizontally
        scrollable box, the controls (which the spec binds into
        ``#gpulab-chart-<name>-controls``, a form as Vega's own, so radio buttons of
        the same name in two charts of a page stay apart) below it at the column's
        width, a note and the spec inline (JSON). The book's vendored loader (``vega/gpulab-charts.js``)
        renders it; no CDN."""
        spec = json.dumps(self.spec, separators=(",", ":"), allow_nan=False)
        spec = spec.replace("</", "<\\/")            # cannot close the script element
        ident = f"gpulab-chart-{self.name}"
        return (f'<div class="gpulab-chart" id="{ident}" data-spec="{ident}-spec">'
                f'<style>{chart_css(ident)}</style>'
                f'<div class="gpulab-chart-scroll">'
                f'<div class="gpulab-chart-view"><p><em>Interactive chart: it renders '
                f'in the published book (JavaScript, no kernel needed).</em></p></div>'
                f'</div>'
                f'<form class="gpulab-chart-controls vega-bindings" id="{ident}-controls">'
                f'</form>'
                f'<p class="gpulab-chart-note"><small>{html.escape(self.note)}</small></p>'
                f'<script type="application/json" id="{ident}-spec">{spec}</script></div>')

    def __repr__(self):
        return f"<StaticChart {self.name!r}: {len(self.summary)} points>"

    def _repr_html_(self):
        return self.to_html()


#: Below this page width [px] a control's label sits on its own line above the input.
NARROW_PX = 600


def chart_css(ident):
    """The style of one chart (scoped to its div ``#ident``, so it wins over any page
    style of the bound inputs). Vega writes a radio control as a name span and one
    label per option holding its circle and text, a slider as a label holding the
    name, the range input and its value, a select as a label holding name and select.

    * radio: each option (circle, then its text) is one unit that does not break,
      with space after it and none between circle and text;
    * every control's name keeps its distance from the input (a margin after the name,
      whose trailing space the browser drops), and sits on its own line on a narrow
      page;
    * the figure scrolls sideways inside its box when the page is narrower than the
      figure; the controls, outside that box, wrap to the page."""
    s = f"#{ident}"
    return (f"{s} .gpulab-chart-scroll{{max-width:100%;overflow-x:auto}}"
            f"{s} .gpulab-chart-view{{max-width:none}}"
            f"{s} .gpulab-chart-controls{{max-width:100%}}"
            f"{s} .vega-bind{{margin:.25em 0}}"
            f"{s} .vega-bind-name{{display:inline-block;min-width:13em;"
            f"margin-right:.75em;vertical-align:middle}}"
            f"{s} .vega-bind-radio{{display:inline}}"
            f"{s} .vega-bind-radio label{{display:inline-block;white-space:nowrap;"
            f"margin:0 1.25em 0 0}}"
            f"{s} .vega-bind-radio label input{{margin:0 .35em 0 0;vertical-align:middle}}"
            f"{s} .vega-bind input[type=range]{{max-width:100%;vertical-align:middle;"
            f"margin:0 .5em 0 0}}"
            f"{s} .vega-bind select{{max-width:100%}}"
            f"@media (max-width:{NARROW_PX}px){{{s} .vega-bind-name{{display:block;"
            f"min-width:0;margin:0 0 .15em 0}}}}")


def evaluate(controls, point, *, rows_by=None):
    """Evaluate ``point(**values)`` at every grid point of ``controls``.

    ``point`` returns ``(rows, text)``: the plot rows of that point (dicts) and its
    summary text. Returns ``(rows, summary)``: each summary row carries the control
    values and ``text``; each plot row the values of the controls named in
    ``rows_by`` (default: all), kept once per distinct combination of those (the rows
    of a curve that does not depend on the other controls). Floats are rounded to
    4 significant digits (integers are kept).
    """
    names = [c.name for c in controls]
    by = names if rows_by is None else list(rows_by)
    unknown = set(by) - set(names)
    if unknown:
        raise ValueError(f"rows_by must name controls of the chart; got {sorted(unknown)}")
    rows, summary, seen = [], [], set()
    for combo in itertools.product(*(c.values for c in controls)):
        values = dict(zip(names, combo))
        got, text = point(**values)
        key = tuple(values[n] for n in by)
        if key not in seen:
            seen.add(key)
            rows.extend({**{n: values[n] for n in by},
                         **{k: round_sig(v) for k, v in r.items()}} for r in got)
        summary.append({**values, "text": text})
    return rows, summary


def build(name, title, controls, point, plot, *, rows_by=None, width=520, height=260,
          summary_lines=3, note=""):
    """A :class:`StaticChart`: evaluate ``point`` over the grid and compose the spec.

    ``plot(base)`` turns an :class:`altair.Chart` of the current point's rows (those
    of the controls in ``rows_by``, see :func:`evaluate`) into the figure (marks and
    encodings; a layer may filter further with :func:`picked`); the summary text
    sits above it, its lines wrapped to the figure's width. ``note`` says what stays
    fixed (added to the chart's note).
    """
    controls = tuple(controls)
    if not _NAME_RE.match(name.replace("-", "_")):
        raise ValueError(f"name must be a lower-case identifier; got {name!r}")
    rows, summary = evaluate(controls, point, rows_by=rows_by)
    chars = max(40, int(width / 6.8))              # 13 px text: lines fit the figure
    for r in summary:
        r["text"] = "\n".join(textwrap.fill(line, chars, break_on_hyphens=False,
                                             break_long_words=False) or " "
                               for line in r["text"].split("\n"))
    summary_lines = max([summary_lines] + [r["text"].count("\n") + 1 for r in summary])
    expr = " && ".join(c.test() for c in controls)
    row_expr = " && ".join(c.test() for c in controls
                           if rows_by is None or c.name in rows_by) or "true"
    # the inputs go into the chart's controls div (see StaticChart.to_html): outside
    # the figure's scrolling box, so they wrap to a narrow page
    where = f"#gpulab-chart-{name}-controls"
    params = [alt.param(name=c.name, value=c.value, bind=c.binding(where))
              for c in controls]
    # named data sets: the spec validates without walking every row (seconds saved)
    figure = plot(alt.Chart(alt.Data(name=f"{name}_rows")).transform_filter(row_expr)) \
        .properties(width=width, height=height)
    text = alt.Chart(alt.Data(name=f"{name}_summary"), name="summary") \
        .transform_filter(expr) \
        .mark_text(align="left", baseline="top", lineBreak="\n", fontSize=13,
                   lineHeight=18).encode(
            text="text:N", x=alt.value(0), y=alt.value(0)) \
        .properties(width=width, height=18 * summary_lines)
    n = len(summary)
    note = (f"Precomputed by gpulab at build time at {n} points: "
            + "; ".join(c.describe() for c in controls)
            + (f"; at {note}" if note else "")
            + ". The controls step over these points only; nothing between them is "
              "interpolated.")
    chart = alt.vconcat(text, figure, title=alt.Title(title)).add_params(*params) \
        .properties(description=note).configure_view(stroke=None)
    spec = chart.to_dict()                 # validates against the Vega-Lite schema
    spec["datasets"] = {f"{name}_rows": rows, f"{name}_summary": summary}
    return StaticChart(name, controls, rows, summary, spec, note)
