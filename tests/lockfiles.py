"""Reading the requirement files: the inputs (``requirements*.in``) and the files
``scripts/lock`` compiles from them, which the installs read."""

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Pin:
    """One package of a compiled file: ``name==version`` on the platforms its marker
    names, its hashes, and what asked for it (``# via``: packages, ``-r file`` for a line
    of an input, ``-c file``)."""

    name: str
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]
    via: frozenset[str]

    def applies(self) -> bool:
        """Whether an install on this interpreter and platform takes it."""
        return self.marker is None or self.marker.evaluate()


@dataclass(frozen=True)
class Input:
    """An input's requirements (those of its ``-r`` files included), the names of its files,
    and the compiled files it is constrained by (``-c``)."""

    requirements: tuple[Requirement, ...]
    files: frozenset[str]
    constraints: tuple[Path, ...]


def read_input(path: Path) -> Input:
    requirements: list[Requirement] = []
    files = {path.name}
    constraints: list[Path] = []
    for line in path.read_text().splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line.startswith("-r "):
            included = read_input(path.parent / line.removeprefix("-r ").strip())
            requirements += included.requirements
            files |= included.files
            constraints += included.constraints
        elif line.startswith("-c "):
            constraints.append(path.parent / line.removeprefix("-c ").strip())
        elif line:
            requirements.append(Requirement(line))
    return Input(tuple(requirements), frozenset(files), tuple(constraints))


def read_compiled(path: Path) -> list[Pin]:
    """The pins of a file written by ``uv pip compile --generate-hashes``."""
    pins: list[Pin] = []
    text = path.read_text().replace("\\\n", " ")
    for requirement, comments in re.findall(r"^([^#\s].*)\n((?:[ \t]+#.*\n)*)", text, re.M):
        spec, *options = requirement.split(" --hash=")
        parsed = Requirement(spec)
        (version,) = (item.version for item in parsed.specifier if item.operator == "==")
        via = re.sub(r"^\s*#\s*(via\b)?", "", comments, flags=re.M).split("\n")
        pins.append(
            Pin(
                canonicalize_name(parsed.name),
                version,
                parsed.marker,
                tuple(option.strip() for option in options),
                frozenset(item.strip() for item in via if item.strip()),
            )
        )
    return pins
