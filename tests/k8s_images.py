"""Every image from one lock (deploy/images.lock): each image a build of deploy/k8s, docker-compose.yml,
.env.example or the Dockerfile names has the tag and the digest the lock gives it, so that half a bump
(a tag moved while its digest, or another file, still pins the old build) is refused. lpstudy's own
images have a tag the lock lists, made of the version pyproject.toml declares. Whether a digest is
really its tag's can only be asked of the registry: docs/deployment.md, "Images", says how."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "deploy" / "images.lock"
IMAGE = re.compile(r"^(?P<repo>[^@\s]+?)(?::(?P<tag>[\w][\w.-]*))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")


def lock() -> dict:
    return yaml.safe_load(LOCK.read_text())


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def lock_problems() -> list[str]:
    """The lock itself: lpstudy's tags are pyproject's version and a build."""
    tags = lock()["built"]["lpstudy"]["tags"]
    return [f"{LOCK.name}: lpstudy's tags are its version {version()} and a build (-cpu, -gpu), not {tag}"
            for tag in tags if not re.fullmatch(rf"{re.escape(version())}-(cpu|gpu)", tag)]


def image_problems(where: str, image: str, built_locally: bool = False) -> list[str]:
    """What is wrong with one image reference against the lock: a rule stated, one line each."""
    found = IMAGE.match(image.strip())
    if not found:
        return [f"{where}: every image is IMAGE:TAG@DIGEST from {LOCK.name} (cannot read {image!r})"]
    repo, tag, digest = found["repo"], found["tag"], found["digest"]
    locked = lock()
    if repo in locked["built"]:
        tags = locked["built"][repo]["tags"]
        return [] if tag in tags else [f"{where}: lpstudy's image has a tag {LOCK.name} lists ({', '.join(tags)}; "
                                       f"it names {tag})"]
    entry = locked["images"].get(repo)
    if entry is None:
        return [f"{where}: every image is one {LOCK.name} pins ({repo} is not there)"]
    want = f"{repo}:{entry['tag']}@{entry['digest']}"
    if tag != entry["tag"] or (digest != entry["digest"] and not (built_locally and digest is None)):
        return [f"{where}: every image has the tag and the digest {LOCK.name} gives it ({want}; it names {image})"]
    return []


def k8s_images_match_the_lock(docs: list[dict]) -> list[str]:
    from tests.k8s_walk import all_containers, name_of, pods

    return [p for doc, template in pods(docs) for c in all_containers(template["spec"])
            for p in image_problems(f"{name_of(doc)}/{c['name']}", c["image"])]


def compose_images_match_the_lock(resolved: dict) -> list[str]:
    return [p for name, service in resolved.get("services", {}).items() if "image" in service
            for p in image_problems(f"service {name}", service["image"], built_locally="build" in service)]


def file_images_match_the_lock(dockerfile: str | None = None, env_example: str | None = None) -> list[str]:
    """The Dockerfile's base image and the image .env.example sets (their texts: the files' by default)."""
    problems = []
    dockerfile = (ROOT / "Dockerfile").read_text() if dockerfile is None else dockerfile
    env_example = (ROOT / ".env.example").read_text() if env_example is None else env_example
    for line in dockerfile.splitlines():
        if line.startswith("ARG ") and line.split("=", 1)[0].endswith("_IMAGE"):
            problems += image_problems(f"Dockerfile {line.split('=', 1)[0][4:]}", line.split("=", 1)[1])
    for line in env_example.splitlines():
        if re.match(r"^[A-Z_]+_IMAGE=.*[:@]", line):
            key, _, value = line.partition("=")
            problems += image_problems(f".env.example {key}", value)
    return problems


CHECKS = [k8s_images_match_the_lock]
