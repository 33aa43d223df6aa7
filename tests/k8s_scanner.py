"""checkov, the maintained policy scanner, over rendered builds and the Dockerfile, with the rules it
skips named and justified in deploy/checkov.yaml (one place).

checkov 3.3.30 pins packaging<24, networkx<2.7 and boto3==1.35.49: installed beside the rest it
downgrades them under pytest 9 (which needs packaging>=24), torch and the s3 extra's boto3 (checked
with `pip install --dry-run checkov` in the project's environment). So it lives in a virtual
environment of its own, as a tool, made by .ci/run from deploy/checkov-requirements.txt:

    python3 -m venv .venv-scan && .venv-scan/bin/pip install -r deploy/checkov-requirements.txt

Found as $LPSTUDY_CHECKOV, else .venv-scan/bin/checkov in the repository, else `checkov` on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "checkov.yaml"
REQUIREMENTS = ROOT / "deploy" / "checkov-requirements.txt"


def checkov() -> str | None:
    for candidate in (os.environ.get("LPSTUDY_CHECKOV"), ROOT / ".venv-scan" / "bin" / "checkov", shutil.which("checkov")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    return None


def skipped_rules() -> list[str]:
    return yaml.safe_load(CONFIG.read_text())["skip-check"]


def write_builds(folder: Path, builds: dict[str, list[dict]], dockerfile: Path | None = None) -> Path:
    """One file per build (its rendered documents), and the Dockerfile, in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in builds.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    if dockerfile is not None:
        shutil.copy(dockerfile, folder / "Dockerfile")
    return folder


def scan(folder: Path, exe: str) -> dict[str, list[str]]:
    """checkov over every file of folder, with deploy/checkov.yaml: file (relative to folder) -> its failures, one line
    each ("CKV_K8S_20 Deployment.default.lpstudy-dashboard: Containers should not run with
    allowPrivilegeEscalation"). A file without failures is absent."""
    out = subprocess.run([exe, "--config-file", str(CONFIG), "-d", str(folder), "-o", "json"],
                         capture_output=True, text=True, timeout=600, cwd=folder,
                         env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "LOG_LEVEL": "WARNING"})
    assert out.returncode in (0, 1), f"checkov failed to run ({out.returncode}): {out.stderr[-2000:]}"
    reports = json.loads(out.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    failures: dict[str, list[str]] = defaultdict(list)
    for report in reports:
        assert report["summary"]["parsing_errors"] == 0, f"checkov could not parse: {report['summary']}"
        for failed in report["results"]["failed_checks"]:
            failures[failed["file_path"].lstrip("/")].append(f"{failed['check_id']} {failed['resource']}: {failed['check_name']}")
    return dict(failures)
