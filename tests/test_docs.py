"""The README is a first screen and a short tour; the reference lives in docs/. Every page there is
linked from the README, every link between them resolves, and every `lpstudy` command they give
uses a command and options that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.study_helpers import ROOT, lp_env

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
TOUR = ["Run a study", "Watch it", "Compare p fairly", "Export and retrain", "Run it on a cluster"]


def pages() -> dict[Path, str]:
    return {path: path.read_text() for path in [README, *DOCS]}


def test_the_readme_is_its_first_screen_then_a_short_tour_then_the_reference():
    text = README.read_text()
    headings = re.findall(r"(?m)^## (.+)$", text)
    assert headings == ["Two commands", "Install", "A short tour", "Reference"]
    tour = text.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    places = [tour.index(f"**{name}.**") for name in TOUR]
    assert places == sorted(places)
    # each stop of the tour: a few lines and one command
    for name, following in zip(TOUR, [*TOUR[1:], None]):
        stop = tour.split(f"**{name}.**", 1)[1]
        stop = stop.split(f"**{following}.**", 1)[0] if following else stop
        commands = [line for line in stop.splitlines() if line.startswith("    ")]
        assert len(commands) == 1, (name, commands)
    assert len(text.split()) < 2000  # it was 8,400 words of reference inside a tutorial


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
def test_every_command_the_pages_give_exists_with_its_options(command):
    result = subprocess.run([sys.executable, "-m", "lpstudy", command, "--help"], capture_output=True, text=True,
                            env=lp_env(COLUMNS="200"), timeout=120)
    assert result.returncode == 0, (command, result.stderr[-500:])
    for option in _options_by_command()[command]:
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", result.stdout), (command, option)
