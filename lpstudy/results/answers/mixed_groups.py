"""What a page that groups a search's runs by p must say: that its groups mix p with the learning
rate and the gain each run drew, by how much, and what would hold them apart.

A search samples p together with lr and the initial gain, and a sampler that learns (TPE) draws
them together: on the README's first study the median gain₀ was about 41 at p 1–1.75 and about 5 at
p 2.5–3.25, so the per-p medians of the gain, the largest logit and the smallest entropy on the
Stability pages were the gain's effect drawn as p's. Effect of p holds them apart through a
surrogate (lpstudy.results.answers.search); the pages that draw per-p groups of curves and
medians (Convergence, Stability, Stability lens) cannot, and say so in one sentence from here,
naming the spread of the co-sampled fields' medians across the groups and the experiment that
separates them: a replicate of p at a temperature-matched gain (`--gain-init matched`), which holds
everything but p fixed."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.names import shell_quoted
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.selection import finished
from lpstudy.results.analysis.study_data import StudyData
from lpstudy.values import format_p

CO_SAMPLED = {"gain_init": "gain₀", "lr": "learning rate"}  # the fields a search samples with p, as a page names them
REPLICATE_PS = "1,2,3,4"


def separating_command(data: StudyData) -> str:
    """The replicate that holds everything but p fixed: p at a temperature-matched gain, K folds."""
    preset = data.info.preset or "smoke"  # the stored spec's preset where the study's attributes have none
    return (f"lpstudy replicate --study {shell_quoted(data.name + '-matched')} --preset {preset} "
            f"--p {REPLICATE_PS} --gain-init matched --folds 5")


def mixed_groups_sentence(data: StudyData, bins: int | Sequence[float] | None = None) -> str | None:
    """One sentence for a search whose runs drew the learning rate or the gain along with p: the
    groups by p (`bins`, as the page groups them) mix p with them, the lowest and highest group
    median of each that varies, and the replicate that separates them. None for a study whose arms
    hold everything but p fixed (a replicate, a grid, a comparison) or where neither varies."""
    from lpstudy.results.answers import answered_by_verdicts

    if answered_by_verdicts(data.info) or data.trials.empty:
        return None
    runs = finished(data.trials)
    # one configuration, one observation: a leader raced on several folds is one draw of lr and gain
    runs = runs[runs["p"].notna()].drop_duplicates([c for c in ("p", *CO_SAMPLED) if c in runs])
    if len(runs) < 2:
        return None
    groups = p_bins(runs["p"], bins)
    spread = []
    for field, name in CO_SAMPLED.items():
        values = runs[field].astype("float64") if field in runs else pd.Series(dtype="float64")
        if values.nunique() < 2:
            continue
        medians = values.groupby(groups["p_bin"]).median().dropna()
        if len(medians) < 2:
            continue
        low, high = medians.idxmin(), medians.idxmax()
        spread.append(f"median {name} {_number(medians[high])} at p {high} but {_number(medians[low])} at p {low}")
    if not spread:
        return None
    return (f"Each p group here mixes p with the learning rate and gain its runs drew ({'; '.join(spread)}), so a "
            f"difference between groups may be theirs rather than p's (Effect of p holds them apart); a replicate at "
            f"matched gains separates them: `{separating_command(data)}`")


def search_fields(data: StudyData) -> tuple[str, ...]:
    """The fields a configuration is made of where the study is a search answered by its surrogate
    (its searched fields: analysis.searched), for analysis.stability.divergence_rates and
    analysis.cohort.curve_cohort; () for a study whose arms are
    its observations (a replicate, a grid, a comparison)."""
    from lpstudy.results.analysis.searched import read_searched
    from lpstudy.results.answers import answered_by_verdicts

    if answered_by_verdicts(data.info) or data.trials.empty:
        return ()
    return tuple(read_searched(finished(data.trials), data.info.spec).names())


def _number(value: float) -> str:
    return f"{value:.2g}" if abs(value) < 0.01 else f"{value:.3g}" if not np.isinf(value) else format_p(value)
