"""Is requirements.lock still the lock of pyproject.toml, and is it what is installed?

`requirements.lock` is written by pip-compile (`make lock`; `make lock-upgrade` moves every pin to
the newest release) and installed with `pip install --no-deps`, so nothing outside it can enter
the environment. pip-compile has no check mode, and resolving again needs the package index, so
staleness is decided offline from what the lock and the installed metadata say:

- every requirement of pyproject.toml (the `dev` extra included) is pinned, at a version its
  specifier allows;
- the pins are exactly the requirements' transitive closure, walked through the installed
  packages' metadata (a dependency dropped from pyproject.toml leaves pins nothing needs);
- each pin is the installed version;
- the file names no index URL, link or local path, so it installs on any machine.

The conda envs of the rules (envs/*.yaml) are written from the lock (`reprolab.envs`), so they
are checked here too, once the lock itself is current.

Run `python -m reprolab.lockfile` (`make lint` does); it prints each problem and exits 1.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = Path("requirements.lock")
PYPROJECT = Path("pyproject.toml")
EXTRAS = ("dev",)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")
_MACHINE_SPECIFIC = re.compile(r"(://|^-|^\S*/)")


def read_pins(lock: Path) -> tuple[dict[str, str], list[str]]:
    """The lock's `name==version` pins by canonical name, and every line that is not one."""
    pins: dict[str, str] = {}
    problems = []
    for number, raw in enumerate(lock.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        if match and not _MACHINE_SPECIFIC.search(line):
            pins[canonicalize_name(match.group(1))] = match.group(2)
        else:
            problems.append(f"{lock}:{number}: expected a 'name==version' pin, got {line!r}")
    return pins, problems


def project_requirements(pyproject: Path, extras: tuple[str, ...] = EXTRAS) -> list[Requirement]:
    """The project's dependencies plus those of the named optional extras."""
    project = tomllib.loads(pyproject.read_text())["project"]
    texts = list(project.get("dependencies", []))
    for extra in extras:
        texts += project.get("optional-dependencies", {}).get(extra, [])
    return [Requirement(text) for text in texts]


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    """Whether a requirement's marker holds here, for a parent installed with `extras`."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


def closure(roots: list[Requirement]) -> tuple[set[str], list[str]]:
    """Canonical names of `roots` and everything they need, per the installed metadata.

    A package that is required but not installed ends the walk there and is returned as a
    problem, since its own requirements cannot be read.
    """
    found: set[str] = set()
    problems = []
    todo = [
        (requirement, "pyproject.toml") for requirement in roots if _applies(requirement, set())
    ]
    while todo:
        requirement, parent = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            needs = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            problems.append(f"{name} (required by {parent}) is not installed")
            continue
        extras = set(requirement.extras)
        todo += [(Requirement(text), name) for text in needs if _applies(Requirement(text), extras)]
    return found, problems


def lock_problems(lock: Path = LOCK, pyproject: Path = PYPROJECT) -> list[str]:
    """Every way in which `lock` is stale against `pyproject`, or not what is installed."""
    pins, problems = read_pins(lock)
    roots = project_requirements(pyproject)
    for requirement in roots:
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned is None:
            problems.append(f"{requirement.name}: in {pyproject} but not pinned in {lock}")
        elif not requirement.specifier.contains(pinned, prereleases=True):
            asked = requirement.specifier
            problems.append(f"{requirement.name}: {lock} pins {pinned}, {pyproject} asks {asked}")
    needed, missing = closure(roots)
    problems += missing
    problems += [
        f"{name}: pinned in {lock} but nothing in {pyproject} needs it"
        for name in sorted(set(pins) - needed)
    ]
    for name, version in sorted(pins.items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed != version:
            problems.append(f"{name}: {lock} pins {version}, {installed} is installed")
    return problems


def main() -> int:
    """Print the lock's problems, then those of the conda envs written from it (reprolab.envs),
    each with the command that fixes them; 1 when there are any."""
    from reprolab.envs import env_problems  # envs reads the lock through this module

    problems = lock_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            f"{LOCK} is stale: run `make lock` (pip-compile), then `make install`",
            file=sys.stderr,
        )
        return 1
    stale_envs = env_problems()
    for problem in stale_envs:
        print(problem, file=sys.stderr)
    if stale_envs:
        print("envs/ is stale: run `python -m reprolab.envs --write`", file=sys.stderr)
        return 1
    print(f"{LOCK}: up to date with {PYPROJECT}, the installed packages and envs/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
