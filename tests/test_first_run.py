"""The first ten minutes, as a new user meets them: the README's two commands on a fresh copy of the
repository, the example study files, the costs said before they are paid, and command-line output
that reads at 80 columns and piped."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml
from optuna.trial import TrialState

from tests.study_helpers import ROOT, TINY, cli, lp_env, lpstudy

README = (ROOT / "README.md").read_text()
DOCS = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}


def _readme_commands() -> tuple[str, str]:
    """The first of the README's two commands (the search) and its fast tier's test command."""
    return _readme_code_lines("Two commands")[0], _readme_test_commands()[0]


def _readme_code_lines(heading: str) -> list[str]:
    """The command lines of one section of the README, a trailing comment left off."""
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in section.splitlines() if line.startswith("    ")]


def _readme_test_commands() -> list[str]:
    """The README's test commands: the fast tier, then the slow rest."""
    return [c for c in _readme_code_lines("Run the tests") if "pytest" in c]


def _fresh_copy(dest: Path) -> Path:
    """The repository as a clone has it: tracked and not-ignored files, committed in a new git repo."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "fresh"], cwd=dest, check=True)
    return dest


def test_the_readme_installs_in_a_fresh_venv_what_ci_installs_then_gives_two_commands():
    headings = re.findall(r"(?m)^## (.+)$", README)
    assert headings.index("Install") < headings.index("Two commands") < headings.index("Run the tests")
    venv, pip = _readme_code_lines("Install")
    assert venv == "python3 -m venv .venv && . .venv/bin/activate"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "python3 -m venv .venv" in ci and ". .venv/bin/activate" in ci
    # the README's installs, in its order, are the ones .ci/run makes (which adds only -q)
    installs = [part.strip().removeprefix("pip install ") for part in pip.split("&&")]
    ci_installs = [line.removeprefix("python -m pip install -q ") for line in ci
                   if line.startswith("python -m pip install -q ") and "--upgrade" not in line]
    assert installs == ci_installs[:2] == ["torch==2.13.0", '-e ".[dev]"'], (installs, ci_installs)
    assert _readme_code_lines("Two commands") == ["lpstudy search --preset smoke --workers 2",
                                                  "lpstudy dashboard --study lp-search"]
    # the corpus: where the first run finds it, and the variable that points it at a copy
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert "~/.cache/lpstudy" in section and "LPSTUDY_DATA=" in section
    # what the tests need, and how long they take: the page on tests, linked from the README's
    tests_section = README.split("## Run the tests", 1)[1].split("\n## ", 1)[0]
    assert "](docs/tests-and-benchmarks.md)" in tests_section
    needs = DOCS["tests-and-benchmarks.md"].split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    for need in ("corpus", "PostgreSQL", "/usr/bin/chromium", "root", "../shared", "checkov", "minutes"):
        assert need in needs, need


def test_the_readme_picture_is_a_page_of_the_dashboard_in_docs():
    pictures = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", README)
    assert len(pictures) == 1 and pictures[0].startswith("docs/") and (ROOT / pictures[0]).is_file(), pictures
    assert (ROOT / pictures[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ci_runs_the_readme_test_commands_as_written_from_the_repository_root():
    tests = _readme_test_commands()
    # the fast tier, then the slow rest: the two marker expressions split the suite, each test in one
    assert [t.split("python -m pytest", 1)[1].strip() for t in tests] == ['-m "not slow" -n 2', "-m slow -n 3"], tests
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for test in tests:
        assert test in ci, test  # the very line, relative path included
    assert [ci.index(t) for t in tests] == sorted(ci.index(t) for t in tests)  # the fast tier first
    assert 'cd "$(dirname "$0")/.."' in ci  # from the repository root
    tests_section = DOCS["tests-and-benchmarks.md"].split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    for test in tests:
        assert f"    {test}\n" in tests_section, test


def _the_readme_run_prints_its_leader(repo: Path, run: list[str], out: str) -> None:
    """The README's first command (`lpstudy search --preset smoke --workers 2`, here --n-trials 3 and
    30 steps a trial) on a fresh copy: its cost said first, its leader said to lead on one fold, never to
    be best, with the command that races it; the spread phase's other trials left waiting; nothing in
    the checkout. (Checked in the tour, the first of its commands, rather than on a fresh copy of its own.)"""
    assert run[1:3] == ["search", "--preset"] and run[run.index("--n-trials") + 1] == "3", run
    estimate = re.search(r"runs 3 trial\(s\) of preset smoke, ≈ (\d+) s each on 1 CPU thread; 2 worker\(s\): "
                         r"about ([^,]+), starting them included", out)
    assert estimate, out
    each, total = int(estimate.group(1)), _seconds(estimate.group(2))
    assert total >= 2 * each + 5  # 3 trials on 2 workers: two waves, plus starting the command and the processes
    # 3 spread trials, one fold each: the leader is said to lead, never to be best, with the command that races it
    assert re.search(r"leading +loss \d\.\d{4} on 1 fold: not yet raced", out) and re.search(r"trial \d+ · p=", out), out
    assert not re.search(r"^best ", out, re.M) and "race:      lpstudy search --study lp-search" in out, out
    assert "lpstudy dashboard --study lp-search" in out and "lpstudy export --study lp-search" in out
    study = optuna.load_study(study_name="lp-search", storage=f"sqlite:///{repo / 'storage' / 'lpstudy.db'}")
    states = [t.state for t in study.trials]
    ran = [s for s in states if s != TrialState.WAITING]  # the spread phase's other 5 wait for the next run
    assert len(ran) == 3 and set(ran) <= {TrialState.COMPLETE, TrialState.PRUNED}
    spread_waiting = [t for t in study.trials if t.state == TrialState.WAITING and t.user_attrs.get("spread")]
    assert TrialState.COMPLETE in ran and len(spread_waiting) == 8 - 3
    assert len(states) == 8  # and no race beside them: a run enqueues none it will not run (lpstudy.study.races)
    # nothing lands in the checkout unasked: the database is git-ignored
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert dirty == "", dirty


def _seconds(text: str) -> float:
    """'1 min 10 s' → 70 (lpstudy.values.format_duration's forms)."""
    units = {"s": 1, "min": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+) (s|min|h)\b", text))


def _tour_commands() -> list[str]:
    """The commands of the README's tour in the order a reader meets them: its command lines (a
    `A && B` line as two, comments left off) and the commands its text gives in full inline
    (`lpstudy status --study lp-smoke`; not `lpstudy worker --study NAME`, nor a bare `lpstudy replicate`)."""
    section = README.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    found = [(m.start(), m.group(1).split("  #", 1)[0].strip()) for m in re.finditer(r"^    (\S.*)$", section, re.M)]
    for m in re.finditer(r"`((?:lpstudy|python -m) [^`]+)`", section):
        words = m.group(1).split()
        if len(words) >= 3 and not any(w.isupper() for w in words):
            found.append((m.start(), m.group(1)))
    return [part.strip() for _, line in sorted(found) for part in line.split("&&")]


# What the test adds to a command that trains, so that the tour runs in a few minutes: fewer
# trials (3: two waves on the README's 2 workers), 30 steps a trial; and to the synthetic study's writer,
# 20 trials of its 200 (a later --trials wins: 200 took 15 s of CPU, 40 s on a busy machine). Everything
# else is as the README writes it.
_QUICK = {"search": ["--n-trials", "3", *TINY], "replicate": TINY, "lpstudy.study.synthetic": ["--trials", "20"]}


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the README, the tour and a study's life after it: about 10 minutes on a busy 2-core machine
def test_the_readme_then_the_tour_in_order_on_a_fresh_copy_each_succeed(tmp_path):
    """A newcomer's first hour: the README's two commands, then every command of the tour as
    written, in order, in one fresh copy of the repository and its default database (the corpus
    from LPSTUDY_DATA); the first command's output and study as _the_readme_run_prints_its_leader
    says. `docker compose up` is left to tests/test_deploy.py: it needs Docker."""
    from tests.pgserver import free_port
    from tests.study_helpers import wait_until_answers

    repo = _fresh_copy(tmp_path / "lpstudy")
    env = lp_env(PYTHONPATH=str(repo), LPSTUDY_STORAGE="")
    commands = [*_readme_code_lines("Two commands"), *_tour_commands()]
    tour = [c for c in commands if not c.startswith("docker ")]
    assert len(commands) - len(tour) == 1, commands  # only docker compose is not run here
    assert [c.split()[1] for c in tour[:3]] == ["search", "dashboard", "search"], tour  # one study each
    assert "--config examples/search-smoke.yaml" in tour[2]
    ran = []
    for command in tour:
        words = command.split()
        if words[0] == "lpstudy":
            argv = [sys.executable, "-m", "lpstudy", *words[1:], *_QUICK.get(words[1], [])]
        else:
            assert words[:2] == ["python", "-m"], command
            argv = [sys.executable, *words[1:], *_QUICK.get(words[2], [])]
        if words[:2] == ["lpstudy", "dashboard"]:
            port = free_port()
            proc = subprocess.Popen([*argv, "--headless", "--port", str(port)], cwd=repo, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                wait_until_answers(f"http://127.0.0.1:{port}/", proc)
            finally:
                proc.terminate()
                output = proc.communicate(timeout=30)[0]
            assert "error" not in output.lower(), (command, output)
        else:
            done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (command, done.stdout + done.stderr)
            if not ran:  # the README's first command
                _the_readme_run_prints_its_leader(repo, argv[2:], done.stdout + done.stderr)
        ran.append(words[1] if words[0] == "lpstudy" else words[2])
    assert ran == ["search", "dashboard", "search", "status", "lpstudy.study.synthetic", "dashboard", "replicate",
                   "verdict", "export", "train"], ran
    url = f"sqlite:///{repo / 'storage' / 'lpstudy.db'}"
    assert {s.study_name for s in optuna.get_all_study_summaries(url)} == {"lp-search", "lp-smoke", "matched"}
    assert (repo / "best.yaml").is_file() and (repo / "demo.db").is_file()
    assert [s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{repo / 'demo.db'}")] == ["synthetic"]
    _the_study_lives_on(repo, env, url)


def _the_study_lives_on(repo: Path, env: dict, url: str) -> None:
    """After the tour: lp-smoke continued from its name alone (a flag that would change it refused),
    the studies listed, one deleted, and a search interrupted by Ctrl-C (exit 130), after which no page
    counts a failed trial: the interrupted one was enqueued again."""
    from tests.study_helpers import wait_for
    from tests.test_app import run_page

    def lp(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lpstudy", *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=600)

    done = lp("search", "--study", "lp-smoke", "--n-trials", "1")
    assert done.returncode == 0 and "study 'lp-smoke' continued" in done.stderr, done.stderr
    refused = lp("search", "--study", "lp-smoke", "--n-trials", "1", "--pruner", "none")
    assert refused.returncode == 2 and refused.stderr == (
        "lpstudy: error: study 'lp-smoke' already exists with another spec: --pruner none would change pruner "
        "hyperband to pruner none. Leave it out to continue the study as it is, or give a new --study NAME to make "
        "a new study\n"), refused.stderr
    listed = {row["study"]: row for row in json.loads(lp("studies", "--json").stdout)}
    assert set(listed) == {"lp-search", "lp-smoke", "matched"} and listed["matched"]["kind"] == "replicate"
    done = lp("delete-study", "matched", "--yes")
    assert done.returncode == 0 and "deleted study 'matched'" in done.stderr, done.stderr
    assert {row["study"] for row in json.loads(lp("studies", "--json").stdout)} == {"lp-search", "lp-smoke"}

    def running() -> bool:
        return any(t.state == TrialState.RUNNING for t in optuna.load_study(study_name="lp-smoke", storage=url).trials)

    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "search", "--study", "lp-smoke", "--n-trials", "4",
                             "--workers", "2"], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(running, timeout=240, what="a running trial")
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err.rstrip().endswith("lpstudy: interrupted"), out + err
    trials = optuna.load_study(study_name="lp-smoke", storage=url).trials
    # the interrupted trials (their retries, WAITING, carry their user attributes too)
    stopped = [t for t in trials if t.user_attrs.get("interrupted") and t.state != TrialState.WAITING]
    assert stopped and all(t.state == TrialState.FAIL for t in stopped) and not running()
    assert all(any(r.system_attrs.get("failed_trial") == t.number for r in trials) for t in stopped)  # enqueued again
    status = json.loads(lp("status", "--study", "lp-smoke", "--json").stdout)
    assert status["counts"]["FAIL"] == 0, status["counts"]
    before = os.environ.get("LPSTUDY_STORAGE")
    try:
        home = run_page("Home", url, "lp-smoke")  # what every page counts: lpstudy.results.analysis.state_counts
    finally:  # the environment as it was: unset where it was unset (conftest checks that no test leaks it)
        if before is None:
            os.environ.pop("LPSTUDY_STORAGE", None)
        else:
            os.environ["LPSTUDY_STORAGE"] = before
    assert {m.label: m.value for m in home.metric}["Fail"] == "0"


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_study_file_loads_and_the_readme_uses_it(path):
    from lpstudy.design.spec import build_spec, read_study_file

    spec = build_spec(read_study_file(path))
    assert spec.preset in ("paper", "cpu", "smoke")
    told = [README, DOCS["studies.md"]]  # the tour, and the page on studies
    assert any(f"examples/{path.name}" in text for text in told) or path.name in README
    # the file says how to run it
    assert "lpstudy " in path.read_text()


def test_the_docs_study_yaml_is_the_shipped_example():
    block = DOCS["studies.md"].split("```yaml\n# examples/study.yaml\n", 1)[1].split("```", 1)[0]
    shipped = (ROOT / "examples" / "study.yaml").read_text()
    assert yaml.safe_load(block) == yaml.safe_load(shipped)


def test_outputs_that_default_to_the_working_directory_are_git_ignored(tmp_path):
    for name in ("storage/lpstudy.db", "storage/artifacts/x", "report.html", "best.yaml", "demo.db"):
        r = subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT)
        assert r.returncode == 0, name


def readme_costs() -> dict[str, dict[str, str]]:
    """The README's table of what a trial costs, as documented: preset -> parameters, CPU and GPU time."""
    section = README.split("**What a trial costs**", 1)[1].split("\n\n", 2)[1]
    rows = [[cell.strip(" `") for cell in line.strip("|").split("|")] for line in section.splitlines()[2:]]
    return {row[0]: {"params": row[2], "cpu": row[3], "gpu": row[4]} for row in rows}


def test_the_readme_documents_each_presets_size_as_the_model_has_it():
    import torch  # noqa: F401  (the model)

    from lpstudy.model.gpt import GPT
    from lpstudy.training.config import PRESETS

    from lpstudy.training.costs import PRESET_COSTS

    table = readme_costs()
    assert set(table) == set(PRESETS) == set(PRESET_COSTS)
    for name, row in table.items():
        counted = GPT(PRESETS[name].model_config(vocab_size=65)).num_params()
        assert int(row["params"].replace(",", "")) == counted == PRESET_COSTS[name].n_params, name


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "create", "replicate", "search", "compare"])
def test_help_of_every_costly_command_gives_each_presets_size_and_time(command):
    r = lpstudy(command, "--help", env=lp_env(COLUMNS="80"))
    text = " ".join(r.stdout.split())
    assert r.returncode == 0
    table = readme_costs()  # the help says what the README documents, in its own words
    for name in ("paper", "smoke"):
        params = int(table[name]["params"].replace(",", ""))
        size = f"{params / 1e6:.1f} M" if params >= 1_000_000 else f"{round(params / 1000)} k"
        fragment = f"{name} ({size} params, {table[name]['cpu']}/trial on 1 CPU thread, {table[name]['gpu']} on a GPU"
        assert fragment in text, (fragment, text)
    assert "paper (10.6 M params, 3.5 days/trial" in text  # the table above, written out


def test_replicate_requires_a_preset_and_says_the_trials_and_their_cost_first(sqlite_url, capsys):
    code, _, err = cli(capsys, "replicate", "--study", "r", "--storage", sqlite_url)
    assert code == 2 and "Missing option '--preset'" in err and err.count("\n") == 1
    code, _, err = cli(capsys, "replicate", "--study", "r", "--storage", sqlite_url, "--preset", "paper",
                       "--p", "1,2", "--folds", "2")
    assert code == 0
    # 2 p × 2 folds = 4 trials of the README's documented 3.5 days (1 CPU thread) and ~4 min (GPU) each
    paper = readme_costs()["paper"]
    assert (paper["cpu"], paper["gpu"]) == ("3.5 days", "~4 min")
    assert f"left: 4 trial(s) of preset paper: about {4 * 3.5:.1f} days on one CPU thread, ~{4 * 4} min on one GPU" in err


@pytest.mark.slow
def test_version_and_help_that_never_cuts_the_default_storage_url():
    from lpstudy import __version__

    r = lpstudy("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"lpstudy {__version__}"
    for command in ("create", "worker", "status", "replicate", "search", "dashboard"):
        r = lpstudy(command, "--help", env=lp_env(COLUMNS="80"))
        assert "sqlite:///storage/lpstudy.db" in r.stdout, command
        assert "…" not in r.stdout and max(map(len, r.stdout.splitlines())) <= 80, command


@pytest.mark.slow
def test_the_last_line_of_train_is_one_line_when_stderr_is_piped():
    r = lpstudy("train", "--preset", "smoke", *TINY, env=lp_env(COLUMNS="80"))
    assert r.returncode == 0, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"final val loss \d\.\d{4} · best \d\.\d{4} at step \d+ · 30 steps in [\d.]+s · "
                        r"[\d,]+ tok/s on cpu", last), r.stderr


def _status_numbers_read_through_optuna(url: str, name: str, kind: str) -> list[str]:
    """The numbers `status` prints, as they are written, computed here from Optuna's API: each running
    trial's number, lr, gain, last reported loss and step, host; for a replicate grid, per p the mean
    ± std, the t interval and the best of the completed runs that did not diverge, and the verdicts'
    difference to p = 2 over the folds both have (with its relative size)."""
    from scipy.stats import t as student

    trials = optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)
    expected = []
    for t in trials:
        if t.state.name == "RUNNING":
            a, step = t.user_attrs, max(t.intermediate_values)
            expected += [f" {t.number} ", f"{a['lr']:.3g}", f"{a['gain_init']:.3g}", f"{t.intermediate_values[step]:.4f}",
                         f"{step}/{a['max_steps']}", str(a["host"])]
    if kind != "replicate":
        return expected
    losses: dict = {}  # p (as the trial's attribute holds it) -> fold -> loss
    for t in trials:
        if t.state.name == "COMPLETE" and not t.user_attrs["diverged"]:
            losses.setdefault(t.user_attrs["p"], {})[t.params["fold"]] = t.value
    for by_fold in losses.values():
        x = np.array(list(by_fold.values()))
        if len(x) < 2:
            continue
        mean, std = x.mean(), x.std(ddof=1)
        half = student.ppf(0.975, len(x) - 1) * std / math.sqrt(len(x))
        expected += [f"{mean:.4f} ± {std:.4f}", f"{x.min():.4f}"]
        if len(x) >= 3:  # the pages' rule: no interval for a group of fewer than 3 runs
            expected.append(f"[{mean - half:.4f}, {mean + half:.4f}]")
    for p, by_fold in losses.items():
        folds = sorted(set(by_fold) & set(losses[2.0])) if p != 2.0 else []
        if folds:
            diffs = np.array([by_fold[f] - losses[2.0][f] for f in folds])
            reference = np.mean(list(losses[2.0].values()))  # the verdicts': relative to p = 2's mean loss
            expected += [f"{diffs.mean():+.4f}", f"{100 * diffs.mean() / reference:+.2f} %"]  # the verdict table's
    return expected


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["search", "replicate"])
def test_status_at_80_columns_piped_shows_every_number_in_full(kind, tmp_path):
    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    write_synthetic_study(url, "s", kind=kind, n_trials=40, n_evals=6, folds=5, seed=4)
    text = lpstudy("status", "--study", "s", "--storage", url, env=lp_env(COLUMNS="80"))
    data = lpstudy("status", "--study", "s", "--storage", url, "--json", env=lp_env(COLUMNS="80"))
    assert text.returncode == 0 and data.returncode == 0, text.stderr
    out, status = text.stdout, json.loads(data.stdout)
    assert "…" not in out
    table_lines = [line for line in out.splitlines() if line.startswith("  ")]
    assert table_lines and max(map(len, table_lines)) <= 80, out
    assert status["running"], "the synthetic study has running trials"
    expected = _status_numbers_read_through_optuna(url, "s", kind)
    # two running trials; for the grid, 7 p values and each p ≠ 2 paired with p = 2
    intervals = sum(fragment.startswith("[") for fragment in expected)  # the per-p groups of 3 runs or more
    assert len(expected) - intervals == (6 * 2 if kind == "search" else 6 * 2 + 2 * 7 + 2 * 6), expected
    for fragment in expected:
        assert fragment in out, (fragment, out)


def test_status_at_80_columns_wraps_how_well_a_searchs_best_is_known_between_words(tmp_path):
    """The line under a search's best (lpstudy.results.reading.measured.measured_line) fits 80 columns however
    many folds and digits it names, each number whole, as the table lines do."""
    import io

    from rich.console import Console

    from lpstudy.db.kinds import open_reader
    from lpstudy.results.status import render_status, study_status
    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    write_synthetic_study(url, "s", kind="search", n_trials=12, n_evals=4, folds=5, seed=4)
    status = study_status(open_reader(url), "s")
    for measured in ({"chosen_as": "leading on 1 fold", "folds_measured": 1, "mean_over_folds": 1.2345,
                      "interval": None},
                     {"chosen_as": "best", "folds_measured": 10, "mean_over_folds": 12.3456,
                      "interval": [11.2345, 13.4567]}):
        status["best"].update(measured)
        out = io.StringIO()
        render_status(status, Console(file=out, width=80, force_terminal=False))
        text = out.getvalue()
        indented = [line for line in text.splitlines() if line.startswith("  ")]
        assert indented and max(map(len, indented)) <= 80, text
        if measured["folds_measured"] > 1:
            for number in ("12.3456", "[11.2345,", "13.4567]", "10 folds"):
                assert number in " ".join(line.strip() for line in text.splitlines()), (number, text)
        else:
            assert "loss 1.2345 on 1 fold: not yet raced on a second fold, so not yet a best" in " ".join(text.split())
