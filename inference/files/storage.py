"""Files' bytes on the local file system, under ``files.dir`` (relative to the config
file's folder), one file per id. A file is written whole or not at all (a temporary file
renamed into place)."""

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
    folder.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, folder / file_id)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read(folder: Path, file_id: str) -> bytes:
    return (folder / file_id).read_bytes()


def remove(folder: Path, file_ids: list[str]) -> None:
    for file_id in file_ids:
        (folder / file_id).unlink(missing_ok=True)
