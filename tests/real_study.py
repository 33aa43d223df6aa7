"""A small study written by real `lpstudy` workers, once per test run (under xdist too:
tests/once_per_run.py): what the read side (frames, status, export, report, analysis, the
dashboard) is tested on, so that those tests read what a worker writes (its user attributes,
p = ∞ as it stores it, its metrics rows), not what a generator of synthetic studies believes a
worker writes.

One SQLite database, two studies of the `smoke` model at 30 steps (evaluations at 0, 10, 20, 30):

  grid    `lpstudy replicate`: p ∈ {1, 2, ∞} × 2 folds, six cells;
  search  `lpstudy create`, random sampler (seeded) over p ∈ [1, 4] ∪ {∞}, lr ∈ [1e-3, 1] (log) and
          gain_init ∈ [2, 64] (log), without gradient clipping or warm-up and a divergence factor
          of 1.2, with the median pruner:
          large learning rates diverge, and runs behind the median at an evaluation are pruned.

Each study is run by one worker process (`lpstudy worker --devices cpu`, one thread), the two side by
side: a study's trials run in order, so the search's sampled values, its pruned trials and its
diverged ones are the same in every session. About half a minute of CPU.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.study_helpers import TINY, lpstudy, start_worker, trials_of, wait_all

SEARCH_TRIALS = 10
GRID_P = "1,2,inf"
GRID_FOLDS = 2
SAMPLER_SEED = 1  # its 10 random trials (each its own stream of the seed: lpstudy.study.seeded_sampler) hold p = ∞ (∞ is 1/8 of the draws), hot learning rates that diverge, and pruned runs
# No gradient clipping and no warm-up in the search, and a run counts as diverged once its training loss
# exceeds 1.2 times its first: a large learning rate diverges within a few steps, before the pruner
# (which looks from the first evaluation on) could stop it.
HOT = ["--set", "grad_clip=0", "--set", "warmup_steps=0", "--set", "divergence_factor=1.2"]


def write_real_grids(folder: Path) -> str:
    """Three grid studies run by real workers in one SQLite database; its URL. "g": 2 p × 2 lr × 2
    folds on the smoke model (30 steps, evaluations at 0, 10, 20, 30), run by two workers; beside
    it two grids of lr = 0.1 alone: "g-lr" shares g's fixed settings (a column run later), "g-k5"
    splits the corpus into K = 5 folds instead of 10. What replay, export-grid and the files they
    write are tested on (tests/test_replay.py, tests/test_file_modes.py)."""
    url = f"sqlite:///{folder / 'grid.db'}"
    for study, extra in (("g", ("--lr", "1e-3,1e-2")), ("g-lr", ("--lr", "1e-1")),
                         ("g-k5", ("--lr", "1e-1", "--folds", "5"))):
        made = lpstudy("create", "--study", study, "--storage", url, "--preset", "smoke", "--sampler", "grid",
                       "--p", "1,3", "--fold", "0,1", *extra, *TINY)
        assert made.returncode == 0, made.stderr
    workers = [start_worker("g", url, log=folder / "w.log", devices="cpu,cpu")]
    workers += [start_worker(study, url, log=folder / f"{study}.log") for study in ("g-lr", "g-k5")]
    assert wait_all(workers, timeout=900) == [0, 0, 0]  # a guard against a hang: four torch processes on a busy machine
    return url


@dataclass(frozen=True)
class RealStudy:
    url: str
    path: Path
    search: str = "search"
    grid: str = "grid"


def write_real_study(folder: Path) -> RealStudy:
    path = folder / "real.db"
    url = f"sqlite:///{path}"
    made = [
        lpstudy("replicate", "--study", "grid", "--storage", url, "--preset", "smoke", "--p", GRID_P,
                "--folds", str(GRID_FOLDS), *TINY),
        lpstudy("create", "--study", "search", "--storage", url, "--preset", "smoke", *TINY, "--sampler", "random",
                "--sampler-seed", str(SAMPLER_SEED), "--spread-trials", "0", "--p", "1:4,inf", "--lr", "1e-3:1", "--gain-init", "2:64",
                "--pruner", "median", "--race", "0", *HOT),  # its trials all on fold 0: the reads of one fold's runs
    ]
    for done in made:
        assert done.returncode == 0, done.stderr
    logs = [folder / "grid.log", folder / "search.log"]
    workers = [start_worker("grid", url, log=logs[0]),
               start_worker("search", url, "--n-trials", str(SEARCH_TRIALS), log=logs[1])]
    codes = wait_all(workers, timeout=600)
    assert codes == [0, 0], [log.read_text()[-3000:] for log in logs]
    study = RealStudy(url=url, path=path)
    _check_it_holds_what_the_tests_read(study)
    return study


def _check_it_holds_what_the_tests_read(study: RealStudy) -> None:
    """Fail here, naming what is missing, rather than in a test that needed it."""
    import math

    from lpstudy.values import read_p

    grid = trials_of(study.url, study.grid)
    assert Counter(t.state.name for t in grid) == {"COMPLETE": 6}, [t.state.name for t in grid]
    search = trials_of(study.url, study.search)
    states = Counter(t.state.name for t in search)
    diverged = [t for t in search if t.user_attrs.get("diverged")]
    inf = [t for t in search if math.isinf(read_p(t.user_attrs.get("p")))]  # stored as "inf"
    assert len(search) == SEARCH_TRIALS and states["PRUNED"] >= 1 and diverged and inf, (
        f"the real study's search lacks a pruned, a diverged or a p = ∞ trial: {dict(states)}, "
        f"{len(diverged)} diverged, {len(inf)} at p = ∞; change SAMPLER_SEED")
    assert any(not t.user_attrs.get("diverged") and t.state.name == "COMPLETE" for t in search)
