"""``.pth`` files that run code at every Python start (system check ``core.W001``).

When Python starts it reads every ``*.pth`` file of site-packages and executes each line
that begins with ``import`` (``site.addpackage``), before any program's own code, in
every process of the environment: the malicious LiteLLM releases of March 2026 ran their
payload that way. A few tools write such a file on purpose (``KNOWN``); any other is
named, with the package that installed it, so that someone looks before the gateway's
keys are trusted to the environment. The list goes by file name: a file that takes a
known name passes here, and the hash-checked installs are what guard against that
(docs/operations.md, "Dependencies").
"""

import site
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from importlib import metadata
from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.core import checks

# Written on purpose: setuptools' distutils shim, virtualenv's own, coverage's (measuring
# subprocesses), and the finders of editable installs (pip install -e).
KNOWN = ("distutils-precedence.pth", "_virtualenv.pth", "a1_coverage.pth", "__editable__.*.pth")
HINT = (
    "Python runs its import lines before any code of the gateway. If neither you nor a "
    "package you expect put it there, treat the environment and the keys it could read as "
    'exposed: docs/operations.md, "A .pth file that runs code".'
)


def site_directories() -> list[Path]:
    """The directories whose ``.pth`` files this interpreter read when it started."""
    found = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    directories: dict[Path, None] = {}
    for directory in map(Path, found):
        if directory.is_dir():
            directories.setdefault(directory.resolve())
    return list(directories)


def runs_code(path: Path) -> bool:
    """Whether Python executes a line of ``path`` when it starts."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return False
    return any(line.startswith((b"import ", b"import\t")) for line in lines)


def unknown_startup_files(directories: Iterable[Path]) -> list[Path]:
    """The ``.pth`` files of ``directories`` that run code and are not in ``KNOWN``."""
    return [
        path
        for directory in directories
        for path in sorted(directory.glob("*.pth"))
        if runs_code(path) and not any(fnmatchcase(path.name, name) for name in KNOWN)
    ]


def installed_by(path: Path) -> str | None:
    """The installed distribution whose list of files holds ``path``, as "name version"."""
    for distribution in metadata.distributions(path=[str(path.parent)]):
        if any(str(file) == path.name for file in distribution.files or ()):
            return f"{distribution.metadata['Name']} {distribution.version}"
    return None


def check(
    *, app_configs: Sequence[AppConfig] | None, databases: Sequence[str] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    warnings: list[checks.CheckMessage] = []
    for path in unknown_startup_files(site_directories()):
        owner = installed_by(path)
        origin = f"installed by {owner}" if owner else "no installed package lists it"
        warnings.append(
            checks.Warning(
                f"runs code at every Python start ({origin}), and it is not a startup "
                "file the gateway knows",
                hint=HINT,
                obj=str(path),
                id="core.W001",
            )
        )
    return warnings
