"""The lock files agree with their inputs, and every install checks their hashes.

``scripts/lock`` compiles each ``requirements*.in`` into the ``.txt`` beside it, which the
installs read with ``--require-hashes`` (docs/operations.md, "Dependencies"). An input
edited without locking again leaves a compiled file that installs something other than
what the input says. These tests find that without the network, from the compiled file's
contents: every requirement of the input (and of the files it includes with ``-r``) is
pinned at a version it allows, every package the compiled file says the input asked for
is still asked for, every pin carries hashes, and a pin agrees with the lock file the
input constrains it by (``-c``). What they cannot see is a dependency that a new version
brings: its absence fails the hash-checked install instead.
"""

import re
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.lockfiles import Pin, read_compiled, read_input

ROOT = Path(__file__).resolve().parents[2]
# The gateway's, and the benchmark's peers' (LiteLLM's proxy, installed on demand).
INPUTS = sorted([*ROOT.glob("requirements*.in"), *ROOT.glob("bench/peers/requirements*.in")])
HEADER = "#    scripts/lock"  # the command uv's header names (--custom-compile-command)


def problems(source: Path) -> list[str]:
    """What makes the compiled file of the input ``source`` out of date with it."""
    compiled = source.with_suffix(".txt")
    if not compiled.exists():
        return [f"{source.name} has no compiled file {compiled.name}: run scripts/lock"]
    wanted = read_input(source)
    pins = read_compiled(compiled)
    found = []
    if HEADER not in compiled.read_text().splitlines()[:3]:
        found.append(f"{compiled.name} was not written by scripts/lock")
    pinned: dict[str, list[Pin]] = {}
    for pin in pins:
        pinned.setdefault(pin.name, []).append(pin)
        if not pin.hashes:
            found.append(f"{compiled.name}: {pin.name}=={pin.version} has no hash")
    for requirement in wanted.requirements:
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            found.append(f"{compiled.name}: {requirement} is missing")
        found += [
            f"{compiled.name}: {name}=={pin.version} where the input asks for {requirement}"
            for pin in pinned.get(name, [])
            if not requirement.specifier.contains(pin.version, prereleases=True)
        ]
    asked = {canonicalize_name(requirement.name) for requirement in wanted.requirements}
    found += [
        f"{compiled.name}: {pin.name} is there for an input that no longer asks for it"
        for pin in pins
        if pin.name not in asked and {f"-r {name}" for name in wanted.files} & pin.via
    ]
    for constraint in wanted.constraints:
        locked = {(pin.name, pin.version) for pin in read_compiled(constraint)}
        found += [
            f"{compiled.name}: {pin.name}=={pin.version} where {constraint.name} locks "
            f"{', '.join(version for name, version in sorted(locked) if name == pin.name)}"
            for pin in pins
            if (pin.name, pin.version) not in locked and pin.name in dict(locked)
        ]
    return found


@pytest.mark.parametrize("source", INPUTS, ids=[path.name for path in INPUTS])
def test_lock_file_is_up_to_date_with_its_input(source: Path) -> None:
    assert problems(source) == []


def test_lock_files_hold_the_packages_and_their_hashes() -> None:
    """The parser is not vacuous: the runtime's lock pins what the gateway runs on, each
    package with the hashes of its files."""
    runtime = {pin.name: pin for pin in read_compiled(ROOT / "requirements.txt")}
    assert {"django", "daphne", "httpx", "asgiref"} <= runtime.keys()
    assert "-r requirements.in" in runtime["django"].via
    assert "django" in runtime["asgiref"].via
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", hash_) for hash_ in runtime["django"].hashes)


def test_stale_lock_file_is_found(tmp_path: Path) -> None:
    """An input edited without locking again: a new package, another version of a locked
    one, a package taken out; and a compiled file edited by hand."""
    locked = {pin.name: pin.version for pin in read_compiled(ROOT / "requirements.txt")}
    source = (ROOT / "requirements.in").read_text()
    edited = re.sub(r"^django==.*", "django==1.0", source, flags=re.M)
    edited = re.sub(r"^numpy==.*\n", "", edited, flags=re.M)
    (tmp_path / "requirements.in").write_text(edited + "left-pad==1.0\n")
    compiled = (ROOT / "requirements.txt").read_text()
    no_hash = re.sub(
        r"^(filelock==\S+) \\\n(\s+--hash=\S+ \\\n)*\s+--hash=\S+", r"\1", compiled, flags=re.M
    )
    (tmp_path / "requirements.txt").write_text(no_hash)

    assert problems(tmp_path / "requirements.in") == [
        f"requirements.txt: filelock=={locked['filelock']} has no hash",
        f"requirements.txt: django=={locked['django']} where the input asks for django==1.0",
        "requirements.txt: left-pad==1.0 is missing",
        "requirements.txt: numpy is there for an input that no longer asks for it",
    ]


def test_lock_file_disagreeing_with_its_constraint_is_found(tmp_path: Path) -> None:
    for name in ("requirements.in", "requirements-test.in", "requirements-test.txt"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    runtime = (ROOT / "requirements.txt").read_text()
    anyio = re.search(r"^anyio==(\S+)", runtime, flags=re.M)
    assert anyio is not None
    other = runtime.replace(anyio[0], "anyio==1.0")
    (tmp_path / "requirements.txt").write_text(other)

    assert problems(tmp_path / "requirements-test.in") == [
        f"requirements-test.txt: anyio=={anyio[1]} where requirements.txt locks 1.0"
    ]


def test_lock_script_locks_every_input() -> None:
    script = (ROOT / "scripts/lock").read_text()
    assert [path.name for path in INPUTS if path.name not in script] == []
    compiled = [*ROOT.glob("requirements*.txt"), *ROOT.glob("bench/peers/requirements*.txt")]
    assert {path.with_suffix("") for path in compiled} == {path.with_suffix("") for path in INPUTS}


# Where Python packages are installed: each install checks the hashes.
INSTALLERS = {"scripts/setup", "scripts/sbom", "Dockerfile"}


def test_every_install_checks_hashes() -> None:
    scripts = [*(ROOT / "scripts").iterdir(), ROOT / ".ci/run", ROOT / "Dockerfile"]
    installs = [
        (str(path.relative_to(ROOT)), command)
        for path in scripts
        for command in path.read_text().replace("\\\n", " ").splitlines()
        if re.search(r"\bpip install\b", command)
    ]
    assert {where for where, _ in installs} == INSTALLERS
    assert [install for install in installs if "--require-hashes" not in install[1]] == []
