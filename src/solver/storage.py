"""Where Charge & Spark keeps its solved tables, and what their files say they are."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from .core.files import CacheDirectoryError
from .core.table_file import TableFormat

CACHE_ENV = "CHARGE_SPARK_CACHE"


def package_version() -> str:
    try:
        return metadata.version("charge-spark")
    except metadata.PackageNotFoundError:
        return "unknown"


TABLE_FORMAT = TableFormat(
    name="charge-spark solved table",
    # 4: hurried strategies, their buzzer values and guarantees with endless play scored as a loss;
    # 5: the header records each terminal outcome's winner and kind, not its label alone
    version=5,
    written_by=package_version(),
)


GUARANTEE_FORMAT = TableFormat(
    name="charge-spark guarantees",  # one side's certified guarantees of a solved table alone (a wild table's)
    version=1,
    written_by=package_version(),
)


def default_cache_dir() -> Path:
    """$CHARGE_SPARK_CACHE, else $XDG_CACHE_HOME/charge-spark/tables, else ~/.cache/charge-spark/tables."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "charge-spark" / "tables"


def check_cache_dir(path: str | os.PathLike[str]) -> None:
    """CacheDirectoryError unless `path` is a directory, or could be made one
    (its nearest existing ancestor is a directory): checked before any work,
    and nothing is made here."""
    path = Path(path)
    for place in (path, *path.absolute().parents):
        if place.is_dir():
            return
        if place.exists() or place.is_symlink():
            what = "it is" if place == path else f"{place} is"
            raise CacheDirectoryError(f"cannot use the cache directory {path}: {what} not a directory")
