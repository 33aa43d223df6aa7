"""A few runs picked by hand (trial numbers, or the first rows of a filter), compared as a researcher
compares them in optuna-dashboard or W&B: their learning curves overlaid, one colour per run, and
their configurations side by side, the fields where they differ first. The Trials page (a pick from
its table) and `lpstudy report --trials 3,5,8` draw the same figure and table from here."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from lpstudy.errors import UserError
from lpstudy.results import analysis as A
from lpstudy.results.charts.look import GROUP_COLOURS, figure, mark_empty
from lpstudy.results.reading.frames import RUN_FIELDS

MAX_PICKED = len(GROUP_COLOURS)  # more curves than colours a person tells apart read as one cloud
# What a configuration shows, in this order: the outcome, then every training field a trial stores.
OUTCOME = ("state", "value", "diverged", "best_val_loss", "steps")
HIDDEN = ("threads",)  # how a run was computed, not what it was


def parse_trial_numbers(text: str, flag: str = "--trials") -> list[int]:
    """'3,5,8' or '3-5,8' as trial numbers, in the order given, each once; UserError otherwise."""
    numbers: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise UserError(f"{flag} takes trial numbers such as 3,5,8 or 3-5; got {part!r}") from None
        if first < 0 or last < first:
            raise UserError(f"{flag}: {part!r} is not a range of trial numbers (write the smaller first, e.g. 3-5)")
        if last - first + 1 > MAX_PICKED:  # counted before it is spelled out: 0-99999999999 is refused at once
            raise UserError(f"{flag}: {part!r} picks {last - first + 1:,} trials; at most {MAX_PICKED} curves can be "
                            f"told apart, pick fewer")
        seen = set(numbers)
        numbers += [n for n in range(first, last + 1) if n not in seen]
    if not numbers:
        raise UserError(f"{flag} takes trial numbers such as 3,5,8; got none")
    if len(numbers) > MAX_PICKED:
        raise UserError(f"{flag}: {len(numbers)} trials picked; at most {MAX_PICKED} curves can be told apart, "
                        f"pick fewer")
    return numbers


def picked_trials(trials: pd.DataFrame, numbers: list[int]) -> pd.DataFrame:
    """The picked trials' rows, in the order picked; UserError naming the numbers the study lacks."""
    missing = [n for n in numbers if n not in set(trials["number"])]
    if missing:
        shown = ", ".join(map(str, missing))
        top = int(trials["number"].max()) if len(trials) else None
        held = f"its trials are numbered 0 to {top}" if top is not None else "it has no trials yet"
        raise UserError(f"no trial {shown} in this study; {held}")
    return trials.set_index("number").loc[numbers].reset_index()


def configurations(trials: pd.DataFrame, numbers: list[int]) -> pd.DataFrame:
    """The picked trials side by side: one column per trial ("trial 3"), one row per field (its
    outcome, then every training field stored on the trials), the fields whose values differ
    first and marked in a `differs` column; a field none of them has is left out."""
    rows = picked_trials(trials, numbers)
    fields = [*OUTCOME, *(f.name for f in RUN_FIELDS if f.name not in HIDDEN)]
    if "arm" in rows:  # a comparison's runs: their arm first
        fields.insert(0, "arm")
    table = []
    for name in fields:
        if name not in rows:
            continue
        values = [_shown(name, v) for v in rows[name]]
        if all(v == "–" for v in values):
            continue
        table.append({"field": name, "differs": len(set(values)) > 1,
                      **{f"trial {n}": v for n, v in zip(rows["number"], values)}})
    frame = pd.DataFrame(table)
    if frame.empty:
        return frame
    order = frame["differs"].map({True: 0, False: 1})
    return frame.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


def _shown(name: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return "–"
    if name == "p":
        return A.format_p(float(value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e9 else f"{value:.4g}"
    return str(value)


def overlaid_curves(curves: pd.DataFrame, trials: pd.DataFrame, numbers: list[int],
                    column: str = "val_loss", title: str = "Picked runs") -> go.Figure:
    """The picked trials' curves of `column` against step, one colour per trial (solid: validation;
    the training loss, where drawn, dotted in the same colour), labelled with the trial's p, lr and
    gain₀; its title "TITLE: validation loss against step"."""
    what = {"val_loss": "validation loss", "train_loss": "training loss"}.get(column, column)
    fig = figure(f"{title}: {what} against step", "step", what)
    rows = picked_trials(trials, numbers)
    drawn = 0
    for colour, (_, trial) in zip(GROUP_COLOURS, rows.iterrows()):
        number = int(trial["number"])
        own = curves[curves["trial_number"] == number].sort_values("step")
        label = (f"trial {number} · p {A.format_p(trial['p'])} · lr {trial['lr']:.2g} · gain₀ {trial['gain_init']:.3g}"
                 if pd.notna(trial.get("lr")) and pd.notna(trial.get("gain_init")) else f"trial {number}")
        if own[column].notna().any():
            fig.add_scatter(x=own["step"], y=own[column], mode="lines", name=label, line={"color": colour},
                            hovertemplate=f"trial {number}<br>step %{{x}}<br>{what} %{{y:.4f}}<extra></extra>")
            drawn += 1
        if column == "val_loss" and own["train_loss"].notna().any():
            fig.add_scatter(x=own["step"], y=own["train_loss"], mode="lines", name=f"trial {number} (training)",
                            line={"color": colour, "dash": "dot", "width": 1}, showlegend=False,
                            hovertemplate=f"trial {number}<br>step %{{x}}<br>training loss %{{y:.4f}}<extra></extra>")
    if not drawn:
        return mark_empty(fig, "none of the picked runs has an evaluation yet")
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0, "xanchor": "left"})
    return fig


def picked_section(data, numbers: list[int], read_curves) -> list:
    """The report's "Picked runs" section for these trial numbers: the overlaid curves (validation
    and training loss) and the configurations side by side. `read_curves(numbers)` reads the
    curves of trials the study's curve sample lacks."""
    picked_trials(data.trials, numbers)  # the numbers checked before anything is read
    curves = data.curves[data.curves["trial_number"].isin(numbers)]
    if set(numbers) - set(curves["trial_number"]):
        curves = read_curves(numbers)
    return [overlaid_curves(curves, data.trials, numbers), overlaid_curves(curves, data.trials, numbers, "train_loss"),
            "Configurations side by side; the fields where they differ first.", configurations(data.trials, numbers)]
