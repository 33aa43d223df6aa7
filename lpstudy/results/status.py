"""`lpstudy status`: where a study stands. Trials by state, the best trial, the running trials with
their device, host and progress, an estimate of the time left, and for a replicate study the
paper's table (lpstudy.results.analysis: mean ± std of the final validation loss per p, with the t
interval of each mean) and the verdicts against p = 2: the answer's (lpstudy.results.answers), its
interval and p-values printed as `lpstudy verdict` prints them (lpstudy.results.tables.verdicts), the
one comparison of arms every reader shows. Reads only (lpstudy.results.reading.frames).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pandas as pd

from lpstudy.db.urls import redact
from lpstudy.names import shell_quoted
from lpstudy.results import analysis
from lpstudy.results.reading import frames as results
from lpstudy.results.answers.answer_types import VerdictTable, Verdicts
from lpstudy.results.analysis.cells import PAPER_CELL, duplicates_note, grid_fields, setting_fields
from lpstudy.results.reading.compute import compute_line, compute_summary
from lpstudy.results.answers import has_verdicts
from lpstudy.results.reading.measured import chosen_label, measured_line, study_best
from lpstudy.design.spec import StudySpec
from lpstudy.values import REFERENCE_P, finite_or_none, format_duration, format_p, json_safe, read_p

if TYPE_CHECKING:  # the progress render_compare returns
    from lpstudy.results.reading.compare import CompareProgress


def _max_steps(spec: StudySpec | None) -> int | None:
    if spec is None:  # a study without a spec: no progress fractions
        return None
    try:
        return int(spec.base_config().max_steps)
    except Exception:  # a preset this version does not have: no progress fractions
        return None


def estimate_time_left(trials: pd.DataFrame, running: pd.DataFrame, spec: StudySpec | None,
                       max_steps: int | None) -> dict[str, Any]:
    """{"seconds": float or None, "basis": str}: the work left (grid cells waiting, or trials up to
    the study's n_trials target, plus the rest of the running trials) at the mean duration of the
    completed trials, spread over the workers running now."""
    done = trials[(trials["state"] == "COMPLETE") & trials["duration_s"].notna()]
    mean_s = float(done["duration_s"].mean()) if len(done) else None
    counts = {k: int(v) for k, v in trials["state"].value_counts().items()}
    return time_left(mean_s, counts, running, spec, max_steps)


def time_left(mean_s: float | None, counts: dict[str, int], running: pd.DataFrame, spec: StudySpec | None,
              max_steps: int | None) -> dict[str, Any]:
    """estimate_time_left from the mean duration of a completed trial and the trials by state."""
    fractions = []
    for _, row in running.iterrows():
        step = finite_or_none(row.get("last_step"))
        fractions.append(min(1.0, step / max_steps) if step is not None and max_steps else 0.0)
    if mean_s is None:
        guesses = [r / f for r, f in zip(running["running_s"], fractions) if f > 0 and finite_or_none(r)]
        mean_s = sum(guesses) / len(guesses) if guesses else None
    if mean_s is None:
        return {"seconds": None, "basis": "no trial has finished yet"}
    left_running = [max(0.0, mean_s * (1 - f)) if f > 0 else max(0.0, mean_s - (finite_or_none(r) or 0.0))
                    for r, f in zip(running["running_s"], fractions)]
    workers = max(1, len(running))
    if spec is not None and (spec.is_grid or spec.kind == "replicate"):
        todo = int(counts.get("WAITING", 0))
        what = f"{todo} cell(s) waiting"
    elif spec is not None and spec.n_trials:
        finished = int(counts.get("COMPLETE", 0) + counts.get("PRUNED", 0))
        todo = max(0, int(spec.n_trials) - finished - len(running))
        what = f"{todo} trial(s) to the target of {int(spec.n_trials)}"
    else:
        return {"seconds": None, "running_end_s": max(left_running) if left_running else None,
                "basis": "no end set (workers run until their --n-trials or --timeout)"}
    if todo == 0 and not len(running):
        return {"seconds": 0.0, "basis": "done", "done": True}
    seconds = (todo * mean_s + sum(left_running)) / workers
    return {"seconds": seconds, "basis": f"{what}, mean trial {format_duration(mean_s)}, {len(running)} running"}


def study_status(reader: results.TrialReader, study_name: str) -> dict[str, Any]:
    """Everything `lpstudy status` shows, as plain data (what --json prints). A search study is
    answered from a few queries (lpstudy.results.reading.summary) without reading every trial; a grid reads
    every trial (its cells and per-p table)."""
    from lpstudy.results.reading.summary import study_summary

    summary = study_summary(reader, study_name)
    if summary is not None:
        info, spec, duplicates = summary.info, summary.info.spec, []
        counts, diverged = summary.counts, summary.diverged
        best_row = analysis.best_trial(summary.best)
        measured, waiting_races = summary.measured, summary.waiting_races
        running = analysis.running_trials(summary.running)
        max_steps = _max_steps(spec)
        left = time_left(summary.mean_complete_s, counts, running, spec, max_steps)
        grid, compute = None, summary.compute
    else:
        data = results.load_study(reader, study_name, curves=False)
        trials, info, spec, duplicates = data.trials, data.info, data.info.spec, list(data.duplicates)
        counts = {k: int(v) for k, v in analysis.state_counts(trials).items()}
        diverged = int(((trials["state"] == "COMPLETE") & trials["diverged"].astype(bool)).sum()) if len(trials) else 0
        max_steps = _max_steps(spec)
        answer = study_verdicts(data) if info.kind == "replicate" or has_verdicts(data) else None
        arm = study_best(data, answer)  # a replicate's, a grid's: the arm with the lowest mean over its folds
        best_row = None if arm is None else arm.row
        measured = None if arm is None or not arm.is_arm else arm.source_fields()
        waiting_races = 0  # a grid: no races
        running = analysis.running_trials(trials)
        left = estimate_time_left(trials, running, spec, max_steps)
        progress, compute = analysis.grid_progress(trials, spec), compute_summary(trials)
        grid = progress.to_plain() if progress else None
    best = None
    if best_row is not None:
        best = {k: _plain(best_row.get(k)) for k in ("number", "value", "p", "lr", "gain_init", "fold",
                                                     "final_val_loss", "best_val_loss", "device", "host")}
        if measured is not None:  # how well it is known: a search's over folds, a replicate's arm (results.reading.measured)
            best.update({k: measured.get(k) for k in ("chosen_as", "folds_measured", "mean_over_folds", "interval",
                                                      "arm", "verdict") if k in measured})
    running_rows = []
    for _, row in running.iterrows():
        item = {k: _plain(row.get(k)) for k in ("number", "p", "lr", "gain_init", "fold", "device", "host",
                                                "worker", "running_s", "last_step", "last_val_loss")}
        since = row.get("since")
        item["since"] = since.isoformat() if isinstance(since, pd.Timestamp) and not pd.isna(since) else None
        item["max_steps"] = max_steps
        running_rows.append(item)
    status: dict[str, Any] = {
        "study": study_name, "storage": redact(reader.url), "kind": info.kind, "preset": info.preset,
        "sampler": spec.sampler if spec else None, "pruner": spec.pruner if spec else None, "counts": counts,
        "diverged": diverged,
        "waiting_races": waiting_races,
        "best": best, "running": running_rows, "grid": grid, "time_left": left, "duplicates": duplicates,
        "cell": list(grid_fields(spec)), "compute": compute,
    }
    if info.kind == "replicate":
        settings = setting_fields(spec)  # a sweep's lr: p is summed up and paired at each one
        status["settings"] = list(settings)
        status["per_p"] = _records(analysis.per_p_summary(trials, within=settings))
        status["verdicts"] = verdicts_of(answer)
        status["reference_p"] = REFERENCE_P
    return status


# what status carries of the answer: the verdict table's rows and what it and its plain words read
VERDICT_KEYS = VerdictTable.keys()


def study_verdicts(data):
    """The study's verdicts against the reference (lpstudy.results.answers.study_answer, with the ROPE
    the study ran with)."""
    from lpstudy.results.answers import AnswerOptions, study_answer, study_rope

    return study_answer(data, AnswerOptions(rope=study_rope(data.info.spec)))


def verdicts_of(answer) -> dict[str, Any]:
    """The verdicts as `lpstudy verdict --json` has them, the keys status carries."""
    plain = answer.to_json()
    return {key: plain[key] for key in VERDICT_KEYS if key in plain}


def _plain(value: Any) -> Any:
    if isinstance(value, pd.Series):  # a column name the frame holds twice
        value = value.iloc[0] if len(value) else None
    return json_safe(value)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _p(value: Any) -> str:
    return "–" if value is None else format_p(read_p(value))


def _num(value: Any, spec: str = ".4f") -> str:
    return "–" if value is None or isinstance(value, str) else format(value, spec)


WIDE_TERMINAL = 100  # a terminal at least this many columns wide gets a drawn table; narrower or piped: lines


def print_table(console, title: str, columns: list[str], rows: list[list[str]], *,
                aligned_when_piped: bool = True) -> None:
    """A table that reads in a wide terminal, at 80 columns and piped: in a terminal of WIDE_TERMINAL
    columns or more, a rich table (a cell wraps between words, never inside a number); else, where
    aligned_when_piped and the columns fit the console, plain aligned columns; else one line per row as
    `column value` pairs, wrapped between pairs, never inside a number (what a verdict table prints
    when narrow or piped: a reader greps it, a script splits it on " · ")."""
    if console.is_terminal and console.width >= WIDE_TERMINAL and _print_rich_table(console, title, columns, rows):
        return
    widths = [max([len(name)] + [len(row[i]) for row in rows]) for i, name in enumerate(columns)]
    console.print(title, highlight=False, soft_wrap=True)
    if aligned_when_piped and sum(widths) + 2 * (len(widths) - 1) + 2 <= console.width:
        def line(cells):
            return "  " + "  ".join(c.rjust(w) if i else c.ljust(w)
                                    for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
        console.print(line(columns), style="bold", highlight=False, soft_wrap=True)
        for row in rows:
            console.print(line(row), highlight=False, soft_wrap=True)
        return
    for row in rows:
        lines = ["  "]
        for pair in (f"{name} {cell}" for name, cell in zip(columns, row)):  # wrap between pairs only
            if len(lines[-1]) > 2 and len(lines[-1]) + 3 + len(pair) > console.width:
                lines.append("    ")
            lines[-1] += ("" if lines[-1].strip() == "" else " · ") + pair
        for text in lines:
            console.print(text, highlight=False, soft_wrap=True)


def _print_rich_table(console, title: str, columns: list[str], rows: list[list[str]]) -> bool:
    """The rows as a rich table under its title, the first column (the row's name, never wrapped) on the
    left and the others on the right, as numbers are read; a cell or heading wraps between words, never
    inside one ("[+0.0415," stays whole). False, and nothing printed, where even so the table is wider
    than the console (rich's own measure of its narrowest)."""
    from rich.table import Table

    def narrowest(number: int, name: str) -> int:  # the row's name whole; elsewhere the longest word
        cells = [str(row[number]) for row in rows]
        words = [name.split(), *([cell] if not number else cell.split() for cell in cells)]
        return max(len(word) for group in words for word in group)

    widths = [narrowest(number, name) for number, name in enumerate(columns)]
    if sum(widths) + 3 * len(columns) + 1 > console.width:  # a column: a space either side and a rule
        return False
    table = Table(title=title, title_justify="left", title_style="bold", header_style="bold", highlight=False)
    for number, (name, width) in enumerate(zip(columns, widths)):
        table.add_column(name, justify="right" if number else "left", no_wrap=not number, min_width=width)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    console.print(table)
    return True


def waiting_note(status: dict[str, Any]) -> str:
    """What a search's WAITING trials are, where it has some: trials enqueued and not run yet (races:
    a leading configuration on another fold, lpstudy.study.races; the spread phase's points,
    lpstudy.study.spread; retries of interrupted runs), which the next worker takes first; a grid's
    waiting cells are said on the grid line."""
    waiting = status["counts"]["WAITING"]
    if not waiting or status.get("grid"):
        return ""
    races = min(int(status.get("waiting_races") or 0), waiting)
    parts = []
    if races:
        parts.append(f"{races} race trial{'' if races == 1 else 's'} (a leading configuration run on another fold, "
                     "so that the best holds beyond its tuning fold)")
    if waiting - races:
        parts.append(f"the other {waiting - races}: the spread phase's points or retries" if races
                     else "the spread phase's points or retries")
    return (f" (enqueued, not run yet: {'; '.join(parts)}; the next "
            f"`lpstudy worker --study {shell_quoted(status['study'])}` takes {'it' if waiting == 1 else 'them'} first)")


def render_status(status: dict[str, Any], console=None) -> None:
    """Print the status for a person (rich tables on stdout)."""
    from rich.console import Console

    console = console or Console()
    if status["kind"] == "compare":  # its arms are studies of their own: lpstudy.results.reading.compare says them
        console.print(f"[bold]study {status['study']}[/] · comparison · preset {status['preset']}",
                      highlight=False, soft_wrap=True)
        console.print(f"storage  {status['storage']}", highlight=False, soft_wrap=True)
        return
    c = status["counts"]
    console.print(f"[bold]study {status['study']}[/] · {status['kind']} · preset {status['preset']} · "
                  f"sampler {status['sampler']} · pruner {status['pruner']}", highlight=False, soft_wrap=True)
    console.print(f"storage  {status['storage']}", highlight=False, soft_wrap=True)
    console.print(f"trials   {c['COMPLETE']} complete ({status['diverged']} diverged) · {c['PRUNED']} pruned · "
                  f"{c['FAIL']} failed · {c['RUNNING']} running · {c['WAITING']} waiting{waiting_note(status)}",
                  highlight=False, soft_wrap=True)
    best = status["best"]
    if best and best.get("chosen_as") == "arm":  # a replicate's, a grid's: the arm (lpstudy.results.reading.measured)
        folds = best["folds_measured"]
        text = (f"{best['arm']}: mean loss {_num(best['mean_over_folds'])} over {folds} fold{'' if folds == 1 else 's'}"
                + (f" · its verdict: {best['verdict']}" if best.get("verdict") else "")
                + f" · export retrains trial {best['number']} (fold "
                f"{best['fold'] if best['fold'] is None else int(best['fold'])}: {_num(best['value'])})")
        for i, part in enumerate(textwrap.wrap(text, console.width - 9, break_long_words=False, break_on_hyphens=False)):
            console.print(("best     " if i == 0 else " " * 9) + part, highlight=False, soft_wrap=True)
    elif best:
        measured = {k: best[k] for k in ("chosen_as", "folds_measured", "mean_over_folds", "interval")} \
            if "folds_measured" in best else None  # a search's: how well it is known (lpstudy.results.reading.measured)
        label = "leading " if chosen_label(measured) != "best" else "best    "
        config = (f"p={_p(best['p'])} lr={_num(best['lr'], '.3g')} gain_init={_num(best['gain_init'], '.3g')}")
        fold = best['fold'] if best['fold'] is None else int(best['fold'])
        if measured is None:  # one run's loss: a study without a spec
            console.print(f"{label} trial {best['number']}: {_num(best['value'])} · {config} fold={fold}",
                          highlight=False, soft_wrap=True)
        else:  # the mean over its folds first: the number that holds (lpstudy.results.reading.measured)
            for text in textwrap.wrap(f"{label} {measured_line(measured)}", console.width, subsequent_indent=" " * 9,
                                      break_long_words=False, break_on_hyphens=False):
                console.print(text, highlight=False, soft_wrap=True)  # wrapped between words, never in a number
            console.print(f"         trial {best['number']} · {config} · its tuning fold {fold}: {_num(best['value'])}",
                          highlight=False, soft_wrap=True)
    else:
        console.print("best     none yet (no completed trial that did not diverge)")
    if status.get("compute"):
        console.print(f"compute  {compute_line(status['compute'])}", highlight=False, soft_wrap=True)
    grid = status.get("grid")
    if grid:
        console.print(f"grid     {grid['done']}/{grid['n_cells']} cells done · {grid['running']} running · "
                      f"{grid['waiting']} waiting", highlight=False, soft_wrap=True)
    if status.get("duplicates"):

        console.print(f"[yellow]note[/]     {duplicates_note(status['duplicates'], tuple(status.get('cell') or PAPER_CELL))}",
                      highlight=False, soft_wrap=True)
    if status["running"]:
        rows = []
        for r in status["running"]:
            step = "–" if r["last_step"] is None else f"{int(r['last_step'])}" + (
                f"/{r['max_steps']}" if r.get("max_steps") else "")
            where = " on ".join(str(x) for x in (r["device"], r["host"]) if x) or "–"
            rows.append([str(r["number"]), _p(r["p"]), _num(r["lr"], ".3g"), _num(r["gain_init"], ".3g"),
                         "–" if r["fold"] is None else str(int(r["fold"])), format_duration(r["running_s"]), step,
                         _num(r["last_val_loss"]), where])
        print_table(console, "running", ["trial", "p", "lr", "gain₀", "fold", "for", "step", "val loss", "where"],
                    rows)
    left = status["time_left"]
    if "running_end_s" in left:
        running_end = left["running_end_s"]
        tail = "nothing running" if running_end is None else f"the running trials end in about {format_duration(running_end)}"
        console.print(f"time left  {left['basis']}; {tail}", highlight=False, soft_wrap=True)
    elif left.get("done"):
        console.print("time left  none: nothing is waiting or running", highlight=False, soft_wrap=True)
    elif left["seconds"] is None:
        console.print(f"time left  unknown: {left['basis']}", highlight=False, soft_wrap=True)
    else:
        console.print(f"time left  about {format_duration(left['seconds'])} ({left['basis']})", highlight=False, soft_wrap=True)
    if status["kind"] == "replicate":
        _render_replicate(status, console)


def _setting(value: Any) -> str:
    """A gridded field's value in a table (a learning rate as 0.003, 'matched' as it is)."""
    return _num(value, ".3g") if isinstance(value, (int, float)) else "–" if value is None else str(value)


def _render_replicate(status: dict[str, Any], console) -> None:
    settings = status.get("settings") or []
    at = "per p" + "".join(f" and {name}" for name in settings)
    rows = [[_p(r["p"]), *(_setting(r.get(name)) for name in settings), str(r["n"]), str(r["n_diverged"]),
             f"{_num(r['mean'])} ± {_num(r['std'])}", f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]", _num(r["best"])]
            for r in status.get("per_p", [])]
    print_table(console, f"final validation loss {at} (COMPLETE runs; diverged runs left out of mean ± std)",
                ["p", *settings, "runs", "diverged", "mean ± std", "95 % CI of the mean", "best"], rows)
    verdicts = status.get("verdicts") or {}
    console.print(f"verdict  {verdicts.get('sentence', 'none yet')}", highlight=False, soft_wrap=True)
    if verdicts:  # status --json's part of the answer, typed again for the table
        print_verdict_table(console, VerdictTable.of(verdicts))


def print_verdict_table(console, answer: Verdicts) -> None:
    """The verdict table of an answer (lpstudy.results.tables.verdicts), as every command prints it, under
    its paragraph in plain words (lpstudy.results.tables.summary)."""
    from lpstudy.results.tables.summary import verdict_summary
    from lpstudy.results.tables.verdicts import verdict_frame, verdict_title

    frame = verdict_frame(answer) if answer.reference else None
    if frame is not None and len(frame) > 1:
        console.print(verdict_summary(answer), highlight=False, soft_wrap=True)
        print_table(console, verdict_title(answer), list(frame.columns), frame.values.tolist(),
                    aligned_when_piped=False)


def _cell(value: Any, spec: str) -> str:
    return "–" if value is None or pd.isna(value) else format(value, spec)


def render_compare(reader: results.TrialReader, study: str, next_hint: str | None = None) -> CompareProgress:
    """Where the comparison stands (compare_progress), the arms' budgets and the verdicts, on
    standard output; then `next_hint` (the command that runs the rest) only when something is left.
    Returns the progress."""
    from rich.console import Console

    from lpstudy.results.reading.compare import compare_progress, load_compare, progress_line, stages_answer
    from lpstudy.results.reading.measured import loss_cell

    data = load_compare(reader, study)
    progress = compare_progress(data)
    console = Console()
    console.print(f"arms     {progress_line(progress)}", highlight=False, soft_wrap=True)
    summary = {r["arm"]: r for _, r in data.budgets.iterrows()}
    rows = []
    for arm in progress.arms:
        r = summary.get(arm.arm, {})
        folds = "none (no tuning trial counts)" if arm.nothing_to_replicate else f"{arm.folds_done}/{arm.folds}"
        rows.append([arm.arm, f"{arm.tuning_done}/{arm.budget}", str(r.get("pruned", 0)), str(r.get("diverged", 0)), loss_cell(r.get("best_loss"), r.get("best_folds")),
                     _cell(r.get("best_lr"), ".3g"), _cell(r.get("best_gain_init"), ".3g"), folds])
    print_table(console, f"tuning ({data.plan.budget} trials per arm)",
                ["arm", "tuned", "pruned", "diverged", "best loss", "lr", "gain_init", "folds"], rows)
    answer = stages_answer(data)
    if not answer.arms:
        console.print(f"verdicts: none yet (needs the {data.reference} arm and another on the same folds)")
    else:
        console.print(f"verdict  {answer.sentence}", highlight=False, soft_wrap=True)
        print_verdict_table(console, answer)
    if next_hint and not progress.done:
        console.print(f"next     {next_hint}", highlight=False, soft_wrap=True)
    return progress
