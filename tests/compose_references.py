"""The reference graph of docker-compose.yml, as `docker-compose config` resolves it: every secret,
volume and service a service names is defined once; every URL's host is a service that serves its
port; Prometheus's targets (deploy/docker/prometheus.yml) are services serving the metrics port; and
what must agree with Kubernetes agrees here too: a worker's metrics linger outlasts the scrape
interval and fits, after the longest stop, in its grace period (tests/k8s_invariants.py); a server's
healthcheck asks the paths its Kubernetes probes must ask (tests/k8s_checks.py, HEALTH_PATHS).
Each check takes the resolved file (a dict) and returns problems, one line each."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.k8s_checks import HEALTH_PATHS, flag_value
from tests.k8s_images import compose_images_match_the_lock
from tests.k8s_invariants import LONGEST_STOP_S, duration_s
from tests.k8s_references import URL

ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS_CONFIG = ROOT / "deploy" / "docker" / "prometheus.yml"
SECRET_FILE = re.compile(r"^/run/secrets/([\w.-]+)$")


def _served_ports(service: dict) -> set[int]:
    ports = {int(str(p).split("/")[0]) for p in service.get("expose", [])}
    for port in service.get("ports", []):
        target = port.get("target") if isinstance(port, dict) else str(port).split("/")[0].split(":")[-1]
        ports.add(int(target))
    return ports


def _words(service: dict) -> list[str]:
    command = service.get("command") or []
    words = command.split() if isinstance(command, str) else list(command)
    return words + [str(v) for v in (service.get("environment") or {}).values()]


def names_resolve(resolved: dict) -> list[str]:
    problems = []
    services = resolved.get("services", {})
    secrets, volumes = set(resolved.get("secrets") or {}), set(resolved.get("volumes") or {})
    for name, service in services.items():
        used = {s["source"] if isinstance(s, dict) else s for s in service.get("secrets", [])}
        for secret in sorted(used - secrets):
            problems.append(f"service {name}: uses secret {secret}, which the file does not define")
        for key, value in (service.get("environment") or {}).items():
            found = SECRET_FILE.match(str(value))
            if found and found.group(1) not in used:
                problems.append(f"service {name}: {key} reads /run/secrets/{found.group(1)}, a secret it is not given")
        for volume in service.get("volumes", []):
            source = volume.get("source") if isinstance(volume, dict) else str(volume).split(":")[0]
            kind = volume.get("type") if isinstance(volume, dict) else ("bind" if source.startswith(("/", ".")) else "volume")
            if kind == "volume" and source and source not in volumes:
                problems.append(f"service {name}: mounts volume {source}, which the file does not define")
        for other, condition in (service.get("depends_on") or {}).items():
            if other not in services:
                problems.append(f"service {name}: depends on {other}, which is no service")
            elif (condition or {}).get("condition") == "service_healthy" and "healthcheck" not in services[other]:
                problems.append(f"service {name}: waits for {other} to be healthy, which has no healthcheck")
        for word in _words(service):
            for host, port in URL.findall(word):
                if host in ("127.0.0.1", "localhost"):
                    continue
                if host not in services:
                    problems.append(f"service {name}: names host {host}, which is no service")
                elif port and int(port) not in _served_ports(services[host]):
                    problems.append(f"service {name}: asks port {port} of {host}, which serves "
                                    f"{sorted(_served_ports(services[host]))}")
    return problems


def prometheus_scrapes_what_the_workers_serve(resolved: dict) -> list[str]:
    """Every name Prometheus resolves is a service, serving the port it scrapes: the one each worker
    serves its metrics on (LPSTUDY_METRICS_PORT)."""
    problems = []
    services = resolved.get("services", {})
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    for job in config.get("scrape_configs", []):
        for discovery in job.get("dns_sd_configs", []):
            for name in discovery.get("names", []):
                service = services.get(name)
                if service is None:
                    problems.append(f"prometheus.yml {job['job_name']}: resolves {name}, which is no service")
                    continue
                served = (service.get("environment") or {}).get("LPSTUDY_METRICS_PORT")
                if str(discovery.get("port")) != str(served) or discovery.get("port") not in _served_ports(service):
                    problems.append(f"prometheus.yml {job['job_name']}: scrapes {name} on {discovery.get('port')}, "
                                    f"its metrics port is {served}")
    return problems


def metrics_linger_within_grace(resolved: dict) -> list[str]:
    """As on Kubernetes: the linger is longer than Prometheus's interval and fits, after the longest
    measured stop, in stop_grace_period."""
    problems = []
    interval = duration_s((yaml.safe_load(PROMETHEUS_CONFIG.read_text()).get("global") or {}).get("scrape_interval", "60s"))
    for name, service in resolved.get("services", {}).items():
        linger = (service.get("environment") or {}).get("LPSTUDY_METRICS_LINGER_S")
        if linger is None:
            continue
        linger, grace = float(linger), duration_s(str(service.get("stop_grace_period", "10s")))
        if linger + LONGEST_STOP_S > grace:
            problems.append(f"service {name}: a linger of {linger:g} s after the longest stop ({LONGEST_STOP_S} s) "
                            f"exceeds stop_grace_period {grace:g} s")
        if linger <= interval:
            problems.append(f"service {name}: a linger of {linger:g} s is no longer than Prometheus's interval "
                            f"of {interval:g} s")
    return problems


def health_checks_ask_what_the_program_answers(resolved: dict) -> list[str]:
    """Compose and Kubernetes check a server the same way: a service's healthcheck asks the port the
    program is started on (its --port) and a path that program answers, the same paths Kubernetes'
    probes must ask (k8s_checks.HEALTH_PATHS)."""
    problems = []
    for name, service in resolved.get("services", {}).items():
        words = _words(service)
        if "lpstudy" not in words or "healthcheck" not in service:
            continue
        rest = words[words.index("lpstudy") + 1:]
        program = f"lpstudy {rest[0]}" if rest else "lpstudy"
        port = flag_value(rest, "--port")
        test = " ".join(service["healthcheck"].get("test", []))
        for found in re.finditer(r"http://(?:127\.0\.0\.1|localhost):(\d+)(/[\w/.-]*)", test):
            if port and found.group(1) != port:
                problems.append(f"service {name}: its healthcheck asks port {found.group(1)}, {program} serves {port}")
            if program in HEALTH_PATHS and found.group(2) not in HEALTH_PATHS[program]:
                problems.append(f"service {name}: its healthcheck asks {found.group(2)}, which {program} does not answer "
                                f"({', '.join(sorted(HEALTH_PATHS[program]))}), unlike its Kubernetes probes")
    return problems


def published(service: dict) -> list[tuple[str, str, str]]:
    """(host address, host port, container port) of each published port of a resolved service."""
    rows = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            rows.append((port.get("host_ip", ""), str(port.get("published", "")), str(port["target"])))
        else:
            parts = str(port).split("/")[0].split(":")
            rows.append((parts[0], parts[1], parts[2]) if len(parts) == 3 else ("", *parts[-2:]))
    return rows


def _program(service: dict) -> str | None:
    words = _words(service)
    if "lpstudy" not in words:
        return None
    rest = words[words.index("lpstudy") + 1:]
    return f"lpstudy {rest[0]}" if rest else "lpstudy"


def published_on_loopback(resolved: dict) -> list[str]:
    """Every published port binds to 127.0.0.1 (this host only) unless .env says otherwise, except
    a sign-in proxy's (oauth2-proxy): no server is on the network because a setting was left out.
    Run on the file resolved with an empty .env."""
    problems = []
    for name, service in resolved.get("services", {}).items():
        if "oauth2-proxy" in str(service.get("image", "")):
            continue
        for host_ip, host_port, target in published(service):
            if host_ip != "127.0.0.1":
                problems.append(f"service {name}: a published port binds to 127.0.0.1 unless .env says otherwise "
                                f"(port {target} is published on {host_ip or 'every address'}:{host_port})")
    return problems


# The restart policies that leave a process that exited 0 stopped.
RESTARTS_THAT_END = ("no", "on-failure")


def workers_end_when_done(resolved: dict) -> list[str]:
    """A worker that has finished its study stays stopped: its restart policy restarts it on a failure
    only (on-failure[:N]); always or unless-stopped starts a finished worker again, and it loads torch
    and finds nothing to do, for ever."""
    problems = []
    for name, service in resolved.get("services", {}).items():
        restart = str(service.get("restart", "no"))
        if _program(service) == "lpstudy worker" and restart.split(":")[0] not in RESTARTS_THAT_END:
            problems.append(f"service {name}: a finished worker stays stopped (restart on-failure; it has {restart})")
    return problems


def gpu_claimers_see_every_gpu(resolved: dict) -> list[str]:
    """A service whose replicas share out the host's GPUs among them (lpstudy-claim-gpu) reserves every
    GPU (count: all): a count of N gives every replica the same first N, and the wrapper has nothing
    else to share."""
    problems = []
    for name, service in resolved.get("services", {}).items():
        if "lpstudy-claim-gpu" not in _words(service):
            continue
        devices = service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        gpus = [d for d in devices if "gpu" in d.get("capabilities", [])]
        if not gpus or any(str(d.get("count", "")) != "all" or d.get("device_ids") for d in gpus):
            found = [d.get("count", d.get("device_ids")) for d in gpus]
            problems.append(f"service {name}: replicas that share out the GPUs reserve every GPU (count: all; "
                            f"it reserves {found or 'none'})")
    return problems


def database_health_checks_ask_over_tcp(resolved: dict) -> list[str]:
    """A service's pg_isready healthcheck asks over TCP (-h 127.0.0.1), as the clients connect: during
    initialisation the server listens on its socket only, so a socket check turns healthy before the
    roles exist and the services that wait for it start too early."""
    from tests.k8s_cluster_rules import pg_isready_asks_over_tcp

    return [f"service {name}: a database check asks over TCP, as its clients connect (its healthcheck runs "
            f"pg_isready without -h)" for name, service in resolved.get("services", {}).items()
            if not pg_isready_asks_over_tcp([str(w) for w in service.get("healthcheck", {}).get("test", [])])]


CHECKS = [database_health_checks_ask_over_tcp, names_resolve, prometheus_scrapes_what_the_workers_serve, metrics_linger_within_grace,
          health_checks_ask_what_the_program_answers, published_on_loopback, workers_end_when_done,
          gpu_claimers_see_every_gpu, compose_images_match_the_lock]


def problems_of(resolved: dict) -> list[str]:
    return [problem for check in CHECKS for problem in check(resolved)]
