"""The import rules of the house: who may use whom (see README, "Layout").

``core`` is the floor and imports none of the project's packages; ``agents`` (the
config) builds only on ``core``; ``inference`` and ``adminui`` build on both, and the
admin reads recorded data only through ``inference.ledger.queries`` and live state through
``inference.status``; ``gateway`` is the top,
wired in by the entry points, and imported by no other package.
"""

import ast
from pathlib import Path

import pytest

from agents.schema import PROVIDER_KINDS
from inference.providers.registry import PROVIDER_CLASSES
from tests.upstreams import FAKE_CLASSES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "agents", "inference", "adminui", "gateway")
# What each package may import from the others (a package name allows all of it).
ALLOWED: dict[str, tuple[str, ...]] = {
    "core": (),
    "agents": ("core",),
    "inference": ("core", "agents"),
    "adminui": ("core", "agents", "inference.ledger.queries", "inference.status"),
    "gateway": ("core", "agents", "inference", "adminui"),
}


def imported_modules(package: str) -> list[tuple[str, str]]:
    """(file, imported module) for every import of a project package in ``package``."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # "from inference.ledger import queries" imports inference.ledger.queries.
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [
                (str(path.relative_to(ROOT)), name)
                for name in names
                if name.split(".")[0] in PACKAGES
            ]
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_what_its_layer_allows(package: str) -> None:
    allowed = (package, *ALLOWED[package])
    broken = [
        (path, module)
        for path, module in imported_modules(package)
        if not any(module == rule or module.startswith(rule + ".") for rule in allowed)
    ]
    assert broken == []


def test_layering_rules_see_the_imports_they_judge() -> None:
    """The scan is not vacuous: known imports are found."""
    assert ("adminui/records/overview.py", "inference.ledger.queries") in imported_modules(
        "adminui"
    )
    assert ("gateway/urls.py", "adminui.api.api") in imported_modules("gateway")


def test_provider_kinds_have_one_source_of_truth() -> None:
    assert set(PROVIDER_CLASSES) == set(PROVIDER_KINDS)
    assert set(FAKE_CLASSES) == set(PROVIDER_KINDS)
