"""Studies run --until-decided, written into a database with planted losses and no training, for the
pages and commands that read such a study back: a replicate (write_staged_replicate) holding the
folds each p ran, or a comparison (write_staged_compare): its arms tuned (two planted trials each),
then each arm's replicate grid holding the folds it ran. Each fold is a finished run with its planted
loss, as a worker leaves it (the cell's fold and p, then the run's attributes). Which folds an arm
ran is the test's planted truth (an arm decided at a look runs no fold after it); that the workers'
stage logic stops there is tests/test_until_decided.py's and tests/test_compare_until_decided.py's
to check."""

from __future__ import annotations

from lpstudy.study.compare import ComparePlan


def write_staged_compare(url: str, name: str, losses: dict[str, list[float]], max_folds: int,
                         rounds: list[int], rope: float) -> ComparePlan:
    """The comparison NAME of p over the arms of `losses` ({"p=2": [the loss of each fold it ran, of
    the one max_folds-fold CV], ...}; p = 2 the reference), staged by `rounds`, with this ROPE.
    Returns its plan."""
    import optuna
    from optuna.distributions import FloatDistribution

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.compare import create_compare, ensure_folds_study, make_plan

    store = open_storage(url, create_tables=True)
    p_values = [label.split("=", 1)[1] for label in losses]
    plan = make_plan("p", p_values, ["lr"], 2, max_folds, "smoke",
                     until_decided={"rounds": list(rounds), "rope": rope, "alpha": 0.05})
    create_compare(store, name, plan)
    for value in plan.values:
        tune = optuna.load_study(study_name=plan.tune_study(name, value), storage=store.optuna)
        for i in range(2):
            tune.add_trial(optuna.trial.create_trial(
                params={"lr": 1e-3 * (i + 1)}, distributions={"lr": FloatDistribution(1e-4, 1e-2, log=True)},
                value=3.0 + i, user_attrs={"lr": 1e-3 * (i + 1), "fold": 0}))
        folds = ensure_folds_study(store, name, plan, value)  # tuned: its grid, empty until a stage fills it
        for fold, loss in enumerate(losses[plan.label(value)]):
            folds.add_trial(optuna.trial.create_trial(
                value=loss, system_attrs={"fixed_params": {"p": float(value), "fold": fold}},
                user_attrs={"fold": fold, "folds": max_folds, "p": float(value), "diverged": False,
                            "final_val_loss": loss}))
    store.close()
    return plan


def write_staged_replicate(url: str, name: str, losses: dict[float, list[float]], max_folds: int,
                           rounds: list[int], rope: float) -> None:
    """The replicate NAME of the p values of `losses` ({2.0: [the loss of each fold it ran, of the one
    max_folds-fold CV], ...}; p = 2 the reference), run --until-decided in `rounds` with this ROPE."""
    import optuna

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.design.spec import replicate_spec
    from lpstudy.study.studies import create_study

    store = open_storage(url, create_tables=True)
    spec = replicate_spec("smoke", list(losses), max_folds,
                          until_decided={"rounds": list(rounds), "reference": 2.0, "rope": rope, "alpha": 0.05})
    study, _ = create_study(store, name, spec)
    for p, runs in losses.items():
        for fold, loss in enumerate(runs):
            study.add_trial(optuna.trial.create_trial(
                value=loss, system_attrs={"fixed_params": {"p": float(p), "fold": fold}},
                user_attrs={"fold": fold, "folds": max_folds, "p": float(p), "diverged": False, "final_val_loss": loss}))
    store.close()
