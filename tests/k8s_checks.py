"""What a built Kubernetes deployment (`kubectl kustomize` of deploy/k8s) must hold beyond its schemas
and beyond the generic rules checkov holds (deploy/checkov.yaml: privileged, host namespaces and
ports, privilege escalation, capabilities, seccomp, read-only root filesystems, requests and memory
limits, probes, image digests, service account tokens), each a function from the built documents to
a list of problems, one line each (an empty list: it holds). tests/test_k8s.py runs every check on
every build, and applies the breakages a reviewer would make to a copy of deploy/ to prove that each
one fails a check.

The Pod Security check keeps the controls of the Pod Security Standards
(kubernetes.io/docs/concepts/security/pod-security-standards, the baseline and restricted profiles)
that checkov does not check (measured: each broken on a copy of a pod, tests/test_k8s.py): volume
types, sysctls, AppArmor, SELinux, procMount, hostProcess, runAsNonRoot and runAsUser 0."""

from __future__ import annotations

import re
from typing import Callable

from tests import k8s_cluster_rules, k8s_exposure, k8s_images, k8s_invariants, k8s_materialise, k8s_references
from tests.k8s_walk import (WORKLOAD_KINDS, flag_value, all_containers, name_of, pod_labels, pod_template,  # noqa: F401
                            pods, quantity, selects)


# A URL that carries a user and a password (user:password@host).
CREDENTIALS_IN_URL = re.compile(r"://[^/@\s:]+:[^/@\s]+@")
# A name of a setting that holds a secret: its value belongs in the Secret, never in a ConfigMap or an
# env literal (PGPASSWORD, LPSTUDY_WRITER_PASSWORD, OAUTH2_PROXY_COOKIE_SECRET, AWS_SECRET_ACCESS_KEY, ...).
SECRET_NAME = re.compile(r"PASSW(OR)?D|SECRET|TOKEN|PRIVATE_KEY|ACCESS_KEY", re.I)
# A line of a file in a ConfigMap that sets such a setting to a value of its own (not a $reference).
SECRET_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*['\"]?([^\s'\"$#][^\s'\"]*)")
# A version tag (1.2, v7.8.1, 16.9-bookworm, 0.1.0-gpu) or a content digest.
VERSION_TAG = re.compile(r":v?\d+(\.\d+)+([.-][\w.-]*)?$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")

# Pod Security Standards, baseline: the sysctls a pod may set, the SELinux types it may ask for.
# Restricted: the volume types.
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
RESTRICTED_VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                           "projected", "secret"}


# --- the checks ----------------------------------------------------------------------------------


def pod_security_restricted(docs: list[dict]) -> list[str]:
    """The controls of Pod Security baseline and restricted that checkov does not check."""
    problems = []
    for doc, template in pods(docs):
        spec = template["spec"]
        where = name_of(doc)
        pod_sc = spec.get("securityContext", {})
        if pod_sc.get("windowsOptions", {}).get("hostProcess"):
            problems.append(f"{where}: a hostProcess pod (Pod Security baseline)")
        for volume in spec.get("volumes", []):
            kinds = set(volume) - {"name"}
            if "hostPath" in kinds:
                problems.append(f"{where}: volume {volume['name']} is a hostPath (Pod Security baseline)")
            elif not kinds <= RESTRICTED_VOLUME_TYPES:
                problems.append(f"{where}: volume {volume['name']} is of type {sorted(kinds)}, "
                                f"not one restricted allows")
        for sysctl in pod_sc.get("sysctls", []):
            if sysctl["name"] not in SAFE_SYSCTLS:
                problems.append(f"{where}: sysctl {sysctl['name']} is not a safe one (Pod Security baseline)")
        for key, value in template["metadata"].get("annotations", {}).items():
            if key.startswith("container.apparmor.security.beta.kubernetes.io/") \
                    and not (value == "runtime/default" or value.startswith("localhost/")):
                problems.append(f"{where}: AppArmor profile {value} (Pod Security baseline)")
        pod_non_root = pod_sc.get("runAsNonRoot")
        problems += _selinux_and_apparmor(where, pod_sc)
        if pod_sc.get("runAsUser") == 0:
            problems.append(f"{where}: runAsUser 0 (Pod Security restricted)")
        for c in all_containers(spec):
            at = f"{where}/{c['name']}"
            sc = c.get("securityContext", {})
            problems += _selinux_and_apparmor(at, sc)
            if sc.get("procMount", "Default") != "Default":
                problems.append(f"{at}: procMount {sc['procMount']} (Pod Security baseline)")
            if sc.get("windowsOptions", {}).get("hostProcess"):
                problems.append(f"{at}: hostProcess (Pod Security baseline)")
            if sc.get("runAsNonRoot", pod_non_root) is not True:
                problems.append(f"{at}: runAsNonRoot is not true, for the pod or the container "
                                f"(Pod Security restricted)")
            if sc.get("runAsUser") == 0:
                problems.append(f"{at}: runAsUser 0 (Pod Security restricted)")
    return problems


def _selinux_and_apparmor(where: str, sc: dict) -> list[str]:
    problems = []
    selinux = sc.get("seLinuxOptions", {})
    if selinux.get("type", "") not in SELINUX_TYPES:
        problems.append(f"{where}: SELinux type {selinux['type']} (Pod Security baseline)")
    if selinux.get("user") or selinux.get("role"):
        problems.append(f"{where}: SELinux user or role set (Pod Security baseline)")
    apparmor = sc.get("appArmorProfile", {}).get("type")
    if apparmor not in (None, "RuntimeDefault", "Localhost"):
        problems.append(f"{where}: AppArmor profile {apparmor} (Pod Security baseline)")
    return problems


def selectors_match_labels(docs: list[dict]) -> list[str]:
    """A workload's selector must select its own pods (the API refuses it otherwise); a Service,
    a PodDisruptionBudget, a NetworkPolicy and a PodMonitor must select some pod of the build."""
    problems = []
    labelled = pod_labels(docs)
    for doc, template in pods(docs):
        selector = doc["spec"].get("selector")
        if doc["kind"] == "Job" and selector is None:
            continue  # generated by the API from the Job's uid
        if not selects(selector, template["metadata"].get("labels", {})):
            problems.append(f"{name_of(doc)}: its selector {selector} does not match its pod template's labels")
    for doc in docs:
        selector = {"Service": lambda d: {"matchLabels": d["spec"].get("selector", {})},
                    "PodDisruptionBudget": lambda d: d["spec"].get("selector"),
                    "NetworkPolicy": lambda d: d["spec"].get("podSelector"),
                    "PodMonitor": lambda d: d["spec"].get("selector")}.get(doc["kind"], lambda d: None)(doc)
        if selector is not None and not any(selects(selector, labels) for _, labels in labelled):
            problems.append(f"{name_of(doc)}: its selector {selector} selects no pod of the build")
    return problems


def probe_ports_exist(docs: list[dict]) -> list[str]:
    """A probe's port, named or numeric, is one of its container's ports; a Service's targetPort one of
    its pods' ports."""
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            names = {p.get("name") for p in c.get("ports", []) if p.get("name")}
            numbers = {p["containerPort"] for p in c.get("ports", [])}
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = c.get(kind) or {}
                for handler in ("httpGet", "tcpSocket", "grpc"):
                    if handler in probe:
                        port = probe[handler]["port"]
                        if port not in (names if isinstance(port, str) else numbers):
                            problems.append(f"{name_of(doc)}/{c['name']}: the {kind}'s port {port!r} is not "
                                            f"among the container's ports {sorted(names) + sorted(numbers)}")
    labelled = pod_labels(docs)
    for service in (d for d in docs if d["kind"] == "Service"):
        chosen = [doc for doc, labels in labelled if selects({"matchLabels": service["spec"].get("selector", {})}, labels)]
        ports = [p for doc in chosen for c in pod_template(doc)["spec"]["containers"] for p in c.get("ports", [])]
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if not any(target == (p.get("name") if isinstance(target, str) else p["containerPort"]) for p in ports):
                problems.append(f"{name_of(service)}: targetPort {target!r} is no port of the pods it selects")
    return problems


def pod_monitors_scrape_a_port(docs: list[dict]) -> list[str]:
    """A PodMonitor (the Prometheus Operator's, which no Kubernetes schema knows) scrapes a named port
    of every pod it selects."""
    problems = []
    for monitor in (d for d in docs if d["kind"] == "PodMonitor"):
        chosen = [doc for doc, labels in pod_labels(docs) if selects(monitor["spec"].get("selector"), labels)]
        for endpoint in monitor["spec"].get("podMetricsEndpoints", []):
            for doc in chosen:
                names = {p.get("name") for c in pod_template(doc)["spec"]["containers"] for p in c.get("ports", [])}
                if endpoint.get("port") not in names:
                    problems.append(f"{name_of(monitor)}: port {endpoint.get('port')!r} is no port of {name_of(doc)}")
    return problems


def pod_failure_policies(docs: list[dict]) -> list[str]:
    """A Job's podFailurePolicy needs restartPolicy Never, and its rules' containerName must name one
    of the pod's containers: the API refuses the Job otherwise, which no schema says."""
    problems = []
    for doc in docs:
        if doc["kind"] != "Job" or "podFailurePolicy" not in doc["spec"]:
            continue
        spec = doc["spec"]["template"]["spec"]
        if spec.get("restartPolicy") != "Never":
            problems.append(f"{name_of(doc)}: a podFailurePolicy needs restartPolicy Never, "
                            f"not {spec.get('restartPolicy')}")
        names = {c["name"] for c in spec.get("initContainers", []) + spec["containers"]}
        for rule in doc["spec"]["podFailurePolicy"]["rules"]:
            name = rule.get("onExitCodes", {}).get("containerName")
            if name is not None and name not in names:
                problems.append(f"{name_of(doc)}: the podFailurePolicy's containerName {name!r} is no container "
                                f"of the pod ({', '.join(sorted(names))})")
    return problems


def no_credentials_in_plain_values(docs: list[dict]) -> list[str]:
    """No credentials in a ConfigMap, a container's env literal, its command or args: those are read
    by anyone who may read the namespace's ConfigMaps and pods. Credentials live in the Secret. A
    credential is a URL with user:password@, or a value given to a setting whose name says it is
    secret (SECRET_NAME: PGPASSWORD, ..._PASSWORD, ..._SECRET, ..._TOKEN): a ConfigMap key, a line of
    a file in a ConfigMap that sets one, or an env literal."""
    problems = []
    for doc in docs:
        if doc["kind"] == "ConfigMap":
            for key, value in (doc.get("data") or {}).items():
                if SECRET_NAME.search(key) and str(value).strip():
                    problems.append(f"{name_of(doc)}: {key} is a secret's value in a ConfigMap (put it in the Secret)")
                    continue
                for line in str(value).splitlines():
                    if CREDENTIALS_IN_URL.search(line):
                        problems.append(f"{name_of(doc)}: {key} holds credentials in a URL (put it in the Secret)")
                    assigned = SECRET_ASSIGNMENT.match(line)
                    if assigned and SECRET_NAME.search(assigned.group(1)):
                        problems.append(f"{name_of(doc)}: {key} sets {assigned.group(1)} to a value of its own "
                                        f"(put it in the Secret)")
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            words = c.get("command", []) + c.get("args", [])
            words += [f"{e['name']}={e['value']}" for e in c.get("env", []) if "value" in e]
            for word in words:
                if CREDENTIALS_IN_URL.search(word):
                    problems.append(f"{name_of(doc)}/{c['name']}: credentials in a URL in plain text: {word}")
            for e in c.get("env", []):
                if SECRET_NAME.search(e["name"]) and str(e.get("value") or "").strip():
                    problems.append(f"{name_of(doc)}/{c['name']}: env {e['name']} is a secret given as a literal "
                                    f"(take it from the Secret: valueFrom.secretKeyRef)")
    return problems


def images_versioned(docs: list[dict]) -> list[str]:
    """Every image with a version tag, which says which release runs (checkov's CKV_K8S_43 holds the
    digest, which makes the node pull exactly that build; its CKV_K8S_14 lets `latest` with a digest
    through, and an image without a tag)."""
    return [f"{name_of(doc)}/{c['name']}: image {c['image']} has no version tag"
            for doc, template in pods(docs) for c in all_containers(template["spec"])
            if not VERSION_TAG.search(c["image"].partition("@")[0])]


def claimed_volumes_have_an_fs_group(docs: list[dict]) -> list[str]:
    """A pod that runs as a non-root user and writes to a volume claim needs fsGroup, or the fresh
    volume belongs to root and the pod cannot write it; OnRootMismatch, or every start re-chowns it."""
    problems = []
    for doc, template in pods(docs):
        spec = template["spec"]
        claims = {v["name"] for v in spec.get("volumes", []) if "persistentVolumeClaim" in v
                  and not v["persistentVolumeClaim"].get("readOnly")}
        claims |= {t["metadata"]["name"] for t in doc["spec"].get("volumeClaimTemplates", [])}
        written = {m["name"] for c in all_containers(spec) for m in c.get("volumeMounts", [])
                   if m["name"] in claims and not m.get("readOnly")}
        if not written:
            continue
        sc = spec.get("securityContext", {})
        if "fsGroup" not in sc:
            problems.append(f"{name_of(doc)}: writes to the volume claim(s) {sorted(written)} as a non-root user "
                            f"but sets no fsGroup")
        elif sc.get("fsGroupChangePolicy") != "OnRootMismatch":
            problems.append(f"{name_of(doc)}: fsGroup without fsGroupChangePolicy OnRootMismatch re-chowns "
                            f"{sorted(written)} at every start")
    return problems


def network_policies_admit_only_this_namespace(docs: list[dict]) -> list[str]:
    """Every NetworkPolicy's sources are pods of this namespace, chosen by their labels: a rule without
    `from` admits every source, a namespaceSelector admits pods of other namespaces (`{}`: of every
    namespace) that carry the labels, an ipBlock admits addresses."""
    problems = []
    for policy in (d for d in docs if d["kind"] == "NetworkPolicy"):
        for rule in policy["spec"].get("ingress", []):
            if not rule.get("from"):
                problems.append(f"{name_of(policy)}: an ingress rule without `from` admits every source")
            for peer in rule.get("from", []):
                if "namespaceSelector" in peer:
                    problems.append(f"{name_of(policy)}: a source with namespaceSelector {peer['namespaceSelector']} "
                                    f"admits pods of other namespaces")
                if "ipBlock" in peer:
                    problems.append(f"{name_of(policy)}: a source with ipBlock {peer['ipBlock']} admits addresses, "
                                    f"not lpstudy's pods")
                if "podSelector" not in peer and "namespaceSelector" not in peer and "ipBlock" not in peer:
                    problems.append(f"{name_of(policy)}: an empty source admits every pod")
    return problems


def network_policy_ports_are_served(docs: list[dict]) -> list[str]:
    """A NetworkPolicy's port (a number or a name) is a port of every pod it selects: a policy on
    another port fences the pods off from their own clients."""
    problems = []
    for policy in (d for d in docs if d["kind"] == "NetworkPolicy"):
        chosen = [doc for doc, labels in pod_labels(docs) if selects(policy["spec"]["podSelector"], labels)]
        for rule in policy["spec"].get("ingress", []):
            for port in rule.get("ports", []):
                wanted = port.get("port")
                for doc in chosen:
                    ports = [p for c in pod_template(doc)["spec"]["containers"] for p in c.get("ports", [])]
                    if wanted is not None and not any(wanted == (p.get("name") if isinstance(wanted, str) else p["containerPort"])
                                                      for p in ports):
                        problems.append(f"{name_of(policy)}: port {wanted!r} is no port of {name_of(doc)} "
                                        f"({sorted(p['containerPort'] for p in ports)})")
    return problems


# --- resources -----------------------------------------------------------------------------------

MiB = 2**20
# The peak memory (RSS) each program was measured to reach, as in its pod (`/usr/bin/time -f %M`, this
# repository's machine): wait-for-database.py retrying an unreachable server, 49 MiB; `lpstudy
# status`, the lightest lpstudy command (wait-for-study.sh runs it), 132 MiB. A memory limit below
# that is a container the kernel kills at its first start.
MEMORY_NEEDED = {"wait-for-database.py": 49 * MiB, "lpstudy": 132 * MiB}
# A worker, with torch and the preset its study trains, through one trial (20 steps, an evaluation
# and a checkpoint): benchmarks/results/worker-memory.md (python benchmarks/bench_worker_memory.py;
# importing torch alone peaks at 219 MiB). `paper` runs on GPUs, which this machine has not: its
# floor is the cpu preset's, a lower bound (its CUDA libraries come on top).
WORKER_MEMORY_NEEDED = {"smoke": 408 * MiB, "cpu": 466 * MiB, "paper": 466 * MiB}
DEFAULT_PRESET = "cpu"  # a study file without `preset:` (lpstudy.design.options)


def _preset_of(docs: list[dict], template: dict, c: dict) -> str:
    """The preset of the study file the worker's --config names (a mounted ConfigMap's key), else the
    default's."""
    import yaml

    from tests.k8s_references import mounted_files

    words = c.get("command", []) + c.get("args", [])
    text = mounted_files(docs, template, c, {}).get(flag_value(words, "--config") or "")
    spec = yaml.safe_load(text) if text else None
    return str((spec or {}).get("preset", DEFAULT_PRESET))


def memory_needed(c: dict, docs: list[dict] | None = None, template: dict | None = None) -> tuple[str, float] | None:
    words = c.get("command", []) + c.get("args", [])
    if any(w.endswith("wait-for-database.py") for w in words):
        return "wait-for-database.py", MEMORY_NEEDED["wait-for-database.py"]
    if "lpstudy" in words and words[words.index("lpstudy") + 1:][:1] == ["worker"]:
        preset = _preset_of(docs or [], template or {"spec": {}}, c)
        return f"lpstudy worker (preset {preset})", WORKER_MEMORY_NEEDED.get(preset, max(WORKER_MEMORY_NEEDED.values()))
    if "lpstudy" in words or any(w.endswith("wait-for-study.sh") for w in words):
        return "lpstudy", MEMORY_NEEDED["lpstudy"]
    return None


def requests_within_limits(docs: list[dict]) -> list[str]:
    """Each request is at most its limit (the API refuses the pod otherwise, which no schema and no
    checkov rule says); a memory limit is at least what the container's program was measured to
    need (MEMORY_NEEDED). (checkov holds that every container has requests and a memory limit.)"""
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            at = f"{name_of(doc)}/{c['name']}"
            requests = c.get("resources", {}).get("requests", {})
            limits = c.get("resources", {}).get("limits", {})
            for resource, limit in limits.items():
                if resource in requests and quantity(requests[resource]) > quantity(limit):
                    problems.append(f"{at}: its {resource} request {requests[resource]} is above its limit {limit}")
            needed = memory_needed(c, docs, template)
            if needed and "memory" in limits and quantity(limits["memory"]) < needed[1]:
                problems.append(f"{at}: a memory limit holds what its program was measured to need ({needed[0]}: "
                                f"{needed[1] / MiB:.0f} MiB; the limit is {limits['memory']})")
    return problems


# --- what each program serves --------------------------------------------------------------------

# The paths each server answers a health check on, as the program defines them: Streamlit's
# health endpoint, optuna-dashboard's page, oauth2-proxy's ping and ready endpoints.
HEALTH_PATHS = {"lpstudy dashboard": {"/_stcore/health"}, "lpstudy optuna-dashboard": {"/dashboard"},
                "oauth2-proxy": {"/ping", "/ready"}}
# Where a worker serves its metrics (lpstudy.study.telemetry: prometheus_client's server), as the docs,
# the pods' annotations and the Grafana dashboard say.
METRICS_PATH = "/metrics"
ALL_ADDRESSES = ("0.0.0.0", "::", "")


def _env_value(docs: list[dict], c: dict, name: str) -> str | None:
    for entry in c.get("env", []):
        if entry["name"] != name:
            continue
        if "value" in entry:
            return entry["value"]
        ref = entry.get("valueFrom", {}).get("configMapKeyRef")
        if ref:
            config = next((d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"]), None)
            return (config or {}).get("data", {}).get(ref["key"])
    return None


def served(docs: list[dict], c: dict) -> tuple[str, str | None, int | None] | None:
    """(the program, the address it listens on, its port) of a container that serves something, read
    from its command, args and env as the program reads them; None for one that serves nothing."""
    words = c.get("command", []) + c.get("args", [])
    if "lpstudy" in words:
        rest = words[words.index("lpstudy") + 1:]
        command = rest[0] if rest else ""
        if command in ("dashboard", "optuna-dashboard", "storage-proxy"):
            port = flag_value(rest, "--port")
            return f"lpstudy {command}", flag_value(rest, "--host"), int(port) if port and port.isdigit() else None
        if command == "worker":
            port = flag_value(rest, "--metrics-port") or _env_value(docs, c, "LPSTUDY_METRICS_PORT")
            return ("lpstudy worker", "0.0.0.0", int(port)) if port and port.isdigit() and int(port) else None
    if "oauth2-proxy" in c["image"]:
        address = flag_value(words, "--http-address") or ""
        host, _, port = address.rpartition(":")
        return "oauth2-proxy", host, int(port) if port.isdigit() else None
    return None


def programs_serve_what_their_pods_announce(docs: list[dict]) -> list[str]:
    """What each program serves, read from its own flags (lpstudy's --host and --port, a worker's
    metrics port, oauth2-proxy's --http-address), against what its pod announces: it listens on
    every address (a server on 127.0.0.1 answers no probe and no Service), on a containerPort, and
    every probe asks that port, on a path the program answers (HEALTH_PATHS); a worker's metrics
    port is its port `metrics`, and every PodMonitor and prometheus.io annotation scrapes METRICS_PATH."""
    problems = []
    for doc, template in pods(docs):
        for c in template["spec"].get("containers", []):
            found = served(docs, c)
            if found is None:
                continue
            program, host, port = found
            at = f"{name_of(doc)}/{c['name']}"
            by_name = {p.get("name"): p["containerPort"] for p in c.get("ports", []) if p.get("name")}
            numbers = {p["containerPort"] for p in c.get("ports", [])}
            if host is not None and host not in ALL_ADDRESSES:
                problems.append(f"{at}: {program} listens on {host}, not on every address: no probe or Service reaches it")
            if port is None:
                problems.append(f"{at}: {program}'s port cannot be read from its flags")
                continue
            if port not in numbers:
                problems.append(f"{at}: {program} serves port {port}, which is no containerPort ({sorted(numbers)})")
            if program == "lpstudy worker" and by_name.get("metrics") != port:
                problems.append(f"{at}: the worker serves its metrics on {port}, its port `metrics` is {by_name.get('metrics')}")
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = c.get(kind) or {}
                for handler in ("httpGet", "tcpSocket", "grpc"):
                    if handler not in probe:
                        continue
                    asked = probe[handler]["port"]
                    asked = by_name.get(asked) if isinstance(asked, str) else asked
                    if asked != port:
                        problems.append(f"{at}: the {kind} asks port {asked}, {program} serves {port}")
                    path = probe[handler].get("path")
                    if handler == "httpGet" and path not in HEALTH_PATHS.get(program, {path}):
                        problems.append(f"{at}: the {kind} asks {path}, which {program} does not answer "
                                        f"({', '.join(sorted(HEALTH_PATHS[program]))})")
        annotations = template["metadata"].get("annotations", {})
        if annotations.get("prometheus.io/scrape") == "true" and annotations.get("prometheus.io/path", METRICS_PATH) != METRICS_PATH:
            problems.append(f"{name_of(doc)}: the prometheus.io/path annotation is {annotations['prometheus.io/path']}, "
                            f"the workers serve {METRICS_PATH}")
    for monitor in (d for d in docs if d["kind"] == "PodMonitor"):
        for endpoint in monitor["spec"].get("podMetricsEndpoints", []):
            if endpoint.get("path", METRICS_PATH) != METRICS_PATH:
                problems.append(f"{name_of(monitor)}: scrapes {endpoint['path']}, the workers serve {METRICS_PATH}")
    return problems


CHECKS: list[Callable[[list[dict]], list[str]]] = [
    pod_security_restricted,
    selectors_match_labels,
    probe_ports_exist,
    pod_monitors_scrape_a_port,
    pod_failure_policies,
    no_credentials_in_plain_values,
    images_versioned,
    claimed_volumes_have_an_fs_group,
    network_policies_admit_only_this_namespace,
    network_policy_ports_are_served,
    requests_within_limits,
    programs_serve_what_their_pods_announce,
]


def every_check() -> list[Callable[[list[dict]], list[str]]]:
    """These checks, the reference graph's (tests/k8s_references.py), the invariants'
    (tests/k8s_invariants.py), who can reach the build (tests/k8s_exposure.py), the rules the API
    server and the kubelet apply (tests/k8s_cluster_rules.py) what a container is given
    (tests/k8s_materialise.py) and the images' lock (tests/k8s_images.py)."""
    return (CHECKS + k8s_references.CHECKS + k8s_invariants.CHECKS + k8s_exposure.CHECKS + k8s_cluster_rules.CHECKS
            + k8s_materialise.CHECKS + k8s_images.CHECKS)


def problems_of(docs: list[dict]) -> list[str]:
    return [problem for check in every_check() for problem in check(docs)]
