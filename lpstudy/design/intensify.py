"""Which configuration a search returns, decided in one place: the leading candidates raced across folds.

A search samples on one fold (its tuning fold), and the configuration with the lowest loss there is,
among many configurations within one fold's noise of each other, the one whose noise ran lowest: it
is not the one a user finds again on other folds. SMAC's intensification (Hutter, Hoos and
Leyton-Brown, "Sequential model-based optimization for general algorithm configuration", LION 2011)
and iterated racing (irace: López-Ibáñez et al., "The irace package: iterated racing for automatic
algorithm configuration", Operations Research Perspectives 2016) answer this the same way: the
leading candidates are evaluated on more instances (here folds) before one is returned, and a
candidate that falls behind costs no more evaluations. The rule here:

- **requests** (`Intensifier.requests`): after each finished evaluation, the `top` leading
  configurations by their fold-adjusted mean loss each get their next missing fold (the tuning fold
  first, then the others in order, up to `max_folds` folds), one fold at a time: a candidate whose
  mean falls out of the lead after a fold is raced no further. Fold-adjusted: a fold's offset (how
  much easier or harder it is) is the mean paired difference to the tuning fold over the
  configurations measured on both (an additive model of configuration and fold, the fold a
  nuisance), so a configuration seen on the tuning fold alone is compared on the scale of the others.
- **returned** (`Intensifier.returned`): among the configurations measured on the most folds (the
  incumbent's, as in SMAC: a challenger replaces it only once it has been run as often), the lowest
  mean loss; never a configuration that diverged on any fold. Before any configuration has a
  second fold, the tuning fold's best, said to be measured on 1 fold.

- **the race reserve** (`RaceReserve.only_races`): the last `share` of a search's budget is kept for
  races. Once the compute spent and committed (the running trials counted to their end) reaches
  (1 − share) of the budget, a worker that frees takes only an enqueued race; with none waiting it
  waits while trials run (their ends may enqueue races) and stops when none runs. With many
  workers the whole budget would otherwise start at once, before any trial has finished to say
  which leaders to race (issue 54).

With `top = 0` nothing is raced and the tuning fold's best is returned (the rule before issue 45).
The worker (lpstudy.study.worker: it enqueues the requests as trials, lpstudy.study.races, and
keeps the reserve) and the replay benchmark (lpstudy.results.replay) both ask these classes, so the
benchmark measures what a study returns. Plain Python and NumPy/SciPy: no Optuna, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

CONFIDENCE = 0.95
K = TypeVar("K", bound=Hashable)  # what names a configuration: a trial number, its parameters, ...


@dataclass(frozen=True)
class Evaluation(Generic[K]):
    """One finished run of a configuration (`key`: anything hashable that names it) on one fold."""

    key: K
    fold: int
    loss: float
    diverged: bool = False


@dataclass(frozen=True)
class Returned(Generic[K]):
    """The configuration a search returns, with how well its loss is known."""

    key: K
    folds: tuple[int, ...]  # the folds it was measured on
    losses: tuple[float, ...]  # its loss on each, in that order
    mean: float
    interval: tuple[float, float]  # a corrected t interval of its expected loss over folds (±∞ on one fold)

    @property
    def n_folds(self) -> int:
        return len(self.folds)


@dataclass
class _Config:
    order: int
    losses: dict[int, float] = field(default_factory=dict)
    diverged: bool = False


def mean_interval(losses: Sequence[float], k: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The t interval of the expected loss over folds of `losses` (one value per fold of one K-fold
    partition); (−∞, ∞) for one value, or for values that do not vary (no spread to estimate one from).
    The folds share training text, so the variance is Nadeau and Bengio's corrected one, as the verdicts'
    (lpstudy.intervals): the plain t interval would be too narrow (Bengio and Grandvalet, JMLR 2004)."""
    from lpstudy.intervals import corrected_stats, interval

    if len(losses) < 2:
        return -math.inf, math.inf
    mean, se, df = corrected_stats(list(losses), k)
    low, high = interval(mean, se, df, confidence)
    return (float(low), float(high)) if math.isfinite(low) and math.isfinite(high) else (-math.inf, math.inf)


@dataclass(frozen=True)
class RaceReserve:
    """The last `share` of a search's budget kept for races (the module's docstring). The budget is
    counted in the caller's unit: the replay counts steps of compute, the worker counts trials (one
    trial a run to its end: its compute, with the search's default pruner `none`)."""

    share: float = 0.0

    def only_races(self, committed: float, budget: float | None) -> bool:
        """Whether a worker that frees now takes only a race: `committed` (spent, and the running
        trials to their end) has reached (1 − share) of `budget` (None: no budget, no reserve)."""
        if self.share <= 0 or budget is None or budget <= 0:
            return False
        return committed >= (1 - self.share) * budget


@dataclass(frozen=True)
class Intensifier:
    """The racing rule (the module's docstring): `top` leading configurations raced, up to
    `max_folds` folds each, over the folds `folds` (the tuning fold first)."""

    top: int
    max_folds: int
    folds: tuple[int, ...]

    @classmethod
    def of(cls, top: int, max_folds: int, tuning_fold: int, n_folds: int) -> "Intensifier":
        """The rule of a search tuning on `tuning_fold` of `n_folds` folds (0 .. n_folds − 1)."""
        order = (tuning_fold, *[f for f in range(n_folds) if f != tuning_fold])
        return cls(int(top), int(max_folds), order)

    @property
    def wanted(self) -> tuple[int, ...]:
        """The folds a raced configuration is measured on, in the order they are requested."""
        return self.folds[:max(1, min(self.max_folds, len(self.folds)))] if self.top > 0 else self.folds[:1]

    def _table(self, evaluations: Iterable[Evaluation[K]]) -> dict[K, _Config]:
        table: dict[K, _Config] = {}
        for e in evaluations:
            if e.fold not in self.folds or e.loss is None or not math.isfinite(e.loss):
                continue
            c = table.setdefault(e.key, _Config(len(table)))
            c.losses.setdefault(e.fold, float(e.loss))  # a fold measured twice: the first counts
            c.diverged = c.diverged or bool(e.diverged)
        return table

    def _offsets(self, table: dict[K, _Config]) -> dict[int, float]:
        """Each fold's mean paired difference to the tuning fold (0 where none is measured on both)."""
        tuning = self.folds[0]
        offsets = {tuning: 0.0}
        for f in self.folds[1:]:
            diffs = [c.losses[f] - c.losses[tuning] for c in table.values() if f in c.losses and tuning in c.losses]
            offsets[f] = sum(diffs) / len(diffs) if diffs else 0.0
        return offsets

    def _leaders(self, table: dict[K, _Config]) -> list[K]:
        offsets = self._offsets(table)

        def adjusted(c: _Config) -> float:
            return sum(v - offsets[f] for f, v in c.losses.items()) / len(c.losses)

        alive = [k for k, c in table.items() if not c.diverged]
        return sorted(alive, key=lambda k: (adjusted(table[k]), table[k].order))

    def requests(self, evaluations: Iterable[Evaluation[K]], pending: Iterable[tuple[K, int]] = ()
                 ) -> list[tuple[K, int]]:
        """The (configuration, fold) evaluations to add now: the next missing fold of each of the
        `top` leaders, none already `pending` (enqueued or running)."""
        if self.top <= 0:
            return []
        table = self._table(evaluations)
        waiting = set(pending)
        wanted = self.wanted
        out = []
        for key in self._leaders(table)[:self.top]:
            c = table[key]
            if any((key, f) in waiting for f in wanted):
                continue  # racing: one fold at a time
            missing = [f for f in wanted if f not in c.losses]
            if missing:
                out.append((key, missing[0]))
        return out

    def returned(self, evaluations: Iterable[Evaluation[K]]) -> Returned[K] | None:
        """The configuration to return (None before any that did not diverge)."""
        table = self._table(evaluations)
        wanted = set(self.wanted)
        alive = {k: c for k, c in table.items() if not c.diverged}
        if not alive:
            return None
        depth = {k: len(wanted & c.losses.keys()) for k, c in alive.items()}
        most = max(depth.values())
        if most == 0:  # measured only off the folds it races on: the plain mean
            depth = {k: len(c.losses) for k, c in alive.items()}
            most = max(depth.values())
            folds_of = {k: sorted(c.losses) for k, c in alive.items()}
        else:
            folds_of = {k: [f for f in self.wanted if f in c.losses] for k, c in alive.items()}
        deepest = [k for k in alive if depth[k] == most]

        def mean(k: K) -> float:
            return sum(alive[k].losses[f] for f in folds_of[k]) / len(folds_of[k])

        key = min(deepest, key=lambda k: (mean(k), alive[k].order))
        folds = tuple(folds_of[key])
        losses = tuple(alive[key].losses[f] for f in folds)
        return Returned(key, folds, losses, mean(key), mean_interval(losses, len(self.folds)))
