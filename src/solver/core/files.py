"""Output files written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


class OutputError(OSError):
    """An output file that cannot be written (the message names it and why)."""


def write_text_atomically(path: Path, text: str) -> None:
    """`path` holds `text` afterwards, or is as it was: never half written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    finally:
        tmp.unlink(missing_ok=True)


def check_writable(path: Path | str) -> None:
    """Raise `OutputError` if `path` cannot be written: checked before the
    work that fills it, which for a report can take hours."""
    path = Path(path)
    folder = path.resolve().parent
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no such directory")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")
