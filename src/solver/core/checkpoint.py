"""A solve's finished work kept on disk, so that an interrupted solve resumes.

A checkpoint directory holds a manifest (what the solve is: its parts and
what it computes) and, per finished part, one `.npz` file of its arrays with
a small `.done` file naming the part's digest. Both are written to a
temporary name, synced and renamed, the `.done` file last: a part whose
`.done` file exists was written whole. A part is trusted only if its file's
digest matches, so a damaged or truncated file is solved again, never read.
A manifest that differs (other rules, another version) empties the
directory: nothing of another solve is ever read as this one's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .files import replaced_atomically

MANIFEST = "manifest.json"


def digest_of_file(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _make_directory(directory: Path, attempts: int = 5) -> None:
    """`directory` and its parents. Solves running side by side keep their
    checkpoints in one parent, which each removes once it is done and empty:
    it can go between making the parent and making `directory` in it, so
    that case is tried again."""
    for attempt in range(attempts):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise


class Checkpoint:
    """The finished parts of one solve, in `directory`, for the solve that
    `manifest` describes (a JSON-able mapping)."""

    def __init__(self, directory: str | os.PathLike[str], manifest: Mapping[str, Any]) -> None:
        self.directory = Path(directory)
        self.manifest = json.loads(json.dumps(manifest))  # as it reads back
        _make_directory(self.directory)
        path = self.directory / MANIFEST
        try:
            same = json.loads(path.read_text()) == self.manifest
        except (OSError, ValueError):
            same = False
        if not same:
            self.clear()
            with replaced_atomically(path) as tmp:
                Path(tmp).write_text(json.dumps(self.manifest))

    def clear(self) -> None:
        """Forget every part (the manifest stays, if any)."""
        for entry in self.directory.iterdir():
            if entry.name != MANIFEST:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

    def _paths(self, part: int) -> tuple[Path, Path]:
        return self.directory / f"part-{part}.npz", self.directory / f"part-{part}.done"

    def save(self, part: int, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Keep part `part`'s arrays and `meta` (JSON-able), atomically."""
        data, done = self._paths(part)
        members: dict[str, Any] = dict(arrays)
        with replaced_atomically(data) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **members)
        with replaced_atomically(done) as tmp:
            Path(tmp).write_text(json.dumps({"digest": digest_of_file(data), "meta": dict(meta)}))

    def finished_parts(self) -> list[int]:
        """The parts with a `.done` file (not yet checked)."""
        return sorted(int(p.stem.split("-", 1)[1]) for p in self.directory.glob("part-*.done"))

    def load(self, part: int) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
        """Part `part`'s arrays and meta, or None (its files removed) where
        they are missing or do not match their digest."""
        data, done = self._paths(part)
        try:
            record = json.loads(done.read_text())
            if digest_of_file(data) != record["digest"]:
                raise ValueError("digest")
            with np.load(data) as archive:
                return {name: archive[name] for name in archive.files}, dict(record["meta"])
        except (OSError, ValueError, KeyError, TypeError):
            self.forget(part)
            return None

    def forget(self, part: int) -> None:
        """Drop part `part` (to be solved again)."""
        for path in self._paths(part):
            path.unlink(missing_ok=True)

    def remove(self) -> None:
        """The solve is over: its checkpoint goes."""
        shutil.rmtree(self.directory, ignore_errors=True)
