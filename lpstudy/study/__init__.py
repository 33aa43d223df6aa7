"""A study: its search space (space) and spec (spec), creating and loading it in Optuna (studies),
the objective that trains one trial (objective), the worker loop (worker), worker processes
(launch), the paper's replicate grid (replicate), which trial is best (best) and a synthetic demo
study (synthetic). Only the objective imports torch, and only when a trial runs."""
