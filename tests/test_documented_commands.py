"""Every command `docs/cli.md` shows, run on a small rule set: each answers or
says what is wrong in one line, and none ends in a traceback."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli import main
from solver.storage import CACHE_ENV

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "cli.md"
SMALL = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=3", "--set", "disc_tiles=2",
         "--set", "bonus_cards=ray,trap"]
"""Small enough to solve in seconds (a few thousand states), and every position the page writes is one of its."""
OWN_RULES = {"sweep", "solve-openspiel", "hidden"}
"""Commands whose documented rule sets are small already (or are not Charge & Spark's)."""
FAILS_BY_DESIGN = {"report": "tcp://HOST"}
"""A documented command that cannot succeed here: its cluster is a placeholder (it must still say so in one line)."""


def documented_commands() -> list[tuple[list[str], str | None]]:
    """Each `charge-spark` line of the page's shell blocks: its arguments and the file its stdout goes to."""
    text = DOCS.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if not words or not words[0].endswith("bin/charge-spark"):
                continue
            words = words[1:]
            redirect = None
            if ">" in words:
                at = words.index(">")
                words, redirect = words[:at], words[at + 1]
            commands.append((words, redirect))
    return commands


COMMANDS = documented_commands()


def on_small_rules(words: list[str]) -> list[str]:
    """The documented command with the small rule set's keys last (a later `--set` wins)."""
    if words[0] in OWN_RULES or words[0] == "explore":
        return words
    return [*words, *SMALL]


def command_id(words: list[str]) -> str:
    return " ".join(words)[:60]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A folder to run in (the page's files land here), with one cache for every command, the small table solved once."""
    folder = tmp_path_factory.mktemp("documented")
    cache = folder / "cache"
    done = CliRunner().invoke(main, ["solve", *SMALL], env={CACHE_ENV: str(cache)})
    assert done.exit_code == 0, done.output
    return folder, cache


def test_the_page_shows_every_command(workspace):
    shown = {words[0] for words, _ in COMMANDS}
    assert shown >= set(main.commands) - {"explore"} and "explore" in shown, set(main.commands) - shown


@pytest.mark.parametrize("words, redirect", [  # each well under half a minute (the sweep on one worker: about 12 s)
    pytest.param(words, redirect, id=command_id(words)) for words, redirect in COMMANDS if words[0] != "explore"
])
def test_a_documented_command_answers_without_a_traceback(workspace, words, redirect, monkeypatch):
    folder, cache = workspace
    monkeypatch.chdir(folder)
    monkeypatch.setenv(CACHE_ENV, str(cache))
    arguments = on_small_rules(words)
    if words[0] == "sweep":
        arguments += ["--workers", "1"]
    done = CliRunner().invoke(main, arguments)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.output
    placeholder = FAILS_BY_DESIGN.get(words[0])
    if placeholder and placeholder in " ".join(words):
        assert done.exit_code == 2 and done.stderr.count("\n") == 1, done.output
        return
    assert done.exit_code == 0, (arguments, done.output, done.exception)
    if redirect is not None:
        Path(redirect).write_text(done.stdout)


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_commands_help_answers(name):
    done = CliRunner().invoke(main, [name, "--help"])
    assert done.exit_code == 0 and "Traceback" not in done.output


def test_the_documented_explore_serves_and_stops_without_a_traceback(workspace):
    folder, cache = workspace
    (words, _), = [(words, redirect) for words, redirect in COMMANDS if words[0] == "explore"][:1]
    # The page's health 2 takes minutes to solve: the explorer is started on the small table instead.
    arguments = [*words[:1], *SMALL, "--port", "0"]
    env = {**os.environ, CACHE_ENV: str(cache),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([sys.executable, "-m", "solver.cli", *arguments], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "http://" not in line:
            line = server.stdout.readline()
            if not line:
                break
        assert "http://" in line, server.stderr.read()
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 130 and "Traceback" not in err, err
