"""Files the service writes for people to read (a report, an export, an exported grid, a replay chart)
get the mode the user's umask asks for, as any other program's files do: 0644 under umask 022, so a
report written to share is readable by the team; 0600 under 077. The writes stay atomic (a temporary
file renamed into place), and the temporary file's own 0600 must not leak into the result."""

from __future__ import annotations

import os
import stat

import pytest

from tests.study_helpers import TINY, cli, lpstudy, start_worker, wait_all

pytestmark = pytest.mark.slow  # real workers and several commands a test: minutes


@pytest.fixture(scope="module")
def small_grid(tmp_path_factory):
    """A grid of 2 p × 2 folds on the smoke model (30 steps), run by one real worker."""
    tmp = tmp_path_factory.mktemp("modes")
    url = f"sqlite:///{tmp / 'grid.db'}"
    made = lpstudy("create", "--study", "g", "--storage", url, "--preset", "smoke", "--sampler", "grid",
                   "--p", "1,3", "--fold", "0,1", "--lr", "1e-2", *TINY)
    assert made.returncode == 0, made.stderr
    assert wait_all([start_worker("g", url, log=tmp / "w.log")], timeout=600) == [0], (tmp / "w.log").read_text()
    return url, tmp


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_files_written_by_report_export_export_grid_and_replay_follow_the_umask(small_grid, capsys, umask, expected):
    url, tmp = small_grid
    out = tmp / f"u{umask:03o}"
    out.mkdir()
    files = {
        "report": (out / "report.html", ["report", "--study", "g", "--storage", url]),
        "export": (out / "best.yaml", ["export", "--study", "g", "--storage", url, "--format", "yaml"]),
        "export-grid": (out / "g.json.gz", ["export-grid", "--study", "g", "--storage", url]),
    }
    before = os.umask(umask)
    try:
        for command, (path, args) in files.items():
            code, _, err = cli(capsys, *args, "-o", str(path))
            assert code == 0, (command, err)
        chart = out / "replay.png"
        code, _, err = cli(capsys, "replay", "--grid", str(files["export-grid"][0]), "--seeds", "2",
                           "--methods", "random+none", "--chart", str(chart), "--no-progress")
        assert code == 0, err
        files["replay --chart"] = (chart, [])
    finally:
        os.umask(before)
    modes = {command: oct(_mode(path)) for command, (path, _) in files.items()}
    assert modes == {command: oct(expected) for command in files}, f"under umask {umask:03o}"
    assert sorted(p.name for p in out.iterdir()) == sorted(path.name for path, _ in files.values()), \
        "a temporary file was left behind"
