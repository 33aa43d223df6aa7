"""Who can reach a built deployment (`kubectl kustomize` of deploy/k8s) from outside the cluster: only
the sign-in proxy (oauth2-proxy), and only with the settings that make it a sign-in. Each check is a
function from the built documents to a list of problems, one line each, that states the rule broken
(as in tests/k8s_checks.py, whose problems_of runs these on every build). docs/deployment.md, "Who can
reach it", says the same rules to an operator.

oauth2-proxy's settings are read as oauth2-proxy reads them: each option is a flag (`--cookie-secure`,
`--cookie-secure=false`) or an environment variable OAUTH2_PROXY_<OPTION> (from env or envFrom);
every source an option has must meet the table (a flag wins over the environment, so a safe flag
beside an unsafe variable would pass today and fail when someone removes the flag)."""

from __future__ import annotations

from typing import Callable

from tests.k8s_references import container_values, service_selector, workloads_selected
from tests.k8s_walk import all_containers, name_of, pods

SIGN_IN_IMAGE = "oauth2-proxy/oauth2-proxy"
# Service types and fields that give a Service an address outside the cluster.
OUTSIDE_TYPES = ("NodePort", "LoadBalancer")
# Pods that serve nothing to the network still get a read-only root; these are the ones that do.
SERVER_PROGRAMS = ("dashboard", "optuna-dashboard", "storage-proxy")


def _is_sign_in(c: dict) -> bool:
    return SIGN_IN_IMAGE in c["image"]


def sign_in_workloads(docs: list[dict]) -> list[dict]:
    return [doc for doc, template in pods(docs) if any(_is_sign_in(c) for c in template["spec"]["containers"])]


def _faces_sign_in_only(docs: list[dict], service_name: str) -> bool:
    service = next((d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == service_name), None)
    if service is None:
        return False
    targets = workloads_selected(docs, service_selector(service))
    return bool(targets) and all(t in sign_in_workloads(docs) for t in targets)


def _ingress_backends(ingress: dict) -> list[str]:
    spec = ingress["spec"]
    backends = [spec["defaultBackend"]] if "defaultBackend" in spec else []
    backends += [path["backend"] for rule in spec.get("rules", []) for path in rule.get("http", {}).get("paths", [])]
    return [b["service"]["name"] if "service" in b else f"{b.get('resource', {}).get('kind')} {b.get('resource', {}).get('name')}"
            for b in backends]


def only_the_sign_in_faces_outside(docs: list[dict]) -> list[str]:
    """Only the sign-in proxy is reachable from outside the cluster: no other Service is of type
    NodePort or LoadBalancer or has externalIPs, and every Ingress (and Gateway API route) sends to
    the sign-in proxy's Service only."""
    problems = []
    rule = "only the sign-in proxy may be reachable from outside the cluster"
    for service in (d for d in docs if d["kind"] == "Service"):
        spec, name = service["spec"], service["metadata"]["name"]
        if _faces_sign_in_only(docs, name):
            continue
        if spec.get("type") in OUTSIDE_TYPES:
            problems.append(f"{name_of(service)}: {rule} (this Service is of type {spec['type']})")
        if spec.get("externalIPs"):
            problems.append(f"{name_of(service)}: {rule} (this Service has externalIPs {spec['externalIPs']})")
    for ingress in (d for d in docs if d["kind"] == "Ingress"):
        for backend in _ingress_backends(ingress):
            if not _faces_sign_in_only(docs, backend):
                problems.append(f"{name_of(ingress)}: {rule} (it routes to {backend})")
    for route in (d for d in docs if d["kind"] in ("HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute")):
        for backend in (b["name"] for r in route["spec"].get("rules", []) for b in r.get("backendRefs", [])):
            if not _faces_sign_in_only(docs, backend):
                problems.append(f"{name_of(route)}: {rule} (it routes to {backend})")
    return problems


# --- the sign-in proxy's settings ----------------------------------------------------------------


def _false(value: str) -> bool:
    return value.strip().lower() in ("false", "0", "no", "off")


def _true(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes", "on", "")


def _every_domain(value: str) -> bool:
    return any(d.strip() == "*" for d in value.split(","))


# oauth2-proxy's options that make it a sign-in: (the flag, its environment variable, whether a value
# breaks the rule, whether the option must be given, the rule). A flag given without a value is true.
REQUIRED_SIGN_IN_SETTINGS: list[tuple[str, str, Callable[[str], bool], bool, str]] = [
    ("cookie-secure", "OAUTH2_PROXY_COOKIE_SECURE", _false, False,
     "session cookies go over HTTPS only (cookie-secure true)"),
    ("cookie-httponly", "OAUTH2_PROXY_COOKIE_HTTPONLY", _false, False,
     "session cookies are out of scripts' reach (cookie-httponly true)"),
    ("redirect-url", "OAUTH2_PROXY_REDIRECT_URL", lambda v: not v.startswith("https://"), True,
     "the identity provider sends users back over HTTPS (redirect-url https://...)"),
    ("email-domain", "OAUTH2_PROXY_EMAIL_DOMAINS", _every_domain, False,
     "only the accounts of named domains or addresses sign in (no email domain `*`)"),
    ("skip-auth-route", "OAUTH2_PROXY_SKIP_AUTH_ROUTES", lambda v: bool(v.strip()), False,
     "every route needs a signed-in user (no skip-auth route)"),
    ("skip-auth-regex", "OAUTH2_PROXY_SKIP_AUTH_REGEX", lambda v: bool(v.strip()), False,
     "every route needs a signed-in user (no skip-auth regex)"),
    ("skip-auth-preflight", "OAUTH2_PROXY_SKIP_AUTH_PREFLIGHT", _true, False,
     "every route needs a signed-in user (no skip-auth-preflight)"),
    ("skip-jwt-bearer-tokens", "OAUTH2_PROXY_SKIP_JWT_BEARER_TOKENS", _true, False,
     "users sign in through the proxy (no skip-jwt-bearer-tokens)"),
    ("ssl-insecure-skip-verify", "OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", _true, False,
     "the identity provider's certificate is verified (no ssl-insecure-skip-verify)"),
    ("insecure-oidc-allow-unverified-email", "OAUTH2_PROXY_INSECURE_OIDC_ALLOW_UNVERIFIED_EMAIL", _true, False,
     "only verified e-mail addresses sign in (no insecure-oidc-allow-unverified-email)"),
]


def sign_in_settings(docs: list[dict], c: dict) -> dict[str, list[str]]:
    """Every value each option of REQUIRED_SIGN_IN_SETTINGS is given in the container: its flags and
    its environment (env, and the ConfigMaps of envFrom)."""
    values = container_values(docs, c, {})
    found: dict[str, list[str]] = {}
    for flag, variable, _breaks, _required, _rule in REQUIRED_SIGN_IN_SETTINGS:
        given = []
        words = [v for w, v in values if w == "command"]
        for i, word in enumerate(words):
            if word == f"--{flag}":
                following = words[i + 1] if i + 1 < len(words) else ""
                given.append(following if following and not following.startswith("-") else "true")
            elif word.startswith(f"--{flag}="):
                given.append(word.split("=", 1)[1])
        given += [v for w, v in values if w == f"env {variable}"]
        found[flag] = given
    return found


def sign_in_meets_its_table(docs: list[dict]) -> list[str]:
    """The sign-in proxy's effective settings meet REQUIRED_SIGN_IN_SETTINGS."""
    problems = []
    for doc, template in pods(docs):
        for c in template["spec"]["containers"]:
            if not _is_sign_in(c):
                continue
            at = f"{name_of(doc)}/{c['name']}"
            settings = sign_in_settings(docs, c)
            for flag, variable, breaks, required, rule in REQUIRED_SIGN_IN_SETTINGS:
                if required and not settings[flag]:
                    problems.append(f"{at}: {rule} (neither --{flag} nor {variable} is given)")
                for value in settings[flag]:
                    if breaks(value):
                        problems.append(f"{at}: {rule} (given {flag} {value!r})")
    return problems


# --- what a reachable container may change -------------------------------------------------------


def _serves(c: dict) -> bool:
    words = c.get("command", []) + c.get("args", [])
    if c.get("ports") or _is_sign_in(c):
        return True
    return "lpstudy" in words and any(w in SERVER_PROGRAMS for w in words[words.index("lpstudy") + 1:][:1])


def network_facing_containers_are_read_only(docs: list[dict]) -> list[str]:
    """Every container that listens on the network (a containerPort, or a server by its command) runs
    with a read-only root filesystem: a flaw in it cannot rewrite its own programs. (Its writable
    paths are volumes: test_every_writable_path_of_a_read_only_container_is_a_volume.)"""
    return [f"{name_of(doc)}/{c['name']}: a container that listens on the network has a read-only root filesystem "
            f"(readOnlyRootFilesystem is {c.get('securityContext', {}).get('readOnlyRootFilesystem')})"
            for doc, template in pods(docs) for c in all_containers(template["spec"])
            if _serves(c) and c.get("securityContext", {}).get("readOnlyRootFilesystem") is not True]


CHECKS = [only_the_sign_in_faces_outside, sign_in_meets_its_table, network_facing_containers_are_read_only]
