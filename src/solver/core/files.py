"""Output files written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path


class OutputError(OSError):
    """An output file that cannot be written (the message names it and why)."""


class CacheDirectoryError(OSError):
    """The cache directory, or a file the cache needs in it, cannot be used (the message names it and why)."""


@contextlib.contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` for the block to write; when the block
    ends without error it is made durable and renamed over `path`, otherwise
    removed. A reader sees the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # make the rename itself durable
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def write_text_atomically(path: Path, text: str) -> None:
    """`path` holds `text` afterwards, or is as it was: never half written.

    Only a regular file, or a path where nothing is yet, is replaced so (a
    symbolic link's target, the link kept); a device, a FIFO or a socket
    (`/dev/null`, `/dev/stdout`, a pipe) is written through, never replaced."""
    path = Path(path)
    try:
        if writes_through(path):
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(text)
            return
        with replaced_atomically(Path(os.path.realpath(path))) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None


def writes_through(path: Path | str) -> bool:
    """Whether `path` names something other than a regular file or a directory
    (a device, a FIFO, a socket, after symbolic links): written to, not replaced."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # nothing there (or a dangling link): a new file
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_writable(path: Path | str) -> None:
    """Raise `OutputError` if `path` cannot be written: checked before the
    work that fills it, which for a report can take hours."""
    path = Path(path)
    if writes_through(path):
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return
    folder = path.resolve().parent
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: no such directory")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")
