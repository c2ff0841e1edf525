"""The sample outputs in README.md and docs/cli.md are what the commands print now
(`make docs` rewrites them; docs/generate_samples.py says what is marked and what is elided)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def generator():
    """docs/generate_samples.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("generate_samples", ROOT / "docs" / "generate_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


SAMPLES = generator()
MARKED = SAMPLES.all_samples()


def test_each_document_has_a_fast_marked_sample():
    for document in SAMPLES.DOCUMENTS:
        assert any(not sample.slow for sample in SAMPLES.samples_in(document)), document


@pytest.mark.parametrize("document", SAMPLES.DOCUMENTS, ids=lambda document: document.name)
def test_an_unmarked_sample_says_it_is_an_earlier_runs(document):
    lines = document.read_text(encoding="utf-8").splitlines()
    for number in SAMPLES.unmarked_blocks(document):
        before = " ".join(lines[max(0, number - 4):number - 1])
        assert re.search(r"earlier run \(commit [0-9a-f]{7,}", before), f"{document.name}:{number}: {before!r}"


@pytest.mark.parametrize("sample", [
    pytest.param(sample, id=sample.name, marks=[pytest.mark.slow] if sample.slow else [])
    for sample in MARKED
])
def test_a_marked_sample_is_what_its_command_prints(sample):
    difference = SAMPLES.first_difference(sample)
    assert difference is None, f"{difference}\n(run `make docs` to regenerate)"
