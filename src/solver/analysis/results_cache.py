"""Small analysis results (values of restricted games and of other starts)
kept next to the solved tables, so a second report reuses them.

One JSON file per rules fingerprint, written atomically. Only numbers are
stored; a file that does not parse, or was written by another version, is
ignored and rewritten."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.files import write_text_atomically
from ..storage import package_version

FORMAT = "charge-spark analysis results 2"  # 2: summaries record each outcome's winner and kind


class ResultsCache:
    def __init__(self, cache_dir: Path, fingerprint: str) -> None:
        self.path = Path(cache_dir) / "analysis" / f"{fingerprint}.json"
        self.entries: dict[str, dict] = {}
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if stored.get("format") == FORMAT and stored.get("written_by") == package_version():
                self.entries = dict(stored["entries"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def put_all(self, entries: dict[str, dict]) -> None:
        if not entries:
            return
        self.entries.update(entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.path, json.dumps({"format": FORMAT, "written_by": package_version(), "entries": self.entries}))
