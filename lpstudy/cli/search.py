"""`lpstudy search`: a study from nothing to its best trial in one command. It creates the study if
it is missing (from flags or --config, as `create` does; an existing one of the same spec is
continued), says how many trials it will run and about how long they take, runs N local worker
processes with one progress bar over the trials, then prints the configuration the search returns
(`lpstudy status`'s words: "best" once raced on 2 folds or more, else "leading" on 1 fold, with the
command that races it) and the commands that open the dashboard and export it."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import StudyOpt, preflight, quiet_optuna, say
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.cli.study_options import StudyOptions, TrialOptions
from lpstudy.names import shell_quoted


def spread_for_workers(spec_options: StudyOptions, stored, workers: int) -> dict[str, int]:
    """A new study's spread phase scaled to its workers: `spread_trials` = W where W workers exceed
    the default and the user gave no spread phase (flag or study file), so that the first wave of W
    trials is a Sobol design rather than the sampler's random start (issue 54, measured by the replay
    at 32 and 128 workers: docs/search-cost.md). A study that exists keeps its own."""
    from lpstudy.design.options import OPTIONS

    given = any(key == "spread_trials" for _, key, _ in spec_options.given())
    if stored is not None or given or workers <= OPTIONS["spread_trials"].default:
        return {}
    return {"spread_trials": workers}


@app.command()
@option_groups
def search(
    *,
    study: StudyOpt = "lp-search",
    n_trials: Annotated[int, typer.Option("--n-trials", help="Trials to run now, shared among the workers.", min=1)] = 8,
    workers: Annotated[int, typer.Option(help="Local worker processes, sharing the study. The last 20 % of --n-trials are kept for races (--race-reserve): past it a worker runs only the leaders' next folds, waits for them, and stops when none is left, so a run may end under --n-trials. A new study's spread phase is W trials where W is over 8 (--spread-trials says otherwise). Replayed on the benchmark's grids (docs/search-cost.md), it returns a configuration within 2 % of the best all-fold loss in 95-100 % of seeds at 1, 8, 32 and 128 workers (55-85 % on a needle grid), at one worker's compute; its choice comes 1-1.5x the ideal (one worker's time / W) at 8 workers on most grids, 2-15x at 32 (the races wait for the first wave).", min=1)] = 1,
    devices: Annotated[str, typer.Option(help="auto (every visible GPU, else CPU), cpu, or a list shared out round-robin.")] = "auto",
    spec_options: StudyOptions,
    trial_options: TrialOptions,
    data: Annotated[Optional[str], typer.Option(help="Text file to train on (else $LPSTUDY_DATA, the cache, or a download).")] = None,
    storage: StorageChoice,
) -> int:
    """Create a study if it is missing, run N local workers with progress, print the best trial."""
    quiet_optuna()
    from lpstudy.results.status import render_status, study_status
    from lpstudy.study.launch import resolve_devices
    from lpstudy.study.studies import load_spec, open_and_create
    from lpstudy.study.worker import WorkerOptions
    from lpstudy.cli.worker_progress import run_with_progress
    from lpstudy.training.costs import study_estimate

    spec_options.spec(**trial_options.given())  # a wrong value: refused before anything else
    available = resolve_devices(devices)  # a wrong device is refused before anything is written
    store, data = preflight(storage, data, trains=True, creates=True)  # offline: one line, no study made
    with store:  # the command's one storage, from its check to its close
        the_study, created, _ = open_and_create(
            store, study, lambda stored: spec_options.spec_for(
                study, stored, **trial_options.given(), **spread_for_workers(spec_options, stored, workers)))
        spec = load_spec(store, study)  # a study that exists: as it is stored
        say(f"study {study!r} {'created' if created else 'continued'} in {store.display_url} · {spec.describe()}")
        say(f"space: {spec.space.describe()}")

        device_list = [available[i % len(available)] for i in range(workers)]
        max_steps = spec.base_config().max_steps
        say("runs " + study_estimate(n_trials, spec.preset, workers, gpu=device_list[0] != "cpu",
                                     max_steps=max_steps, pruned=spec.pruner != "none"))
        from optuna.trial import TrialState

        taken = store.count_trials(the_study, (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
        options = WorkerOptions(study=study, storage=store.url, n_trials=n_trials, data=data, show_progress=False,
                                run_budget=(taken, n_trials))  # the race reserve: a share of this run, every worker's
        code = run_with_progress(options, device_list, the_study, n_trials)
        status = study_status(store, study)
        render_status(status)
    where, name = storage.hint, shell_quoted(study)
    if spec.race > 0 and (status.get("best") or {}).get("chosen_as") == "leading on 1 fold":
        say(f"race:      lpstudy search --study {name}{where}   (more trials: the leaders run on more folds "
            "before one is called best)")
    say(f"dashboard: lpstudy dashboard --study {name}{where}")
    say(f"export:    lpstudy export --study {name}{where} -o best.yaml   "
        f"then: lpstudy train --config best.yaml")
    return code
