"""`lpstudy verdict`: each arm of a replicate, grid or comparison study against a reference, in
words (better, equivalent, worse, undecided) with the corrected interval, the p-values and the
folds that would decide it (lpstudy.results.answers); the same table `lpstudy report` and the
dashboard show, or with --json the answer itself (a paper's table can be made from it)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import StudyOpt
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.results.answers.answer_types import Importance, SearchAnswer
from lpstudy.results.answers.options import DEFAULT_ALPHA, DEFAULT_CONVERGENCE_ROPE, DEFAULT_ROPE

RopeOpt = Annotated[Optional[str], typer.Option(
    "--rope", help=f"The region of practical equivalence in nats of loss (default {DEFAULT_ROPE}), or a share of the "
                   "reference's mean loss such as 0.5% (a study run --until-decided: its own).")]


@app.command()
@option_groups
def verdict(
    *,
    study: StudyOpt,
    rope: RopeOpt = None,
    reference: Annotated[Optional[str], typer.Option(help="The reference arm's value (default p = 2, or the comparison's reference).")] = None,
    alpha: Annotated[float, typer.Option(help="The family-wise error rate of the verdicts, across arms.", min=0.001, max=0.5)] = DEFAULT_ALPHA,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as one JSON object.")] = False,
    threshold: Annotated[Optional[float], typer.Option(
        help="The validation loss (nats) convergence is timed to (default: the study's loss_threshold, else 2 % "
             "above the largest of the arms' median final losses).")] = None,
    convergence_rope: Annotated[str, typer.Option(
        help="Convergence: equivalent within ± this many steps to the threshold (50), or this share of the "
             "reference's restricted mean steps (5%).")] = str(DEFAULT_CONVERGENCE_ROPE),
    storage: StorageChoice,
) -> None:
    """Verdicts per arm: better, equivalent (within --rope), worse or undecided, and the folds that would decide;
    the same for the steps to reach --threshold and the area under the validation curve."""
    from lpstudy.cli.common import checked_threshold
    from lpstudy.results.answers.options import parse_steps_rope

    checked_threshold(threshold)  # report's rule, a study's loss threshold's
    parse_steps_rope(convergence_rope)  # steps or a share, above 0: one line before the study is read
    with storage.reader() as reader:
        print_verdicts(study, reader, rope, _value(reference), alpha, as_json, threshold, convergence_rope)


def print_verdicts(study: str, reader, rope: str | None = None, reference=None,
                   alpha: float = DEFAULT_ALPHA, as_json: bool = False, threshold: float | None = None,
                   convergence_rope: str = str(DEFAULT_CONVERGENCE_ROPE)) -> None:
    """The verdict table (or the JSON answer) of the study on standard output. rope None: the one a
    sequential study was run with, else 0.01 nats; threshold None: the default (answer.convergence)."""
    from rich.console import Console

    from lpstudy.errors import UserError
    from lpstudy.results.answers import AnswerOptions, answered_by_verdicts, parse_rope, study_answer, study_rope
    from lpstudy.results.answers.options import parse_steps_rope
    from lpstudy.results.reading.compare import verdict_data
    from lpstudy.results.status import print_table, print_verdict_table
    from lpstudy.results.tables.columns import labelled
    from lpstudy.results.tables.convergence import convergence_frame, convergence_title, restricted_frame
    from lpstudy.results.tables.stability import stability_frame, stability_title
    from lpstudy.results.tables.verdicts import sequential_lines, stages_frame

    chosen = None if rope is None else parse_rope(rope)  # a wrong --rope: one line before the study is read
    steps_rope = parse_steps_rope(convergence_rope)
    data = verdict_data(reader, study)
    if reference is not None and not answered_by_verdicts(data.info):
        raise UserError(f"--reference names the arm the others are compared with, and study {study!r} is a search: "
                        "its answer is p's profile, it has no arms; leave --reference out (or replicate it: the "
                        "command this prints under \"what would decide it\")")
    answer = study_answer(data, AnswerOptions(rope=chosen or study_rope(data.info.spec), alpha=alpha,
                                              reference=reference, threshold=threshold, convergence_rope=steps_rope))
    if as_json:
        sys.stdout.write(json.dumps(answer.to_json()) + "\n")
        return
    console = Console()
    console.print(f"{study}: {answer.sentence}", highlight=False, soft_wrap=True)
    if isinstance(answer, SearchAnswer):  # a search study: p's profile with lr and gain held apart (lpstudy.results.answers.search)
        _print_search(console, answer)
        return
    from lpstudy.results.tables.summary import convergence_summary

    print_verdict_table(console, answer)  # the table status and compare print too, its plain words above it
    from lpstudy.results.tables.glossary import glossary_lines

    for line in glossary_lines():  # the words of the table, one plain line each
        console.print(f"  {line}", highlight=False, soft_wrap=True)
    for line in sequential_lines(answer):
        console.print(line, highlight=False, soft_wrap=True)
    convergence = convergence_frame(answer)
    if len(convergence):
        console.print(convergence_summary(answer), highlight=False, soft_wrap=True)
        print_table(console, convergence_title(answer), list(convergence.columns), convergence.values.tolist(),
                    aligned_when_piped=False)
        restricted = restricted_frame(answer)
        print_table(console, "Kaplan–Meier: restricted mean steps to the threshold within the horizon (95 % interval)",
                    list(restricted.columns), restricted.values.tolist(), aligned_when_piped=False)
    stability = stability_frame(answer)
    if len(stability):
        print_table(console, stability_title(answer), list(stability.columns), stability.values.tolist(),
                    aligned_when_piped=False)
    stages = labelled(stages_frame(answer))
    if len(stages):  # each arm's state at every look, as the Compare page's table
        print_table(console, "stages: each arm's state at every look", list(stages.columns), stages.values.tolist())
    said = importance_line(answer.importance)
    if said:
        console.print(said, highlight=False, soft_wrap=True)


def importance_line(importance: Importance | None) -> str | None:
    """The compared field's partial ω² within folds with its interval, what noise alone gives and the corrected
    F test's p-value; "–" for a number the answer has not (None: an importance that is not the within-fold
    ANOVA's), None where there are no shares."""
    if importance is None or not importance.shares:
        return None
    field, share = next(iter(importance.shares.items()))
    low, high = importance.low.get(field), importance.high.get(field)
    return (f"importance: {field}'s partial ω² within folds {share:.2f} [{_figure(low, '.2f')}, {_figure(high, '.2f')}]"
            f" · noise alone up to {_figure(importance.null, '.2f')} · p-value (F corrected for the folds' correlation) "
            f"{_figure(importance.p_value, '.3g')}")


def _figure(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _number(value) -> str:
    return _figure(value, ".4f")


def _print_search(console, answer: SearchAnswer) -> None:
    """A search's answer: p's tuned profile with its band, how entangled p is with the other fields,
    the importance, and the command that would decide."""
    from lpstudy.results.status import print_table, print_verdict_table
    from lpstudy.values import format_p

    if answer.p_profile:
        print_table(console, "p's profile: the best loss reachable at each p, lr and gain tuned for it (95 % band)",
                    ["p", "loss", "low", "high"],
                    [[format_p(float(row.p)), _number(row.loss), _number(row.low), _number(row.high)]
                     for row in answer.p_profile])
    if answer.entanglement:
        console.print("p's rank correlation with the other searched fields: " + ", ".join(
            f"{field} {rho:+.2f}" for field, rho in answer.entanglement.items() if rho is not None), highlight=False)
    importance = answer.importance  # study_answer's search answer has it (search_effect's alone has not)
    if importance and importance.shares:
        console.print("importance (type II share of the variation): " + ", ".join(
            f"{field} {share:.0%}" for field, share in importance.shares.items()), highlight=False)
    elif importance and importance.reason:
        console.print(f"importance: {importance.reason}", highlight=False, soft_wrap=True)
    if answer.suggest:
        console.print(f"what would decide it: {answer.suggest}", highlight=False, soft_wrap=True)


def _value(text: str | None):
    """--reference as a number where it is one (p = 2), else the text (a comparison's arm)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text
