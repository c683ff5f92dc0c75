"""The import rules of the house: who may use whom (see README, "Layout").

``core`` is the floor and imports none of the project's packages; ``agents`` (the
config) builds only on ``core``; ``inference`` and ``adminui`` build on both, and the
admin uses of ``inference`` only the modules in ``ALLOWED`` (recorded data, prices, keys,
erasure, memories, MCP connections, evaluations, spend reconciliation, live state); ``gateway`` is the top, wired in by the entry points,
and imported by no other package. Inside ``inference`` and ``adminui`` the same holds between their
parts (sub-packages and top-level modules), and no module anywhere is part of an import
circle, imports made only for type checking included.

The dialects (``inference/dialects/<name>/``) are rooms of their own: no dialect's folder
imports another's, nothing outside them but their registry imports them, and no module
outside a dialect's folder names one of the API's paths (it asks the registry).
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.providerkinds import BILLING_KINDS, PROVIDER_KINDS
from inference.providers.registry import PROVIDER_CLASSES
from inference.reconciliation.fetching import APIS as BILLING_APIS
from tests.upstreams import FAKE_CLASSES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "agents", "inference", "adminui", "gateway")
# What each package may import from the others (a package name allows all of it).
ALLOWED: dict[str, tuple[str, ...]] = {
    "core": (),
    "agents": ("core",),
    "inference": ("core", "agents"),
    "adminui": (
        "core",
        "agents",
        "inference.automation.records",
        "inference.batches.records",
        "inference.cache.forgetting",
        "inference.evaluations.records",
        "inference.evaluations.spec",
        "inference.evaluations.summary",
        "inference.files.storage",
        "inference.guardrails.events",
        "inference.ledger.erasure",
        "inference.mcpauth.connections",
        "inference.money.keys",
        "inference.money.prices",
        "inference.ledger.queries",
        "inference.ledger.requests",
        "inference.memory.by_hand",
        "inference.memory.store",
        "inference.money.keys",
        "inference.money.prices",
        "inference.reconciliation.records",
        "inference.status",
    ),
    "gateway": ("core", "agents", "inference", "adminui"),
}
# What each part of a package may import from the package's other parts, lower parts first.
PARTS: dict[str, dict[str, tuple[str, ...]]] = {
    "inference": {
        "neutral": (),
        "models": (),
        "status": (),
        "background": (),
        "traffic": (),
        "database": (),
        "erasures": ("models",),
        "once": ("models",),
        "providers": ("neutral",),
        "telemetry": ("neutral",),
        "structured": ("neutral",),
        "money": ("database", "erasures", "models", "neutral", "providers", "telemetry"),
        "routing": ("models", "money", "neutral", "providers", "status", "telemetry"),
        "cache": (
            "database",
            "erasures",
            "models",
            "money",
            "neutral",
            "providers",
            "routing",
            "structured",
            "telemetry",
        ),
        "files": ("database", "erasures", "models", "neutral"),
        "mcpauth": ("database", "erasures", "models", "once"),
        "ledger": (
            "cache",
            "database",
            "erasures",
            "files",
            "models",
            "money",
            "neutral",
            "telemetry",
        ),
        "tools": (
            "database",
            "mcpauth",
            "models",
            "money",
            "neutral",
            "providers",
            "status",
            "structured",
            "telemetry",
        ),
        "guardrails": ("database", "models", "neutral", "providers", "structured", "telemetry"),
        "calls": (
            "cache",
            "database",
            "guardrails",
            "money",
            "neutral",
            "providers",
            "routing",
            "telemetry",
            "tools",
        ),
        "engine": (
            "background",
            "guardrails",
            "ledger",
            "money",
            "providers",
            "routing",
            "telemetry",
            "tools",
            "traffic",
        ),
        "memory": (
            "calls",
            "database",
            "engine",
            "erasures",
            "models",
            "money",
            "neutral",
            "providers",
            "routing",
            "structured",
            "telemetry",
            "tools",
        ),
        "turn": (
            "background",
            "cache",
            "calls",
            "database",
            "engine",
            "erasures",
            "files",
            "ledger",
            "memory",
            "models",
            "money",
            "neutral",
            "providers",
            "routing",
            "structured",
            "telemetry",
            "tools",
        ),
        "serving": ("database", "engine", "money", "neutral", "telemetry", "turn"),
        "evaluations": (
            "cache",
            "calls",
            "database",
            "engine",
            "ledger",
            "models",
            "money",
            "neutral",
            "providers",
            "routing",
            "telemetry",
            "tools",
            "turn",
        ),
        "batches": (
            "calls",
            "database",
            "engine",
            "erasures",
            "files",
            "models",
            "money",
            "neutral",
            "providers",
            "serving",
        ),
        "dialects": (
            "batches",
            "database",
            "engine",
            "files",
            "ledger",
            "memory",
            "models",
            "money",
            "neutral",
            "providers",
            "serving",
            "tools",
            "turn",
        ),
        "automation": (
            "calls",
            "database",
            "engine",
            "ledger",
            "models",
            "money",
            "once",
            "neutral",
            "providers",
            "routing",
            "structured",
            "telemetry",
            "tools",
            "turn",
        ),
        "reconciliation": ("automation", "database", "models", "providers"),
        "api": ("dialects", "neutral", "serving"),
        "migrations": (),
        "management": ("database", "engine", "evaluations", "money", "reconciliation"),
    },
    "adminui": {
        "context": (),
        "schemas": (),
        "rendering": ("context",),
        "access": ("context", "rendering"),
        "editing": ("access", "context", "rendering", "schemas"),
        "records": ("access", "context", "rendering", "schemas"),
        "reconciliation": ("context", "records", "rendering", "schemas"),
        "batches": ("context", "rendering", "schemas"),
        "guardrails": ("context", "rendering", "schemas"),
        "api": (
            "batches",
            "context",
            "editing",
            "guardrails",
            "reconciliation",
            "records",
            "rendering",
            "schemas",
        ),
        "urls": ("access", "api"),
        "templatetags": (),
    },
}
MAX_FILES_PER_FOLDER = 12


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield name.removesuffix(".__init__"), path


def imports_of(path: Path) -> list[str]:
    """Every project module or name ``path`` imports, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from inference.ledger import queries" imports inference.ledger.queries.
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return [name for name in found if name.split(".")[0] in PACKAGES]


def imported_modules(package: str) -> list[tuple[str, str]]:
    """(file, imported module) for every import of a project package in ``package``."""
    return [
        (str(path.relative_to(ROOT)), name)
        for module, path in modules()
        if module.split(".")[0] == package
        for name in imports_of(path)
    ]


def _allows(rules: tuple[str, ...], module: str) -> bool:
    return any(module == rule or module.startswith(rule + ".") for rule in rules)


def _part(module: str) -> str | None:
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else None


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_what_its_layer_allows(package: str) -> None:
    allowed = (package, *ALLOWED[package])
    broken = [
        (path, module) for path, module in imported_modules(package) if not _allows(allowed, module)
    ]
    assert broken == []


@pytest.mark.parametrize("package", PARTS)
def test_parts_import_only_the_parts_below_them(package: str) -> None:
    rules = PARTS[package]
    broken = []
    for path, module in imported_modules(package):
        source = _part(".".join(Path(path).with_suffix("").parts))
        target = _part(module) if module.split(".")[0] == package else None
        if source is None or target is None or target == source:
            continue
        if source not in rules or target not in (*rules[source], "__init__"):
            broken.append((path, module))
    assert broken == []


@pytest.mark.parametrize("package", PARTS)
def test_every_part_has_a_rule(package: str) -> None:
    parts = {_part(module) for module, _ in modules() if module.startswith(package + ".")}
    assert parts - set(PARTS[package]) == set()


def test_no_folder_holds_more_than_a_dozen_modules() -> None:
    crowded = {}
    for package in PACKAGES:
        for folder in [ROOT / package, *(ROOT / package).rglob("*/")]:
            if folder.name in ("migrations", "__pycache__") or not folder.is_dir():
                continue
            count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
            if count > MAX_FILES_PER_FOLDER:
                crowded[str(folder.relative_to(ROOT))] = count
    assert crowded == {}


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports (a name imported from a module counts as
    that module)."""
    known = dict(modules())
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for target in imports_of(path):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                graph[name].add(target)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_module_is_part_of_an_import_circle() -> None:
    assert import_circles(import_graph()) == []


def test_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_circles(graph) == [["a", "b", "c"]]


def _dialect(module: str) -> str | None:
    """The dialect folder ``module`` belongs to (``inference.dialects.<name>...``)."""
    bits = module.split(".")
    if bits[:2] == ["inference", "dialects"] and len(bits) > 3 and bits[2] != "registry":
        return bits[2]
    return None


def test_no_dialect_folder_imports_another_or_is_imported_but_by_the_registry() -> None:
    broken = []
    for package in PACKAGES:
        for path, module in imported_modules(package):
            source = ".".join(Path(path).with_suffix("").parts)
            target = _dialect(module)
            if target is None or source == "inference.dialects.registry":
                continue
            if _dialect(source) != target:
                broken.append((path, module))
    assert broken == []


# Outgoing URLs of other APIs, built where the gateway calls them: a provider's own routes
# (Anthropic's /v1/messages, Gemini's /v1beta/models), its billing API's
# (/v1/organizations/cost_report) and the OTLP collector's /v1/traces.
_OUTGOING_URLS = ("inference/providers/", "inference/reconciliation/", "inference/telemetry/")
_API_PATH = re.compile(r"/v1(beta)?(/|$)")


def api_paths_named(path: Path) -> list[str]:
    """The strings in ``path`` (f-strings' parts included) that are paths of the API."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _API_PATH.match(node.value)
    ]


def test_only_dialect_folders_name_the_paths_of_the_api() -> None:
    named = {}
    for module, path in modules():
        where = str(path.relative_to(ROOT))
        if _dialect(module) is not None or where.startswith(_OUTGOING_URLS):
            continue
        if found := api_paths_named(path):
            named[where] = found
    assert named == {}


def test_layering_rules_see_the_imports_they_judge() -> None:
    """The scans are not vacuous: known imports are found."""
    assert ("adminui/records/overview.py", "inference.ledger.queries") in imported_modules(
        "adminui"
    )
    assert (
        "inference/dialects/chat/routes.py",
        "inference.serving.serve.serve",
    ) in imported_modules("inference")
    assert "inference.turn.runner" in import_graph()["inference.serving.serve"]
    assert api_paths_named(ROOT / "inference/dialects/chat/routes.py")
    assert _dialect("inference.dialects.chat.reader") == "chat"


def test_provider_kinds_have_one_source_of_truth() -> None:
    """Every kind of the one list (``core.providerkinds``, which the config's schema
    reads) has a module speaking its wire format, which serves embeddings exactly where
    the list says so, and a fake upstream in the tests."""
    assert set(PROVIDER_CLASSES) == set(PROVIDER_KINDS)
    assert set(FAKE_CLASSES) == set(PROVIDER_KINDS)
    assert {name: wire.embeds() for name, wire in PROVIDER_CLASSES.items()} == {
        name: kind.embeds for name, kind in PROVIDER_KINDS.items()
    }


def test_billing_kinds_have_one_source_of_truth() -> None:
    """The kinds a config may give ``billing`` are the kinds whose billing API is read."""
    assert set(BILLING_APIS) == set(BILLING_KINDS)


# Where span attributes are named: their names (HTTP and GenAI conventions, ours).
_TELEMETRY = "inference/telemetry/"
_ATTRIBUTE = re.compile(r"(gen_ai|gateway|http|url|server)\.[a-z_]+(\.[a-z_]+)*")


def _attribute_names() -> set[str]:
    """The span attribute names the telemetry package spells."""
    return {
        name
        for path in (ROOT / _TELEMETRY).glob("*.py")
        for name in _strings(path)
        if _ATTRIBUTE.fullmatch(name)
    }


def _strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_only_the_telemetry_package_spells_span_attribute_names() -> None:
    names = _attribute_names()
    assert {"gen_ai.operation.name", "gateway.experiment", "http.request.method"} <= names
    spelled = {
        str(path.relative_to(ROOT)): sorted(set(_strings(path)) & names)
        for _, path in modules()
        if not str(path.relative_to(ROOT)).startswith(_TELEMETRY)
    }
    assert {where: found for where, found in spelled.items() if found} == {}


def _calls_named(path: Path, names: set[str]) -> list[str]:
    """The calls in ``path`` of a function or method called one of ``names``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            name = function.id if isinstance(function, ast.Name) else name
            if name in names:
                found.append(f"{name}:{node.lineno}")
    return found


def _outside(folder: str, names: set[str]) -> dict[str, list[str]]:
    return {
        where: found
        for _, path in modules()
        if not (where := str(path.relative_to(ROOT))).startswith(folder)
        and (found := _calls_named(path, names))
    }


def test_only_the_money_package_builds_a_ledger_charge() -> None:
    """A ledger row is made from what calls spent and their caller, in one place."""
    assert _calls_named(ROOT / "inference/money/settlement.py", {"Charge"})
    assert _outside("inference/money/", {"Charge"}) == {}


def test_only_the_telemetry_package_opens_a_named_span() -> None:
    """Spans are asked for by kind (``inference.telemetry.names``); none is named
    elsewhere."""
    opened = {"child", "begin", "root"}
    assert _calls_named(ROOT / "inference/telemetry/names.py", opened)
    assert _outside("inference/telemetry/", opened) == {}


def test_admission_is_the_money_packages_word() -> None:
    """``admit`` means one thing: a model call admitted against its caller's limits."""
    defined = {
        str(path.relative_to(ROOT))
        for _, path in modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "admit" in node.name
    }
    assert defined and all(where.startswith("inference/money/") for where in defined), defined
