"""lpstudy/, app/ and benchmarks/ type-check clean: `mypy lpstudy app benchmarks` finds nothing, with
the settings of pyproject.toml's [tool.mypy] (third-party packages without types read as Any; the
storage layer, lpstudy.db, a study's design and running, lpstudy.design and lpstudy.study, and the
answers, lpstudy.results.answers, with the flags of --strict; the benchmarks' unannotated bodies checked
too). The check is one that fails: a wrong attribute planted in a copy of the package, a StudySpec field
misspelt where the objective reads it, an unannotated function in the storage layer, one in the study's
running and one in the answers, a verdict's tests read by string key as the dict they once were
(fold_tests.FoldTests is read by attribute), and a benchmark's call without a keyword it must pass
(bench_storage's rot: a Worker built without its storage) are each found."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.study_helpers import ROOT

CHECKED = ("lpstudy", "app", "benchmarks")  # the folders type-checked
CACHE = ROOT / ".mypy_cache"  # shared by both runs: the copy's unchanged modules are read from it
# `mypy --strict` on one file: a cache of its own, since a module checked with other flags is checked
# again, and the strict run left every module stale for the next type_check (a minute, each run)
STRICT_CACHE = CACHE / "strict"


def type_check(root: Path) -> subprocess.CompletedProcess:
    """`mypy lpstudy app benchmarks` run in root with its pyproject.toml; files named by path, so that
    the packages are root's own (the folder of the files named comes before the environment's paths)."""
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE), *CHECKED],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)


def test_lpstudy_app_and_benchmarks_type_check_clean_and_the_storage_layer_strictly():
    done = type_check(ROOT)
    assert done.returncode == 0 and done.stdout.startswith("Success: no issues found"), done.stdout + done.stderr


def _plant(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: {old!r} is gone; plant the mistake elsewhere"
    path.write_text(text.replace(old, new, 1))


def test_the_check_finds_mistakes_planted_in_a_copy(tmp_path):
    for folder in CHECKED:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    _plant(tmp_path / "lpstudy" / "db" / "kinds" / "sqlite.py", "url = self.display_url\n", "url = self.display_ur1\n")
    _plant(tmp_path / "lpstudy" / "study" / "objective.py", "loss_threshold=spec.loss_threshold,",
           "loss_threshold=spec.loss_threshhold,")
    _plant(tmp_path / "lpstudy" / "db" / "urls.py", "\n\ndef ", "\n\ndef _planted(value):\n    return value\n\n\ndef ")
    _plant(tmp_path / "lpstudy" / "study" / "replicate.py", "\n\ndef ",
           "\n\ndef _planted(value):\n    return value\n\n\ndef ")
    _plant(tmp_path / "lpstudy" / "results" / "answers" / "mixed_groups.py", "\n\ndef ",
           "\n\ndef _planted(value):\n    return value\n\n\ndef ")
    _plant(tmp_path / "lpstudy" / "results" / "answers" / "endpoint_verdicts.py",
           "codes = np.asarray(tests.verdict).copy()", 'codes = np.asarray(tests["verdict"]).copy()')
    _plant(tmp_path / "benchmarks" / "bench_storage.py", "say=lambda message: None, storage=storage)",
           "say=lambda message: None)")
    done = type_check(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = done.stdout
    assert 'lpstudy/db/kinds/sqlite.py' in found and '"SQLiteStorage" has no attribute "display_ur1"' in found, found
    assert 'lpstudy/study/objective.py' in found and '"StudySpec" has no attribute "loss_threshhold"' in found, found
    # the files where an unannotated function was found: each strict package's plant, on its own line
    untyped = {line.split(":")[0] for line in found.splitlines() if "Function is missing a type annotation" in line}
    assert 'lpstudy/db/urls.py' in untyped, found
    assert 'lpstudy/study/replicate.py' in untyped, found
    assert 'lpstudy/results/answers/mixed_groups.py' in untyped, found
    assert 'lpstudy/results/answers/endpoint_verdicts.py' in found and \
        'Value of type "FoldTests" is not indexable' in found, found
    assert 'benchmarks/bench_storage.py' in found and 'Missing named argument "storage" for "Worker"' in found, found


def test_the_written_out_options_are_options_py_s():
    """lpstudy/design/spec_fields.py shows StudySpec's option fields to a reader and a type checker, as
    lpstudy/training/config_fields.py shows TrainConfig's (lpstudy.declared): generated from OPTIONS
    (`python -m lpstudy.design.options`), it must say what OPTIONS says, and StudySpec must have
    exactly those option fields with those defaults."""
    import dataclasses

    from lpstudy.design.options import OPTIONS, OPTIONS_STUB, options_stub
    from lpstudy.design.spec import StudySpec
    from lpstudy.design.spec_fields import DeclaredOptions

    assert (ROOT / OPTIONS_STUB).read_text(encoding="utf-8") == options_stub(), \
        "run `python -m lpstudy.design.options` to write lpstudy/design/spec_fields.py again"
    declared = [(f.name, f.default) for f in dataclasses.fields(DeclaredOptions)]
    assert declared == [(f.name, f.default) for f in dataclasses.fields(StudySpec) if f.name in OPTIONS] == \
        [(o.name, o.default) for o in OPTIONS.values()]


def test_adding_an_option_is_its_line_then_the_written_class_again(monkeypatch):
    """A new StudyOption line makes the written class stale (the check above fails) until it is
    written again, and the class written then has the field, typed, with its default and help."""
    from lpstudy.design import options

    before = options.options_stub()
    added = options.StudyOption("warm_folds", int, 3, "Folds run before the race starts", bound=(1, 100))
    monkeypatch.setitem(options.OPTIONS, "warm_folds", added)
    options_stub_text = options.options_stub()
    assert options_stub_text != before and options_stub_text != (ROOT / options.OPTIONS_STUB).read_text(encoding="utf-8")
    assert "    # Folds run before the race starts\n    warm_folds: int = 3\n" in options_stub_text
    namespace: dict = {}
    exec(compile(options_stub_text, "spec_fields.py", "exec"), namespace)
    import dataclasses

    assert [f.name for f in dataclasses.fields(namespace["DeclaredOptions"])][-1] == "warm_folds"


def test_a_type_checker_sees_the_specs_options_and_refuses_one_it_lacks(tmp_path):
    """mypy reads StudySpec's option fields (56 "StudySpec has no attribute" findings before they were
    written out): an option reads as its type, a name that is no option is an error."""
    check = tmp_path / "uses_spec.py"
    check.write_text("from lpstudy.design.spec import StudySpec\n\n\n"
                     "def folds_raced(spec: StudySpec) -> int:\n"
                     "    return spec.race_folds + spec.race\n\n\n"
                     "def threshold(spec: StudySpec) -> float | None:\n"
                     "    return spec.loss_threshold\n\n\n"
                     "def wrong(spec: StudySpec) -> None:\n"
                     "    print(spec.race_fold)\n")
    env = {**{k: v for k, v in os.environ.items() if k != "MYPYPATH"}, "MYPYPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(STRICT_CACHE), str(check)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'uses_spec.py:13: error: "StudySpec" has no attribute "race_fold"' in errors[0], \
        done.stdout + done.stderr
