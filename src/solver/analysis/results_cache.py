"""Small analysis results (values of restricted games and of other starts)
kept next to the solved tables, so a second report reuses them.

One JSON file per rules fingerprint, written atomically. Only numbers are
stored; a file in the cache that does not parse, or was written by another
version, is ignored and rewritten. A file the user names (`ResultsCache.at`,
a report's `--parts`) is never overwritten unless it holds these rules'
parts of this version: anything else is a `PartsFileError`."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.files import write_text_atomically
from ..storage import package_version

FORMAT = "charge-spark analysis results 2"  # 2: summaries record each outcome's winner and kind


class PartsFileError(ValueError):
    """A named parts file that cannot be these rules' parts: unreadable, damaged, of other rules or another version."""


class ResultsCache:
    def __init__(self, cache_dir: Path, fingerprint: str) -> None:
        self.path = Path(cache_dir) / "analysis" / f"{fingerprint}.json"
        self.fingerprint = fingerprint
        self.entries: dict[str, dict] = {}
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if stored.get("format") == FORMAT and stored.get("written_by") == package_version():
                self.entries = dict(stored["entries"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass

    @classmethod
    def at(cls, path: Path | str, fingerprint: str) -> ResultsCache:
        """The results kept in the file at `path` (a new one if there is none):
        a report resumed on another machine or in another cache, or its page
        rendered again without solving. `PartsFileError` if the file is there
        but cannot be read as the parts of the rules of `fingerprint`
        written by this version; it is then left as it was."""
        cache = cls.__new__(cls)
        cache.path, cache.fingerprint, cache.entries = Path(path), fingerprint, {}
        try:
            text = cache.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cache
        except (OSError, UnicodeDecodeError) as error:
            why = getattr(error, "strerror", None) or error
            raise PartsFileError(f"cannot read the parts file {path}: {why}") from None
        try:
            stored = json.loads(text)
            entries = stored["entries"]
            if stored.get("format") != FORMAT or not isinstance(entries, dict):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise PartsFileError(f"{path} is not a report's parts file (or it is damaged); it was left as it"
                                 " was") from None
        if stored.get("fingerprint") != fingerprint:
            raise PartsFileError(f"{path} holds the parts of other rules (fingerprint {stored.get('fingerprint')}),"
                                 f" not of these ({fingerprint}); it was left as it was")
        if stored.get("written_by") != package_version():
            raise PartsFileError(f"{path} was written by charge-spark {stored.get('written_by')}, not by this"
                                 f" {package_version()}: its parts are not reused; it was left as it was")
        cache.entries = dict(entries)
        return cache

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def put_all(self, entries: dict[str, dict]) -> None:
        if not entries:
            return
        self.entries.update(entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.path, json.dumps({"format": FORMAT, "written_by": package_version(),
                                                     "fingerprint": self.fingerprint, "entries": self.entries}))
