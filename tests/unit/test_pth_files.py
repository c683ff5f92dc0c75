"""The system check that names ``.pth`` files running code at Python's start
(``core.environment.pthfiles``): in a real interpreter through ``manage.py check``, and
its rules one by one."""

import subprocess
import sys
import sysconfig
from pathlib import Path

from core.environment import pthfiles

ROOT = Path(__file__).resolve().parents[2]
# A stand-in for the payload of March 2026: harmless, but run like it at every start.
PLANTED = "import os; os.environ.setdefault('PLANTED_PTH_RAN', '1')\n"


def environment_with_the_gateways_packages(where: Path) -> Path:
    """A new virtualenv whose site-packages reaches this one's packages through a
    path-only ``.pth`` file (which runs nothing): its own site-packages is the one a
    planted file goes into. Returns that site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = where / "lib" / version / "site-packages"
    (site_packages / "gateway-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return site_packages


def manage_py_check(environment: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(environment / "bin" / "python"), str(ROOT / "manage.py"), "check"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_planted_pth_file_is_named_by_manage_py_check(tmp_path: Path) -> None:
    environment = tmp_path / "env"
    site_packages = environment_with_the_gateways_packages(environment)
    (site_packages / "litellm_init.pth").write_text(PLANTED)
    (site_packages / "distutils-precedence.pth").write_text(PLANTED)  # a known name
    record = site_packages / "litellm-1.82.8.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: litellm\nVersion: 1.82.8\n")
    (record / "RECORD").write_text("litellm_init.pth,,\nlitellm-1.82.8.dist-info/RECORD,,\n")

    run = manage_py_check(environment, tmp_path)

    assert run.returncode == 0, run.stderr  # a warning: it names the file, it stops nothing
    named = [line for line in run.stderr.splitlines() if "(core.W001)" in line]
    assert named == [
        f"{site_packages.resolve() / 'litellm_init.pth'}: (core.W001) runs code at every "
        "Python start (installed by litellm 1.82.8), and it is not a startup file the "
        "gateway knows"
    ]


def test_manage_py_check_is_quiet_without_a_planted_file(tmp_path: Path) -> None:
    environment = tmp_path / "env"
    site_packages = environment_with_the_gateways_packages(environment)
    (site_packages / "__editable__.tool-1.0.pth").write_text(PLANTED)

    run = manage_py_check(environment, tmp_path)

    assert run.returncode == 0, run.stderr
    assert "core.W001" not in run.stderr + run.stdout
    assert "System check identified no issues" in run.stdout


def test_environment_of_the_suite_has_no_unknown_startup_file() -> None:
    assert pthfiles.site_directories()
    assert pthfiles.check(app_configs=None, databases=None) == []


def test_only_lines_python_executes_count_as_code(tmp_path: Path) -> None:
    lines = {
        "tab.pth": "import\tos\n",
        "after_paths.pth": "# a comment\n/some/dir\nimport os\n",
        "paths.pth": "/some/dir\n../other\n",
        "indented.pth": "  import os\n",  # a path to Python (it adds nothing that is missing)
        "commented.pth": "# import os\n",
        "word.pth": "importlib_stuff\n",
    }
    for name, text in lines.items():
        (tmp_path / name).write_text(text)

    assert [path.name for path in pthfiles.unknown_startup_files([tmp_path])] == [
        "after_paths.pth",
        "tab.pth",
    ]


def test_known_startup_files_are_matched_by_name(tmp_path: Path) -> None:
    for name in (
        "distutils-precedence.pth",
        "_virtualenv.pth",
        "a1_coverage.pth",
        "__editable__.gateway_tool-0.1.0.pth",
        "__editable__-lookalike.pth",
        "virtualenv.pth",
    ):
        (tmp_path / name).write_text(PLANTED)

    assert [path.name for path in pthfiles.unknown_startup_files([tmp_path])] == [
        "__editable__-lookalike.pth",
        "virtualenv.pth",
    ]
