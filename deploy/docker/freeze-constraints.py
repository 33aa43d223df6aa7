"""Print constraints.txt: every package the image runs on, pinned to the version installed here.

    python deploy/docker/freeze-constraints.py > constraints.txt

Run it in an environment where lpstudy is installed with the image's extras
(pip install -e ".[dashboard,postgres,grpc,s3]"). It walks pyproject.toml's dependencies and the
image's extras, then each package's own requirements (their environment markers evaluated for
this interpreter), and prints `name==version` for each, sorted: `pip freeze`, but of the
runtime's closure only, without test tools or whatever else this environment holds. A local
version label (torch's +cpu or +cu128) is left out, so that the CPU and the CUDA build of the same
torch both satisfy the pin: the CPU and the GPU image are built from this one file, and carry the
same Optuna, SQLAlchemy and psycopg whenever they were built.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
IMAGE_EXTRAS = ("dashboard", "postgres", "grpc", "s3")  # the Dockerfile's `pip install ".[...]"`


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in IMAGE_EXTRAS:
        wanted += project["optional-dependencies"][extra]
    return [Requirement(r) for r in wanted]


def closure(requirements: list[Requirement]) -> dict[str, str]:
    """{canonical name: installed version} of the requirements and everything they require."""
    pinned: dict[str, str] = {}
    todo = [(r, frozenset()) for r in requirements]
    while todo:
        requirement, extras = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        name = canonical(requirement.name)
        if name == "lpstudy":  # the dev extra names lpstudy itself; the image's extras do not
            continue
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            sys.exit(f"freeze-constraints: {requirement.name} is not installed here: "
                     f'pip install -e ".[{",".join(IMAGE_EXTRAS)}]" first')
        seen_extras = pinned.get(name)
        pinned[name] = dist.version.split("+")[0]
        if seen_extras is not None and not requirement.extras:
            continue
        for sub in dist.requires or []:
            todo.append((Requirement(sub), frozenset(requirement.extras)))
    return pinned


# The CUDA wheels of the GPU image's torch (PyPI's torch, the CUDA build): its nvidia-*, cuda-* and
# triton requirements. The Dockerfile keeps them out of the CPU image.
CUDA_WHEEL = re.compile(r"^(nvidia-|cuda-|triton$)")
CUDA_HEADER = ("# The CUDA wheels of the GPU image's torch (PyPI's torch, the CUDA build): what its metadata requires,\n"
               "# resolved for Linux x86_64 and CPython 3.11. Frozen where that torch is installed; elsewhere kept\n"
               "# from the constraints.txt this replaces.")


def kept_cuda_pins(path: Path) -> dict[str, str]:
    """The CUDA wheels' pins of an existing constraints.txt: an environment with the CPU build of
    torch has none of them installed to freeze."""
    if not path.is_file():
        return {}
    pins = {}
    for line in path.read_text().splitlines():
        name, _, version = line.partition("==")
        if version and CUDA_WHEEL.match(name):
            pins[name] = version
    return pins


def main() -> int:
    pins = closure(runtime_requirements())
    cuda = {n: v for n, v in pins.items() if CUDA_WHEEL.match(n)} or kept_cuda_pins(ROOT / "constraints.txt")
    print("# Every package of the lpstudy image, pinned: both images (cpu and gpu) install from this file.")
    print("# Made by: python deploy/docker/freeze-constraints.py > constraints.txt")
    for name in sorted(set(pins) - set(cuda)):
        print(f"{name}=={pins[name]}")
    if cuda:
        print(CUDA_HEADER)
        for name in sorted(cuda):
            print(f"{name}=={cuda[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
