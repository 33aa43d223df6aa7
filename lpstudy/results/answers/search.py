"""What a search can say about p: its effect with the learning rate and the gain held apart.

A search samples p together with lr and the gain, so the losses per p mix p's effect with theirs
(where the sampler ran high p at high lr, p looks important although only lr is). The answer reads
p's effect from a surrogate (lpstudy.results.answers.surrogate): p's profile, the best loss each p
reaches with the other fields tuned for it, and its partial dependence, each with a band; how
entangled the sample is (p's rank correlation with each other numeric searched field among the
runs); and a sentence in plain words:

  separates     some p's profile differs from the reference p's (p = 2 unless the reader names
                another) beyond the ROPE, the simultaneous 95 % band wholly outside ± rope, and p is
                not tangled with another field: "p = X reaches …, Y below p = 2";
  tangled       p's rank correlation with the learning rate (or another searched field) among the
                configurations is TANGLED or more: the surrogate cannot tell which of the two acts,
                "this search cannot separate p from the learning rate", whatever its band says;
  small         some p's band excludes 0 but not the ROPE: "differs … by less than the ROPE can
                tell", a difference too small to matter or not yet shown to be large;
  no effect     no difference beyond the band, the band within ± rope of the reference's loss, and
                the surrogate's length scales along p inside their range: "finds no effect of p"
                (where one sits at a bound, the runs did not tell p's scale and the narrow band is
                the fit's assumption: "cannot yet tell p's effect from none");
  undecided     the band is wider than the differences: "this search cannot yet separate p from the
                learning rate" (or from whatever p is most entangled with);
  too few runs  under the surrogate's minimum: what the runs can tell (the loss's rank correlation
                with p and with each other field) and that they cannot separate them.

The band assumes p acts smoothly (a Matérn 5/2 along p): a jump in p narrower than the spacing of
the runs' p values is beyond its reach, and the answer says so (`effect.assumes`). p = ∞ is profiled
over the same settings as finite p, or said apart where its runs do not cover them
(answers.surrogate). Every count is of configurations: a configuration raced on several folds is one,
its folds averaged with the fold as a factor (configuration_losses).

Where it does not separate, `suggest` is the command that would decide: a replicate of the p
values at the learning rate and gain the surrogate finds best, K folds each, whose verdict
(lpstudy verdict) holds everything but p fixed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any, Mapping, SupportsFloat, SupportsIndex

import numpy as np
import pandas as pd

from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.configurations import per_configuration
from lpstudy.results.analysis.importance import param_importance
from lpstudy.results.analysis.searched import Searched, rank_correlation, read_searched, space_entries
from lpstudy.results.analysis.selection import finished, successful
from lpstudy.results.answers.answer_types import Difference, Effect, Importance, SearchAnswer, SearchDivergence
from lpstudy.results.answers.options import AnswerOptions
from lpstudy.results.answers.surrogate import MIN_RUNS, Profile, p_profile
from lpstudy.results.analysis.study_data import StudyData
from lpstudy.values import format_p, json_safe

METRIC = "final validation loss (completed runs that did not diverge)"
SUGGEST_FOLDS = 5
TANGLED = 0.7  # |p's rank correlation| with another searched field from which p cannot be told apart from it
SMOOTH = ("the band assumes p acts smoothly (a Matérn 5/2 along p): a jump in p narrower than the spacing of the runs' "
          "p values is beyond its reach")
NAMES = {"lr": "the learning rate", "gain_init": "the gain"}


def _name(field: str) -> str:
    return NAMES.get(field, field)


def entanglement(searched: Searched, rows: pd.Index) -> dict[str, float]:
    """p's rank correlation with each other numeric searched field among these rows (a search's
    configurations, each once; ∞ ranks above every finite p)."""
    p = searched.get("p")
    if p is None:
        return {}
    out = {}
    for f in searched.fields:
        if f.kind in ("log", "linear"):
            value = rank_correlation(p.values.loc[rows], f.values.loc[rows].astype("float64"))
            if value is not None:
                out[f.name] = round(value, 3)
    return out


def _reference(options: AnswerOptions, profile: Profile) -> float:
    given = options.reference if options.reference is not None else 2.0
    try:  # a reader's reference: a number or its text; anything else reads as p = 2
        wanted = float(given) if isinstance(given, (SupportsFloat, SupportsIndex, str)) else 2.0
    except (TypeError, ValueError):
        wanted = 2.0
    finite = profile.p[np.isfinite(profile.p)]
    if math.isinf(wanted) and np.isinf(profile.p).any():
        return math.inf
    if finite.min() <= wanted <= finite.max():
        return wanted
    return float(finite[len(finite) // 2])


def _lead(differences: np.ndarray, apart: np.ndarray) -> int:
    """The p the sentence cites: of the p whose band excludes 0 (separated from the reference), the
    one furthest below it, else the one furthest above it; never a p whose band holds 0."""
    candidates = np.flatnonzero(apart)
    below = candidates[differences[candidates] < 0]
    if len(below):
        return int(below[np.argmin(differences[below])])
    return int(candidates[np.argmax(differences[candidates])])


def suggest_command(data: StudyData, searched: Searched, setting: Mapping[str, float | str]) -> str:
    """`lpstudy replicate` of p over its searched range (quarters, ∞ where searched) at the learning
    rate and gain given, K folds each: the experiment that holds everything but p fixed."""
    entries = space_entries(data.info.spec) or {}
    p_entry = entries.get("p")
    p = searched.get("p")
    if p_entry is not None and hasattr(p_entry, "low"):
        low, high, with_inf = float(p_entry.low), float(p_entry.high), bool(p_entry.with_inf)
    else:
        finite = p.values[np.isfinite(p.values)] if p is not None else pd.Series([1.0, 4.0])
        low, high = float(finite.min()), float(finite.max())
        with_inf = bool(p is not None and np.isinf(p.values).any())
    values = sorted({round(v * 2) / 2 for v in np.linspace(low, high, 4)})
    ps = ",".join(format_p(v) for v in values) + (",inf" if with_inf else "")
    preset = data.info.preset or "smoke"  # the stored spec's preset where the study's attributes have none
    parts = [f"lpstudy replicate --study {data.name}-p --preset {preset} --p {ps}"]
    if "lr" in setting:
        parts.append(f"--lr {setting['lr']:.3g}")
    if "gain_init" in setting:
        parts.append(f"--gain-init {setting['gain_init']:.3g}")
    parts.append(f"--folds {SUGGEST_FOLDS}")
    return " ".join(parts)


def _few_runs_sentence(n: int, losses: pd.Series, searched: Searched, runs: int | None = None) -> str:
    """What a handful of runs can tell: which field the loss follows, and that p cannot be held apart."""
    follows = []
    for f in searched.fields:
        if f.kind == "choice":
            continue
        values = f.values.loc[losses.index].astype("float64")
        rho = rank_correlation(values, losses)
        if rho is not None:
            follows.append((abs(rho), f.name, rho))
    follows.sort(reverse=True)
    what = (f"{n} completed run{'s' if n != 1 else ''}" if runs is None or runs == n
            else f"{n} configuration{'s' if n != 1 else ''} ({runs} completed runs)")
    text = (f"{what} at finite p: too few to hold p's effect apart from "
            f"{_name('lr')} and the gain (the surrogate needs {MIN_RUNS})")
    if follows:
        described = ", ".join(f"{_name(name)} {rho:+.2f}" for _, name, rho in follows)
        text += f". Among them the final loss's rank correlation is: {described}"
        if follows[0][1] != "p":
            text += f"; what differs between these runs follows {_name(follows[0][1])} more than p"
    return text + "."


def configuration_losses(runs: pd.DataFrame, searched: Searched) -> pd.DataFrame:
    """The runs' final losses read as configurations (analysis.configurations.per_configuration:
    each configuration once, its runs on several folds averaged with the fold as a factor), indexed
    by each configuration's first run; columns loss, runs, folds."""
    if runs.empty:
        return pd.DataFrame({"loss": pd.Series(dtype="float64"), "runs": 0, "folds": 0})
    table = pd.DataFrame({f.name: f.values.loc[runs.index] for f in searched.fields}, index=runs.index)
    table["loss"] = runs["loss"].astype("float64")
    if "fold" in runs:
        table["fold"] = runs["fold"]
    return per_configuration(table, searched.names())


def configuration_trials(trials: pd.DataFrame, spec: StudySpec | None) -> pd.DataFrame:
    """The trials with each configuration once (for the importance): a configuration's successful
    runs on several folds replaced by its first, whose value is the configuration's fold-adjusted
    mean (configuration_losses); the other trials (failed, diverged, pending) as they are."""
    runs = successful(trials) if len(trials) else trials
    if runs.empty or "fold" not in runs or runs["fold"].nunique() < 2:
        return trials
    configs = configuration_losses(runs, read_searched(runs, spec))
    out = trials.drop(index=runs.index.difference(configs.index)).copy()
    out.loc[configs.index, "value"] = configs["loss"].to_numpy()
    if "final_val_loss" in out:
        out.loc[configs.index, "final_val_loss"] = configs["loss"].to_numpy()
    return out


def search_answer(data: StudyData, options: AnswerOptions = AnswerOptions()) -> SearchAnswer:
    """The answer of a search study (answer_types.SearchAnswer): search_effect and the importance (over
    importance_sample's runs in a big study), the convergence and the divergence per p group."""
    from lpstudy.results.analysis.curve_sample import importance_sample
    from lpstudy.results.answers.search_convergence import search_convergence

    trials = data.trials
    if len(trials):
        # one configuration, one observation: a leader raced on several folds weighs once in the importance
        found = param_importance(importance_sample(configuration_trials(trials, data.info.spec)), data.info.spec)
        importance = Importance(shares=_plain(found.shares), low=_plain(found.low), high=_plain(found.high),
                                null=found.null, reason=found.reason or "", left_out=dict(found.left_out),
                                n_trials=found.n_trials)
    else:
        importance = Importance(shares={}, low={}, high={}, null=None, reason="no completed run yet", left_out={},
                                n_trials=0)
    effect = search_effect(data, options)
    convergence = search_convergence(data, options)
    said = f"{effect.sentence} {convergence.sentence}" if convergence and convergence.restricted_mean else effect.sentence
    return replace(effect, sentence=said, importance=importance, convergence=convergence,
                   divergence=search_divergence(data, options))


def _plain(series: pd.Series) -> dict[str, float]:
    return {str(k): float(v) for k, v in series.items()}


def search_divergence(data: StudyData, options: AnswerOptions = AnswerOptions()) -> list[SearchDivergence]:
    """The share of runs that diverged per p group (search_convergence's few groups), each configuration
    counted once (analysis.stability.divergence_rates: a raced configuration's folds are one
    observation), with Wilson's 1 − alpha interval over the configurations, and how many configurations
    and runs each group holds. No verdicts: the groups mix p with the lr and gain their runs drew."""
    from lpstudy.results.analysis.stability import divergence_rates
    from lpstudy.results.answers.search_convergence import GROUPS

    fields = tuple(read_searched(finished(data.trials), data.info.spec).names()) if len(data.trials) else ()
    if "p" not in fields:
        return []
    rates = divergence_rates(data.trials, GROUPS, 1 - options.alpha, configurations=fields)
    return [SearchDivergence(field="p", value=json_safe(row.p_bin), configurations=int(row.n_configurations),
                             runs=int(row.n), diverged=int(row.n_diverged), rate=json_safe(float(row.rate)),
                             low=json_safe(float(row.ci_low)), high=json_safe(float(row.ci_high)))
            for row in rates.itertuples()]


def search_effect(data: StudyData, options: AnswerOptions = AnswerOptions()) -> SearchAnswer:
    """Everything of the search's answer but the importance (which the dashboard caches apart).
    `options`: its rope ("no effect": every p within ± rope of the reference's loss) and reference
    (p = 2 unless it names another)."""
    trials = data.trials
    runs = successful(trials) if len(trials) else finished(trials)
    searched = read_searched(runs, data.info.spec)
    # one configuration, one observation: a leader raced on several folds is its fold-adjusted mean
    configs = configuration_losses(runs, searched)
    losses = configs["loss"]
    tangles: dict[str, float | None] = {**entanglement(searched, configs.index)}
    answer = partial(SearchAnswer, study=data.name, kind="search", metric=METRIC, entanglement=tangles,
                     n_runs=int(len(runs)), n_configurations=int(len(configs)))
    if searched.get("p") is None:
        return answer(p_profile=[], p_partial_dependence=[], separable=False, suggest=None, effect=None,
                      sentence="p does not vary among the completed runs: this search says nothing about p."
                      if len(runs) else "No completed run yet: nothing to say about p.")
    profile = p_profile(losses, searched)
    finite_runs = int(np.isfinite(searched.values("p").loc[runs.index].astype("float64")).sum())
    finite_configs = int(np.isfinite(searched.values("p").loc[configs.index].astype("float64")).sum())
    # what the surrogate fits (∞ apart): the sentence counts these
    answer = partial(answer, n_finite_runs=finite_runs, n_finite_configurations=finite_configs)
    best_run = runs.loc[losses.idxmin()] if len(runs) else None
    best_setting = ({name: float(best_run[name]) for name in ("lr", "gain_init") if name in best_run
                     and searched.get(name) is not None} if best_run is not None else {})
    if profile is None:
        return answer(p_profile=[], p_partial_dependence=[], separable=False, effect=None,
                      sentence=_few_runs_sentence(finite_configs, losses, searched, finite_runs),
                      suggest=suggest_command(data, searched, best_setting))
    reference = _reference(options, profile)
    mean, low, high = profile.differences(reference)
    at_ref = int(np.argmin(np.where(np.isinf(profile.p), np.inf, np.abs(profile.p - reference))))
    ref_loss = float(profile.profile[at_ref])
    margin = options.rope.margin(abs(ref_loss))
    apart = (low > margin) | (high < -margin)  # beyond the ROPE, not only beyond 0
    nonzero = (low > 0) | (high < 0)
    effect = Effect(
        reference=json_safe(reference),
        differences=[Difference(p=json_safe(float(p)), diff=json_safe(float(d)), low=json_safe(float(a)),
                                high=json_safe(float(b))) for p, d, a, b in zip(profile.p, mean, low, high)],
        rope=json_safe(float(margin)), n_fit=int(profile.n_fit), n_runs=int(len(runs)),
        p_scale_at_bound=bool(profile.p_scale_at_bound), assumes=SMOOTH, inf_apart=profile.inf_apart or None,
        n_configurations=int(profile.n_runs) if profile.n_runs < len(runs) else None)
    tangled: tuple[str, float] | None = max(((name, rho) for name, rho in tangles.items() if rho is not None),
                                            key=lambda kv: abs(kv[1]), default=None)
    is_tangled = tangled is not None and abs(tangled[1]) >= TANGLED
    answer = partial(answer, p_profile=profile.rows("profile"), p_partial_dependence=profile.rows("dependence"),
                     effect=effect, separable=bool(apart.any()) and not is_tangled)
    setting = {k: v for k, v in profile.best_setting.items() if k in ("lr", "gain_init")} or best_setting
    unit = "runs" if finite_runs == finite_configs else "configurations"
    fitted = (f"{profile.n_fit:,} of the {finite_configs:,} {unit} at finite p" if profile.n_fit < finite_configs
              else f"{finite_configs:,} {unit} at finite p")
    if finite_runs > finite_configs:
        fitted += f" ({finite_runs:,} runs: a configuration run on several folds counted once, the fold a factor)"
    if np.isinf(profile.p).any():
        fitted += ", ∞'s runs apart"
    ref_text = f"p = {format_p(reference)}"
    inf_note = f" ({profile.inf_apart}.)" if profile.inf_apart else ""
    if is_tangled and tangled is not None:
        said = (
            f"This search cannot separate p from {_name(tangled[0])}: p's rank correlation with it among the "
            f"configurations is {tangled[1]:+.2f}, so a surrogate fitted on {fitted} cannot tell which of the two "
            f"acts, whatever its band.{inf_note}")
        return answer(sentence=said, suggest=suggest_command(data, searched, setting))
    if apart.any():
        lead = _lead(mean, apart)
        p_text = f"p = {format_p(float(profile.p[lead]))}"
        word = "below" if mean[lead] < 0 else "above"
        said = (
            f"With the learning rate and the gain tuned at each p (a surrogate fitted on {fitted}), "
            f"{p_text} reaches {profile.profile[lead]:.4f}, {abs(mean[lead]):.4f} {word} {ref_text} "
            f"(95 % band {low[lead]:+.4f} to {high[lead]:+.4f}): this search separates p's effect from "
            f"{_name('lr')}'s, beyond the ROPE {options.rope.words()}. A replicate at the tuned settings confirms "
            f"it across folds.{inf_note}")
        return answer(sentence=said, suggest=suggest_command(data, searched, setting))
    widest = float(np.max(np.maximum(np.abs(low), np.abs(high))))
    if nonzero.any() and widest > margin:
        lead = _lead(mean, nonzero)
        said = (
            f"With the learning rate and the gain tuned at each p (a surrogate fitted on {fitted}), "
            f"p = {format_p(float(profile.p[lead]))} differs from {ref_text} by {mean[lead]:+.4f} (95 % band "
            f"{low[lead]:+.4f} to {high[lead]:+.4f}), which does not reach beyond the ROPE of ±{margin:.4f}: a "
            f"difference too small to matter or not yet shown to be large; this search does not separate p's "
            f"effect.{inf_note}")
        return answer(sentence=said, suggest=suggest_command(data, searched, setting))
    if widest <= margin and profile.p_scale_at_bound:
        said = (
            f"This search cannot yet tell p's effect from none: with the learning rate and the gain tuned at "
            f"each p (a surrogate fitted on {fitted}), the surrogate's length scale along p sits at the bound of "
            f"its range, where the runs do not tell how p acts, so its band of ±{widest:.4f} around {ref_text} "
            f"is the fit's assumption rather than the runs' evidence. A replicate at the tuned settings decides "
            f"whether p is equivalent within ±{margin:.4f} (the ROPE {options.rope.words()}).{inf_note}")
    elif widest <= margin:
        said = (
            f"With the learning rate and the gain tuned at each p (a surrogate fitted on {fitted}), "
            f"this search finds no effect of p: every p's profile is within ±{margin:.4f} "
            f"(the ROPE {options.rope.words()}) of {ref_text}'s {ref_loss:.4f}; {SMOOTH}.{inf_note}")
    else:
        what = _name(tangled[0]) if tangled and abs(tangled[1]) >= 0.3 else _name("lr")
        rho = f" (p's rank correlation with {_name(tangled[0])} among the configurations: {tangled[1]:+.2f})" if tangled else ""
        said = (
            f"This search cannot yet separate p from {what}{rho}: with the learning rate and the gain tuned "
            f"at each p (a surrogate fitted on {fitted}), the differences to {ref_text} lie within "
            f"a band up to ±{widest:.4f}, wider than the differences themselves.{inf_note}")
    return answer(sentence=said, suggest=suggest_command(data, searched, setting))


__all__ = ["entanglement", "search_answer", "search_divergence", "search_effect", "suggest_command"]
