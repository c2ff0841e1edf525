"""Threads take turns in `ast.parse` (numpy's .npy header reader), process-wide (`core.ast_parsing`)."""

from __future__ import annotations

import ast
import threading

import numpy as np

import solver.core.ast_parsing as ast_parsing
from parse_overlaps import overlapping_parses


def _load_on_threads(path, threads: int = 4, loads: int = 10) -> None:
    barrier = threading.Barrier(threads)

    def load() -> None:
        barrier.wait()
        for _ in range(loads):
            np.testing.assert_array_equal(np.load(path, mmap_mode="r"), np.arange(5))

    workers = [threading.Thread(target=load) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def test_importing_the_engine_makes_ast_parse_take_turns():
    assert ast.parse is ast_parsing._parse_in_turn
    assert ast.literal_eval("{'descr': '<f8', 'shape': (5,)}") == {"descr": "<f8", "shape": (5,)}


def test_headers_read_on_many_threads_are_parsed_one_at_a_time(monkeypatch, tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(5))
    parses = overlapping_parses(monkeypatch)
    _load_on_threads(path)
    assert len(parses.threads) == 4
    assert parses.most == 1


def test_without_the_turns_the_same_reads_overlap(monkeypatch, tmp_path):
    """The count above can see an overlap: with `ast.parse` left unguarded, the threads parse at once."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(5))
    parses = overlapping_parses(monkeypatch)
    monkeypatch.setattr(ast, "parse", lambda *args, **kwargs: ast_parsing._parse(*args, **kwargs))
    _load_on_threads(path)
    assert parses.most > 1


def test_a_child_forked_while_a_thread_parses_can_parse_too(monkeypatch):
    """A fork copies the lock as it is: held by a thread the child does not have. The child gets its own."""
    import multiprocessing

    started, release = threading.Event(), threading.Event()

    def holding_parse(*args, **kwargs):
        started.set()
        release.wait(10)
        return ast.Module(body=[], type_ignores=[])

    monkeypatch.setattr(ast_parsing, "_parse", holding_parse)
    holder = threading.Thread(target=ast.parse, args=("0",))
    holder.start()
    started.wait(10)
    monkeypatch.undo()  # the child parses with the interpreter's own parser, behind the lock
    try:
        child = multiprocessing.get_context("fork").Process(target=ast.literal_eval, args=("(1, 2)",))
        child.start()
        child.join(20)
        finished = child.exitcode
        if finished is None:
            child.kill()
    finally:
        release.set()
        holder.join()
    assert finished == 0
