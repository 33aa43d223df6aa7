"""Files the service writes for people to read (a report, an export, an exported grid, a replay chart)
get the mode the user's umask asks for, as any other program's files do: 0644 under umask 022, so a
report written to share is readable by the team; 0600 under 077. The writes stay atomic (a temporary
file renamed into place), and the temporary file's own 0600 must not leak into the result."""

from __future__ import annotations

import os
import stat

import pytest

from tests.study_helpers import cli

pytestmark = pytest.mark.slow  # real workers and several commands a test: minutes

# A grid of 2 p × 2 folds on the smoke model (30 steps) run by one real worker: real_grids' "g-lr"
# (tests/conftest.py), the grids test_replay.py reads, trained once per test run for both.
GRID = "g-lr"


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_files_written_by_report_export_export_grid_and_replay_follow_the_umask(real_grids, capsys, tmp_path,
                                                                                umask, expected):
    url, study = real_grids, GRID
    out = tmp_path / f"u{umask:03o}"
    out.mkdir()
    files = {
        "report": (out / "report.html", ["report", "--study", study, "--storage", url]),
        "export": (out / "best.yaml", ["export", "--study", study, "--storage", url, "--format", "yaml"]),
        "export-grid": (out / "g.json.gz", ["export-grid", "--study", study, "--storage", url]),
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
