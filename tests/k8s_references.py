"""The reference graph of a built deployment (`kubectl kustomize` of deploy/k8s): every name one
object uses resolves to exactly one object that defines it, every Service and PodDisruptionBudget
selects the pods of exactly one workload, and every NetworkPolicy admits exactly the workloads
whose configuration connects to the pods it fences. Each check is a function from the built
documents to a list of problems, one line each (an empty list: it holds), as in tests/k8s_checks.py,
whose CHECKS run these on every build.

A name can be defined outside the build only where the docs say who makes it (EXTERNAL): the Secret
`lpstudy` (the operator, from deploy/k8s/lpstudy.env.example, whose keys are the Secret's keys) and
the LocalQueue `lpstudy` (the cluster's administrator, components/kueue)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.k8s_walk import all_containers, name_of, pod_template, pods, selects

ROOT = Path(__file__).resolve().parents[1]
SECRET_EXAMPLE = ROOT / "deploy" / "k8s" / "lpstudy.env.example"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# PriorityClasses every cluster defines itself.
BUILT_IN_PRIORITY_CLASSES = {"system-cluster-critical", "system-node-critical"}
# A network URL's host (and port) in any value a container is given: scheme://[user[:password]@]host[:port]
# (an object store's s3://BUCKET names no host).
URL = re.compile(r"\b(?:https?|grpcs?|postgres(?:ql)?(?:\+\w+)?)://(?:[^@/\s]+@)?([A-Za-z0-9.-]+)(?::(\d+))?")


def secret_example() -> dict[str, str]:
    """The Secret `lpstudy` as the operator makes it from the example file."""
    values = {}
    for line in SECRET_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


# Objects that the build uses and someone else makes: (kind, name) -> the keys it holds (None: any).
EXTERNAL: dict[tuple[str, str], set[str] | None] = {
    ("Secret", "lpstudy"): set(secret_example()),
    ("LocalQueue", "lpstudy"): None,
}


def defined(docs: list[dict], kind: str, name: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]


def _keys_of(docs: list[dict], kind: str, name: str) -> set[str] | None:
    """The keys of the one ConfigMap or Secret of that name (None: any key; an empty set: none such)."""
    found = defined(docs, kind, name)
    if len(found) == 1:
        return set(found[0].get("data") or {}) | set(found[0].get("stringData") or {}) | set(found[0].get("binaryData") or {})
    if not found and (kind, name) in EXTERNAL:
        return EXTERNAL[(kind, name)]
    return set()


def _resolves(docs: list[dict], kind: str, name: str) -> str | None:
    """Why that name does not resolve to exactly one object, or None where it does."""
    count = len(defined(docs, kind, name))
    if count == 1 or (count == 0 and (kind, name) in EXTERNAL):
        return None
    return f"{count} objects define {kind} {name}" if count else f"no {kind} {name} in the build (nor made outside it)"


def names_resolve(docs: list[dict]) -> list[str]:
    """PriorityClass, ServiceAccount, volume claim, ConfigMap and its keys (volumes, env, envFrom,
    and the script a command runs from a mounted ConfigMap), Secret and key, queue: each resolves to
    exactly one object that defines it (and the key is one it holds)."""
    problems = []

    def need(where: str, kind: str, name: str, key: str | None = None, optional: bool = False):
        if optional and not defined(docs, kind, name):
            return
        why = _resolves(docs, kind, name)
        if why:
            problems.append(f"{where}: uses {kind} {name}: {why}")
        elif key is not None and not optional:
            keys = _keys_of(docs, kind, name)
            if keys is not None and key not in keys:
                problems.append(f"{where}: uses key {key} of {kind} {name}, which has no such key ({', '.join(sorted(keys))})")

    for doc, template in pods(docs):
        spec, where = template["spec"], name_of(doc)
        if spec.get("priorityClassName") and spec["priorityClassName"] not in BUILT_IN_PRIORITY_CLASSES:
            need(where, "PriorityClass", spec["priorityClassName"])
        account = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if account and account != "default":
            need(where, "ServiceAccount", account)
        queue = doc["metadata"].get("labels", {}).get(QUEUE_LABEL)
        if queue:
            if len(defined(docs, "LocalQueue", queue)) != 1 and ("LocalQueue", queue) not in EXTERNAL:
                problems.append(f"{where}: queued to LocalQueue {queue}, which neither the build nor the "
                                f"cluster's administrator (EXTERNAL) defines")
        templates = {t["metadata"]["name"] for t in doc["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for volume in volumes.values():
            if "persistentVolumeClaim" in volume:
                need(where, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
            for kind, field, name_field in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
                if field in volume:
                    source = volume[field]
                    need(where, kind, source[name_field], optional=source.get("optional", False))
                    for item in source.get("items", []):
                        need(where, kind, source[name_field], item["key"], optional=source.get("optional", False))
        for c in all_containers(spec):
            at = f"{where}/{c['name']}"
            for mount in c.get("volumeMounts", []):
                if mount["name"] not in volumes and mount["name"] not in templates:
                    problems.append(f"{at}: mounts volume {mount['name']}, which the pod does not have")
            for entry in c.get("env", []):
                source = entry.get("valueFrom", {})
                for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                    if field in source:
                        ref = source[field]
                        need(at, kind, ref["name"], ref["key"], optional=ref.get("optional", False))
                ref = source.get("resourceFieldRef")
                if ref and ref.get("containerName", c["name"]) not in {x["name"] for x in all_containers(spec)}:
                    problems.append(f"{at}: env {entry['name']} reads the resources of container "
                                    f"{ref['containerName']}, which the pod does not have")
            for source in c.get("envFrom", []):
                for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                    if field in source:
                        need(at, kind, source[field]["name"], optional=source[field].get("optional", False))
            problems += _scripts_resolve(docs, at, c, volumes)
    return problems


def _scripts_resolve(docs: list[dict], at: str, c: dict, volumes: dict[str, dict]) -> list[str]:
    """A command that runs a file from a mounted ConfigMap (`sh /opt/lpstudy-k8s/wait-for-study.sh`):
    the file is a key of that ConfigMap (or of its items)."""
    problems = []
    for mount in c.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        if "configMap" not in volume or mount.get("subPath"):
            continue
        source = volume["configMap"]
        files = {item.get("path", item["key"]) for item in source.get("items", [])} or _keys_of(docs, "ConfigMap", source["name"])
        prefix = mount["mountPath"].rstrip("/") + "/"
        for word in c.get("command", []) + c.get("args", []):
            if word.startswith(prefix) and files is not None and word[len(prefix):] not in files:
                problems.append(f"{at}: runs {word}, which is no file of ConfigMap {source['name']} "
                                f"mounted at {mount['mountPath']} ({', '.join(sorted(files))})")
    return problems


# --- selectors -----------------------------------------------------------------------------------


def workloads_selected(docs: list[dict], selector: dict | None) -> list[dict]:
    return [doc for doc, template in pods(docs) if selects(selector, template["metadata"].get("labels", {}))]


def service_selector(service: dict) -> dict | None:
    selector = service["spec"].get("selector")
    return {"matchLabels": selector} if selector else None


def selectors_pick_one_workload(docs: list[dict]) -> list[str]:
    """A Service and a PodDisruptionBudget select the pods of exactly one workload: none is a Service
    without endpoints or a budget that protects nothing, two is traffic (or evictions) shared with pods
    that do not serve it."""
    problems = []
    for doc in docs:
        if doc["kind"] == "Service":
            selector = service_selector(doc)
            if selector is None:
                continue  # a Service without a selector: its endpoints are made by hand
        elif doc["kind"] == "PodDisruptionBudget":
            selector = doc["spec"].get("selector")
        else:
            continue
        chosen = workloads_selected(docs, selector)
        if len(chosen) != 1:
            problems.append(f"{name_of(doc)}: selects the pods of {len(chosen)} workloads "
                            f"({', '.join(name_of(d) for d in chosen) or 'none'}), not of exactly one")
    return problems


# --- who connects to whom ------------------------------------------------------------------------


def container_values(docs: list[dict], c: dict, secret: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Every value a container is given, as (where it came from, the value): its command and args, its
    env literals, the ConfigMap keys and Secret keys (the example's) its env and envFrom name."""
    secret = secret_example() if secret is None else secret
    values = [("command", w) for w in c.get("command", []) + c.get("args", [])]
    for entry in c.get("env", []):
        source = entry.get("valueFrom", {})
        if "value" in entry:
            values.append((f"env {entry['name']}", str(entry["value"])))
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            found = defined(docs, "ConfigMap", ref["name"])
            if found and ref["key"] in (found[0].get("data") or {}):
                values.append((f"env {entry['name']}", str(found[0]["data"][ref["key"]])))
        elif "secretKeyRef" in source and source["secretKeyRef"]["name"] == "lpstudy":
            key = source["secretKeyRef"]["key"]
            if key in secret:
                values.append((f"env {entry['name']} (Secret key {key})", secret[key]))
    for source in c.get("envFrom", []):
        if "configMapRef" in source:
            for found in defined(docs, "ConfigMap", source["configMapRef"]["name"]):
                values += [(f"env {k}", str(v)) for k, v in (found.get("data") or {}).items()]
    return values


def _service_host(host: str) -> str | None:
    """A Service's name from a cluster-internal host: NAME, NAME.NAMESPACE.svc, NAME.NAMESPACE.svc.cluster.local."""
    parts = host.split(".")
    if len(parts) == 1:
        return host
    if len(parts) >= 3 and parts[2] == "svc":
        return parts[0]
    return None


def connections(docs: list[dict], doc: dict, secret: dict[str, str] | None = None,
                containers: list[dict] | None = None) -> list[tuple[str, str, str | None]]:
    """(the Service's name, where the workload names it, the port it asks) for every cluster-internal
    URL in the values the workload's containers (or those of them given) are given."""
    found = []
    for c in all_containers(pod_template(doc)["spec"]) if containers is None else containers:
        for where, value in container_values(docs, c, secret):
            for host, port in URL.findall(value):
                name = _service_host(host)
                if name:
                    found.append((name, f"{c['name']} {where}", port or None))
    return found


def urls_resolve(docs: list[dict]) -> list[str]:
    """A URL the build itself writes (a literal, a ConfigMap's value, an argument) that names a
    cluster-internal host names a Service of the build, on one of its ports. (The Secret's URLs are
    the operator's: with components/external-database they name a host outside the cluster.)"""
    problems = []
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for doc, _template in pods(docs):
        for name, where, port in connections(docs, doc, secret={}):
            service = services.get(name)
            if service is None:
                problems.append(f"{name_of(doc)}/{where}: names host {name}, which is no Service of the build")
            elif port and int(port) not in {p["port"] for p in service["spec"]["ports"]}:
                problems.append(f"{name_of(doc)}/{where}: asks port {port} of Service {name}, which serves "
                                f"{sorted(p['port'] for p in service['spec']['ports'])}")
    return problems


def connectors(docs: list[dict], targets: list[dict]) -> dict[str, dict]:
    """The workloads (by name_of) whose configuration connects to a Service that selects any of targets."""
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"
                and any(t in workloads_selected(docs, service_selector(d)) for t in targets)}
    return {name_of(doc): doc for doc, _ in pods(docs) if doc not in targets
            and any(name in services for name, _where, _port in connections(docs, doc))}


def _admitted(docs: list[dict], policy: dict, targets: list[dict]) -> set[str]:
    return {name_of(doc) for doc, template in pods(docs) if doc not in targets and any(
        selects(peer.get("podSelector"), template["metadata"].get("labels", {}))
        for rule in policy["spec"].get("ingress", []) for peer in rule.get("from", []) if "podSelector" in peer)}


def network_policies_admit_exactly_their_clients(docs: list[dict]) -> list[str]:
    """Each NetworkPolicy admits exactly the workloads whose configuration connects to the pods it
    selects (through a Service that selects them): one it admits and that does not connect is a path
    an attacker can use; one that connects and that no policy over those pods admits (policies add
    up) is cut off from a server it needs."""
    problems = []
    policies = [d for d in docs if d["kind"] == "NetworkPolicy" and "Ingress" in d["spec"].get("policyTypes", ["Ingress"])]
    fenced: dict[str, tuple[dict, set[str]]] = {}
    for policy in policies:
        targets = workloads_selected(docs, policy["spec"]["podSelector"])
        admitted = _admitted(docs, policy, targets)
        for name in sorted(admitted - set(connectors(docs, targets))):
            problems.append(f"{name_of(policy)}: admits {name}, which connects to none of the pods it selects")
        for target in targets:
            fenced.setdefault(name_of(target), (target, set()))[1].update(admitted)
    for target, admitted in fenced.values():
        for name in sorted(set(connectors(docs, [target])) - admitted):
            problems.append(f"{name_of(target)}: {name} connects to it, and no NetworkPolicy over its pods admits it")
    return problems


CHECKS = [names_resolve, selectors_pick_one_workload, urls_resolve, network_policies_admit_exactly_their_clients]


# --- what a container's mounts hold --------------------------------------------------------------


def mounted_files(docs: list[dict], template: dict, c: dict, secret: dict[str, str] | None = None) -> dict[str, str | None]:
    """Every path the container's mounts provide: a ConfigMap's or a Secret's key as a file (its text;
    the Secret's from the example), and a folder of any other volume (None)."""
    secret = secret_example() if secret is None else secret
    volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
    files: dict[str, str | None] = {}
    for mount in c.get("volumeMounts", []):
        volume, at = volumes.get(mount["name"], {}), mount["mountPath"].rstrip("/")
        if "configMap" in volume or "secret" in volume:
            source = volume.get("configMap") or volume.get("secret")
            if "configMap" in volume:
                found = defined(docs, "ConfigMap", source["name"])
                data = dict(found[0].get("data") or {}) if found else {}
            else:
                data = secret if source["secretName"] == "lpstudy" else {}
            items = {i["key"]: i["path"] for i in source.get("items", [])} or {k: k for k in data}
            if mount.get("subPath"):
                files[at] = data.get(mount["subPath"])
            else:
                files.update({f"{at}/{path}": data[key] for key, path in items.items() if key in data})
        else:
            files[at] = None
    return files
