"""A config write killed mid-way is undone at the next start: its temp file goes, and so
does the revision it recorded for a rename that never happened."""

from pathlib import Path

import pytest

from agents import revisions
from agents.models import ConfigRevision
from agents.store import recover_interrupted_writes

pytestmark = pytest.mark.django_db

APPLIED = "default_user_id: alice\n"
NEVER_RENAMED = "default_user_id: bob\n"


def applied_file(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(APPLIED)
    revisions.record(APPLIED, "admin")
    return path


def temp_file_of(path: Path) -> Path:
    leftover = path.parent / f".{path.name}.k1ll3d.tmp"
    leftover.write_text(NEVER_RENAMED)
    return leftover


def test_a_revision_recorded_before_the_rename_that_never_came_is_dropped(tmp_path: Path) -> None:
    path = applied_file(tmp_path)
    leftover = temp_file_of(path)
    orphan = revisions.record(NEVER_RENAMED, "admin")

    recovered = recover_interrupted_writes(path)

    assert recovered.temp_files == [leftover] and not leftover.exists()
    assert recovered.dropped_revision == orphan.pk
    assert list(ConfigRevision.objects.values_list("text", flat=True)) == [APPLIED]
    assert path.read_text() == APPLIED


def test_a_write_killed_before_its_revision_leaves_the_revisions_alone(tmp_path: Path) -> None:
    path = applied_file(tmp_path)
    temp_file_of(path)

    recovered = recover_interrupted_writes(path)

    assert recovered.dropped_revision is None
    assert ConfigRevision.objects.count() == 1


def test_without_a_temp_file_a_newer_revision_is_kept(tmp_path: Path) -> None:
    """A revision that differs from the file with no write cut short is not an orphan
    (the file was edited by hand since, and the reload records that edit)."""
    path = applied_file(tmp_path)
    revisions.record(NEVER_RENAMED, "admin")

    recovered = recover_interrupted_writes(path)

    assert recovered == type(recovered)([], None)
    assert ConfigRevision.objects.count() == 2
