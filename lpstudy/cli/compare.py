"""`lpstudy compare`: an equal-budget comparison of the values of one field (lpstudy.study.compare):
create or resume it, optionally run local workers, and print where it stands with the paired table."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import StudyOpt, parse_assignments, preflight, quiet_optuna, say, stage_folds, work_estimate
from lpstudy.cli.local_workers import LocalWorkers
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.verdict import RopeOpt
from lpstudy.results.answers.options import DEFAULT_ALPHA, DEFAULT_ROPE, parse_rope
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.cli.study_options import RepeatsOpt, SamplerSeedOpt, SearchOpt, SeedsOpt, SetOpt
from lpstudy.training.costs import presets_help


COMPARE_FOLDS = 5  # --folds when not given: K

@app.command()
@option_groups
def compare(
    *,
    study: StudyOpt,
    preset: Annotated[str, typer.Option(help=f"Required, as for replicate (a comparison runs arms × (budget + K) trials): {presets_help()}.")],
    p: Annotated[Optional[str], typer.Option("--p", help="The arms: p values, comma-separated (shortcut for --arms p=...).")] = None,
    arms: Annotated[Optional[str], typer.Option(help="The arms as FIELD=A,B,C: any training field (e.g. n_layer=2,4).")] = None,
    reference: Annotated[Optional[str], typer.Option(help="The reference arm's value (default p = 2, else the first).")] = None,
    tune: Annotated[str, typer.Option(help="Fields tuned in every arm, comma-separated (default ranges: lr 1e-4:1e-2, gain_init 2:64).")] = "lr,gain_init",
    search: SearchOpt = None,
    budget: Annotated[int, typer.Option(help="Tuning trials per arm (TPE with the median pruner, on fold 0).", min=1)] = 20,
    folds: Annotated[int, typer.Option(help="K: each arm's best configuration runs on each of the K folds.", min=2)] = COMPARE_FOLDS,
    until_decided: Annotated[bool, typer.Option("--until-decided", help="Replicate the arms' best configurations in stages (3, 5, 8, 10 folds, capped at --max-folds) and give an arm no more folds once its verdict against the reference is decided (lpstudy verdict; O'Brien-Fleming alpha spending, Holm across arms).")] = False,
    max_folds: Annotated[Optional[int], typer.Option("--max-folds", help="With --until-decided: K, the folds of the one K-fold CV the stages draw from (default --folds).", min=3)] = None,
    rope: RopeOpt = str(DEFAULT_ROPE),
    repeats: RepeatsOpt = None,
    seeds: SeedsOpt = None,
    tunings: Annotated[int, typer.Option(help="Independent tunings per arm, each with its own sampler seed and tuning fold, each one's chosen configuration run on the K folds: the verdict then spans the luck of the tuning (a t interval over the T tunings; T >= 2 to count it). Runs arms x T x (budget + K x seeds).", min=1, max=100)] = 1,
    set_: SetOpt = None,
    sampler_seed: SamplerSeedOpt = None,
    local: LocalWorkers,
    storage: StorageChoice,
) -> int:
    """Compare the values of one field fairly: the same tuning budget per arm, then K folds each."""
    quiet_optuna()
    from lpstudy.errors import UserError
    from lpstudy.results.reading.compare import compare_progress, load_compare, next_command
    from lpstudy.results.status import render_compare
    from lpstudy.study.compare import create_compare, make_plan

    if (p is None) == (arms is None):
        raise UserError("give the arms: --p 1,2,3,4 or --arms FIELD=A,B,C (one of them)")
    factor, _, values = ("p", "=", p) if p is not None else (arms or "").partition("=")
    if not values:
        raise UserError(f"--arms takes FIELD=A,B,C, got {arms!r}")
    folds = stage_folds(folds, max_folds, until_decided, COMPARE_FOLDS)  # --max-folds beside --folds: one rule
    chosen_rope = parse_rope(DEFAULT_ROPE if rope is None else rope)  # --rope 0 or below: one line, before anything is made
    stages = None
    if until_decided:
        from lpstudy.results.answers.sequential import rounds_of
        from lpstudy.design.until_decided import UntilDecided

        stages = UntilDecided(rounds=tuple(rounds_of(folds)), rope=str(chosen_rope), alpha=DEFAULT_ALPHA)
    plan = make_plan(factor.strip(), values.split(","), tune.split(","), budget, folds, preset, reference,
                     parse_assignments(search, "--search"), parse_assignments(set_, "--set"), sampler_seed, stages,
                     repeats or 1, seeds or 1, tunings)
    device_list = local.device_list()  # a wrong device: refused before anything is made
    store, data = preflight(storage, local.data, trains=bool(device_list), creates=True)
    with store:  # the command's one storage, from its check to its close: it creates, and reads the progress
        store.open(create_tables=True)
        created = create_compare(store, study, plan)
        say(f"comparison {study!r} {'created' if created else 'resumed'} in {store.display_url}: "
            f"{len(plan.values)} arms of {plan.factor} · {plan.budget} tuning trial{'' if plan.budget == 1 else 's'} each on fold "
            f"{', '.join(str(plan.fold_of_tuning(t)) for t in range(plan.tunings))} · then " + (f"up to {plan.folds} folds each in stages of "
                                           f"{'/'.join(map(str, plan.until_decided.rounds))}" if plan.until_decided
                                           else f"{plan.folds} folds each"
                                           + (f", repeated {plan.repeats} times over new partitions and seeds"
                                              if plan.repeats > 1 else "")
                                           + (f", {plan.seeds} training seeds a fold" if plan.seeds > 1 else ""))
            + (f" · {plan.tunings} independent tunings per arm" if plan.tunings > 1 else ""))
        if plan.budget_note():
            say(f"note: {plan.budget_note()}")
        if plan.until_decided and (note := plan.until_decided.one_stage_note()):
            say(note)
        progress = compare_progress(load_compare(store, study))
        if progress.left:
            say(work_estimate(progress.left, plan.preset, plan.fixed, local.workers, local.devices,
                              pruned=bool(progress.tuning_left) and plan.tune_spec(plan.reference).pruner != "none"))
        code = 0
        if device_list:
            from lpstudy.study.launch import spawn_workers
            from lpstudy.study.worker import WorkerOptions

            code = spawn_workers(WorkerOptions(study=study, storage=store.url, data=data, show_progress=False),
                                 device_list, say=say)
        progress = render_compare(store, study)
    if not progress.done:  # the next command only while something is left
        say(f"start workers anywhere: {next_command(study, storage.hint)}")
    return code
