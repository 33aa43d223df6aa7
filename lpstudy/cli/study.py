"""The study commands: create, worker, status, export, replicate.

The storage is one URL from --storage, else $LPSTUDY_STORAGE, else sqlite:///storage/lpstudy.db
(under the current directory); it is printed only with its password replaced by ***.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.check_mode import CheckOpt, check_create, check_worker
from lpstudy.cli.common import StudyOpt, parse_assignments, preflight, quiet_optuna, say, stage_folds, work_estimate
from lpstudy.cli.local_workers import LocalWorkers
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.verdict import RopeOpt
from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.results.answers.options import DEFAULT_ALPHA, DEFAULT_ROPE, parse_rope
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.cli.study_options import GraceOpt, HeartbeatOpt, RepeatsOpt, RetryOpt, SeedsOpt, SetOpt, StudyOptions, TrialOptions
from lpstudy.errors import UserError
from lpstudy.names import shell_quoted
from lpstudy.training.costs import presets_help


REPLICATE_FOLDS = 10  # --folds when not given: K

@app.command()
@option_groups
def create(
    *,
    study: StudyOpt,
    spec_options: StudyOptions,
    n_trials: Annotated[Optional[int], typer.Option("--n-trials", help="A target: workers stop once the study has this many finished trials.", min=1)] = None,
    trial_options: TrialOptions,
    storage: StorageChoice,
    check: CheckOpt = False,
) -> None:
    """Create a study: its search space, sampler and pruner (run again with the same spec: no change)."""
    quiet_optuna()
    from lpstudy.study.studies import load_spec, open_and_create

    spec = spec_options.spec(n_trials=n_trials, **trial_options.given())  # a wrong value: refused before the storage opens
    if check:
        check_create(spec, storage, study)
    store, _ = preflight(storage, None, trains=False, creates=True)
    with store:  # the command's one storage, closed after
        _, created, enqueued = open_and_create(
            store, study, lambda stored: spec_options.spec_for(study, stored, n_trials=n_trials, **trial_options.given()))
        spec = load_spec(store, study)
    verb = "created" if created else "exists already, unchanged:"
    say(f"study {study!r} {verb} in {store.display_url} · {spec.describe()}")
    say(f"space: {spec.space.describe()}")
    if spec.is_grid:
        say(f"grid: {enqueued} cell(s) enqueued")
    say(f"start workers: lpstudy worker --study {shell_quoted(study)}{storage.hint}")


@app.command()
@option_groups
def worker(
    *,
    study: StudyOpt,
    devices: Annotated[str, typer.Option(help="auto (every visible GPU, else one CPU worker), cpu, or a list: cuda:0,cuda:1 (one process each).")] = "auto",
    n_trials: Annotated[Optional[int], typer.Option("--n-trials", help="Run this many trials (shared among the processes), then stop.", min=1)] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Start no trial after this many seconds.", min=0)] = None,
    data: Annotated[Optional[str], typer.Option(help="Text file to train on (else $LPSTUDY_DATA, the cache, or a download).")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars, only a line per trial.")] = False,
    heartbeat_interval: HeartbeatOpt = None,
    grace_period: GraceOpt = None,
    max_retry: RetryOpt = None,
    threads: Annotated[Optional[int], typer.Option(help="Torch threads per CPU worker process (default: the cores split among this command's CPU workers; one CPU worker: each run's default, one thread for the smoke and cpu presets and every usable core for paper).", min=1)] = None,
    artifacts: Annotated[Optional[str], typer.Option(help="Where trials keep their checkpoints: a folder every worker sees, or s3://BUCKET (default $LPSTUDY_ARTIFACTS, else FILE.artifacts next to a SQLite or journal file).")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="The study YAML its creator was given: start only on a study with that spec, marked ready by a `lpstudy create` that succeeded (another spec: refused, exit 2).")] = None,
    wait_for_spec_s: Annotated[float, typer.Option("--wait-for-spec-s", help="Wait this long (s) for the study (with --config: for its creator's success) to appear; then exit 2. 0: look once.", min=0)] = 0.0,
    metrics_port: Annotated[Optional[int], typer.Option("--metrics-port", help="Serve Prometheus metrics on 0.0.0.0:PORT/metrics (9108 by convention; process i of --devices on PORT+i; default $LPSTUDY_METRICS_PORT, else 0: none).")] = None,
    run_budget: Annotated[Optional[str], typer.Option("--run-budget", hidden=True, help="START:N, the run a command started this worker for: the study's trials taken when it started and the run's trials (the race reserve is a share of it).")] = None,
    storage: StorageChoice,
    check: CheckOpt = False,
) -> int:
    """Take trials from a study and train them (run as many workers as you like, anywhere)."""
    quiet_optuna()
    if check:
        check_worker(storage, study, devices, data, config, metrics_port, artifacts)
    from lpstudy.study.launch import resolve_devices, spawn_workers
    from lpstudy.study.telemetry import metrics_port as checked_metrics_port

    device_list = resolve_devices(devices)
    port = checked_metrics_port(metrics_port)
    # to the worker processes through the environment; the corpus found once, before any process
    checked, data = preflight(storage, data, trains=True)
    url = checked.url
    from lpstudy.study.deciders import decider_for
    from lpstudy.design.spec import build_spec, read_study_file
    from lpstudy.study.spec_wait import wait_for_study
    from lpstudy.study.worker import WorkerOptions, run_worker

    expected = build_spec(read_study_file(config)) if config is not None else None
    # the study (and its creator's success) once, here: one clear line rather than one per process
    opened = wait_for_study(checked, study, expected, wait_for_spec_s, f"--config {config}", say=say)
    options = WorkerOptions(study=study, storage=url, n_trials=n_trials, timeout=timeout, data=data,
                            show_progress=not no_progress, heartbeat_interval=heartbeat_interval,
                            grace_period=grace_period, max_retry=max_retry, threads=threads,
                            artifacts=artifacts, config=str(config) if config is not None else None,
                            metrics_port=port,
                            run_budget=_run_budget(run_budget))
    with opened:  # this process's one storage: the worker trains on it, and it is closed after
        if len(device_list) > 1:
            opened.close()  # each worker process opens its own
            return spawn_workers(options, device_list, say=say)
        options.device = device_list[0]
        if port:
            from lpstudy.study.telemetry import serve

            serve(port, options.device)
            say(f"metrics on http://0.0.0.0:{port}/metrics")
        # what the worker asks before each trial: a comparison's arms, a study's stages, or its own trials
        report = run_worker(options, storage=opened, decider=decider_for(opened, study))
    if report.exit_code:
        raise UserError(f"worker stopped: {report.reason}")
    return 0


def _run_budget(text: str | None) -> tuple[int, int] | None:
    """--run-budget START:N as two integers (None: not given)."""
    if text is None:
        return None
    start, sep, total = text.partition(":")
    if not (sep and start.isdigit() and total.isdigit()):
        raise UserError(f"--run-budget takes START:N (two whole numbers), got {text!r}")
    return int(start), int(total)


@app.command()
@option_groups
def status(
    *,
    study: StudyOpt,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as one JSON object.")] = False,
    storage: StorageChoice,
) -> None:
    """Trials by state, the best trial, who runs what, the time left (and the replicate table)."""
    from lpstudy.results.status import render_status, study_status

    with storage.reader() as reader:
        result = study_status(reader, study)
        if result.get("kind") == "compare":  # the parent of `lpstudy compare`: no trials of its own; its arms'
            from lpstudy.results.reading.compare import compare_progress, load_compare

            result["comparison"] = compare_progress(load_compare(reader, study)).to_json()
        rounds = _rounds(reader, study) if result.get("kind") in ("replicate", "compare") else None
        if rounds is not None:  # replicate or compare --until-decided: its rounds, each arm's state, the compute saved
            result["sequential"] = rounds.sequential.to_json() if rounds.sequential else None
        if as_json:
            sys.stdout.write(json.dumps(result) + "\n")
        else:
            render_status(result)
            if rounds is not None:
                from lpstudy.results.tables.verdicts import sequential_lines

                for line in sequential_lines(rounds):
                    print(line)
            if result.get("kind") == "compare":  # the parent of `lpstudy compare`: its arms' table
                from lpstudy.results.reading.compare import next_command
                from lpstudy.results.status import render_compare

                render_compare(reader, study, next_hint=next_command(study, storage.hint))


def _rounds(reader, study: str) -> VerdictAnswer | None:
    """The verdicts of a sequential replicate (its rounds under "sequential"), None for any other."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.reading.compare import verdict_data

    data = verdict_data(reader, study, curves=False)
    plan = data.info.until_decided
    if plan is None:
        return None
    answer = study_answer(data, stage_options(plan))
    return answer if isinstance(answer, VerdictAnswer) else None  # a grid's answer; a search has no stages


@app.command()
@option_groups
def export(
    *,
    study: StudyOpt,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write here (atomically) instead of stdout.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="yaml or json.")] = "yaml",
    top: Annotated[int, typer.Option("--top", help="The best K trials instead of the best one.", min=1)] = 1,
    storage: StorageChoice,
) -> None:
    """The best trial (or the top K) as a run file for `lpstudy train --config`."""
    from lpstudy.results.export import export_text, train_command, write_export

    from lpstudy.paths import check_output_file

    if output is not None:
        check_output_file(output, "--output")
    with storage.reader() as reader:
        text = export_text(reader, study, top_k=top, fmt=fmt)
    if output is None:
        sys.stdout.write(text)
        return
    write_export(output, text)
    hint = f"; retrain: {train_command(str(output))}" if top == 1 else ""
    say(f"wrote {output}{hint}")


@app.command()
@option_groups
def replicate(
    *,
    study: StudyOpt,
    preset: Annotated[str, typer.Option(help=f"Required (no default: the paper's takes days on a CPU): {presets_help()}.")],
    p: Annotated[str, typer.Option("--p", help="The p values, comma-separated ('inf' allowed).")] = "1,1.5,2,2.5,3,3.5,4",
    folds: Annotated[int, typer.Option(help="K: every p runs on each of the K folds.", min=2)] = REPLICATE_FOLDS,
    lr: Annotated[Optional[str], typer.Option(help="Learning rate (default: the preset's), or A,B,C: an LR sweep, every p × lr × fold.")] = None,
    gain_init: Annotated[Optional[str], typer.Option(help="Initial gain: a number, or 'matched' (temperature-matched to p = 2; default log₂(L²−L)).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Training seed (default 0).")] = None,
    repeats: RepeatsOpt = None,
    seeds: SeedsOpt = None,
    set_: SetOpt = None,
    until_decided: Annotated[bool, typer.Option("--until-decided", help="Run the folds in stages (3, 5, 8, 10, then doubling, capped at --max-folds) and give an arm no more folds once its verdict against p = 2 is decided (lpstudy verdict; O'Brien-Fleming alpha spending keeps the error rate over the stages). With --seeds S each stage's folds run their S seeds.")] = False,
    max_folds: Annotated[Optional[int], typer.Option("--max-folds", help="With --until-decided: K, the folds of the one K-fold CV the stages draw from (default --folds).", min=3)] = None,
    rope: RopeOpt = str(DEFAULT_ROPE),
    local: LocalWorkers,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="With --workers: no progress bars.")] = False,
    trial_options: TrialOptions,
    storage: StorageChoice,
) -> int:
    """The paper's protocol: a grid of p values × K folds; create (or resume) it, and return."""
    quiet_optuna()
    fixed: dict[str, Any] = parse_assignments(set_, "--set")
    for name, value in (("lr", lr), ("gain_init", gain_init), ("seed", seed)):
        if value is not None:
            fixed[name] = value
    p_values = [v.strip() for v in p.split(",") if v.strip()]
    sequential = None
    folds = stage_folds(folds, max_folds, until_decided, REPLICATE_FOLDS)  # --max-folds beside --folds: one rule
    chosen_rope = parse_rope(DEFAULT_ROPE if rope is None else rope)  # --rope 0 or below: one line, before anything is made
    if until_decided:
        from lpstudy.results.answers.sequential import rounds_of
        from lpstudy.design.until_decided import UntilDecided

        sequential = UntilDecided(rounds=tuple(rounds_of(folds)), reference=2.0, rope=str(chosen_rope), alpha=DEFAULT_ALPHA)
    device_list = local.device_list()  # a wrong device: refused before anything is made
    checked, data = preflight(storage, local.data, trains=bool(device_list), creates=True)  # offline: one line, nothing made
    with checked:  # the command's one storage, from its check to its close
        from lpstudy.study.replicate import replicate as run_replicate
        from lpstudy.study.worker import WorkerOptions

        url = checked.url
        given = {**trial_options.given(), **({"repeats": repeats} if repeats is not None else {}),
                 **({"seeds": seeds} if seeds is not None else {})}
        result = run_replicate(checked, study, preset, p_values, folds, fixed, given, sequential)
        verb = "created" if result.created else "resumed"
        n_lr = f"{len(lr.split(','))} lr × " if lr and "," in lr else ""
        say(f"replicate study {study!r} {verb} in {checked.display_url}: {result.n_cells} cells "
            f"({len(p_values)} p × {n_lr}{f'{repeats} repeats × ' if repeats and repeats > 1 else ''}{folds} folds"
            f"{f' × {seeds} seeds' if seeds and seeds > 1 else ''}) · {result.done} done · {result.running} running · "
            f"{result.waiting} waiting ({result.enqueued} enqueued now)")
        if sequential:
            say(f"until decided: folds in stages of {', '.join(map(str, sequential.rounds))}; an arm decided against "
                f"p = 2 (ROPE {chosen_rope.words()}) gets no more folds; see `lpstudy verdict --study {shell_quoted(study)}{storage.hint}`")
            if note := sequential.one_stage_note():
                say(note)
        say(work_estimate(result.n_cells - result.done, preset, fixed, local.workers, local.devices))
        if not device_list:
            say(f"start workers anywhere: lpstudy worker --study {shell_quoted(study)}{storage.hint}; "
                f"then: lpstudy status --study {shell_quoted(study)}{storage.hint}")
            return 0
        options_w = WorkerOptions(study=study, storage=url, data=data,
                                  heartbeat_interval=trial_options.heartbeat_interval,
                                  grace_period=trial_options.grace_period, max_retry=trial_options.max_retry)
        import optuna

        from lpstudy.cli.worker_progress import run_with_progress

        grid = optuna.load_study(study_name=study, storage=checked.optuna)
        code = run_with_progress(options_w, device_list, grid, result.n_cells - result.done, show=not no_progress, say=say)
        from lpstudy.results.status import render_status, study_status

        render_status(study_status(checked, study))
        if sequential:
            from lpstudy.cli.verdict import print_verdicts

            print_verdicts(study, checked)
        return code
