"""StudySpec's option fields as a reader and a type checker see them. Generated from
lpstudy/design/options.py (OPTIONS, their one declaration) by `python -m lpstudy.design.options`:
never edit it by hand; tests/test_types.py fails where it and OPTIONS differ. StudySpec
(lpstudy/design/spec.py) takes its option fields from OPTIONS when it is made; a type checker
reads them here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True)
class DeclaredOptions:
    # The preset every trial starts from (a study YAML's `preset:` too)
    preset: str = 'cpu'
    # tpe (chosen on the replay benchmark's suite, docs/search-cost.md), cmaes, random or grid
    sampler: str = 'tpe'
    # none, median, sha (successive halving) or hyperband; spread trials are never pruned
    pruner: str = 'none'
    # The first trials, spread over the space by a Sobol sequence and never pruned (0: none); search --workers W makes a new study's W where W is over 8; for workers started by hand, give their number
    spread_trials: int = 8
    # The leading configurations raced on more folds before one is returned as the best (SMAC's intensification; 0: the tuning fold's best, measured on 1 fold)
    race: int = 2
    # The folds a raced configuration is measured on at most (the tuning fold among them)
    race_folds: int = 5
    # The last share of the trials a run has (--n-trials, or the study's target) kept for races: past it a worker takes only a leader's next fold, waits while trials run, and stops when none does (0: none)
    race_reserve: float = 0.2
    # Record the first step each run reaches this validation loss (nats)
    loss_threshold: float | None = None
    # TPE's random trials before it models the space
    n_startup_trials: int = 10
    # Seed of the sampler (each trial draws from a stream of its own, whichever worker takes it)
    sampler_seed: int | None = None
    # A target: workers stop once the study has this many finished trials
    n_trials: int | None = None
    # Repeat the K-fold cross-validation this many times, each over a new partition of the text and new training seeds (R × K runs per arm)
    repeats: int = 1
    # Train every (arm, fold) cell with this many training seeds: their mean is the cell's loss and their spread measures training noise apart from the partition's (S × R × K runs per arm)
    seeds: int = 1
    # Seconds between a running trial's heartbeats (SQL storages)
    heartbeat_interval: int = 10
    # A running trial without heartbeat this long (s) is failed and retried
    grace_period: int = 60
    # How often a failed trial (dead or interrupted worker) is retried with its parameters
    max_retry: int = 2
    # Save a resumable checkpoint of each trial every this many evaluations (0: never)
    checkpoint_interval: int = 5
