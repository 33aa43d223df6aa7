"""A container of a built deployment (`kubectl kustomize` of deploy/k8s) as its program meets it: its
mounts as files under a folder (ConfigMap keys, the Secret's keys from the example, a folder for any
other volume, the files the image carries), its environment (plain values, ConfigMap and Secret keys,
its CPU request), its command with $(VAR) expanded and every path it names moved under that folder.
tests/test_k8s.py runs each container's own entrypoint in its check mode on that
(`lpstudy worker ... --check`, the scripts' `--check`), and the checks below hold what is wrong before
any program runs: a variable given twice, a Secret key no example documents, a path no mount provides.
Each check is a function from the built documents to problems, one line each, that states the rule
(tests/k8s_checks.py's problems_of runs them on every build)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.k8s_references import SECRET_EXAMPLE, defined, mounted_files, secret_example
from tests.k8s_walk import all_containers, flag_value, name_of, pods, quantity

# The files the image itself carries that the manifests name (the Dockerfile puts the corpus there;
# tests/test_k8s.py, test_the_workers_read_the_corpus_the_image_carries, checks it does).
IMAGE_FILES = {"/opt/lpstudy/data/tinyshakespeare.txt"}
# The flags of lpstudy's commands and the variables its programs read that name a file or a folder
# they open.
PATH_FLAGS = ("--config", "-c", "--data", "--storage-file", "--artifacts")
PATH_VARIABLES = ("LPSTUDY_DATA", "LPSTUDY_STORAGE_FILE", "LPSTUDY_ARTIFACTS", "PGPASSWORD_FILE")
COMMENTED_KEY = re.compile(r"^#\s*([A-Z][A-Z0-9_]*)=")


def documented_secret_keys() -> set[str]:
    """The keys of the Secret `lpstudy` the example documents: set, or commented out as optional."""
    keys = set(secret_example())
    keys |= {m.group(1) for line in SECRET_EXAMPLE.read_text().splitlines() if (m := COMMENTED_KEY.match(line.strip()))}
    return keys


def env_names_each_variable_once(docs: list[dict]) -> list[str]:
    """A container names each environment variable once: the API takes a repeated name and the last
    one wins, silently."""
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            names = [e["name"] for e in c.get("env", [])]
            for name in sorted({n for n in names if names.count(n) > 1}):
                problems.append(f"{name_of(doc)}/{c['name']}: a container names each environment variable once "
                                f"({name} is given {names.count(name)} times; the last wins)")
    return problems


def sources_name_each_variable_once(folder: Path) -> list[str]:
    """The same rule on the files a build is made from (deploy/k8s): kustomize merges a component's
    patch into a container's env by name, and a name given twice in a file collapses into one entry,
    the last, so the build no longer shows it."""
    import yaml

    problems = []

    def walk(node, path: Path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "env" and isinstance(value, list):
                    names = [e.get("name") for e in value if isinstance(e, dict)]
                    owner = node.get("name", "?")
                    for name in sorted({n for n in names if n and names.count(n) > 1}):
                        problems.append(f"{path.relative_to(folder)} container {owner}: a container names each "
                                        f"environment variable once ({name} is given {names.count(name)} times; "
                                        f"the last wins)")
                walk(value, path)
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    for path in sorted(folder.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            walk(doc, path)
    return problems


def secret_keys_are_documented(docs: list[dict]) -> list[str]:
    """Every key of the Secret `lpstudy` a container reads, optional or not, is one the example
    (deploy/k8s/lpstudy.env.example) documents: an optional key misspelt is empty for ever."""
    documented = documented_secret_keys()
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            for entry in c.get("env", []):
                ref = entry.get("valueFrom", {}).get("secretKeyRef")
                if ref and ref["name"] == "lpstudy" and ref["key"] not in documented:
                    problems.append(f"{name_of(doc)}/{c['name']}: every Secret key a container reads is one "
                                    f"{SECRET_EXAMPLE.name} documents (env {entry['name']} reads {ref['key']})")
    return problems


def _provided(path: str, files: dict[str, str | None]) -> bool:
    if path in IMAGE_FILES or path in files:
        return True
    return any(folder is None and (path == at or path.startswith(at + "/")) for at, folder in
               ((at, files[at]) for at in files))


def paths_read(docs: list[dict], c: dict) -> list[tuple[str, str]]:
    """(where, the path) of every absolute path the container's program opens: its path flags and
    path variables."""
    words = c.get("command", []) + c.get("args", [])
    env = Container.env_of(docs, c, secret_example())[0]
    words = expand(words, env)
    found = [(flag, flag_value(words, flag)) for flag in PATH_FLAGS]
    found += [(f"env {name}", env.get(name)) for name in PATH_VARIABLES]
    return [(where, path) for where, path in found if path and path.startswith("/")]


def paths_read_are_provided(docs: list[dict]) -> list[str]:
    """Every path a container's program opens (its --config, --data, the corpus, the artifact folder)
    is provided by one of its mounts or by the image."""
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            files = mounted_files(docs, template, c)
            for where, path in paths_read(docs, c):
                if not _provided(path, files):
                    problems.append(f"{name_of(doc)}/{c['name']}: every path a program opens is provided by a mount "
                                    f"or the image ({where} {path}: mounts {sorted(files)})")
    return problems


# --- a container, materialised -------------------------------------------------------------------


def expand(words: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' $(VAR) expansion: a variable the container does not have stays as written."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


@dataclass
class Container:
    """A container materialised under root: argv and env with every path they name moved under it."""

    where: str
    argv: list[str]
    env: dict[str, str]
    root: Path
    files: dict[str, str | None] = field(default_factory=dict)

    @staticmethod
    def env_of(docs: list[dict], c: dict, secret: dict[str, str]) -> tuple[dict[str, str], list[str]]:
        """The container's environment as the kubelet gives it (envFrom first, then env in order, the
        last of a repeated name winning), and the names it repeats."""
        env: dict[str, str] = {}
        for source in c.get("envFrom", []):
            if "configMapRef" in source:
                for found in defined(docs, "ConfigMap", source["configMapRef"]["name"]):
                    env.update({k: str(v) for k, v in (found.get("data") or {}).items()})
            if "secretRef" in source and source["secretRef"]["name"] == "lpstudy":
                env.update(secret)
        names = [e["name"] for e in c.get("env", [])]
        repeated = sorted({n for n in names if names.count(n) > 1})
        for entry in c.get("env", []):
            source = entry.get("valueFrom", {})
            if "value" in entry:
                env[entry["name"]] = str(entry["value"])
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                found = defined(docs, "ConfigMap", ref["name"])
                if found and ref["key"] in (found[0].get("data") or {}):
                    env[entry["name"]] = str(found[0]["data"][ref["key"]])
            elif "secretKeyRef" in source:
                key = source["secretKeyRef"]["key"]
                if key in secret:
                    env[entry["name"]] = secret[key]
            elif "resourceFieldRef" in source:
                ref = source["resourceFieldRef"]
                amount = c.get("resources", {}).get(ref["resource"].split(".")[0], {}).get(ref["resource"].split(".")[1])
                if amount is not None:
                    env[entry["name"]] = str(math.ceil(quantity(amount) / quantity(ref.get("divisor", "1"))))
            elif "fieldRef" in source:
                env[entry["name"]] = f"check-{entry['name'].lower()}"
        return env, repeated

    @classmethod
    def of(cls, docs: list[dict], doc: dict, template: dict, c: dict, root: Path, secret: dict[str, str],
           image_files: dict[str, Path]) -> "Container":
        """Writes the container's mounts under root and returns it with argv and env moved there."""
        files = mounted_files(docs, template, c, secret)
        for path, text in files.items():
            target = root / path.lstrip("/")
            if text is None:
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        for path, source in image_files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                os.symlink(source, target)
        env, _repeated = cls.env_of(docs, c, secret)
        prefixes = sorted({p for p in files} | set(image_files), key=len, reverse=True)

        def moved(value: str) -> str:
            for prefix in prefixes:
                if value == prefix or value.startswith(prefix.rstrip("/") + "/"):
                    return str(root) + value
            return value

        argv = [moved(w) for w in expand(c.get("command", []) + c.get("args", []), env)]
        env = {k: moved(v) for k, v in env.items()}
        return cls(f"{name_of(doc)}/{c['name']}", argv, env, root, files)


CHECKS = [env_names_each_variable_once, secret_keys_are_documented, paths_read_are_provided]


# --- each container's own check mode -------------------------------------------------------------

# Containers whose entrypoint cannot run here, each with why and what checks its settings instead.
NOT_RUN = {
    "postgres": "the postgres image's entrypoint is not on this machine; its settings are held by the invariants "
                "(max_connections, its stop, its probes) and the roles script by tests/test_deploy.py",
    "oauth2-proxy": "oauth2-proxy is not installed here; its settings meet the table of tests/k8s_exposure.py",
}


def program_of(c: dict) -> str:
    """What the container runs: lpstudy COMMAND, a helper script by its name, or its image's name."""
    words = c.get("command", []) + c.get("args", [])
    if "lpstudy" in words:
        rest = words[words.index("lpstudy") + 1:]
        return f"lpstudy {rest[0]}" if rest else "lpstudy"
    for word in words:
        if word.endswith((".sh", ".py")):
            return Path(word).name
    return c["image"].split("@")[0].split(":")[0].rsplit("/", 1)[-1]


def check_command(container: Container, c: dict) -> tuple[str, list[str]] | None:
    """How to run the container's entrypoint in its check mode: ("lpstudy", its arguments) in this
    process, ("exec", argv) as a process; None for one of NOT_RUN."""
    argv = container.argv
    if "lpstudy" in argv and program_of(c).startswith("lpstudy"):
        return "lpstudy", argv[argv.index("lpstudy") + 1:] + ["--check"]
    if argv and argv[0] in ("sh", "python") and len(argv) > 1:
        import sys

        return "exec", [sys.executable if argv[0] == "python" else "sh", *argv[1:], "--check"]
    return None


def run_lpstudy(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """`lpstudy ARGS` in this process (its own main, as the console script runs it), with exactly env
    as its environment; (its exit status, what it printed)."""
    import contextlib
    import io

    from lpstudy.cli import main

    saved, out = dict(os.environ), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue()


def run_check(container: Container, c: dict) -> tuple[int, str] | None:
    """The container's entrypoint in its check mode on its materialised settings: (exit status,
    output), or None for a container of NOT_RUN."""
    import subprocess

    how = check_command(container, c)
    if how is None:
        return None
    home = container.root / "home" / "lpstudy"
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **container.env}
    kind, argv = how
    if kind == "lpstudy":
        return run_lpstudy(argv, env)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=container.root)
    return out.returncode, out.stdout + out.stderr
