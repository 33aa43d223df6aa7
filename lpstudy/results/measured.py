"""Which configuration a reader shows as a study's best, and how well a search's is known
(lpstudy.study.intensify.Returned), said once: the configuration a search returns
(lpstudy.study.races.stored_best, its leaders raced on more folds; search_chosen), the row a page or
the report shows for it (shown_best), and the words and the run file's `source` fields that `lpstudy
export`, the Export and Home pages, the report, `lpstudy status` and `lpstudy studies` give ("best"
only when measured on 2 folds or more, else "leading on 1 fold"). A leaf of the read side: export,
frames and the status summary read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from lpstudy.study.intensify import Returned


def measured_text(returned: Returned | None) -> str:
    """What a search's chosen configuration is, said once for the run file and the Export page."""
    if returned is None:
        return "best"
    r = returned
    if r.n_folds < 2:
        return ("leading on 1 fold: the lowest loss on the tuning fold, not yet raced on another fold, so not a "
                "best that holds; run more trials (the search races its leaders on more folds)")
    return (f"best: the lowest mean loss over {r.n_folds} folds ({r.mean:.4f}, 95 % interval "
            f"{r.interval[0]:.4f}–{r.interval[1]:.4f}) among its leaders raced on as many folds")


def measured_fields(returned: Returned, trials: list[int]) -> dict[str, Any]:
    """The run file's `source` fields that say how well a search's chosen configuration is known."""
    r = returned
    return {"chosen_as": "best" if r.n_folds >= 2 else "leading on 1 fold", "folds_measured": r.n_folds,
            "folds": list(r.folds), "mean_over_folds": r.mean,
            "interval": [r.interval[0], r.interval[1]] if r.n_folds >= 2 else None, "trials": trials,
            "measured": measured_text(r)}


def chosen_label(measured: dict | None) -> str:
    """"best", or "leading on 1 fold" for a search's configuration not yet raced on another fold."""
    return "best" if measured is None else measured["chosen_as"]


def measured_line(measured: dict | None) -> str:
    """How well a search's chosen configuration is known, in one short line ("" for a grid's best)."""
    if measured is None:
        return ""
    if measured["folds_measured"] < 2:
        return "leading on 1 fold: not yet raced on a second fold, so not yet a best"
    low, high = measured["interval"]
    return (f"mean over {measured['folds_measured']} folds {measured['mean_over_folds']:.4f} "
            f"[{low:.4f}, {high:.4f}] (95 %): its leaders raced on as many folds")


@dataclass(frozen=True)
class Chosen:
    """The configuration a search returns, as a reader shows it: its trial on the tuning fold (id and
    number: what a run file retrains) and how well it is known (measured_fields)."""

    trial_id: int
    number: int
    measured: dict[str, Any]
    value: float = float("nan")  # its loss on the tuning fold
    race_ids: frozenset[int] = frozenset()  # the trials that raced it on more folds


def search_chosen(tables, kind: str, spec: dict | None) -> Chosen | None:
    """The configuration a search study returns (lpstudy.study.races.stored_best, a few queries on its
    tables, lpstudy.db.study_queries.StudyTables); None for a grid, a replicate, a comparison, a study
    without a spec, or before any completed trial that did not diverge."""
    from lpstudy.study.races import stored_best
    from lpstudy.study.spec import StudySpec

    if kind != "search" or not isinstance(spec, dict) or not spec:
        return None
    plain = StudySpec.from_plain(spec)
    if plain.is_grid:
        return None
    found = stored_best(tables, plain)
    if found is None:
        return None
    return Chosen(found.trial_id, found.number, measured_fields(found.returned, list(found.numbers)),
                  found.returned.losses[0], frozenset(found.race_ids))


def shown_best(trials: pd.DataFrame, chosen: Chosen | None) -> tuple[pd.Series | None, dict | None]:
    """The row of the trials frame (with `loss`) a reader shows as the study's best, and for a search
    how well it is known: the configuration the search returns (`chosen`, search_chosen), else
    lpstudy.study.best's lowest value."""
    from lpstudy.study.best import ranked_frame

    if chosen is None:
        best = ranked_frame(trials, 1)
        return (None if best.empty else best.iloc[0]), None
    rows = ranked_frame(trials[trials["number"] == chosen.number], 1)
    return (None if rows.empty else rows.iloc[0]), chosen.measured


def loss_cell(value: float | None, folds: int | None) -> str:
    """A best's loss in a table: "1.9000" (a grid's lowest value), "1.9000 (2 folds)" (a search's
    configuration raced on 2 folds), "2.6481 (leading, 1 fold)" (not raced yet: not a best that holds)."""
    if value is None or value != value:
        return "-"
    if folds is None or folds != folds:
        return f"{value:.4f}"
    folds = int(folds)
    return f"{value:.4f}" + (" (leading, 1 fold)" if folds < 2 else f" ({folds} folds)")
