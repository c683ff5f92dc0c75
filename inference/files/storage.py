"""Files' bytes on the local file system, under ``files.dir`` (relative to the config
file's folder), one file per id, and beside it the text read of it for providers that
take no documents (``<id>.<bounds>.txt``, read once). A file is written whole or not at
all (a temporary file renamed into place)."""

import os
import tempfile
from pathlib import Path

from agents.schema import Config, FilesConfig


def folder_of(config: Config) -> Path:
    return config.folder(config.files.dir)


def folder_without_config(config_path: Path) -> Path:
    """Where files are when no valid config is loaded: the default ``files.dir``."""
    return config_path.parent / FilesConfig().dir


def save(folder: Path, file_id: str, data: bytes) -> None:
    _written(folder, file_id, data)


def read(folder: Path, file_id: str) -> bytes:
    return (folder / file_id).read_bytes()


def kept_text(folder: Path, file_id: str, bounds: str) -> str | None:
    """The text read of the file within ``bounds`` (``TextBounds.key``), when it was
    kept ("": the file has none); None: not read yet."""
    try:
        return (folder / f"{file_id}.{bounds}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def keep_text(folder: Path, file_id: str, bounds: str, text: str) -> None:
    _written(folder, f"{file_id}.{bounds}.txt", text.encode())


def remove(folder: Path, file_ids: list[str]) -> None:
    """The files, and any text kept of them."""
    for file_id in file_ids:
        (folder / file_id).unlink(missing_ok=True)
        for kept in folder.glob(f"{file_id}.*.txt"):
            kept.unlink(missing_ok=True)


def _written(folder: Path, name: str, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, folder / name)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
