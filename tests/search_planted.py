"""Planted search studies for the tests of p's effect in a search (tests/test_search_answer.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lpstudy.design.spec import StudySpec
from lpstudy.results.reading.frames import StudyData, StudyInfo

SPACE = {"p": {"type": "range", "low": 1.0, "high": 4.0, "log": False},
         "lr": {"type": "range", "low": 1e-4, "high": 1e-2, "log": True},
         "gain_init": {"type": "range", "low": 2.0, "high": 64.0, "log": True}}


def search_trials(p, lr, gain, loss, extra: dict | None = None) -> pd.DataFrame:
    """A trials frame of completed search runs: p in `p` (∞ allowed) and as the trial's parameters."""
    n = len(loss)
    frame = pd.DataFrame({"number": np.arange(n), "state": "COMPLETE", "value": np.asarray(loss, dtype="float64"),
                          "p": np.asarray(p, dtype="float64"), "lr": lr, "gain_init": gain, "fold": 0.0,
                          "seed": 0.0, "diverged": False, "final_val_loss": loss, "gain_rule": None})
    frame["param_p"] = frame["p"].where(np.isfinite(frame["p"]))
    frame["param_p_inf"] = np.isinf(frame["p"])
    frame["param_lr"], frame["param_gain_init"] = frame["lr"], frame["gain_init"]
    for name, values in (extra or {}).items():
        frame[f"param_{name}"] = values
    return frame


def study(trials: pd.DataFrame, space: dict = SPACE, name: str = "planted") -> StudyData:
    info = StudyInfo(name=name, kind="search", preset="smoke", spec=StudySpec.from_plain({"kind": "search", "preset": "smoke", "space": space}))
    return StudyData(name=name, info=info, trials=trials, curves=pd.DataFrame())


def lr_only(n: int = 120, seed: int = 0, noise: float = 0.02) -> pd.DataFrame:
    """The loss depends on lr only (a bowl in log lr at 1e-3); p is tied to lr in the sample
    (rank correlation about 0.8): a naive per-p mean shows an effect of p that is lr's."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0, 1, n)
    log_lr = -4 + 2 * u
    p = np.clip(1 + 3 * (0.8 * u + 0.2 * rng.uniform(0, 1, n)), 1, 4)
    gain = np.exp(rng.uniform(math.log(2), math.log(64), n))
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 + rng.normal(0, noise, n)
    return search_trials(p, 10 ** log_lr, gain, loss)


def p_effect(n: int = 120, seed: int = 1, effect: float = 0.2, noise: float = 0.02) -> pd.DataFrame:
    """The loss falls linearly in p by `effect` over [1, 4], plus lr's bowl; p, lr, gain independent."""
    rng = np.random.default_rng(seed)
    log_lr = rng.uniform(-4, -2, n)
    p = rng.uniform(1, 4, n)
    gain = np.exp(rng.uniform(math.log(2), math.log(64), n))
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 - effect * (p - 1) / 3 + rng.normal(0, noise, n)
    return search_trials(p, 10 ** log_lr, gain, loss)


def p_shape(p):
    """The planted shape of p's effect: 0 at p = 2, +1 at p = 1, −1 at p = 4, falling and flattening
    towards 4 (as the paper's p > 2 does): −(p − 2)·5/6 + (p − 2)²/6."""
    p = np.asarray(p, dtype="float64")
    return -(p - 2) * 5 / 6 + (p - 2) ** 2 / 6


def p_curve(n: int = 120, seed: int = 1, ends: float = 0.015, noise: float = 0.02) -> pd.DataFrame:
    """The loss is 2 + lr's bowl (0 at lr = 1e-3) + `ends` · p_shape(p) + noise, p, lr and gain
    independent: its true profile (lr tuned at each p) is 2 + ends · p_shape(p), `ends` away from
    p = 2's at p = 1 and p = 4 (0.015: 1.5 ROPE of the default ± 0.5 % at a loss of 2)."""
    rng = np.random.default_rng(seed)
    log_lr = rng.uniform(-4, -2, n)
    p = rng.uniform(1, 4, n)
    gain = np.exp(rng.uniform(math.log(2), math.log(64), n))
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 + ends * p_shape(p) + rng.normal(0, noise, n)
    return search_trials(p, 10 ** log_lr, gain, loss)
