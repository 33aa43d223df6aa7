"""Walking a built Kubernetes deployment (the documents `kubectl kustomize` prints): its workloads
and their pod templates, label selectors read as the API server reads them, quantities, flags. The
checks (tests/k8s_checks.py, k8s_references.py, k8s_invariants.py) build on it."""

from __future__ import annotations

from typing import Iterator

WORKLOAD_KINDS = ("Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob")


def name_of(doc: dict) -> str:
    return f"{doc['kind']} {doc['metadata']['name']}"


def pod_template(doc: dict) -> dict | None:
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    if doc["kind"] in WORKLOAD_KINDS:
        return doc["spec"]["template"]
    return None


def pods(docs: list[dict]) -> Iterator[tuple[dict, dict]]:
    """(the workload, its pod template) for every workload of the build."""
    for doc in docs:
        template = pod_template(doc)
        if template is not None:
            yield doc, template


def all_containers(spec: dict) -> list[dict]:
    return spec.get("initContainers", []) + spec.get("containers", []) + spec.get("ephemeralContainers", [])


def selects(selector: dict | None, labels: dict) -> bool:
    """A label selector (matchLabels and matchExpressions) against a pod's labels, as the API server
    reads it. An empty selector selects everything."""
    if selector is None:
        return False
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return True
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def pod_labels(docs: list[dict]) -> list[tuple[dict, dict]]:
    return [(doc, template["metadata"].get("labels", {})) for doc, template in pods(docs)]


_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3}


def quantity(value) -> float:
    """A Kubernetes quantity (500m, 2, 512Mi, 1Gi, 1e3) as a number: cores, bytes."""
    text = str(value)
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


def flag_value(words: list[str], flag: str) -> str | None:
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None
