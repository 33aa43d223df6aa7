"""A results table on a page. Most are static tables (`table`, `static_table`): human column labels
(lpstudy.results.tables.columns), each value in its column's format as the report prints it, a
per-cent as "+3.76 %", a missing value as "–", cells that wrap to fit the page's width at 1000 px as at
1400. The Trials page's table, whose rows are picked and sorted, is a grid (st.dataframe) whose columns'
widths (`column_width`, `fit_widths`) fit a 1400-pixel window.
"""

from __future__ import annotations

import re

import streamlit as st

from lpstudy.results.tables.columns import MISSING, Column, column, formatted, shown_values, table_overrides


# Pixels per character of a table's text and a column's margin (its sort arrow, its padding): a column
# as wide as its label or its longest shown value, so that neither is cut ("last validation lo…").
CHAR_PX, MARGIN_PX, MAX_PX = 8, 34, 420


def column_width(label: str, shown: list[str]) -> int:
    """A column's width in pixels: its label or its widest value (of those given), whichever is wider."""
    widest = max([len(label), *(len(text) for text in shown)])
    return min(MAX_PX, CHAR_PX * widest + MARGIN_PX)


# The width a table has on a page at a 1400-pixel window with the sidebar open (938 px measured in
# Chromium, less the grid's border): wider tables hid their right-hand columns behind a scroll bar that
# a reader did not see. A table whose rows are picked has a column of checkboxes besides.
TABLE_PX, PICK_PX = 936, 34


def fit_widths(widths: dict[str, int], labels: dict[str, str], cut: tuple[str, ...], budget: int = TABLE_PX
               ) -> dict[str, int]:
    """The columns' widths narrowed to fit `budget` pixels in all: of the columns in `cut` (long text,
    such as a worker's name, that may be cut), the widest first, down to no less than its label's
    width; a number is never cut."""
    fitted = dict(widths)
    floors = {name: column_width(labels[name], []) if name in cut else widths[name] for name in widths}
    while sum(fitted.values()) > budget:
        room = {name: fitted[name] - floors[name] for name in fitted if fitted[name] > floors[name]}
        if not room:
            break
        widest = max(room, key=lambda name: fitted[name])
        fitted[widest] -= min(room[widest], sum(fitted.values()) - budget)
    return fitted


# Where a line may not break inside a value: a number and its unit ("+0.52 %", "2 min 18 s"), and
# around "=" ("p = 1"); a static table wraps its cells between words and after commas only.
UNBROKEN = re.compile(r"(?<=\d) (?=%|[a-zµ]+\b)| (?==)|(?<==) ")


def unbroken(text: str) -> str:
    """The text with non-breaking spaces where a line may not break inside a value (UNBROKEN)."""
    return UNBROKEN.sub("\u00a0", text)


# A static table's cells: compact (the text inside a cell too)
COMPACT = [{"selector": "th, td", "props": "font-size: 0.8rem; padding: 0.2rem 0.3rem;"},
           {"selector": "th *, td *", "props": "font-size: inherit;"}]
# In a window narrower than 1200 pixels a value may break inside where its column has no other way to
# fit (a table of twelve numbers in the 506-pixel column of a 1000-pixel window); wider, a table's
# words and numbers stay whole. The page frame (dashboard.py) sets it once for every page.
NARROW_WINDOW_CSS = """<style>
@media (max-width: 1199px) {
  [data-testid="stTable"] td *, [data-testid="stTable"] th * { overflow-wrap: anywhere !important; }
}
</style>"""


def shown(styler) -> None:
    """A Styler as a static table: no index, compact cells that wrap between words to fit the page's
    width, so that every column is in view at 1000 px as at 1400 (a grid, st.dataframe, scrolled its
    right-hand columns out of sight)."""
    st.table(styler.hide(axis="index").set_table_styles(COMPACT))


def static_table(frame) -> None:
    """A frame of text as a static table (shown), a missing value as "–"."""
    shown(frame.style.format(lambda v: unbroken(v) if isinstance(v, str) else v, na_rep=MISSING))


def table(frame, overrides: dict[str, Column] | None = None) -> None:
    """The frame as a static table under human headers, each value in its column's format as the report
    prints it (lpstudy.results.tables.columns), a missing one as "–"; the values underneath stay numbers.
    The one table whose rows are picked and sorted, the Trials page's, is a grid."""
    overrides = table_overrides(frame, overrides)
    values = shown_values(frame)
    labels = {name: column(name, overrides).label for name in values.columns}
    formats = {labels[name]: (lambda v, spec=column(name, overrides): unbroken(formatted(v, spec)))
               for name in values.columns}
    shown(values.rename(columns=labels).style.format(formats, na_rep=MISSING))
