"""The deployment: what docker-compose.yml, the Dockerfile, the PostgreSQL init script, the GPU claim
and the Slurm script promise, checked without a Docker engine (docker-compose validates and resolves
the file; the init script runs against the tests' throwaway PostgreSQL)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import pytest
import yaml
from lpstudy.db.kinds import open_reader

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
INIT_SCRIPT = ROOT / "storage" / "init" / "10-lpstudy-roles.sh"
CLAIM_GPU = ROOT / "deploy" / "docker" / "lpstudy-claim-gpu"
SBATCH = ROOT / "deploy" / "slurm" / "lpstudy-worker.sbatch"

DB_SERVICES = ("worker", "worker-cpu", "dashboard", "optuna-dashboard", "storage-proxy")
SERVERS = {"dashboard": 8501, "optuna-dashboard": 8080, "storage-proxy": 13000, "prometheus": 9090}
SECRETS_DIR = ROOT / "secrets"
WITH_SECRETS = ROOT / "deploy" / "docker" / "lpstudy-with-secrets"
PROMETHEUS_CONFIG = ROOT / "deploy" / "docker" / "prometheus.yml"
CONSTRAINTS = ROOT / "constraints.txt"
DASHBOARDS = ("dashboard", "optuna-dashboard")
WRITERS = ("worker", "worker-cpu", "storage-proxy")


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def write_env_file(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def docker_compose(*args: str, env_file: Path, compose_file: Path = COMPOSE) -> subprocess.CompletedProcess:
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.fail("docker-compose is not installed: apt-get install docker-compose (.ci/run does); "
                    "the compose file must be validated")
    # Only the env file feeds the interpolation: nothing from the caller's environment leaks in.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [exe, "--project-directory", str(ROOT), "-f", str(compose_file), "--env-file", str(env_file), *args],
        capture_output=True, text=True, env=env, timeout=60)


def resolve(env_file: Path) -> dict:
    out = docker_compose("config", env_file=env_file)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)


def published(service: dict) -> list[tuple[str, str, str]]:
    """(host address, host port, container port) of each published port, from the resolved file."""
    rows = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            rows.append((port.get("host_ip", ""), str(port.get("published", "")), str(port["target"])))
        else:
            parts = str(port).split("/")[0].split(":")
            rows.append((parts[0], parts[1], parts[2]) if len(parts) == 3 else ("", *parts[-2:]))
    return rows


def storage_of(service: dict):
    from sqlalchemy.engine import make_url

    return make_url(service["environment"]["LPSTUDY_STORAGE"])


@pytest.fixture(scope="module")
def example_env() -> dict[str, str]:
    return read_env_file(ENV_EXAMPLE)


@pytest.fixture(scope="module")
def services() -> dict:
    return resolve(ENV_EXAMPLE)["services"]


# --- docker-compose.yml ------------------------------------------------------------------------


def test_compose_file_validates_with_the_example_environment(services):
    assert set(services) == {"db", *DB_SERVICES, "prometheus"}


def test_an_invalid_compose_file_fails_validation(tmp_path):
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("    healthcheck:\n", "    healthchek:\n", 1))
    out = docker_compose("config", env_file=ENV_EXAMPLE, compose_file=broken)
    assert out.returncode != 0
    assert "healthchek" in out.stderr


def empty_env(tmp: Path) -> Path:
    """An .env that sets only what compose refuses to start without (the study's name)."""
    return write_env_file(tmp / "empty.env", {"LPSTUDY_STUDY": "lp-search"})


def test_the_resolved_compose_file_holds_its_reference_graph_and_invariants(tmp_path):
    """tests/compose_references.py: every secret, volume, service and URL host a service names is
    defined; Prometheus scrapes what the workers serve; the metrics linger fits the grace period;
    ports bind to this host; finished workers stay stopped; GPU claimers see every GPU. With the
    example .env and with an empty one."""
    from tests import compose_references

    assert compose_references.problems_of(resolve(ENV_EXAMPLE)) == []
    assert compose_references.problems_of(resolve(empty_env(tmp_path))) == []


# Mistakes of each kind, applied to a copy of docker-compose.yml (text, replacement, what a check says).
COMPOSE_BREAKAGES = {
    "the storage proxy reading a secret it is not given": (
        "    secrets: [lpstudy-writer-password]\n    command: lpstudy-with-secrets lpstudy storage-proxy",
        "    secrets: [lpstudy-reader-password]\n    command: lpstudy-with-secrets lpstudy storage-proxy",
        "service storage-proxy: PGPASSWORD_FILE reads /run/secrets/lpstudy-writer-password, a secret it is not given"),
    "a dashboard pointed at a host that is no service": (
        "@db:5432/${LPSTUDY_DB_NAME:-lpstudy}\n      PGPASSWORD_FILE: /run/secrets/lpstudy-reader-password",
        "@database:5432/${LPSTUDY_DB_NAME:-lpstudy}\n      PGPASSWORD_FILE: /run/secrets/lpstudy-reader-password",
        "service dashboard: names host database, which is no service"),
    "a metrics linger the stop grace period cannot hold": (
        'LPSTUDY_METRICS_LINGER_S: "40"', 'LPSTUDY_METRICS_LINGER_S: "90"',
        "service worker: a linger of 90 s after the longest stop (55.1 s) exceeds stop_grace_period 120 s"),
    "the dashboard's healthcheck on a path Streamlit does not answer": (
        "http://127.0.0.1:8501/_stcore/health", "http://127.0.0.1:8501/healthz",
        "service dashboard: its healthcheck asks /healthz, which lpstudy dashboard does not answer"),
    # Issue 57: what passed every fast test; each message states the rule.
    "the storage proxy published on every address when .env does not say": (
        "${LPSTUDY_PROXY_BIND:-127.0.0.1}", "${LPSTUDY_PROXY_BIND:-0.0.0.0}",
        "service storage-proxy: a published port binds to 127.0.0.1 unless .env says otherwise"),
    "the GPU workers restarted unless stopped": (
        "      args:\n        TORCH_INDEX: ${LPSTUDY_TORCH_INDEX:-pypi}\n    restart: on-failure:5\n",
        "      args:\n        TORCH_INDEX: ${LPSTUDY_TORCH_INDEX:-pypi}\n    restart: unless-stopped\n",
        "service worker: a finished worker stays stopped (restart on-failure"),
    "PostgreSQL's tag bumped while its digest pins the old build": (
        "postgres:16.9-bookworm@sha256", "postgres:16.10-bookworm@sha256",
        "service db: every image has the tag and the digest images.lock gives it"),
    "the database's healthcheck on the socket": (
        "pg_isready -h 127.0.0.1 -U", "pg_isready -U",
        "service db: a database check asks over TCP, as its clients connect"),
    "one GPU reserved under the wrapper that shares out all of them": (
        "              count: all\n", "              count: 1\n",
        "service worker: replicas that share out the GPUs reserve every GPU (count: all"),
}


@pytest.mark.parametrize("breakage", sorted(COMPOSE_BREAKAGES))
def test_each_compose_breakage_validates_and_fails_a_check(tmp_path, breakage):
    """docker-compose itself accepts each (the file validates, with an .env that sets only the study);
    a check of compose_references states the rule it breaks."""
    from tests import compose_references

    text, replacement, said = COMPOSE_BREAKAGES[breakage]
    assert COMPOSE.read_text().count(text) == 1, f"docker-compose.yml no longer has the text {breakage} changes"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace(text, replacement))
    out = docker_compose("config", env_file=empty_env(tmp_path), compose_file=broken)
    assert out.returncode == 0, out.stderr
    problems = compose_references.problems_of(yaml.safe_load(out.stdout))
    assert any(said in p for p in problems), f"{breakage}: {problems}"


def test_the_dockerfile_and_the_example_env_take_their_images_from_the_lock():
    """deploy/images.lock is the one place an image's tag and digest change (tests/k8s_images.py): the
    Dockerfile's base and .env.example's PostgreSQL match it, and half a bump in either is refused."""
    from tests import k8s_images

    assert k8s_images.lock_problems() == [] and k8s_images.file_images_match_the_lock() == []
    dockerfile, env = DOCKERFILE.read_text(), ENV_EXAMPLE.read_text()
    assert dockerfile.count("python:3.11.13-slim-bookworm@") == 1 and env.count("postgres:16.9-bookworm@") == 1
    [problem] = k8s_images.file_images_match_the_lock(dockerfile=dockerfile.replace("python:3.11.13-", "python:3.11.14-"))
    assert "Dockerfile PYTHON_IMAGE: every image has the tag and the digest images.lock gives it" in problem
    [problem] = k8s_images.file_images_match_the_lock(env_example=env.replace("postgres:16.9-", "postgres:16.10-"))
    assert ".env.example LPSTUDY_POSTGRES_IMAGE: every image has the tag and the digest" in problem


def check_compose_service(name: str, service: dict, tmp: Path) -> tuple[int, str]:
    """A compose service that runs lpstudy, materialised under tmp (its volumes as folders, the secrets
    it is given as files, its environment with those paths moved there) and run in its check mode:
    the real secrets wrapper (deploy/docker/lpstudy-with-secrets, which reads PGPASSWORD_FILE) around
    nothing, then `lpstudy ... --check` in this process. lpstudy-claim-gpu is passed over: it claims
    a GPU of the host, which this machine has not."""
    from tests import k8s_materialise

    root = tmp / name
    targets = [str(v["target"]) if isinstance(v, dict) else str(v).split(":")[1] for v in service.get("volumes", [])]
    for target in targets:
        (root / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for secret in service.get("secrets", []):
        source = secret if isinstance(secret, str) else secret["source"]
        target = secret.get("target", source) if isinstance(secret, dict) else source
        path = root / "run" / "secrets" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("a-password\n")
    prefixes = targets + ["/run/secrets"]
    env = {k: (str(root) + v if any(v == p or v.startswith(p + "/") for p in prefixes) else v)
           for k, v in {k: str(v) for k, v in (service.get("environment") or {}).items()}.items()}
    env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(root / "home"))
    words = service["command"].split() if isinstance(service["command"], str) else list(service["command"])
    if words[0] == "lpstudy-with-secrets":
        out = subprocess.run(["sh", str(WITH_SECRETS), "true"], env=env, capture_output=True, text=True, timeout=30)
        if out.returncode:
            return out.returncode, out.stderr
        env.pop("PGPASSWORD_FILE", None)
    return k8s_materialise.run_lpstudy(words[words.index("lpstudy") + 1:] + ["--check"], env)


def lpstudy_services(resolved: dict) -> dict:
    return {name: s for name, s in resolved["services"].items() if "lpstudy" in str(s.get("command", "")).split()}


def test_every_compose_service_passes_its_own_start_up_checks(services, tmp_path):
    """Each service that runs lpstudy, materialised from the resolved file, passes its check mode:
    its secret file readable, every value parsed, every file it reads opened."""
    checked = lpstudy_services({"services": services})
    assert set(checked) == {"worker", "worker-cpu", "dashboard", "optuna-dashboard", "storage-proxy"}
    for name, service in checked.items():
        code, output = check_compose_service(name, service, tmp_path)
        assert code == 0 and "--check: ok" in output, f"{name}: {output}"


def test_a_value_a_compose_service_refuses_fails_its_check_mode(tmp_path):
    """LPSTUDY_WORKER_ARGS with a wait that is no number, and the proxy given the reader's secret
    in place of the writer's: each service fails its check with its program's own one line."""
    env = write_env_file(tmp_path / "bad.env", {"LPSTUDY_STUDY": "lp-search", "LPSTUDY_WORKER_ARGS": "--wait-for-spec-s 15m"})
    code, output = check_compose_service("worker", resolve(env)["services"]["worker"], tmp_path)
    assert code == 2 and "Invalid value for '--wait-for-spec-s'" in output and "Traceback" not in output, output
    proxy = dict(resolve(ENV_EXAMPLE)["services"]["storage-proxy"], secrets=["lpstudy-reader-password"])
    code, output = check_compose_service("storage-proxy", proxy, tmp_path / "proxy")
    assert code == 2 and "PGPASSWORD_FILE=" in output and "cannot be read" in output, output


def secret_file_of(resolved: dict, service: dict, path: str) -> Path:
    """The host file behind /run/secrets/NAME in a service, which must list the secret."""
    name = Path(path).name
    assert Path(path).parent == Path("/run/secrets"), path
    listed = [s if isinstance(s, str) else s["source"] for s in service.get("secrets", [])]
    assert name in listed, f"the service does not mount the secret {name}"
    return Path(resolved["secrets"][name]["file"])


def test_the_passwords_reach_the_containers_only_as_secret_files(example_env):
    """No password in .env, none in any environment value, and no URL with one: each is a file under
    secrets/, mounted as a compose secret; the database reads them as *_FILE, lpstudy's services as
    PGPASSWORD_FILE through lpstudy-with-secrets."""
    resolved = resolve(ENV_EXAMPLE)
    assert not [k for k in example_env if "PASSWORD" in k], ".env holds no password"
    files = {name: Path(s["file"]) for name, s in resolved["secrets"].items()}
    assert {f.parent for f in files.values()} == {SECRETS_DIR}
    assert sorted(f.name for f in files.values()) == ["postgres-password", "reader-password", "writer-password"]
    services = resolved["services"]
    db = services["db"]["environment"]
    assert secret_file_of(resolved, services["db"], db["POSTGRES_PASSWORD_FILE"]).name == "postgres-password"
    assert secret_file_of(resolved, services["db"], db["LPSTUDY_WRITER_PASSWORD_FILE"]).name == "writer-password"
    assert secret_file_of(resolved, services["db"], db["LPSTUDY_READER_PASSWORD_FILE"]).name == "reader-password"
    for name in DB_SERVICES:
        env = services[name]["environment"]
        assert storage_of(services[name]).password is None, name
        expected = "reader-password" if name in DASHBOARDS else "writer-password"
        assert secret_file_of(resolved, services[name], env["PGPASSWORD_FILE"]).name == expected, name
        assert str(services[name]["command"]).startswith("lpstudy-with-secrets "), name
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            assert not re.search(r"://[^/@\s:]+:[^/@\s]+@", str(value)), f"{name}.{key}: a URL with a password"
            if re.search(r"PASSWORD|SECRET|TOKEN", key):
                assert key.endswith("_FILE"), f"{name}.{key}: a secret as a plain environment value"


def test_the_secrets_wrapper_exports_the_password_of_its_file_only_to_its_command(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("s3cret-pw\n")
    env = {"PATH": "/usr/bin:/bin", "PGPASSWORD_FILE": str(secret)}
    out = subprocess.run([str(WITH_SECRETS), "sh", "-c", 'echo "[$PGPASSWORD] [${PGPASSWORD_FILE:-}]"'],
                         capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "[s3cret-pw] []", out.stderr
    out = subprocess.run([str(WITH_SECRETS), "true"], capture_output=True, text=True, timeout=30,
                         env={**env, "PGPASSWORD_FILE": str(tmp_path / "missing")})
    assert out.returncode == 2 and "cannot be read" in out.stderr
    out = subprocess.run([str(WITH_SECRETS), "sh", "-c", 'echo "[${PGPASSWORD:-}]"'], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert out.stdout.strip() == "[]"  # no file named: nothing changed


def test_the_gpu_worker_requests_a_gpu_and_the_cpu_worker_none(services, example_env):
    gpu, cpu = services["worker"], services["worker-cpu"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any("gpu" in device["capabilities"] and device.get("driver") == "nvidia" for device in devices)
    assert gpu["profiles"] == ["gpu"] and cpu["profiles"] == ["cpu"]
    assert "deploy" not in cpu
    assert gpu["build"]["args"]["TORCH_INDEX"] == "pypi"  # PyPI's torch: the CUDA build, its CUDA wheels pinned
    assert cpu["build"]["args"]["TORCH_INDEX"] == "cpu"
    for worker in (gpu, cpu):
        command = worker["command"] if isinstance(worker["command"], str) else " ".join(worker["command"])
        assert f"lpstudy worker --study {example_env['LPSTUDY_STUDY']}" in command
    # One GPU per scaled replica, and a worker that insists on it (no GPU seen: one line, not a CPU run).
    assert services["worker"]["command"].startswith("lpstudy-with-secrets lpstudy-claim-gpu lpstudy worker ")
    assert "--devices cuda:0" in services["worker"]["command"]
    # No fixed name or host port on a worker: `--scale worker=N` must be able to start N of them.
    for worker in (gpu, cpu):
        assert "container_name" not in worker and "ports" not in worker


def test_dashboards_use_the_read_only_role_and_workers_the_writer(services, example_env):
    for name in DASHBOARDS:
        url = storage_of(services[name])
        assert url.username == example_env["LPSTUDY_READER_USER"], name
        assert services[name]["environment"]["PGPASSWORD_FILE"].endswith("/lpstudy-reader-password"), name
        assert url.host == "db" and url.database == example_env["LPSTUDY_DB_NAME"]
    for name in WRITERS:
        assert storage_of(services[name]).username == example_env["LPSTUDY_WRITER_USER"], name
    # The URL (with its password) is passed in the environment, never on a command line.
    for name in DB_SERVICES:
        command = str(services[name]["command"])
        assert "postgresql" not in command and "--storage" not in command, name


def test_no_secret_is_written_in_the_compose_file_and_the_files_stay_out_of_git_and_the_image():
    raw = yaml.safe_load(COMPOSE.read_text())
    for name, service in raw["services"].items():
        for key, value in (service.get("environment") or {}).items():
            masked = re.sub(r"\$\{[^}]*\}", "<VAR>", str(value))  # ${VAR:-default}: one word, whatever its default
            assert not re.search(r"://[^/@\s:]+:[^/@\s]+@", masked), f"{name}.{key}: a URL with a password"
    # secrets/ holds the real passwords: git ignores it and the image's build context leaves it out.
    assert "secrets/" in (ROOT / ".gitignore").read_text().split()
    assert subprocess.run(["git", "check-ignore", "-q", str(SECRETS_DIR / "writer-password")], cwd=ROOT).returncode == 0
    ignore = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*" and not any(line.startswith("!") and ("secrets" in line or ".env" in line) for line in ignore)


def test_the_commands_that_make_the_secret_files_are_the_same_everywhere(tmp_path):
    """The header of docker-compose.yml, .env.example and docs/deployment.md give one command; run,
    it makes three different passwords in files only their owner's folder reaches."""
    def command_in(text: str) -> str:
        found = re.search(r"umask 077; mkdir -p secrets.*?chmod 644 secrets/\*-password", text, re.S).group(0)
        return re.sub(r"\s*(\\\n)?#?\s+", " ", found)
    commands = {command_in(path.read_text()) for path in (COMPOSE, ENV_EXAMPLE, ROOT / "docs" / "deployment.md")}
    assert len(commands) == 1, commands
    out = subprocess.run(["bash", "-c", commands.pop()], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    made = {p.name: p.read_text().strip() for p in (tmp_path / "secrets").iterdir()}
    assert sorted(made) == ["postgres-password", "reader-password", "writer-password"]
    assert len(set(made.values())) == 3 and all(re.fullmatch(r"[0-9a-f]{48}", v) for v in made.values())
    assert oct((tmp_path / "secrets").stat().st_mode & 0o777) == "0o700"


def test_workers_get_more_than_the_longest_measured_stop_to_end_their_trial(services):
    from tests.k8s_invariants import LONGEST_STOP_S

    for name in ("worker", "worker-cpu"):
        grace = services[name]["stop_grace_period"]
        seconds = int(re.fullmatch(r"(\d+)s", grace).group(1))
        assert seconds >= 2 * LONGEST_STOP_S, f"{name}: {grace}"
        # and the wait for Prometheus's scrape of the last counters (lpstudy.study.telemetry)
        linger = float(services[name]["environment"]["LPSTUDY_METRICS_LINGER_S"])
        assert seconds > LONGEST_STOP_S + linger, f"{name}: {grace}"


def test_every_server_has_a_healthcheck_on_its_own_port(services):
    for name, port in SERVERS.items():
        check = " ".join(services[name]["healthcheck"]["test"])
        assert f"127.0.0.1:{port}" in check or f"'127.0.0.1', {port}" in check, f"{name}: {check}"
        command = " ".join(services[name]["command"]) if isinstance(services[name]["command"], list) \
            else services[name]["command"]
        if name != "prometheus":
            assert f"--port {port}" in command, name
        assert any(target == str(port) for _, _, target in published(services[name])), name


def test_every_image_compose_pulls_has_a_version_tag_and_a_digest(services):
    """The images compose pulls (PostgreSQL, Prometheus) are pinned to the very build; lpstudy's own
    it builds from the Dockerfile, whose base is pinned the same way."""
    pulled = {name: s["image"] for name, s in services.items() if "build" not in s}
    assert set(pulled) == {"db", "prometheus"}
    for name, image in pulled.items():
        assert re.fullmatch(r"[\w./-]+:v?\d+(\.\d+)+[\w.-]*@sha256:[0-9a-f]{64}", image), f"{name}: {image}"
    assert re.search(r"^ARG PYTHON_IMAGE=python:[\w.-]+@sha256:[0-9a-f]{64}$", DOCKERFILE.read_text(), re.M)


def test_the_prometheus_profile_scrapes_every_worker_replica(services):
    prometheus = services["prometheus"]
    assert prometheus["profiles"] == ["prometheus"]
    assert re.fullmatch(r"prom/prometheus:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", prometheus["image"])
    mounted = {Path(str(v).split(":")[0]) if not isinstance(v, dict) else Path(v["source"]): v
               for v in prometheus["volumes"]}
    assert PROMETHEUS_CONFIG in mounted
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    [job] = config["scrape_configs"]
    [sd] = job["dns_sd_configs"]
    assert sorted(sd["names"]) == ["worker", "worker-cpu"]
    for name in sd["names"]:
        env = services[name]["environment"]
        assert str(sd["port"]) == env["LPSTUDY_METRICS_PORT"] and str(sd["port"]) in [str(p) for p in services[name]["expose"]]
    assert job.get("metrics_path", "/metrics") == "/metrics"


def test_every_service_that_needs_the_database_waits_for_its_health_check(services):
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    for name in DB_SERVICES:
        assert "@db:" in services[name]["environment"]["LPSTUDY_STORAGE"]
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy", name


def test_ports_stay_on_the_host_unless_asked(tmp_path, example_env, services):
    for name, service in services.items():
        for host_ip, _, _ in published(service):
            assert host_ip == "127.0.0.1", f"{name} is published beyond this host by the example .env"
    # The default when .env does not say, and what it does when it does.
    secrets_only = {k: v for k, v in example_env.items() if "PASSWORD" in k or k == "LPSTUDY_STUDY"}
    defaults = resolve(write_env_file(tmp_path / "defaults", secrets_only))["services"]
    assert published(defaults["db"]) == [("127.0.0.1", "5432", "5432")]
    for name in DASHBOARDS:
        assert all(host_ip == "127.0.0.1" for host_ip, _, _ in published(defaults[name]))
    opened = resolve(write_env_file(tmp_path / "opened", {**secrets_only, "LPSTUDY_DB_BIND": "0.0.0.0",
                                                          "LPSTUDY_DB_PORT": "15432"}))["services"]
    assert published(opened["db"]) == [("0.0.0.0", "15432", "5432")]


def test_the_database_keeps_its_data_and_runs_the_init_script(services):
    volumes = [str(v) if not isinstance(v, dict) else f"{v.get('source')}:{v['target']}"
               for v in services["db"]["volumes"]]
    assert any(v.startswith("pgdata:/var/lib/postgresql/data") for v in volumes)
    assert any(v.startswith(f"{INIT_SCRIPT.parent}:/docker-entrypoint-initdb.d") for v in volumes)
    env = services["db"]["environment"]
    for key in ("LPSTUDY_WRITER_USER", "LPSTUDY_WRITER_PASSWORD_FILE", "LPSTUDY_READER_USER", "LPSTUDY_READER_PASSWORD_FILE"):
        assert env[key], key
    assert os.access(INIT_SCRIPT, os.X_OK), "the postgres image executes *.sh only when executable"


# --- Dockerfile --------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_and_installs_the_package_with_a_chosen_torch():
    text = DOCKERFILE.read_text()
    instructions = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    stages = [i for i, line in enumerate(instructions) if line.upper().startswith("FROM ")]
    assert len(stages) >= 2, "multi-stage: a build stage and a runtime stage"
    final = instructions[stages[-1]:]
    users = [line.split()[1] for line in final if line.upper().startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), "the runtime stage runs as a non-root user"
    assert any(line.startswith("COPY --from=") for line in final), "the runtime copies the build's environment"

    assert re.search(r"^ARG TORCH_INDEX=\S+", text, re.M)
    assert "https://download.pytorch.org/whl/${TORCH_INDEX}" in text
    assert re.search(r"pip install .*\"?\.\[[^\]]*dashboard[^\]]*postgres[^\]]*grpc[^\]]*\]", text)
    # The wheel's range is pyproject's (declared there; the Dockerfile's default must follow it).
    spec = re.search(r'^ARG TORCH_SPEC="([^"]+)"', text, re.M).group(1)
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert spec in [d.replace(" ", "") for d in deps]


def test_the_dependencies_come_from_the_constraints_before_the_source_is_copied():
    """A change of lpstudy's code rebuilds from its COPY on: every dependency is installed, pinned,
    in the layers before. Both images (cpu, gpu) run the same lines with the same file."""
    lines = [line.strip() for line in DOCKERFILE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    build = lines[:next(i for i, line in enumerate(lines) if line.startswith("FROM ") and "AS runtime" in line)]
    source = next(i for i, line in enumerate(build) if line.startswith("COPY lpstudy"))
    constraints = next(i for i, line in enumerate(build) if line.startswith("COPY constraints.txt"))
    installs = [i for i, line in enumerate(build) if "pip install -c constraints.txt -r" in line]
    assert constraints < installs[0] < source, "the dependencies are installed before the source is copied"
    torch = next(i for i, line in enumerate(build) if "download.pytorch.org" in line)
    assert constraints < torch < source and "-c constraints.txt" in " ".join(build[torch:torch + 2])
    # PyTorch's index for torch alone: never paired with PyPI (--extra-index-url), where a package of the
    # same name on either index could win
    text = DOCKERFILE.read_text()
    assert "--extra-index-url" not in text and "--no-deps --index-url" in build[torch]
    # the CUDA wheels stay out of the CPU image's install of the other dependencies
    assert "grep -vE '^(nvidia-|cuda-|triton==)' constraints.txt" in build[installs[0] - 1]
    for line in build[source:]:
        if "pip install" in line:
            assert "-c constraints.txt" in line, line
    assert re.search(r"^ARG PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim-\w+@sha256:[0-9a-f]{64}$", DOCKERFILE.read_text(), re.M)
    assert "FROM python:" not in DOCKERFILE.read_text()  # every stage from the one pinned base


def test_the_constraints_pin_every_runtime_dependency_within_pyprojects_ranges():
    from packaging.requirements import Requirement
    from packaging.version import Version

    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and name == re.sub(r"[-_.]+", "-", name).lower(), line
            assert name not in pins, f"{name} pinned twice"
            pins[name] = Version(version)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [r for extra in ("dashboard", "postgres", "grpc", "s3")
                                        for r in project["optional-dependencies"][extra]]
    for text in wanted:
        requirement = Requirement(text)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{name} is a runtime dependency but constraints.txt does not pin it " \
                             f"(python deploy/docker/freeze-constraints.py > constraints.txt)"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]} is outside pyproject's {requirement}"
        for extra in requirement.extras:  # psycopg[binary]: the extra's package is pinned too
            assert f"{name}-{extra}" in pins or extra not in ("binary",), f"{name}[{extra}]"
    assert not pins["torch"].local, "no +cpu or +cu128: the CPU and the CUDA build both satisfy the pin"
    # The GPU image's CUDA wheels, pinned too: what PyPI's torch of that version requires on Linux
    # (read from its metadata: nvidia-*, the CUDA toolkit, triton)
    cuda = {name for name in pins if re.match(r"nvidia-|cuda-|triton$", name)}
    assert {"nvidia-cudnn-cu13", "nvidia-nccl-cu13", "nvidia-cublas", "nvidia-cuda-runtime", "cuda-toolkit",
            "triton"} <= cuda, cuda


def test_everything_the_dockerfile_copies_is_in_the_build_context():
    allowed = [line[1:].rstrip("/") for line in DOCKERIGNORE.read_text().splitlines() if line.startswith("!")]
    sources = []
    for line in DOCKERFILE.read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert any(source == a or source.startswith(a + "/") for a in allowed), \
            f"{source} is copied but .dockerignore leaves it out"


def test_compose_build_arguments_are_the_dockerfile_arguments(services):
    declared = set(re.findall(r"^ARG (\w+)", DOCKERFILE.read_text(), re.M))
    for name, service in services.items():
        for arg in (service.get("build") or {}).get("args", {}):
            assert arg in declared, f"{name} passes {arg}, which the Dockerfile does not declare"


# --- shell scripts -----------------------------------------------------------------------------


@pytest.mark.parametrize("script", [SBATCH, INIT_SCRIPT, CLAIM_GPU, WITH_SECRETS,
                                    ROOT / "deploy" / "k8s" / "base" / "scripts" / "wait-for-study.sh"],
                         ids=lambda p: p.name)
def test_shell_scripts_parse_and_pass_shellcheck(script):
    out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    out = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


@pytest.fixture
def fake_lpstudy(tmp_path) -> dict[str, str]:
    """An `lpstudy` on PATH that prints how it was called, for the scripts that start it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "lpstudy"
    fake.write_text('#!/bin/sh\necho "ARGS $*"\necho "STORAGE ${LPSTUDY_STORAGE:-}"\n'
                    'echo "GPU ${CUDA_VISIBLE_DEVICES:-}"\necho "THREADS ${OMP_NUM_THREADS:-}"\n'
                    'sleep "${FAKE_SLEEP:-0}"\n')
    fake.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}


def test_the_slurm_script_starts_a_worker_on_the_study_with_the_storage_from_a_file(tmp_path, fake_lpstudy):
    url_file = tmp_path / "storage-url"
    url_file.write_text("postgresql+psycopg://lpstudy_writer:s3cret@dbhost:5432/lpstudy\n")
    env = {**fake_lpstudy, "LPSTUDY_STUDY": "lp-search", "LPSTUDY_STORAGE_FILE": str(url_file),
           "LPSTUDY_WORKER_ARGS": "--n-trials 3", "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "5"}
    out = subprocess.run(["bash", str(SBATCH)], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "ARGS worker --study lp-search --devices cuda:0 --n-trials 3" in out.stdout
    assert "STORAGE postgresql+psycopg://lpstudy_writer:s3cret@dbhost:5432/lpstudy" in out.stdout
    assert "job 77 task 5" in out.stdout
    assert out.stdout.count("s3cret") == 1  # only the worker's own environment, never the script's log


def test_the_slurm_worker_insists_on_its_gpu_and_uses_the_cores_of_its_task(fake_lpstudy):
    env = {**fake_lpstudy, "LPSTUDY_STUDY": "lp-search", "LPSTUDY_STORAGE": "grpc://proxy:13000",
           "SLURM_CPUS_PER_TASK": "6", "OMP_NUM_THREADS": "64"}
    out = subprocess.run(["bash", str(SBATCH)], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "ARGS worker --study lp-search --devices cuda:0" in out.stdout  # no GPU: refused, not a CPU run
    assert "THREADS 6" in out.stdout
    declared = re.search(r"^#SBATCH --cpus-per-task=(\d+)", SBATCH.read_text(), re.M)
    assert declared and int(declared.group(1)) >= 1
    out = subprocess.run(["bash", str(SBATCH)], capture_output=True, text=True, timeout=30,
                         env={**env, "LPSTUDY_DEVICES": "cpu"})
    assert "--devices cpu" in out.stdout


@pytest.mark.parametrize("missing", ["LPSTUDY_STUDY", "LPSTUDY_STORAGE"])
def test_the_slurm_script_says_what_is_missing(fake_lpstudy, missing):
    env = {**fake_lpstudy, "LPSTUDY_STUDY": "lp-search", "LPSTUDY_STORAGE": "grpc://proxy:13000"}
    del env[missing]
    out = subprocess.run(["bash", str(SBATCH)], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 2
    assert missing in out.stderr and "ARGS" not in out.stdout


@pytest.mark.slow
def test_scaled_gpu_workers_each_claim_their_own_gpu_before_sharing(tmp_path, fake_lpstudy):
    """Three replicas on two GPUs: GPUs 0 and 1 first, then one of them twice; a claim lasts as long
    as its worker and is free again when it exits."""
    env = {**fake_lpstudy, "LPSTUDY_GPU_CLAIMS": str(tmp_path / "claims"), "LPSTUDY_GPU_COUNT": "2",
           "FAKE_SLEEP": "3"}
    replicas = []
    for _ in range(3):
        replicas.append(subprocess.Popen([str(CLAIM_GPU), "lpstudy", "worker"], env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        time.sleep(0.3)  # replicas start one after another, as compose starts them
    gpus = []
    for replica in replicas:
        stdout, stderr = replica.communicate(timeout=30)
        assert replica.returncode == 0, stderr
        gpus.append(re.search(r"^GPU (\d+)$", stdout, re.M).group(1))
    assert sorted(gpus[:2]) == ["0", "1"] and sorted(gpus) in (["0", "0", "1"], ["0", "1", "1"])
    again = subprocess.run([str(CLAIM_GPU), "lpstudy"], env={**env, "FAKE_SLEEP": "0"},
                           capture_output=True, text=True, timeout=30)
    assert "GPU 0" in again.stdout


# --- the init script against a real PostgreSQL ---------------------------------------------------


def _init_env(postgres, database: str, writer: str, reader: str) -> dict[str, str]:
    from tests.pgserver import _find

    return {
        "PATH": f"{Path(_find('psql')).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "PGHOST": "127.0.0.1", "PGPORT": str(postgres.port),
        "POSTGRES_USER": "postgres", "POSTGRES_DB": database,
        "LPSTUDY_WRITER_USER": writer, "LPSTUDY_WRITER_PASSWORD": "writer-pw",
        "LPSTUDY_READER_USER": reader, "LPSTUDY_READER_PASSWORD": "reader-pw",
    }


def run_init_script(postgres, database: str, writer: str, reader: str) -> None:
    out = subprocess.run(["bash", str(INIT_SCRIPT)], capture_output=True, text=True, timeout=60,
                         env=_init_env(postgres, database, writer, reader))
    assert out.returncode == 0, out.stderr
    assert "writer-pw" not in out.stdout + out.stderr


def _seed_as_writer(writer_url: str, study_name: str) -> list:
    """What a worker does: an Optuna study with trials, and their metrics rows."""
    import optuna

    from lpstudy.training.metrics import MetricRecord
    from lpstudy.db.kinds import storage_at
    from lpstudy.db.metrics_table import ensure_metrics_table, write_metrics

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=writer_url, study_name=study_name)
    study.optimize(lambda t: t.suggest_float("p", 1.0, 4.0), n_trials=2)
    engine = storage_at(writer_url).make_engine()
    ensure_metrics_table(engine)
    for trial in study.trials:
        records = [MetricRecord(step=s, train_loss=2.0, val_loss=2.1, lr=1e-3, grad_norm=1.0, grad_norm_max=1.5,
                                gain_mean=16.0, gain_min=15.0, gain_max=17.0, attn_entropy=1.0,
                                tokens_per_s=1e4, elapsed_s=float(s)) for s in (0, 10)]
        write_metrics(engine, study_name, trial._trial_id, trial.number, records)
    engine.dispose()
    return study.trials


def _unique_roles(database: str) -> tuple[str, str]:
    return f"writer_{database}", f"reader_{database}"


@pytest.mark.slow
@pytest.mark.postgres
def test_the_read_only_role_reads_studies_and_metrics_and_is_refused_every_write(postgres, pg_url):
    import psycopg.errors
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from lpstudy.results.reading.frames import load_study, load_trials, study_infos
    from lpstudy.db.kinds import storage_at
    from lpstudy.db.metrics_table import METRICS_TABLE, read_metrics

    database = make_url(pg_url).database
    writer, reader = _unique_roles(database)
    run_init_script(postgres, database, writer, reader)
    run_init_script(postgres, database, writer, reader)  # idempotent: rerun to apply new passwords
    writer_url = postgres.url(database, writer, "writer-pw")
    reader_url = postgres.url(database, reader, "reader-pw")
    trials = _seed_as_writer(writer_url, "lp-search")  # tables created after the init script ran

    # Reading, as the dashboards do.
    assert [info.name for info in study_infos(open_reader(reader_url))] == ["lp-search"]
    assert sorted(load_trials(open_reader(reader_url), "lp-search")["state"]) == ["COMPLETE", "COMPLETE"]
    assert len(load_study(open_reader(reader_url), "lp-search").curves) == 4
    assert len(read_metrics(storage_at(reader_url).make_engine(readonly=True), "lp-search")) == 4

    # Writing: refused by the grants themselves, even after switching the session to read-write.
    engine = sa.create_engine(reader_url)
    trial_id = trials[0]._trial_id
    writes = [
        f"INSERT INTO {METRICS_TABLE} (trial_id, step, study_name, trial_number) VALUES ({trial_id}, 99, 'x', 0)",
        f"UPDATE {METRICS_TABLE} SET val_loss = 0",
        "DELETE FROM trials",
        "UPDATE studies SET study_name = 'renamed'",
        "INSERT INTO studies (study_name) VALUES ('intruder')",
        "CREATE TABLE intruder (x int)",
        "CREATE TEMPORARY TABLE intruder (x int)",
        "TRUNCATE trial_values",
    ]
    for sql in writes:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ WRITE")
            with pytest.raises(sa.exc.ProgrammingError) as refused:
                conn.exec_driver_sql(sql)
            assert isinstance(refused.value.orig, psycopg.errors.InsufficientPrivilege), sql
    # And by default its sessions are read-only to begin with.
    with engine.connect() as conn, pytest.raises(sa.exc.InternalError) as refused:
        conn.exec_driver_sql("DELETE FROM trials")
    assert isinstance(refused.value.orig, psycopg.errors.ReadOnlySqlTransaction)
    engine.dispose()
    assert postgres.psql("SELECT count(*) FROM trials", database=database).strip() == "2"
    assert postgres.psql(f"SELECT count(*) FROM {METRICS_TABLE}", database=database).strip() == "4"


@pytest.mark.slow
@pytest.mark.postgres
def test_backup_and_restore_as_the_readme_says(postgres, pg_url, tmp_path):
    """pg_dump of a live study, pg_restore into a fresh stack's database: the writer owns the
    restored tables (workers carry on) and the read-only role reads them."""
    from sqlalchemy.engine import make_url

    from lpstudy.results.reading.frames import load_trials

    source = make_url(pg_url).database
    target = f"{source}_restored"
    postgres.create_database(target)
    writer, reader = _unique_roles(source)
    run_init_script(postgres, source, writer, reader)
    _seed_as_writer(postgres.url(source, writer, "writer-pw"), "lp-search")
    run_init_script(postgres, target, writer, reader)  # a fresh stack: the init script ran on the new volume

    dump = tmp_path / "lpstudy.dump"
    # The commands of docs/deployment.md, as they run inside the db container (there without PGHOST/PGPORT).
    backup = subprocess.run(["sh", "-c", 'pg_dump -U "$POSTGRES_USER" -Fc "$POSTGRES_DB"'],
                            env=_init_env(postgres, source, writer, reader), capture_output=True, timeout=60)
    assert backup.returncode == 0, backup.stderr
    dump.write_bytes(backup.stdout)
    with open(dump, "rb") as stdin:
        restore = subprocess.run(
            ["sh", "-c", 'pg_restore -U "$POSTGRES_USER" -d "$POSTGRES_DB" --no-owner --no-acl '
                         '--role="$LPSTUDY_WRITER_USER" --exit-on-error'],
            env=_init_env(postgres, target, writer, reader), stdin=stdin, capture_output=True, timeout=60)
    assert restore.returncode == 0, restore.stderr

    owners = postgres.psql("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'", database=target)
    assert owners.split() == [writer]
    trials = load_trials(open_reader(postgres.url(target, reader, "reader-pw")), "lp-search")
    assert len(trials) == 2
    import optuna

    study = optuna.load_study(study_name="lp-search", storage=postgres.url(target, writer, "writer-pw"))
    study.optimize(lambda t: t.suggest_float("p", 1.0, 4.0), n_trials=1)  # workers carry on
    assert len(load_trials(open_reader(postgres.url(target, reader, "reader-pw")), "lp-search")) == 3

