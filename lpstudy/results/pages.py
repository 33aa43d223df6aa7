"""Each dashboard page's charts, declared once: for every page (Overview, Effect of p, Convergence,
Stability, Stability lens) the ordered list of its charts, each a name, the function that builds it
from the study and the page's choices (PageInputs: p groups, loss threshold, reference p, ROPE), and
when it applies (a search, a study with verdicts, ...). The Streamlit pages (app/views/) draw their
charts by iterating this list, and `lpstudy report` (lpstudy.results.report) builds its sections
from the same lists, so a page and the report cannot disagree on which charts there are.

Adding a chart is one `Chart(...)` entry in a page's list here."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Sequence

from lpstudy.results import analysis as A
from lpstudy.results.charts import look
from lpstudy.results.charts import convergence as convergence_charts, effect as effect_charts
from lpstudy.results.charts import stability as stability_charts, trials as trial_charts
from lpstudy.results.answers import DEFAULT_ROPE, AnswerOptions, Rope, answered_by_verdicts, has_verdicts, study_answer
from lpstudy.results.answers.answer_types import SearchAnswer, VerdictAnswer
from lpstudy.results.answers.mixed_groups import search_fields
from lpstudy.results.reading.frames import StudyData


def _memo(cache: dict) -> Callable:
    def keep(key: tuple, build: Callable):
        if key not in cache:
            cache[key] = build()
        return cache[key]
    return keep


@dataclass
class PageInputs:
    """The study and the page's choices, and what several charts share, each computed once through
    `keep(key, build)` (the dashboard passes app/common.py's `once`, which keeps it with the study's
    version; the report a dict of its own). `importance` computes parameter importance (the dashboard
    passes its cached one)."""

    data: StudyData
    bins: int | Sequence[float] | None = None  # the p groups: a count, their edges, or the exact values
    threshold: float | None = None  # the loss convergence is timed to; None: default_threshold
    reference: object = None  # p = 2, or a comparison's first arm (lpstudy.results.answers)
    rope: Rope = DEFAULT_ROPE
    keep: Callable | None = None
    importance: Callable | None = None
    _own: dict = field(default_factory=dict, repr=False)

    def shared(self, key: tuple, build: Callable):
        return (self.keep or _memo(self._own))(key, build)

    @property
    def trials(self):
        return self.data.trials

    @property
    def curves(self):
        return self.data.curves

    @property
    def searched(self) -> bool:  # a search tunes lr and gain: p's effect with them held apart
        return not answered_by_verdicts(self.data.info)

    @property
    def folded(self) -> bool:  # verdicts per arm, fold as a block
        return self.shared(("has_verdicts",), lambda: has_verdicts(self.data))

    @property
    def by(self) -> str:  # p × lr; p × fold for a grid at one lr
        return self.shared(("map_axis",), lambda: A.map_axis(self.trials)) or "lr"

    @property
    def summary(self):
        return self.shared(("per_p_summary", self.bins), lambda: A.per_p_summary(self.trials, self.bins))

    @property
    def effect(self) -> SearchAnswer:  # a search's answer but its importance (cached apart)
        from lpstudy.results.answers.search import search_effect

        return self.shared(("search_effect",), lambda: search_effect(self.data))

    @property
    def profile(self):
        return self.shared(("tuned_profile_frame", self.bins), lambda: A.tuned_profile(self.trials, self.bins))

    @property
    def answer(self) -> VerdictAnswer:  # where folded: the verdicts
        return self.shared(("answer", self.reference, self.rope, self.threshold),
                           lambda: study_answer(self.data, AnswerOptions(rope=self.rope, reference=self.reference,
                                                                         threshold=self.threshold)))

    @property
    def default_threshold(self) -> float:
        """The threshold convergence is read at unless the reader picks one (the page's control opens
        on it, the report and `lpstudy verdict` use it): the arms' rule where there are verdicts."""
        return self.shared(("default_threshold",), lambda: A.default_threshold(
            self.trials, "p" if self.folded else None, self.data.info.spec))

    @property
    def loss_threshold(self) -> float:
        return self.default_threshold if self.threshold is None else float(self.threshold)

    @property
    def convergence(self):
        def rows():
            return A.convergence_by_trial(self.curves, self._drawn, self.loss_threshold)
        return self.shared(("convergence", self.threshold), rows)

    @property
    def _drawn(self):
        drawn = self.trials
        if self.data.curve_note:  # a big study: the trials whose curves were sampled
            drawn = drawn[drawn["number"].isin(set(self.curves["trial_number"]))]
        return drawn

    @property
    def horizon(self) -> float:  # the step budget every compared run shares
        return self.shared(("horizon",), lambda: A.shared_horizon(self.trials, self.curves))

    @property
    def reach(self) -> list[dict]:
        """Kaplan–Meier per arm (from the answer, where there are verdicts) or per p group of the
        page (a search: every drawn run): [{name, step, reached, low, high, runs}]."""
        def build():
            from lpstudy.values import arm_name

            if self.folded:
                convergence = self.answer.convergence
                counted = {arm_name(r.field, r.value): r.runs for r in (convergence.restricted_mean if convergence else [])}
                return [{"name": arm_name(c.field, c.value), **c.to_json(), "runs": counted.get(arm_name(c.field, c.value))}
                        for c in (convergence.reach if convergence else [])]
            # a search: a few p groups (the page's bins, else GROUPS), each configuration counted once
            from dataclasses import replace

            from lpstudy.results.answers import AnswerOptions
            from lpstudy.results.answers.search_convergence import GROUPS, search_convergence

            drawn = replace(self.data, trials=self._drawn, curves=self.curves, derived={})
            convergence = search_convergence(drawn, AnswerOptions(threshold=self.loss_threshold),
                                             self.bins if self.bins is not None else GROUPS)
            counted = {r.value: r.runs for r in (convergence.restricted_mean if convergence else [])}
            return [{"name": f"p {c.value}", "step": c.step, "reached": c.reached, "low": c.low, "high": c.high,
                     "runs": counted.get(c.value)} for c in (convergence.reach if convergence else [])]
        return self.shared(("reach", self.threshold, self.bins, self.reference, self.rope), build)

    @property
    def mixed_groups(self) -> str | None:  # a search's p groups mix p with lr and the gain: the sentence that says so
        from lpstudy.results.answers.mixed_groups import mixed_groups_sentence

        return self.shared(("mixed_groups", self.bins), lambda: mixed_groups_sentence(self.data, self.bins))

    @property
    def sensitivity(self):
        return self.shared(("lr_sensitivity", self.bins), lambda: A.lr_sensitivity(self.trials, bins=self.bins))

    def parameter_importance(self):
        if self.importance is not None:
            return self.importance()
        from lpstudy.results.analysis.curve_sample import importance_sample

        return A.param_importance(importance_sample(self.trials), self.data.info.spec)


def always(_: PageInputs) -> bool:
    return True


@dataclass(frozen=True)
class Chart:
    """One chart of a page: `build(inputs)` makes the figure; it is drawn where `applies(inputs)`.
    `uses` names the choices it depends on (its cache key); `sampled`: drawn from the curve sample of
    a big study, which is written on it; `wide`: a row of its own (others go two a row); `part`: the
    part of the page it is drawn in (a page draws text and tables between its parts)."""

    name: str
    build: Callable[[PageInputs], object]
    applies: Callable[[PageInputs], bool] = always
    uses: tuple[str, ...] = ()
    sampled: bool = False
    wide: bool = False
    part: str = ""


def _searched(inputs: PageInputs) -> bool:
    return inputs.searched


def _folded(inputs: PageInputs) -> bool:
    return inputs.folded


def _verdict_chart(inputs):
    from lpstudy.results.charts import verdicts as V

    return V.verdict_chart(inputs.answer)


def _staged(inputs: PageInputs) -> bool:  # run --until-decided: its verdicts came in stages
    return inputs.folded and inputs.answer.sequential is not None


def _stages_chart(inputs):
    from lpstudy.results.charts import verdicts as V

    return V.stages_chart(inputs.answer)


def _fold_importance(inputs):
    from lpstudy.results.charts import verdicts as V

    return V.fold_importance_chart(inputs.answer)


def _stability_verdict(metric: str) -> Callable:
    def build(inputs):
        from lpstudy.results.charts import verdicts as V

        return V.stability_verdict_chart(inputs.answer, metric)
    return build


def _reach_chart(inputs):
    from lpstudy.results.charts.convergence import reach_chart
    from lpstudy.values import arm_name

    verdicts = reference = None
    if inputs.folded:
        convergence = inputs.answer.convergence
        verdicts = {arm_name(a.field, a.value): a.verdict for a in (convergence.arms if convergence else [])
                    if a.endpoint == "steps_to_threshold"}
        ref = convergence.reference.get("steps_to_threshold") if convergence else None
        reference = arm_name(ref.field, ref.value) if ref else None
    return reach_chart(inputs.reach, inputs.loss_threshold, inputs.horizon, verdicts, reference)


def _space(name: str) -> Callable:
    """A chart of a search's space (lpstudy.results.charts.search): parallel coordinates, slices."""
    from lpstudy.results.charts import search

    return getattr(search, name)


def _convergence_verdict(endpoint: str) -> Callable:
    def build(inputs):
        from lpstudy.results.charts.convergence import convergence_verdict_chart

        return convergence_verdict_chart(inputs.answer, endpoint)
    return build


def _surrogate_profile(inputs):
    from lpstudy.results.charts.search import surrogate_profile_chart

    return surrogate_profile_chart(inputs.effect)


def _best_against_compute(inputs):
    from lpstudy.results.reading.compute import best_against_compute
    from lpstudy.results.charts.compute import best_against_compute_chart

    return best_against_compute_chart(best_against_compute(inputs.trials))


def _val_curves(inputs):
    from lpstudy.results.reading.compute import pruned_stops
    from lpstudy.results.charts.compute import mark_pruned

    return mark_pruned(convergence_charts.loss_curves(inputs.curves, inputs.trials, "val_loss"), pruned_stops(inputs.curves, inputs.trials))


def _lens(name: str) -> Callable:
    def build(inputs):
        from lpstudy.results.charts import lens as L

        t, c, bins = inputs.trials, inputs.curves, inputs.bins
        once = search_fields(inputs.data)  # a search's configuration raced on several folds: one curve
        return {"lr_curve": lambda: L.lr_curve_chart(A.lr_curve(t, bins=bins)),
                "lr_sensitivity": lambda: L.lr_sensitivity_chart(inputs.sensitivity),
                "max_logit": lambda: L.max_logit_chart(A.curve_cohort(c, t, "max_logit", bins, configurations=once)),
                "min_head_entropy": lambda: L.min_head_entropy_chart(A.curve_cohort(c, t, "min_head_entropy", bins,
                                                                                    configurations=once)),
                "initial_entropy": lambda: L.initial_entropy_chart(A.initial_entropy(c, t))}[name]()
    return build


OVERVIEW = [
    Chart("states", lambda i: trial_charts.states_chart(A.state_counts(i.trials)), wide=True, part="states"),
    Chart("history", lambda i: trial_charts.history_chart(i.trials), _searched, wide=True, part="history"),  # a grid optimises nothing
    Chart("best_vs_compute", _best_against_compute, wide=True, part="compute"),
]

EFFECT_OF_P = [
    Chart("verdicts", _verdict_chart, _folded, uses=("reference", "rope"), part="verdicts"),
    Chart("fold_importance", _fold_importance, _folded, uses=("reference", "rope"), part="verdicts"),
    Chart("stages", _stages_chart, _staged, uses=("reference", "rope"), wide=True, part="stages"),
    Chart("surrogate_profile", _surrogate_profile, _searched),
    Chart("loss_vs_p", lambda i: effect_charts.loss_vs_p(i.trials)),
    Chart("tuned_profile", lambda i: effect_charts.tuned_profile_chart(i.profile), _searched, uses=("bins",)),
    Chart("mean_per_p", lambda i: effect_charts.mean_loss_per_p(i.summary), uses=("bins",)),
    Chart("loss_map", lambda i: effect_charts.loss_map(A.p_map(i.trials, i.bins, by=i.by), i.by), uses=("bins",)),
    Chart("importance", lambda i: effect_charts.importance_chart(i.parameter_importance()), lambda i: not i.folded),
    Chart("parallel_coordinates", lambda i: _space("parallel_coordinates")(i.trials), _searched, wide=True),
    Chart("slice", lambda i: _space("slice_plot")(i.trials), _searched, wide=True),
]

CONVERGENCE = [
    Chart("steps_verdict", _convergence_verdict("steps_to_threshold"), _folded, uses=("reference", "rope", "threshold"),
          part="verdicts"),
    Chart("auc_verdict", _convergence_verdict("auc"), _folded, uses=("reference", "rope", "threshold"), part="verdicts"),
    Chart("reach", _reach_chart, uses=("bins", "threshold", "reference", "rope"), sampled=True, wide=True,
          part="verdicts"),
    Chart("val_curves", _val_curves, sampled=True),
    Chart("train_curves", lambda i: convergence_charts.loss_curves(i.curves, i.trials, "train_loss"), sampled=True),
    Chart("median_curves", lambda i: convergence_charts.median_curves(A.curve_cohort(i.curves, i.trials, "val_loss", i.bins)),
          uses=("bins",), sampled=True, wide=True),
    Chart("steps_to_threshold", lambda i: convergence_charts.steps_to_threshold_chart(i.convergence, i.loss_threshold),
          uses=("threshold",), sampled=True),
    Chart("auc", lambda i: convergence_charts.auc_chart(i.convergence), uses=("threshold",), sampled=True),
]

STABILITY = [
    Chart("divergence_verdict", _stability_verdict("divergence"), _folded, uses=("reference", "rope"), wide=True),
    Chart("divergence_rate", lambda i: stability_charts.divergence_rate_chart(A.divergence_rates(i.trials, i.bins,
                                                                                   configurations=search_fields(i.data))),
          lambda i: not i.folded, uses=("bins",)),  # with verdicts: the divergence verdict says it, once
    Chart("divergence_map", lambda i: stability_charts.divergence_map(A.p_map(i.trials, i.bins, by=i.by), i.by), uses=("bins",)),
    Chart("grad_norm", lambda i: stability_charts.max_grad_norm_chart(A.max_grad_norms(i.curves, i.trials)), sampled=True),
    Chart("gain", lambda i: stability_charts.gain_chart(A.curve_cohort(i.curves, i.trials, "gain_mean", i.bins,
                                                         include_diverged=A.successful(i.trials).empty,
                                                         configurations=search_fields(i.data))),
          uses=("bins",), sampled=True),
    Chart("spread", lambda i: stability_charts.spread_chart(i.trials, i.bins, configurations=search_fields(i.data)), uses=("bins",),
          wide=True),
]

STABILITY_LENS = [
    Chart("lr_curve", _lens("lr_curve"), uses=("bins",), part="learning rate"),
    Chart("lr_sensitivity", _lens("lr_sensitivity"), uses=("bins",), part="learning rate"),
    Chart("max_logit", _lens("max_logit"), uses=("bins",), sampled=True),
    Chart("min_head_entropy", _lens("min_head_entropy"), uses=("bins",), sampled=True),
    Chart("logit_growth_verdict", _stability_verdict("logit_growth"), _folded, uses=("reference", "rope"),
          sampled=True),
    Chart("min_entropy_verdict", _stability_verdict("min_entropy"), _folded, uses=("reference", "rope"),
          sampled=True),
    Chart("initial_entropy", _lens("initial_entropy"), sampled=True, wide=True),
]

PAGES = {"Overview": OVERVIEW, "Effect of p": EFFECT_OF_P, "Convergence": CONVERGENCE, "Stability": STABILITY,
         "Stability lens": STABILITY_LENS}


def applying(page: list[Chart], inputs: PageInputs, part: str | None = None) -> list[Chart]:
    """The page's charts that apply to this study, in their order (those of one part, if given)."""
    return [c for c in page if (part is None or c.part == part) and c.applies(inputs)]


def figure(chart: Chart, inputs: PageInputs):
    """The chart's figure, built once per choice it uses; a chart of sampled curves says so on it."""
    def build():
        fig = chart.build(inputs)
        if chart.sampled and inputs.data.curve_note:
            look.mark_sample(fig, inputs.data.curve_note)
        return fig
    return inputs.shared(("chart", chart.name, *(getattr(inputs, u) for u in chart.uses)), build)


__all__ = ["Chart", "PageInputs", "PAGES", "OVERVIEW", "EFFECT_OF_P", "CONVERGENCE", "STABILITY", "STABILITY_LENS",
           "applying", "figure"]
