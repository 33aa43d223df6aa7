"""Numbers of a built deployment that must agree, and security that no single file shows. Each check is
a function from the built documents (`kubectl kustomize` of deploy/k8s) to a list of problems, one
line each, as in tests/k8s_checks.py, whose problems_of runs these on every build. docs/deployment.md,
"What every build holds", lists them for an operator.

The figures they use are stated here once, each with where it comes from."""

from __future__ import annotations

import math
import re

from tests.k8s_walk import flag_value, all_containers, name_of, pod_template, pods, quantity, selects
from tests.k8s_references import connections, container_values, service_selector, workloads_selected

# The longest time a worker took from SIGTERM to exit, measured with benchmarks/bench_worker_stop.py
# (the `cpu` preset, PostgreSQL, checkpoints on, two torch threads, on this repository's shared
# 2-core machine at a load average of 9-18; its worst case: an evaluation and a checkpoint upload
# after every step). docs/deployment.md, "On Kubernetes", gives the same figure.
LONGEST_STOP_S = 55.1
# Topology keys every cluster's nodes carry (kubernetes.io/docs/reference/labels-annotations-taints).
WELL_KNOWN_TOPOLOGY_KEYS = {"kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region"}
# PostgreSQL's defaults where the server's flags do not say otherwise.
POSTGRES_DEFAULTS = {"max_connections": 100, "superuser_reserved_connections": 3}
# Slots an operator needs beside the clients: `pg_dump` for the backup docs/deployment.md describes.
OPERATOR_SLOTS = 1
# The database connections each program holds at most, as measured (docs/scale-workers.md,
# "Connections"): a worker (and `lpstudy create`, which opens the same storage) two, its main thread's
# and its heartbeat's; a dashboard one or two; the storage proxy at most --threads busy plus its own
# (14 at --threads 10 with 200 workers behind it: benchmarks/results/load-proxy-restart.md); the
# init containers' wait one, `lpstudy status` (wait-for-study.sh) two.
PROXY_OWN_CONNECTIONS = 4
CONNECTIONS = {"worker": 2, "create": 2, "dashboard": 2, "optuna-dashboard": 2, "status": 2,
               "wait-for-database.py": 1}
# Variables that set how many threads a process computes with (torch reads OMP_NUM_THREADS).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCH_NUM_THREADS")
MiB, GiB = 2**20, 2**30
# The smallest size each volume claim is sized for (docs/deployment.md, "What every build holds"):
# the database's data (Optuna's tables, the metrics table of every evaluation, WAL) and the
# trials' checkpoints while they run. A kustomization may grow them, never shrink them below.
VOLUME_FLOORS = {"lpstudy-db/data": 10 * GiB, "lpstudy-artifacts": 20 * GiB}
# The workloads that write the study; every other pod reads it with the read-only role.
WRITERS = ("Job lpstudy-create-study", "Job lpstudy-workers", "Deployment lpstudy-storage-proxy")
WRITER_KEYS = ("LPSTUDY_WRITER_URL", "LPSTUDY_WRITER_PASSWORD", "POSTGRES_PASSWORD")
DATABASE = "StatefulSet lpstudy-db"


def replicas(doc: dict) -> int:
    """How many pods of the workload run at once."""
    if doc["kind"] == "Job":
        return int(doc["spec"].get("parallelism", 1))
    return int(doc["spec"].get("replicas", 1))


def _count(value, total: int, round_up: bool) -> int:
    """A PodDisruptionBudget's int-or-percent as a count of pods (the API rounds percentages up)."""
    if isinstance(value, str) and value.endswith("%"):
        share = float(value[:-1]) / 100 * total
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


# --- disruption and availability -----------------------------------------------------------------


def budgets_leave_a_pod_evictable(docs: list[dict]) -> list[str]:
    """Every PodDisruptionBudget lets at least one of its workload's pods be evicted: a budget that
    allows none holds a node drain, and a managed cluster's upgrade, until someone deletes it."""
    problems = []
    for budget in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        for doc in workloads_selected(docs, budget["spec"].get("selector")):
            total = replicas(doc)
            spec = budget["spec"]
            if "minAvailable" in spec:
                evictable = total - _count(spec["minAvailable"], total, round_up=True)
            else:
                evictable = _count(spec.get("maxUnavailable", 1), total, round_up=True)
            if evictable < 1:
                problems.append(f"{name_of(budget)}: lets none of the {total} pod(s) of {name_of(doc)} be evicted: "
                                f"a drain waits for ever")
    return problems


def _spread_keys(doc: dict) -> set[str]:
    """The topology keys the workload's pods are spread by (anti-affinity to their own pods, or a
    topology spread constraint over them)."""
    spec = pod_template(doc)["spec"]
    labels = pod_template(doc)["metadata"].get("labels", {})
    keys = set()
    anti = spec.get("affinity", {}).get("podAntiAffinity", {})
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution", []) + [
        t["podAffinityTerm"] for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
    keys |= {t["topologyKey"] for t in terms if selects(t.get("labelSelector"), labels)}
    keys |= {c["topologyKey"] for c in spec.get("topologySpreadConstraints", []) if selects(c.get("labelSelector"), labels)}
    return keys


def high_availability_is_real(docs: list[dict]) -> list[str]:
    """A workload a PodDisruptionBudget protects is one meant to stay up through a drain: it runs at
    least two pods, spread over nodes (or zones) by a well-known topology key, so that one node's loss
    leaves one running."""
    problems = []
    for budget in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        for doc in workloads_selected(docs, budget["spec"].get("selector")):
            if replicas(doc) < 2:
                problems.append(f"{name_of(doc)}: protected by {name_of(budget)} but runs {replicas(doc)} pod: "
                                f"a budget keeps it up only with two or more")
            keys = _spread_keys(doc)
            if not keys & WELL_KNOWN_TOPOLOGY_KEYS:
                problems.append(f"{name_of(doc)}: its pods are not spread by a well-known topology key "
                                f"({', '.join(sorted(WELL_KNOWN_TOPOLOGY_KEYS))}); found {sorted(keys) or 'none'}")
    return problems


def no_default_priority_class(docs: list[dict]) -> list[str]:
    """No PriorityClass of the build is the cluster's default: it would raise every other team's pods."""
    return [f"{name_of(d)}: globalDefault is true: every pod of the cluster without a class would get it"
            for d in docs if d["kind"] == "PriorityClass" and d.get("globalDefault")]


# --- capacity ------------------------------------------------------------------------------------


def _postgres_setting(c: dict, name: str) -> int:
    """A server setting from postgres's flags (`-c name=N` or `--name=N`), else its default."""
    found = re.search(rf"(?:^|\s)(?:-c\s*|--){name}=(\d+)\b", " ".join(c.get("command", []) + c.get("args", [])))
    return int(found.group(1)) if found else POSTGRES_DEFAULTS[name]


def connections_of(c: dict) -> int:
    """The database connections one container holds at most (CONNECTIONS)."""
    words = c.get("command", []) + c.get("args", [])
    if any(w.endswith("wait-for-database.py") for w in words):
        return CONNECTIONS["wait-for-database.py"]
    if any(w.endswith("wait-for-study.sh") for w in words):
        return CONNECTIONS["status"]
    if "lpstudy" in words:
        rest = words[words.index("lpstudy") + 1:]
        command = rest[0] if rest else ""
        if command == "storage-proxy":
            return int(flag_value(rest, "--threads") or 10) + PROXY_OWN_CONNECTIONS
        return CONNECTIONS.get(command, 2)
    return 2


def database_connections_suffice(docs: list[dict]) -> list[str]:
    """The database's max_connections covers every connection the build can open at once: each
    workload that connects to the database's Service, its pods at once (replicas, a Job's parallelism)
    times the connections of its busiest container (init containers run before the others), plus the
    superuser's reserved slots and the operator's (OPERATOR_SLOTS)."""
    database = next((d for d in docs if name_of(d) == DATABASE), None)
    if database is None:
        return []
    server = pod_template(database)["spec"]["containers"][0]
    limit = _postgres_setting(server, "max_connections")
    reserved = _postgres_setting(server, "superuser_reserved_connections") + OPERATOR_SLOTS
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"
                and database in workloads_selected(docs, service_selector(d))}
    opened, parts = 0, []
    for doc, template in pods(docs):
        if doc is database:
            continue
        busiest = max((connections_of(c) for c in all_containers(template["spec"])
                       if any(name in services for name, _w, _p in connections(docs, doc, containers=[c]))), default=0)
        if busiest:
            opened += busiest * replicas(doc)
            parts.append(f"{name_of(doc)} {replicas(doc)}×{busiest}")
    if opened + reserved > limit:
        return [f"{DATABASE}: max_connections {limit} is short of the {opened} connections the build can open "
                f"({', '.join(parts)}) and {reserved} reserved"]
    return []


def threads_within_cpu_request(docs: list[dict]) -> list[str]:
    """A container computes with no more threads than the cores it requests: more are time-sliced on
    those cores (and a CPU limit throttles them). Threads set by OMP_NUM_THREADS and the like, or by a
    worker's --threads; from the container's own CPU request (resourceFieldRef requests.cpu) they
    agree by construction, from limits.cpu without a limit they are every core of the node."""
    problems = []
    for doc, template in pods(docs):
        containers = {c["name"]: c for c in all_containers(template["spec"])}
        for c in containers.values():
            at = f"{name_of(doc)}/{c['name']}"
            requested = quantity(c.get("resources", {}).get("requests", {}).get("cpu", 0))
            wanted = []
            words = c.get("command", []) + c.get("args", [])
            if "lpstudy" in words and "worker" in words and flag_value(words, "--threads"):
                wanted.append(("--threads", flag_value(words, "--threads")))
            for entry in c.get("env", []):
                if entry["name"] not in THREAD_VARIABLES:
                    continue
                if "value" in entry:
                    wanted.append((entry["name"], entry["value"]))
                ref = entry.get("valueFrom", {}).get("resourceFieldRef")
                if ref:
                    source = containers.get(ref.get("containerName", c["name"]), c)
                    kind, _, resource = ref["resource"].partition(".")
                    amount = source.get("resources", {}).get(kind, {}).get(resource)
                    if resource == "cpu" and amount is None:
                        problems.append(f"{at}: {entry['name']} reads {ref['resource']}, which is not set: "
                                        f"every core of the node")
                    elif resource == "cpu":
                        wanted.append((entry["name"], str(math.ceil(quantity(amount) / quantity(ref.get("divisor", "1"))))))
            for what, value in wanted:
                if value.isdigit() and int(value) > math.ceil(requested):
                    problems.append(f"{at}: {what} {value} threads on a request of {requested:g} CPU")
    return problems


def metrics_linger_within_grace(docs: list[dict]) -> list[str]:
    """A worker's wait at exit for the scrape of its last counters (LPSTUDY_METRICS_LINGER_S) is longer
    than the scrape interval of every PodMonitor that scrapes it, and fits, after the longest measured
    stop (LONGEST_STOP_S), in its pod's terminationGracePeriodSeconds: or the kubelet kills it first."""
    problems = []
    monitors = [d for d in docs if d["kind"] == "PodMonitor"]
    for doc, template in pods(docs):
        grace = template["spec"].get("terminationGracePeriodSeconds", 30)
        for c in template["spec"].get("containers", []):
            linger = next((float(v) for w, v in container_values(docs, c, {}) if w == "env LPSTUDY_METRICS_LINGER_S"), None)
            if linger is None:
                continue
            at = f"{name_of(doc)}/{c['name']}"
            if linger + LONGEST_STOP_S > grace:
                problems.append(f"{at}: a linger of {linger:g} s after the longest stop ({LONGEST_STOP_S} s) "
                                f"exceeds terminationGracePeriodSeconds {grace}")
            for monitor in monitors:
                if doc in workloads_selected(docs, monitor["spec"].get("selector")):
                    for endpoint in monitor["spec"].get("podMetricsEndpoints", []):
                        interval = duration_s(endpoint.get("interval", "30s"))
                        if linger <= interval:
                            problems.append(f"{at}: a linger of {linger:g} s is no longer than {name_of(monitor)}'s "
                                            f"interval of {interval:g} s: the last counters may never be read")
    return problems


def duration_s(text: str) -> float:
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([hms])", text))


def volumes_meet_their_floor(docs: list[dict]) -> list[str]:
    """Each volume claim asks at least the floor stated for it (VOLUME_FLOORS), and no claim of the
    build goes without a floor."""
    problems = []
    claims = [(d["metadata"]["name"], d) for d in docs if d["kind"] == "PersistentVolumeClaim"]
    claims += [(f"{d['metadata']['name']}/{t['metadata']['name']}", t) for d in docs if d["kind"] == "StatefulSet"
               for t in d["spec"].get("volumeClaimTemplates", [])]
    for name, claim in claims:
        size = quantity(claim["spec"]["resources"]["requests"]["storage"])
        floor = VOLUME_FLOORS.get(name)
        if floor is None:
            problems.append(f"volume claim {name}: no floor stated for it (tests/k8s_invariants.py, VOLUME_FLOORS)")
        elif size < floor:
            problems.append(f"volume claim {name}: asks {size / GiB:g} GiB, below its floor of {floor / GiB:g} GiB")
    return problems


# --- security no single file shows ---------------------------------------------------------------


def sign_in_admits_not_everyone(docs: list[dict]) -> list[str]:
    """An authenticating proxy's (oauth2-proxy's) upstream is fenced by a NetworkPolicy, so that no pod
    reaches the dashboard around it (its own settings: tests/k8s_exposure.py)."""
    problems = []
    for doc, template in pods(docs):
        for c in template["spec"]["containers"]:
            if "oauth2-proxy" not in c["image"]:
                continue
            at = f"{name_of(doc)}/{c['name']}"
            for name, where, _port in connections(docs, doc, {}):
                upstream = next((d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == name), None)
                targets = workloads_selected(docs, service_selector(upstream)) if upstream else []
                for target in targets:
                    if not _fenced(docs, target):
                        problems.append(f"{at}: its upstream {name_of(target)} is selected by no NetworkPolicy: "
                                        f"any pod reaches it without signing in")
    return problems


def _fenced(docs: list[dict], doc: dict) -> bool:
    labels = pod_template(doc)["metadata"].get("labels", {})
    return any(d["kind"] == "NetworkPolicy" and "Ingress" in d["spec"].get("policyTypes", ["Ingress"])
               and selects(d["spec"]["podSelector"], labels) for d in docs)


def writes_pass_the_fence(docs: list[dict]) -> list[str]:
    """No route writes to the study without passing the database's fence: the database's pods are
    selected by a NetworkPolicy; only the writers (WRITERS) hold the writer's credentials or connect to
    a pod that holds them; and every pod that holds them and serves a Service (the storage proxy,
    which has no authentication of its own) is fenced by a NetworkPolicy too."""
    problems = []
    database = next((d for d in docs if name_of(d) == DATABASE), None)
    if database is not None and not _fenced(docs, database):
        problems.append(f"{DATABASE}: selected by no NetworkPolicy: any pod of the cluster reaches the database")
    holders = [doc for doc, template in pods(docs) if doc is not database and any(
        e.get("valueFrom", {}).get("secretKeyRef", {}).get("key") in WRITER_KEYS
        for c in all_containers(template["spec"]) for e in c.get("env", []))]
    writer_services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"
                       and any(h in workloads_selected(docs, service_selector(d)) for h in holders)}
    for doc in holders:
        if name_of(doc) not in WRITERS:
            problems.append(f"{name_of(doc)}: holds the writer's credentials but is no writer ({', '.join(WRITERS)}): "
                            f"give it the read-only role")
    for name, service in writer_services.items():
        for target in workloads_selected(docs, service_selector(service)):
            if not _fenced(docs, target):
                problems.append(f"Service {name}: {name_of(target)} writes the study for whoever reaches it, and no "
                                f"NetworkPolicy selects it")
    for doc, _template in pods(docs):
        if name_of(doc) in WRITERS:
            continue
        for name, where, _port in connections(docs, doc, {}):
            if name in writer_services:
                problems.append(f"{name_of(doc)}/{where}: connects to {name}, which writes the study, but is no writer")
    return problems


CHECKS = [budgets_leave_a_pod_evictable, high_availability_is_real, no_default_priority_class,
          database_connections_suffice, threads_within_cpu_request, metrics_linger_within_grace,
          volumes_meet_their_floor, sign_in_admits_not_everyone, writes_pass_the_fence]
