"""``scripts/sbom`` builds a CycloneDX bill of materials of the runtime environment: the
packages the runtime's lock file installs on this platform, at their locked versions,
and not the test tools."""

import json
import subprocess
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.lockfiles import read_compiled

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_sbom_lists_the_runtime_packages_at_their_locked_versions(tmp_path: Path) -> None:
    output = tmp_path / "sbom.cdx.json"
    run = subprocess.run(
        [str(ROOT / "scripts/sbom"), str(output), str(tmp_path / "runtime")],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert run.returncode == 0, run.stderr

    bom = json.loads(output.read_text())
    assert (bom["bomFormat"], bom["specVersion"]) == ("CycloneDX", "1.6")
    assert bom["metadata"]["component"]["name"] == "agent-gateway"
    listed = {(canonicalize_name(item["name"]), item["version"]) for item in bom["components"]}
    locked = {
        (pin.name, pin.version)
        for lock in ("requirements-pip.txt", "requirements.txt")
        for pin in read_compiled(ROOT / lock)
        if pin.applies()
    }
    assert {"django", "daphne", "httpx"} <= {name for name, _ in listed}
    assert listed == locked
    assert all(item["purl"].startswith("pkg:pypi/") for item in bom["components"])
