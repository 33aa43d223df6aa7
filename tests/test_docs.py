"""The README is a front door and a short tour; the reference lives in docs/. Every page there is
linked from the README, every link between them resolves, and every `lpstudy` command they give
uses a command and options that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.study_helpers import ROOT, cli

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
TOUR = ["Run a study", "Watch it", "Compare p fairly", "Export and retrain", "Run it on a cluster"]


def pages() -> dict[Path, str]:
    return {path: path.read_text() for path in [README, *DOCS]}


def test_the_readme_is_its_first_screen_then_a_short_tour_then_the_reference():
    text = README.read_text()
    headings = re.findall(r"(?m)^## (.+)$", text)
    assert headings == ["Install", "Two commands", "What you get", "A short tour", "Run the tests", "Reference"]
    tour = text.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    places = [tour.index(f"**{name}.**") for name in TOUR]
    assert places == sorted(places)
    # each stop of the tour: a few lines and one command
    for name, following in zip(TOUR, [*TOUR[1:], None]):
        stop = tour.split(f"**{name}.**", 1)[1]
        stop = stop.split(f"**{following}.**", 1)[0] if following else stop
        commands = [line for line in stop.splitlines() if line.startswith("    ")]
        assert len(commands) == 1, (name, commands)
    # a front door: what it is, install, two commands, what you get, the tour and the tests in under 700
    # words (it was 8,400 words of reference inside a tutorial, then 1,845), then the table of links
    assert len(text.split("\n## Reference\n", 1)[0].split()) < 700


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
    readme = README.read_text()
    for path in DOCS:
        assert f"](docs/{path.name})" in readme, path.name
    for path, text in pages().items():
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (path.parent / target).is_file(), f"{path.relative_to(ROOT)} links {target}, which is missing"


def test_no_page_names_a_file_of_the_code_that_is_not_there():
    """Paths such as `lpstudy/results/analysis.py` (a package now) go stale when code moves. Files a
    user makes (git-ignored, such as deploy/k8s/lpstudy.env) are not in the checkout."""
    for path, text in pages().items():
        for name in set(re.findall(r"`((?:lpstudy|app|tests|benchmarks|deploy|storage|examples)/[\w./-]+)`", text)):
            users_own = subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT).returncode == 0
            assert (ROOT / name).exists() or users_own, f"{path.relative_to(ROOT)} names {name}"


def _command_lines(text: str) -> list[str]:
    """The lpstudy commands in a page's code: indented lines and fenced blocks, continuations joined,
    comments dropped, chains (&&, ;, |) split."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        if not line.startswith("    "):
            continue
        line = re.sub(r"\s#\s.*$", "", line)
        for part in re.split(r"&&|;|\|", line):
            match = re.match(r"\s*(?:\w+=\S+\s+)*lpstudy\s+([a-z-]+)(.*)", part)
            if match:
                out.append((match.group(1), match.group(2)))
    return out


def _options_by_command() -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {}
    for text in pages().values():
        for command, rest in _command_lines(text):
            wanted.setdefault(command, set()).update(re.findall(r"(?<!\S)(--[a-z][a-z-]*)", rest))
    return wanted


@pytest.mark.parametrize("command", sorted(_options_by_command()))
def test_every_command_the_pages_give_exists_with_its_options(command, capsys, monkeypatch):
    """Each command's --help, as wide as a page's longest option line, run in this process (a fresh
    interpreter a command cost 3 s; tests/test_first_run.py runs the README's commands as processes)."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = cli(capsys, command, "--help")
    assert code == 0, (command, err[-500:])
    for option in _options_by_command()[command]:
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", out), (command, option)


# What a page for users never says: how the work was done. A tracker's issue, a round of work, a commit
# hash (seven to forty hex digits with a letter and a digit), a change or branch spoken of as such.
WORK_WORDS = re.compile(
    r"\bissues?\b|(?<![-\w])rounds?(?![-\w])|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
    r"|\bthis (?:change|branch|round|session)\b|\bmain (?:before|after)\b|\bbefore this\b",
    re.IGNORECASE)


def test_no_page_tells_how_the_work_was_done():
    found = [f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} in {line.strip()[:100]!r}"
             for path, text in pages().items()
             for number, line in enumerate(text.splitlines(), 1)
             for match in WORK_WORDS.finditer(line)]
    assert not found, "a page for users speaks of the work, not of what to do and what it costs:\n" + "\n".join(found)


def test_the_work_words_are_caught_and_ordinary_words_are_not():
    caught = ["as the issue asks", "Issue 19 fixed", "this round's change", "rounds of work", "main before it",
              "at dfd2f79", "(4befc47, `git archive`)", "before this fix", "this branch's code"]
    passed = ["a lock around the count", "the background job", "`--rounds 5`", "10646790 parameters",
              "a worker issued", "round-trip", "the cache's fingerprint", "abcdefab"]
    assert all(WORK_WORDS.search(text) for text in caught), [t for t in caught if not WORK_WORDS.search(t)]
    assert not any(WORK_WORDS.search(text) for text in passed), [t for t in passed if WORK_WORDS.search(t)]


def _result_file_problems(path: Path) -> list[str]:
    """What a benchmark's result file lacks: a `Command:` that runs a script of benchmarks/ that exists,
    a `Machine:` with its cores, a `Date:` with a day, and a markdown table."""
    text = path.read_text()
    fields = dict(re.findall(r"(?m)^(Command|Machine|Date): (.+)$", text))
    problems = []
    command = re.search(r"`[^`]*?(benchmarks/bench_\w+\.py)[^`]*`", fields.get("Command", ""))
    if not command:
        problems.append("no `Command:` line running a benchmark script")
    elif not (ROOT / command.group(1)).is_file():
        problems.append(f"its command runs {command.group(1)}, which is missing")
    if "cores" not in fields.get("Machine", ""):
        problems.append("no `Machine:` line with its cores")
    if not re.search(r"\b20\d\d-\d\d-\d\d\b", fields.get("Date", "")):
        problems.append("no `Date:` line with a day (YYYY-MM-DD)")
    if not re.search(r"(?m)^\|.*\|\n\|(?: *:?-+:? *\|)+\n\|", text):
        problems.append("no markdown table")
    return problems


def test_every_benchmark_result_names_its_command_machine_and_date_and_a_page_cites_it():
    results = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
    assert results, "benchmarks/results/ holds no result file"
    cited = "\n".join(pages().values())
    for path in results:
        assert _result_file_problems(path) == [], (path.name, _result_file_problems(path))
        assert f"benchmarks/results/{path.name}" in cited, f"no page of docs/ or the README cites {path.name}"


def test_the_file_a_benchmark_writes_names_its_command_machine_and_date(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT))
    from benchmarks.results_file import write_result

    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "bench_step.py"), "--preset", "smoke"])
    path = write_result("step", None, [["variant", "step (ms)"], ["baseline", "1.50"], ["p=2", "1.62"]],
                        "a note", folder=tmp_path)
    text = path.read_text()
    assert "Command: `python benchmarks/bench_step.py --preset smoke`" in text, text
    assert f"{__import__('os').cpu_count()} cores" in text and "load average" in text, text
    assert "| baseline | 1.50 |" in text and "| p=2 | 1.62 |" in text, text
    assert _result_file_problems(path) == []
    assert write_result("none", None, [["a"], ["1"]], folder=tmp_path / "none") is None
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py")))
def test_every_benchmark_script_writes_its_result_file(script):
    source = (ROOT / "benchmarks" / script).read_text()
    assert "write_result(" in source and "add_result_argument(parser" in source, script
