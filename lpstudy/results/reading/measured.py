"""Which configuration a reader shows as a study's best, and how well a search's is known
(lpstudy.design.intensify.Returned), said once: the configuration a search returns
(lpstudy.study.races.stored_best, its leaders raced on more folds; search_chosen), the row a page or
the report shows for it (shown_best), and the words and the run file's `source` fields that `lpstudy
export`, the Export and Home pages, the report, `lpstudy status` and `lpstudy studies` give ("best"
only when measured on 2 folds or more, else "leading on 1 fold"). A leaf of the read side: export,
frames and the status summary read it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from lpstudy.design.intensify import Returned
    from lpstudy.design.spec import StudySpec


def measured_text(returned: Returned | None) -> str:
    """What a search's chosen configuration is, said once for the run file and the Export page."""
    if returned is None:
        return "best"
    r = returned
    if r.n_folds < 2:
        return ("leading on 1 fold: the lowest loss on the tuning fold, not yet raced on another fold, so not a "
                "best that holds; run more trials (the search races its leaders on more folds)")
    return (f"best: the lowest mean loss over {r.n_folds} folds ({r.mean:.4f}, {interval_words(r.interval)}) "
            "among its leaders raced on as many folds")


def known(interval: tuple[float, float] | list[float] | None) -> bool:
    """Whether a chosen configuration's interval is one: finite (its folds gave different losses)."""
    return interval is not None and all(math.isfinite(x) for x in interval)


def interval_words(interval: tuple[float, float] | list[float] | None) -> str:
    """"95 % interval 2.7012 to 2.7301", or why there is none (folds that gave the same loss: no spread)."""
    if not known(interval):
        return "no interval: its folds gave the same loss"
    assert interval is not None
    return f"95 % interval {interval[0]:.4f} to {interval[1]:.4f}"


def measured_fields(returned: Returned, trials: list[int]) -> dict[str, Any]:
    """The run file's `source` fields that say how well a search's chosen configuration is known."""
    r = returned
    return {"chosen_as": "best" if r.n_folds >= 2 else "leading on 1 fold", "folds_measured": r.n_folds,
            "folds": list(r.folds), "mean_over_folds": r.mean,
            "interval": [r.interval[0], r.interval[1]] if r.n_folds >= 2 and known(r.interval) else None,
            "trials": trials,
            "measured": measured_text(r)}


def chosen_label(measured: dict | None) -> str:
    """"best", or "leading on 1 fold" for a search's configuration not yet raced on another fold."""
    return "best" if measured is None else measured["chosen_as"]


def measured_line(measured: dict | None) -> str:
    """How well a search's chosen configuration is known, in one short line ("" for a grid's best)."""
    if measured is None:
        return ""
    if measured["folds_measured"] < 2:
        return (f"loss {measured['mean_over_folds']:.4f} on 1 fold: not yet raced on a second fold, so not yet "
                "a best")
    shown = (f"[{measured['interval'][0]:.4f}, {measured['interval'][1]:.4f}] (95 %)" if known(measured["interval"])
             else "(no interval: its folds gave the same loss)")
    return (f"mean over {measured['folds_measured']} folds {measured['mean_over_folds']:.4f} "
            f"{shown}: its leaders raced on as many folds")


@dataclass(frozen=True)
class Chosen:
    """The configuration a search returns, as a reader shows it: its trial on the tuning fold (id and
    number: what a run file retrains) and how well it is known (measured_fields)."""

    trial_id: int
    number: int
    measured: dict[str, Any]
    value: float = float("nan")  # its loss on the tuning fold
    race_ids: frozenset[int] = frozenset()  # the trials that raced it on more folds


def search_chosen(tables, kind: str, spec: StudySpec | None) -> Chosen | None:
    """The configuration a search study returns (lpstudy.study.races.stored_best, a few queries on its
    tables, lpstudy.db.study_queries.StudyTables); None for a grid, a replicate, a comparison, a study
    without a spec, or before any completed trial that did not diverge."""
    from lpstudy.study.races import stored_best

    if kind != "search" or spec is None or spec.is_grid:
        return None
    found = stored_best(tables, spec)
    if found is None:
        return None
    return Chosen(found.trial_id, found.number, measured_fields(found.returned, list(found.numbers)),
                  found.returned.losses[0], frozenset(found.race_ids))


def shown_best(trials: pd.DataFrame, chosen: Chosen | None) -> tuple[pd.Series | None, dict | None]:
    """The row of the trials frame (with `loss`) a reader shows as the study's best, and for a search
    how well it is known: the configuration the search returns (`chosen`, search_chosen), else
    lpstudy.design.best's lowest value."""
    from lpstudy.design.best import ranked_frame

    if chosen is None:
        best = ranked_frame(trials, 1)
        return (None if best.empty else best.iloc[0]), None
    rows = ranked_frame(trials[trials["number"] == chosen.number], 1)
    return (None if rows.empty else rows.iloc[0]), chosen.measured


def loss_cell(value: float | None, folds: int | None) -> str:
    """A best's loss in a table: "1.9000" (one run's), "1.9000 (mean of 2 folds)" (a search's
    configuration raced on 2 folds: its mean over them), "2.6481 (leading, 1 fold)" (not raced yet: not
    a best that holds). The same words as StudyBest.cell."""
    if value is None or value != value:
        return "-"
    if folds is None or folds != folds:
        return f"{value:.4f}"
    folds = int(folds)
    return f"{value:.4f}" + (" (leading, 1 fold)" if folds < 2 else f" (mean of {folds} folds)")


# How the verdict of the arm shown as best reads against the reference, in words.
_AGAINST = {"better": "better than", "worse": "worse than", "equivalent": "equivalent to", "undecided": "undecided against"}


@dataclass(frozen=True)
class StudyBest:
    """The study's best, defined once, as every reader shows it (Home, the sidebar, `lpstudy status`,
    `lpstudy studies`, `lpstudy export`, the report, a comparison's tables).

    A search: the configuration it returns (search_chosen), its mean over the folds it was measured
    on and its interval ("best" from 2 folds, else "leading on 1 fold"). A replicate, a grid or a
    comparison: the arm with the lowest mean final loss over its folds among the arms measured on the
    most folds (an arm with a failed run is passed over while another has none: a failed run bars a
    verdict; an arm with folds still to run waits, as a search's race does), with its verdict against the
    reference from the engine where the reader has it (chosen_as "arm"); its run on the first fold it
    ran is the one a run file retrains. A study without a spec: the lowest single loss ("lowest")."""

    chosen_as: str  # "best" | "leading on 1 fold" | "arm" | "lowest"
    number: int  # the trial a run file retrains
    row: Any = None  # that trial's row of the trials frame (pd.Series)
    value: float = float("nan")  # that trial's own final loss
    mean: float = float("nan")  # the mean final loss over the folds it was measured on
    folds: tuple[int, ...] = ()
    interval: tuple[float, float] | None = None  # 95 %, a search's from 2 folds
    arm: str | None = None  # "p = 3.5": the arm shown as best
    verdict: str | None = None  # "undecided against p = 2", "the reference"; None where not read

    @property
    def n_folds(self) -> int:
        return len(self.folds)

    @property
    def is_arm(self) -> bool:
        return self.chosen_as == "arm"

    def title(self) -> str:
        """A heading: "Best configuration", "Leading configuration (1 fold)", "Lowest arm", "Lowest trial"."""
        return {"best": "Best configuration", "arm": "Lowest arm", "lowest": "Lowest trial"}.get(
            self.chosen_as, "Leading configuration (1 fold)")

    def cell(self) -> str:
        """A table cell: "2.7145 (mean of 4 folds)", "2.6481 (leading, 1 fold)", "p = 3.5: 1.5896 (mean of 3 folds)"."""
        if self.chosen_as == "lowest":
            return f"{self.value:.4f}"
        if self.n_folds < 2:
            text = f"{self.mean:.4f} ({'leading, ' if self.chosen_as != 'arm' else ''}1 fold)"
        else:
            text = f"{self.mean:.4f} (mean of {self.n_folds} folds)"
        return f"{self.arm}: {text}" if self.arm else text

    def line(self) -> str:
        """One sentence: what the best is, over how many folds, and how far it is known."""
        if self.chosen_as == "lowest":
            return f"lowest loss {self.value:.4f} (trial {self.number}: one run)"
        if self.is_arm:
            folds = "1 fold" if self.n_folds == 1 else f"{self.n_folds} folds"
            text = f"{self.arm} has the lowest mean loss, {self.mean:.4f} over {folds}"
            return text + (f"; its verdict: {self.verdict}" if self.verdict else "")
        if self.n_folds < 2:
            return (f"loss {self.mean:.4f} on 1 fold (trial {self.number}): leading, not yet raced on a "
                    f"second fold, so not yet a best")
        return (f"mean loss {self.mean:.4f} over {self.n_folds} folds, {interval_words(self.interval)} "
                f"(trial {self.number} on its tuning fold: {self.value:.4f})")

    def source_fields(self) -> dict[str, Any]:
        """What a run file's `source` says of how the configuration was chosen (an arm's; a search's
        come from measured_fields)."""
        return {"chosen_as": "arm", "arm": self.arm, "folds": list(self.folds),
                "folds_measured": self.n_folds, "mean_over_folds": self.mean, "verdict": self.verdict,
                "measured": self.line()}


def arm_key(kind: str) -> str:
    """The trials frame's column that names a study's arm: a comparison's `arm`, else `p`."""
    return "arm" if kind == "compare" else "p"


def arm_verdict(answer, arm: str) -> str | None:
    """The verdict of the arm named `arm` ("p = 3.5") in a VerdictAnswer, in words: "undecided
    against p = 2", or "the reference"; None where the answer has no verdict for it."""
    from lpstudy.results.tables.verdicts import arm_name

    ref = getattr(answer, "reference", None)
    if ref is None or not getattr(answer, "arms", None):
        return None
    ref_name = arm_name(ref.field, ref.value)
    same = lambda name: name.replace(" ", "") == arm.replace(" ", "")  # noqa: E731 - a comparison labels "p=3"
    if same(ref_name):
        return "the reference"
    for verdict in answer.arms:
        if same(arm_name(verdict.field, verdict.value)):
            return f"{_AGAINST.get(verdict.verdict, verdict.verdict)} {ref_name}"
    return None


def arm_best(trials: pd.DataFrame, kind: str, answer=None) -> StudyBest | None:
    """The arm with the lowest mean final loss over its folds (StudyBest's rule), with its verdict
    from `answer` (a VerdictAnswer) where given; None before any run finished without diverging."""
    import pandas as pd

    from lpstudy.results.analysis.selection import finished
    from lpstudy.results.tables.verdicts import arm_name

    key = arm_key(kind)
    if trials is None or not len(trials) or key not in trials:
        return None
    done = finished(trials)
    done = done[done[key].notna()]
    ok = done[done["loss"].notna()]
    if not len(ok):
        return None
    fold = ok["fold"] if "fold" in ok else pd.Series(0, index=ok.index)
    per_fold = ok.assign(_fold=fold.fillna(-1)).groupby([key, "_fold"])["loss"].mean()  # repeats of a fold: one
    means = per_fold.groupby(level=0).mean()
    failed = set(done.loc[done["loss"].isna(), key])
    clean = means[[arm not in failed for arm in means.index]]
    ranked = clean if len(clean) else means
    n_folds = per_fold.groupby(level=0).size()[ranked.index]
    ranked = ranked[n_folds == n_folds.max()]  # measured on the most folds, as a search's race ranks (intensify)
    arm = ranked.sort_values(kind="stable").index[0]
    runs = ok[ok[key] == arm].sort_values(["fold", "number"] if "fold" in ok else ["number"])
    row = runs.iloc[0]
    name = arm if kind == "compare" else arm_name("p", arm)
    folds = tuple(sorted(int(f) for f in per_fold.loc[arm].index if f >= 0))
    return StudyBest("arm", int(row["number"]), row, float(row["loss"]), float(means[arm]), folds or (0,),
                     arm=str(name), verdict=arm_verdict(answer, str(name)) if answer is not None else None)


def study_best(data, answer=None) -> StudyBest | None:
    """The best of a study read as a StudyData (lpstudy.results.reading.frames), StudyBest's rule;
    `answer`: its VerdictAnswer, where the reader has it, for the arm's verdict."""
    return best_of(data.trials, data.info, data.chosen, answer)


def best_of(trials: pd.DataFrame, info, chosen: Chosen | None, answer=None) -> StudyBest | None:
    """StudyBest's rule on a study's trials frame, its StudyInfo and, for a search, the configuration it
    returns (search_chosen)."""
    if trials is None or not len(trials):
        return None
    if info.spec is not None and (info.kind != "search" or info.is_grid):  # arms, as the verdicts read it
        return arm_best(trials, info.kind, answer)
    row, measured = shown_best(trials, chosen)
    if row is None:
        return None
    if measured is None:
        return StudyBest("lowest", int(row["number"]), row, float(row["loss"]), float(row["loss"]))
    interval = tuple(measured["interval"]) if measured.get("interval") else None
    return StudyBest(measured["chosen_as"], int(row["number"]), row, float(row["loss"]),
                     float(measured["mean_over_folds"]), tuple(int(f) for f in measured["folds"]), interval)
