"""The answer as typed objects (lpstudy.results.answers.answer_types): its JSON is the one the engine
gave before it was typed (tests/data/answers.json, written by tests/answer_studies.py), and no reader
outside the answers package reads the answer through a string key."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from tests.answer_studies import FIXTURE, STUDIES, answer_json

ROOT = Path(__file__).resolve().parent.parent


def same(new, old, where: str = "answer") -> None:
    """Equal as JSON: the same keys in the same order, the same values (floats to 1e-9 relative:
    a BLAS or a scipy may round the last digits differently on another machine)."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and list(new) == list(old), f"{where}: keys {list(new)} != {list(old)}"
        for key in old:
            same(new[key], old[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), f"{where}: {new!r} != {old!r}"
        for i, (a, b) in enumerate(zip(new, old)):
            same(a, b, f"{where}[{i}]")
    elif isinstance(old, float) and not isinstance(new, bool) and isinstance(new, (int, float)):
        assert math.isclose(new, old, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {new!r} != {old!r}"
    else:
        assert type(new) is type(old) and new == old, f"{where}: {new!r} != {old!r}"


HEAVY = {"search", "replicate_grid"}  # a surrogate's band, a stored study's curves: 10-15 s each


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if name in HEAVY else [])
                                  for name in STUDIES])
def test_the_typed_answer_gives_the_json_the_engine_gave_before_it(name):
    """Every case's JSON shape is also read back and written again fast (the next test); here the
    engine computes it anew."""
    before = json.loads(FIXTURE.read_text())[name]
    same(answer_json(name), before)


def test_the_types_read_back_what_they_write_and_refuse_a_key_they_do_not_declare():
    from lpstudy.results.answers.answer_types import SearchAnswer, VerdictAnswer

    answers = json.loads(FIXTURE.read_text())
    for name, answer in answers.items():
        kind = SearchAnswer if "p_profile" in answer else VerdictAnswer
        assert kind.of(answer).to_json() == answer, name
    grid = answers["replicate_grid"]
    assert VerdictAnswer.of(grid).arms[0].verdict == grid["arms"][0]["verdict"]
    with pytest.raises(TypeError, match="no field for the answer's key"):
        VerdictAnswer.of({**grid, "arms": [{**grid["arms"][0], "surprise": 1}]})


def test_a_key_the_engine_forgot_is_an_error_not_a_believable_zero():
    """A required field has no default: an answer whose arm lacks its mean, or whose reference lacks
    its mean, is refused by name (it read as 0.0 before); a key the engine leaves out in some case
    (an arm's `p` where the field is not p, the answer's `sequential`) is declared `X | None = None`."""
    from lpstudy.results.answers.answer_types import ArmVerdict, Reference, VerdictAnswer, required

    grid = json.loads(FIXTURE.read_text())["replicate_grid"]
    arm = {key: value for key, value in grid["arms"][0].items() if key != "mean"}
    with pytest.raises(TypeError, match=r"ArmVerdict is missing the answer's required key\(s\) \['mean'\]"):
        VerdictAnswer.of({**grid, "arms": [arm]})
    reference = {key: value for key, value in grid["reference"].items() if key != "mean"}
    with pytest.raises(TypeError, match=r"Reference is missing .*\['mean'\]"):
        VerdictAnswer.of({**grid, "reference": reference})
    with pytest.raises(TypeError, match="missing"):  # built directly, the dataclass refuses it as well
        ArmVerdict(**{key: value for key, value in grid["arms"][0].items() if key != "verdict"})
    assert {"mean", "diff", "low", "high", "verdict"} <= set(required(ArmVerdict))
    assert "p" not in required(ArmVerdict) and "p" not in required(Reference)
    assert "sequential" not in required(VerdictAnswer)
    no_p = {key: value for key, value in grid["arms"][0].items() if key != "p"}
    assert VerdictAnswer.of({**grid, "arms": [no_p]}).arms[0].p is None


def _parts(value, where: str = "answer"):
    """(where, part) for every part of an answer, and (where, dict) for every mapping in it."""
    import dataclasses

    from lpstudy.results.answers.answer_types import Part

    if isinstance(value, Part):
        yield where, value
        for f in dataclasses.fields(value):
            if f.name != "_keys":
                yield from _parts(getattr(value, f.name), f"{where}.{f.name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _parts(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        yield where, value
        for key, item in value.items():
            yield from _parts(item, f"{where}.{key}")


@pytest.mark.parametrize("name", ["sequential_comparison", "convergence", "all_diverged"])
def test_the_engine_builds_every_part_typed(name):
    """Every part of the answer study_answer gives is built by the engine as its type (none read from a dict
    by Part.of, which only reads JSON back), its numbers typed too: no NaN, a mapping holds parts or plain
    values, never a part's keys as a dict."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.answer_types import Part

    found = list(_parts(study_answer(*STUDIES[name]())))
    assert any(isinstance(part, Part) and type(part).__name__ == "StabilityVerdict" for _, part in found)
    for where, part in found:
        if isinstance(part, Part):
            assert part._keys == (), f"{where}: {type(part).__name__} read from a dict, not built"
            assert not any(isinstance(v, float) and math.isnan(v) for v in vars(part).values()), where
        else:
            assert not ({"verdict", "value"} <= set(part) or {"unit", "what"} == set(part)), f"{where}: a part as a dict"


# --- no reader subscripts the answer -----------------------------------------------------------------

READERS = ("lpstudy", "app", "benchmarks")
ANSWER_CALLS = {"study_answer", "stages_answer", "_rounds"}  # the functions that return the typed answer
ANSWER_ATTRIBUTES = {"answer", "effect"}  # PageInputs' answer and a search's effect: typed answers


TYPES = {"VerdictAnswer", "SearchAnswer", "StudyAnswer"}


def _answer_names(scope: ast.AST) -> set[str]:
    """Names bound to a typed answer in a function: assigned from a call of ANSWER_CALLS or from
    `<x>.answer`/`<x>.effect`, or a parameter annotated with an answer type."""
    names = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            called = value.func if isinstance(value, ast.Call) else None
            name = getattr(called, "id", None) or getattr(called, "attr", None)
            if name in ANSWER_CALLS or (isinstance(value, ast.Attribute) and value.attr in ANSWER_ATTRIBUTES):
                names.add(node.targets[0].id)
        if isinstance(node, ast.arg) and node.annotation is not None and TYPES & {
                getattr(n, "id", None) or getattr(n, "value", None) for n in ast.walk(node.annotation)}:
            names.add(node.arg)
    return names


def _reads_by_key(path: Path) -> list[str]:
    """`answer[...]`, `answer.get(...)` and `inputs.answer[...]` in a function (or at a module's top)
    where answer is a typed answer; to_json()'s dict is read by key, as a user of the JSON would."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        names = _answer_names(scope)

        def is_answer(node) -> bool:
            return (isinstance(node, ast.Name) and node.id in names) or (
                isinstance(node, ast.Attribute) and node.attr in ANSWER_ATTRIBUTES and isinstance(node.value, ast.Name)
                and node.value.id in ("inputs", "self"))

        for node in ast.walk(scope):
            if isinstance(node, ast.Subscript) and is_answer(node.value):
                found.add(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "items", "keys") and is_answer(node.func.value)):
                found.add(f"{path.relative_to(ROOT)}:{node.lineno}")
    return sorted(found)


def test_no_module_outside_the_answers_package_reads_the_answer_by_a_string_key():
    answers = ROOT / "lpstudy" / "results" / "answers"
    paths = [p for top in READERS for p in (ROOT / top).rglob("*.py") if answers not in p.parents]
    found = [where for path in paths for where in _reads_by_key(path)]
    assert not found, f"read the typed answer by attribute (lpstudy.results.answers.answer_types): {found}"


def test_the_rule_sees_a_read_by_key(tmp_path):
    (tmp_path / "reader.py").write_text(
        "def f(data):\n    answer = study_answer(data)\n    return answer['arms']\n\n\n"
        "def g(answer: VerdictAnswer):\n    return answer.get('k')\n\n\n"
        "def h(inputs):\n    return inputs.answer['sentence']\n\n\n"
        "def fine(data):\n    plain = study_answer(data).to_json()\n    return plain['arms']\n")
    assert sorted(int(line.split(":")[1]) for line in _reads_by_key_at(tmp_path / "reader.py")) == [3, 7, 11]


def _reads_by_key_at(path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return _reads_by_key(path)
    finally:
        ROOT = saved


def test_a_replicate_whose_runs_all_diverged_draws_its_verdict_chart_without_a_rope_band():
    """Every run diverged: the reference has no mean loss to scale the ROPE by (rope.relative is
    None). The chart, the page and the report draw the arms without the band and say why; it
    ended in a TypeError (100 * None) before."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.charts.verdicts import verdict_chart
    from tests.answer_studies import STUDIES

    answer = study_answer(*STUDIES["all_diverged"]())
    assert answer.rope.relative is None and answer.arms
    fig = verdict_chart(answer)
    assert not fig.layout.shapes or all(s.type != "rect" for s in fig.layout.shapes)
    assert "No ROPE band" in fig.layout.annotations[-1].text.replace("<br>", " ")
