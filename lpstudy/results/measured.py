"""How well a search's chosen configuration is known (lpstudy.study.intensify.Returned), said once:
the words and the run file's `source` fields that `lpstudy export`, the Export page and `lpstudy
status` give. A leaf of the read side: export and the status summary both read it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
