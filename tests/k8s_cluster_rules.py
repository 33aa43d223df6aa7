"""The rules the API server, the controllers and the kubelet apply to a built deployment (`kubectl
kustomize` of deploy/k8s) where no schema holds them: what the API refuses at apply time, what a
controller can never progress, what the kubelet does at a stop. Each check is a function from the
built documents to a list of problems, one line each, that states the rule broken (tests/k8s_checks.py's
problems_of runs these on every build). docs/deployment.md, "What every build holds", says each rule
to an operator."""

from __future__ import annotations

import re

from tests.k8s_invariants import replicas
from tests.k8s_references import connections, service_selector, workloads_selected
from tests.k8s_walk import all_containers, flag_value, name_of, pod_template, pods, selects

# Access modes a claim on block storage (the default class of every managed cluster: EBS, Persistent
# Disk, Azure Disk, Ceph RBD) can be provisioned with; ReadWriteMany needs a file class (NFS, EFS,
# Filestore, Azure Files, CephFS), which only a claim that several pods mount at once needs.
SINGLE_NODE_MODES = {"ReadWriteOnce", "ReadWriteOncePod"}
# The probes the kubelet runs, and the fields that only say when and how often (the rest is the check).
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")
TIMING_FIELDS = {"initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold",
                 "terminationGracePeriodSeconds"}
# pg_ctl's stop modes that end the server without waiting for its clients to leave: `smart` waits for
# every session to end, and a pool's sessions never do (postgresql.org/docs/16/app-pg-ctl.html).
PG_STOP_MODES = ("fast", "immediate")
PG_CTL_DEFAULT_WAIT_S = 60  # pg_ctl's -t default
DNS_PORT = 53


def rollouts_can_progress(docs: list[dict]) -> list[str]:
    """A Deployment's rolling update may add or remove a pod: maxSurge and maxUnavailable are not both
    zero (the API refuses the Deployment)."""
    problems = []
    for doc in (d for d in docs if d["kind"] == "Deployment"):
        strategy = doc["spec"].get("strategy", {})
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            continue
        update = strategy.get("rollingUpdate", {})
        surge, unavailable = update.get("maxSurge", "25%"), update.get("maxUnavailable", "25%")
        if str(surge) in ("0", "0%") and str(unavailable) in ("0", "0%"):
            problems.append(f"{name_of(doc)}: a rolling update may add or remove a pod (maxSurge and "
                            f"maxUnavailable are both 0)")
    return problems


def _claim_users(docs: list[dict], claim: str) -> list[dict]:
    return [doc for doc, template in pods(docs) for v in template["spec"].get("volumes", [])
            if v.get("persistentVolumeClaim", {}).get("claimName") == claim]


def claims_ask_what_their_class_provides(docs: list[dict]) -> list[str]:
    """A claim that one pod mounts (a StatefulSet's, or a claim one single-pod workload uses) asks
    ReadWriteOnce or ReadWriteOncePod, which block storage provisions; ReadWriteMany is for a claim that
    several pods mount at once (the artifact store), on a file class."""
    problems = []
    rule = "a claim one pod mounts asks ReadWriteOnce, the mode block storage provisions"
    for doc in docs:
        claims = []
        if doc["kind"] == "StatefulSet":
            claims = [(f"{name_of(doc)} claim {t['metadata']['name']}", t["spec"]) for t in doc["spec"].get("volumeClaimTemplates", [])]
        elif doc["kind"] == "PersistentVolumeClaim":
            users = _claim_users(docs, doc["metadata"]["name"])
            if users and sum(replicas(u) for u in users) <= 1:
                claims = [(name_of(doc), doc["spec"])]
        for where, spec in claims:
            modes = set(spec.get("accessModes", []))
            if not modes <= SINGLE_NODE_MODES:
                problems.append(f"{where}: {rule} (it asks {sorted(modes)})")
    return problems


def priority_classes_are_the_builds(docs: list[dict]) -> list[str]:
    """A pod's priorityClassName is a class the build defines, never the cluster's own system-*
    classes (those are for the add-ons a node cannot run without; a workload under them preempts them)."""
    defined = {d["metadata"]["name"] for d in docs if d["kind"] == "PriorityClass"}
    return [f"{name_of(doc)}: a pod's priority class is one the build defines, never system-* "
            f"(it names {template['spec']['priorityClassName']})"
            for doc, template in pods(docs)
            if template["spec"].get("priorityClassName")
            and (template["spec"]["priorityClassName"].startswith("system-") or template["spec"]["priorityClassName"] not in defined)]


def _runs_workers(template: dict) -> bool:
    for c in template["spec"].get("containers", []):
        words = c.get("command", []) + c.get("args", [])
        if "lpstudy" in words and words[words.index("lpstudy") + 1:][:1] == ["worker"]:
            return True
    return False


def resumable_jobs_have_no_deadline(docs: list[dict]) -> list[str]:
    """A Job of workers, whose trials resume from their checkpoints after any stop, has no deadline
    (activeDeadlineSeconds on the Job or its pods): the deadline ends a study midway, and every pod
    with it, however well it goes."""
    problems = []
    for doc, template in pods(docs):
        if doc["kind"] != "Job" or not _runs_workers(template):
            continue
        for where, spec in (("the Job", doc["spec"]), ("its pods", template["spec"])):
            if "activeDeadlineSeconds" in spec:
                problems.append(f"{name_of(doc)}: a Job of resumable workers has no deadline "
                                f"({where}: activeDeadlineSeconds {spec['activeDeadlineSeconds']})")
    return problems


def jobs_ignore_disruptions(docs: list[dict]) -> list[str]:
    """Every Job ignores a pod's disruption (a drain, a preemption, an eviction: the pod condition
    DisruptionTarget): its podFailurePolicy has a rule that Ignores it, and no rule that does anything
    else with it. A disruption is no failure of the Job's own."""
    problems = []
    rule = "every Job ignores a disruption (a podFailurePolicy rule Ignore on DisruptionTarget, and no other)"
    for doc in (d for d in docs if d["kind"] == "Job"):
        rules = doc["spec"].get("podFailurePolicy", {}).get("rules", [])
        on_disruption = [r["action"] for r in rules
                         if any(c.get("type") == "DisruptionTarget" for c in r.get("onPodConditions", []))]
        if "Ignore" not in on_disruption:
            problems.append(f"{name_of(doc)}: {rule} (none Ignores it)")
        for action in set(on_disruption) - {"Ignore"}:
            problems.append(f"{name_of(doc)}: {rule} (a rule answers it with {action})")
    return problems


def database_stop_fits_the_grace_period(docs: list[dict]) -> list[str]:
    """A PostgreSQL container's stop (its preStop `pg_ctl stop`) ends the server without waiting for its
    clients (mode fast or immediate; smart waits for pooled connections that never close) and within
    the pod's terminationGracePeriodSeconds (pg_ctl's -t, default 60 s, under it): else the kubelet
    kills the server mid-checkpoint and the next start replays its WAL."""
    problems = []
    for doc, template in pods(docs):
        grace = template["spec"].get("terminationGracePeriodSeconds", 30)
        for c in all_containers(template["spec"]):
            stop = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
            text = " ".join(stop)
            if "pg_ctl" not in text or " stop" not in text:
                continue
            at = f"{name_of(doc)}/{c['name']}"
            words = text.replace("'", " ").replace('"', " ").split()
            mode = flag_value(words, "-m") or flag_value(words, "--mode") or "fast"
            if not any(m.startswith(mode) for m in PG_STOP_MODES):
                problems.append(f"{at}: the database stops without waiting for its clients (pg_ctl stop -m fast; "
                                f"it runs -m {mode})")
            wait = flag_value(words, "-t") or flag_value(words, "--timeout") or PG_CTL_DEFAULT_WAIT_S
            if float(wait) >= grace:
                problems.append(f"{at}: the database's stop fits the grace period (pg_ctl waits {wait} s, "
                                f"terminationGracePeriodSeconds is {grace})")
    return problems


def probes_run_one_check(docs: list[dict]) -> list[str]:
    """The probes of one container (startup, readiness, liveness) run one and the same check and differ
    only in timing: a startup probe that passes on a check the liveness probe fails restarts the
    server for ever, and the reverse lets traffic in before it serves."""
    problems = []
    for doc, template in pods(docs):
        for c in all_containers(template["spec"]):
            checks = {kind: {k: v for k, v in c[kind].items() if k not in TIMING_FIELDS} for kind in PROBES if c.get(kind)}
            first = next(iter(checks.items()), None)
            for kind, check in checks.items():
                if check != first[1]:
                    problems.append(f"{name_of(doc)}/{c['name']}: a server's probes run one check and differ only in "
                                    f"timing (the {kind} runs {check}, the {first[0]} {first[1]})")
    return problems


def _allows(rule: dict, labels: dict | None, port: int | str | None, protocol: str = "TCP") -> bool:
    """Whether an egress rule lets the selected pods reach a pod with these labels (None: any
    destination, outside the namespace included) on this port."""
    ports = rule.get("ports")
    if ports and not any(p.get("protocol", "TCP") == protocol and (p.get("port") is None or p.get("port") == port)
                         for p in ports):
        return False
    peers = rule.get("to")
    if not peers:
        return True
    if labels is None:
        return any("namespaceSelector" in p or "ipBlock" in p for p in peers)
    return any("podSelector" in p and "namespaceSelector" not in p and selects(p["podSelector"], labels) for p in peers)


def egress_allows_dns_and_every_service(docs: list[dict]) -> list[str]:
    """A NetworkPolicy that fences its pods' egress allows DNS (port 53, UDP and TCP) and every Service
    their configuration connects to, on the Service's target port: else the pods resolve no name and
    reach no server."""
    problems = []
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for policy in (d for d in docs if d["kind"] == "NetworkPolicy" and "Egress" in d["spec"].get("policyTypes", [])):
        rules = policy["spec"].get("egress", [])
        for protocol in ("UDP", "TCP"):
            if not any(_allows(r, None, DNS_PORT, protocol) for r in rules):
                problems.append(f"{name_of(policy)}: a policy over egress allows DNS (port {DNS_PORT}/{protocol})")
        for doc in workloads_selected(docs, policy["spec"]["podSelector"]):
            for name, where, _port in connections(docs, doc):
                service = services.get(name)
                if service is None:
                    continue
                for target in workloads_selected(docs, service_selector(service)):
                    labels = pod_template(target)["metadata"].get("labels", {})
                    for port in service["spec"]["ports"]:
                        target_port = _container_port(target, port.get("targetPort", port["port"]))
                        if not any(_allows(r, labels, target_port) or _allows(r, labels, port.get("targetPort"))
                                   for r in rules):
                            problems.append(f"{name_of(policy)}: a policy over egress allows every Service its pods "
                                            f"connect to ({name_of(doc)} connects to Service {name}, port {target_port})")
    return problems


def _container_port(doc: dict, port: int | str) -> int | str:
    if isinstance(port, int):
        return port
    found = [p["containerPort"] for c in pod_template(doc)["spec"]["containers"] for p in c.get("ports", [])
             if p.get("name") == port]
    return found[0] if found else port


# The wrapper that turns a stop by signal of its command into exit status 143 (deploy/k8s/base/scripts).
SIGNAL_WRAPPER = "not-done-on-signal.py"
SIGNAL_EXIT = 143


def signal_stops_are_ignored(docs: list[dict]) -> list[str]:
    """A Job whose container ends a stop by signal with exit status 143 (not-done-on-signal.py: its
    trial enqueued again) ignores that status of that very container: a podFailurePolicy rule Ignore
    on exit code 143 naming it (a rule naming another container, an init container included, never
    matches the worker's exit, and the stop counts against backoffLimitPerIndex)."""
    problems = []
    for doc, template in pods(docs):
        if doc["kind"] != "Job":
            continue
        rules = doc["spec"].get("podFailurePolicy", {}).get("rules", [])
        for c in template["spec"].get("containers", []):
            if not any(w.endswith(SIGNAL_WRAPPER) for w in c.get("command", []) + c.get("args", [])):
                continue
            if not any(r["action"] == "Ignore" and r.get("onExitCodes", {}).get("operator") == "In"
                       and SIGNAL_EXIT in r["onExitCodes"].get("values", [])
                       and r["onExitCodes"].get("containerName", c["name"]) == c["name"] for r in rules):
                problems.append(f"{name_of(doc)}/{c['name']}: a Job ignores its container's stop by signal (a rule "
                                f"Ignore on exit code {SIGNAL_EXIT} naming container {c['name']})")
    return problems


def pg_isready_asks_over_tcp(words: list[str]) -> bool:
    """Whether a pg_isready command asks over TCP (-h/--host): during its initialisation the server
    listens on its socket only, so a check on the socket passes before the roles exist."""
    text = " ".join(words)
    return "pg_isready" not in text or bool(re.search(r"(?:^|\s)(?:-h\s*\S|--host[=\s])", text))


def database_checks_ask_over_tcp(docs: list[dict]) -> list[str]:
    """Every probe that runs pg_isready asks over TCP, as the clients connect."""
    return [f"{name_of(doc)}/{c['name']}: a database check asks over TCP, as its clients connect (the {kind} runs "
            f"pg_isready without -h)"
            for doc, template in pods(docs) for c in all_containers(template["spec"]) for kind in PROBES
            if not pg_isready_asks_over_tcp(c.get(kind, {}).get("exec", {}).get("command", []))]


CHECKS = [signal_stops_are_ignored, database_checks_ask_over_tcp, rollouts_can_progress, claims_ask_what_their_class_provides, priority_classes_are_the_builds,
          resumable_jobs_have_no_deadline, jobs_ignore_disruptions, database_stop_fits_the_grace_period,
          probes_run_one_check, egress_allows_dns_and_every_service]
