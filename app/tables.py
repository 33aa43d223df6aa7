"""A results table on a page: human column labels (lpstudy.results.tables.columns) as Streamlit's
column_config, and each number shown in its column's format through a pandas Styler, whose display
text Streamlit draws while it sorts by the numbers underneath (a click on a header sorts numbers as
numbers, not as text). A per-cent reads as the command line prints it; a missing value as "–"."""

from __future__ import annotations

import streamlit as st
from pandas.api.types import is_numeric_dtype

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


def column_config(frame, overrides: dict[str, Column] | None = None) -> dict:
    """Streamlit's column_config for the frame: every column under its human label, as wide as its
    label or its widest value among the first rows, the text columns narrowed to fit TABLE_PX."""
    overrides = table_overrides(frame, overrides)
    values = shown_values(frame.head(200))
    widths, labels = {}, {}
    for name in frame.columns:
        spec = column(name, overrides)
        shown = [formatted(v, spec) for v in values[name]] if name in values.columns else []
        widths[name], labels[name] = column_width(spec.label, shown), spec.label
    # within the page's width: a text column (a worker's name, a time) narrowed first, a number never cut
    text = tuple(name for name in frame.columns if not is_numeric_dtype(frame[name]) and name != "p")
    fitted = fit_widths(widths, labels, text)
    return {name: st.column_config.Column(labels[name], width=fitted[name]) for name in frame.columns}


def styled(frame, overrides: dict[str, Column] | None = None):
    """The frame's values (still numbers; p as 3.5 or ∞) with each column's display format."""
    overrides = table_overrides(frame, overrides)
    values = shown_values(frame)
    formats = {name: (lambda v, spec=column(name, overrides): formatted(v, spec)) for name in values.columns}
    return values.style.format(formats, na_rep=MISSING)


def table(frame, overrides: dict[str, Column] | None = None, key: str | None = None) -> None:
    """The frame as a sortable table under human headers (no index)."""
    st.dataframe(styled(frame, overrides), hide_index=True, width="stretch", placeholder=MISSING,
                 column_config=column_config(frame, overrides), key=key)
