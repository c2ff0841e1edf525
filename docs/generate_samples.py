"""Writes, or checks, the sample outputs in README.md and docs/cli.md.

A sample is a fenced block right after a marker comment naming the command that prints it:

    <!-- output: charge-spark query start --set 'board=S*M' --set health=1 -->
    <!-- stderr: charge-spark query start -->
    <!-- output slow: charge-spark hidden ... -->
    <!-- output: charge-spark query start ... | keep: value; P1 wins; certificate -->

`output` shows the command's stdout (it must exit 0); `stderr` its first line on stderr (later
lines are progress lines, one every 30 s, as many as the machine's load makes). `slow` marks
a block the test runs only with `-m slow`. `keep:` shows only the lines that start (after
their indent) with one of the given texts, runs of blank lines made one: a shortened answer.

Each command runs once per process, with the venv's `charge-spark`, in a fresh temporary
cache of its own (`CHARGE_SPARK_CACHE`), so its output does not depend on the user's cache
or on the other samples.

    python docs/generate_samples.py           # rewrite every marked block
    python docs/generate_samples.py --check   # exit 1, naming the first differing line of each stale block
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "README.md", ROOT / "docs" / "cli.md")
CACHE_ENV = "CHARGE_SPARK_CACHE"
MARKER = re.compile(
    r"<!-- (?P<stream>output|stderr)(?P<slow> slow)?: (?P<command>charge-spark .*?)"
    r"(?: \| keep: (?P<keep>.*?))? -->"
)
FENCE = "```"
ELIDED = "…"
# What varies from run to run, and only that, is elided in the document and in the check alike:
# wall times in seconds ("20.6 s in all", "10.6 s solving the phases"; an estimate's
# "about 30 s" and "under 10 s" are computed from the state count, so they stay) and measured
# rates ("471,027 states/s").
VARYING = (
    (re.compile(r"(?<![\w.,])(?<!about )(?<!under )\d[\d,]*(?:\.\d+)? s\b"), f"{ELIDED} s"),
    (re.compile(r"(?<![\w.,])\d[\d,]* states/s\b"), f"{ELIDED} states/s"),
)


@dataclass(frozen=True)
class Sample:
    """One marked block: where it is, what prints it, and the lines it holds now."""

    document: Path
    marker_line: int  # 1-based, the marker's line
    stream: str
    slow: bool
    command: str
    keep: tuple[str, ...]
    first: int  # 0-based index of the block's first line inside the fence
    end: int  # 0-based index of the closing fence
    shown: tuple[str, ...]

    @property
    def name(self) -> str:
        shortened = " (shortened)" if self.keep else ""
        return f"{self.document.relative_to(ROOT)}:{self.marker_line} {self.stream} of {self.command}{shortened}"


def samples_in(document: Path) -> list[Sample]:
    """Every marked block of a document; a marker not followed by a fenced block is an error."""
    lines = document.read_text(encoding="utf-8").splitlines()
    samples = []
    for at, line in enumerate(lines):
        marker = MARKER.fullmatch(line.strip())
        if marker is None:
            continue
        if at + 1 >= len(lines) or lines[at + 1] != FENCE:
            raise ValueError(f"{document.name}:{at + 1}: a sample marker must be followed by a {FENCE} line")
        end = lines.index(FENCE, at + 2)
        keep = tuple(text.strip() for text in (marker["keep"] or "").split(";") if text.strip())
        samples.append(Sample(document, at + 1, marker["stream"], bool(marker["slow"]), marker["command"], keep,
                              at + 2, end, tuple(lines[at + 2:end])))
    return samples


def all_samples() -> list[Sample]:
    return [sample for document in DOCUMENTS for sample in samples_in(document)]


def unmarked_blocks(document: Path) -> list[int]:
    """The 1-based lines of the bare fenced blocks (shown output, not `sh`) that no marker precedes."""
    lines = document.read_text(encoding="utf-8").splitlines()
    opening, inside = [], False
    for at, line in enumerate(lines):
        if line.startswith(FENCE):
            if not inside and line == FENCE and not (at and MARKER.fullmatch(lines[at - 1].strip())):
                opening.append(at + 1)
            inside = not inside
    return opening


def executable() -> str:
    """The `charge-spark` installed beside the running Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "charge-spark"
    return str(beside) if beside.exists() else "charge-spark"


@functools.cache
def run(command: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of a marker's command, in a fresh cache of its own."""
    words = shlex.split(command)
    with tempfile.TemporaryDirectory(prefix="charge-spark-docs-") as cache:
        done = subprocess.run([executable(), *words[1:]], capture_output=True, text=True,
                              env={**os.environ, CACHE_ENV: cache}, cwd=cache)
    return done.returncode, done.stdout, done.stderr


# Round-off: figures at the 1e-10 level and below (an exploitability of 1.20e-12, a
# guarantee of 0.499999999999) hang on the last bits of floating point, which the host
# CPU's compiled kernels may order differently. The document shows them as printed; the
# check compares them only down to 1e-9 (twelve decimals rounded to nine).
# A stall's representative position: loops of equal share (a loop and its seat-swapped twin,
# whose shares agree to round-off) can trade places, so the position after "states  at" is
# not compared; the share, exit, smallest chance and size still are.
STALL_AT = re.compile(r"( states)  at .*$")
ROUND_OFF = (
    (re.compile(r"\b\d\.\d+e-(?:1\d|[2-9]\d)\b"), "(below 1e-9)"),
    (re.compile(r"\b\d\.\d{12}\b"), lambda number: f"{float(number.group()):.9f}"),
)


def normalised(line: str) -> str:
    for pattern, placeholder in VARYING:
        line = pattern.sub(placeholder, line)
    return line.rstrip()


def compared(line: str) -> str:
    """`line` as the check compares it: normalised, and round-off-level figures cut to 1e-9."""
    line = normalised(line)
    for pattern, placeholder in ROUND_OFF:
        line = pattern.sub(placeholder, line)
    return STALL_AT.sub(r"\1", line)


def kept(lines: list[str], keep: tuple[str, ...]) -> list[str]:
    """The lines starting with one of `keep` (after their indent), runs of blank lines made one."""
    chosen: list[str] = []
    for line in lines:
        if not line.strip():
            if chosen and chosen[-1]:
                chosen.append("")
        elif line.lstrip().startswith(keep):
            chosen.append(line)
    while chosen and not chosen[-1]:
        chosen.pop()
    return chosen


def printed(sample: Sample) -> list[str]:
    """The block the sample's command prints now, normalised as the document holds it."""
    status, stdout, stderr = run(sample.command)
    if sample.stream == "output":
        if status != 0:
            raise RuntimeError(f"{sample.name}: exit status {status}: {stderr.strip()}")
        lines = stdout.splitlines()
    else:
        lines = stderr.splitlines()[:1]
    if sample.keep:
        lines = kept(lines, sample.keep)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise RuntimeError(f"{sample.name}: the command printed nothing there (exit status {status})")
    return [normalised(line) for line in lines]


def first_difference(sample: Sample) -> str | None:
    """None where the document shows what the command prints now, else the first line that differs."""
    shown = [compared(line) for line in sample.shown]
    now = [compared(line) for line in printed(sample)]
    for number, (old, new) in enumerate(zip(shown, now), start=1):
        if old != new:
            return f"{sample.name}: line {number} of the block\n  document: {old}\n  now:      {new}"
    if len(shown) != len(now):
        number = min(len(shown), len(now)) + 1
        old = shown[number - 1] if number <= len(shown) else "(block ends)"
        new = now[number - 1] if number <= len(now) else "(output ends)"
        return f"{sample.name}: line {number} of the block\n  document: {old}\n  now:      {new}"
    return None


def rewrite(document: Path) -> int:
    """Writes each marked block of a document as its command prints it now; how many changed."""
    lines = document.read_text(encoding="utf-8").splitlines()
    changed = 0
    for sample in reversed(samples_in(document)):  # from the end, so earlier indices stay valid
        now = printed(sample)
        if now != list(sample.shown):
            lines[sample.first:sample.end] = now
            changed += 1
    if changed:
        document.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main(arguments: list[str]) -> int:
    if arguments == ["--check"]:
        stale = [difference for sample in all_samples() if (difference := first_difference(sample))]
        print("\n".join(stale) if stale else f"{len(all_samples())} samples match")
        return 1 if stale else 0
    if arguments:
        print(__doc__, file=sys.stderr)
        return 2
    for document in DOCUMENTS:
        print(f"{document.relative_to(ROOT)}: {rewrite(document)} sample(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
