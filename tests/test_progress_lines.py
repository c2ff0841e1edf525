"""Long phases say how far they are and how long is left (solver.progress_lines)."""

from __future__ import annotations

import io

from solver.core.progress import seconds_left
from solver.progress_lines import PhaseProgress, rounded_duration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_durations_are_rounded_up():
    assert rounded_duration(3) == "under 10 s"
    assert rounded_duration(21) == "about 30 s"
    assert rounded_duration(61) == "about 2 min"
    assert rounded_duration(3601) == "about 1.5 h"


def test_off_a_terminal_a_line_every_30_s_with_the_time_left_from_the_measured_rate():
    stream, clock = io.StringIO(), Clock()
    progress = PhaseProgress("hidden phases solved", 1000, stream=stream, terminal=False, clock=clock)
    clock.now = 10.0
    progress.update(50)  # under 30 s: nothing yet
    assert stream.getvalue() == ""
    clock.now = 31.0
    progress.update(100)  # 50 more in the 21 s since the first step: 900 more take about 378 s
    clock.now = 40.0
    progress.update(120)  # 9 s after the last line: nothing
    lines = stream.getvalue().splitlines()
    assert lines == ["charge-spark: hidden phases solved: 100 of 1,000 (10.0%), about 7 min left"]
    clock.now = 70.0
    progress.update(1000)  # done: no line, the command's own output follows
    progress.close()
    assert len(stream.getvalue().splitlines()) == 1


def test_the_time_left_is_not_foretold_from_the_first_hundredths():
    stream, clock = io.StringIO(), Clock()
    progress = PhaseProgress("solving", 100_000, stream=stream, terminal=False, clock=clock)
    clock.now = 31.0
    progress.update(100)  # 0.1% in 31 s: the start-up's rate, not the phase's
    clock.now = 62.0
    progress.update(6_000)  # 5,900 more in the 31 s since the first step: 94,000 more take about 494 s
    assert stream.getvalue().splitlines() == [
        "charge-spark: solving: 100 of 100,000 (0.1%), time left not known yet",
        "charge-spark: solving: 6,000 of 100,000 (6.0%), about 9 min left"]


def test_the_time_before_the_first_step_is_not_part_of_the_rate():
    """Processes starting and kernels compiling before the first step is done
    (70 s of a fresh install's printed solve) would make the time left look
    several times longer than it is, for the rest of the phase."""
    stream, clock = io.StringIO(), Clock()
    progress = PhaseProgress("solving", 100_000, stream=stream, terminal=False, clock=clock)
    clock.now = 70.0
    progress.update(1_000)  # the first step, after 70 s of start-up
    for second in range(71, 131):
        clock.now = float(second)
        progress.update(1_000 + 500 * (second - 70))  # then 500 a second
    # At 100 s: 15,000 more in the 30 s since the first step, 84,000 left: 168 s, not the
    # 84,000 * 100 / 16,000 = 525 s that the rate since the start gives.
    assert stream.getvalue().splitlines() == [
        "charge-spark: solving: 1,000 of 100,000 (1.0%), time left not known yet",
        "charge-spark: solving: 16,000 of 100,000 (16.0%), about 3 min left",
        "charge-spark: solving: 31,000 of 100,000 (31.0%), about 3 min left"]
    progress.close()


def test_before_a_second_step_the_rate_is_since_the_start():
    """A phase of a few long steps (the report's further solves) tells the time left after its first."""
    stream, clock = io.StringIO(), Clock()
    progress = PhaseProgress("solving", 4, stream=stream, terminal=False, clock=clock)
    clock.now = 240.0
    progress.update(1)  # a quarter in 240 s: three more take 720 s
    assert stream.getvalue().splitlines() == ["charge-spark: solving: 1 of 4 (25.0%), about 12 min left"]


def test_on_a_terminal_a_bar():
    stream = io.StringIO()
    progress = PhaseProgress("hidden phases solved", 10, stream=stream, terminal=True)
    progress.update(4)
    progress.update(10)
    progress.close()
    assert "hidden phases solved" in stream.getvalue() and "10/10" in stream.getvalue()


def test_a_phase_with_no_total_says_how_many_so_far():
    stream, clock = io.StringIO(), Clock()
    progress = PhaseProgress("enumerating", None, unit=" states", stream=stream, terminal=False, clock=clock)
    clock.now = 95.0
    progress.update(1_234_567)
    assert stream.getvalue().splitlines() == ["charge-spark: enumerating: 1,234,567 states so far, in about 2 min"]
    silent = PhaseProgress("enumerating", None, shown=False, stream=stream, terminal=True, clock=clock)
    clock.now = 500.0
    silent.advance(10)
    silent.close()
    assert len(stream.getvalue().splitlines()) == 1


def test_solve_off_a_terminal_says_where_it_stands(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from solver.cli import main
    from solver.core import progress

    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)  # a line at every step, not every 30 s
    rules = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=2", "--set", "disc_tiles=2",
             "--set", "bonus_cards=ray"]
    result = CliRunner().invoke(main, ["solve", *rules, "--cache-dir", str(tmp_path), "--workers", "1"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("charge-spark: solving: ")]
    assert lines and all(" states (" in line and ("left" in line or "not known" in line) for line in lines)
    assert any(line.startswith("charge-spark: enumerating: ") for line in result.stderr.splitlines())


def test_the_reports_hidden_part_off_a_terminal_says_where_it_stands(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from solver.cli import main
    from solver.core import progress

    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)  # a line at every step, not every 30 s
    rules = ["--set", "board=S*M", "--set", "health=1", "--set", "battery_tiles=1", "--set", "disc_tiles=1",
             "--set", "start_battery=1", "--set", "bonus_cards=ray,trap"]  # 435 states, 28 phases
    result = CliRunner().invoke(main, ["report", *rules, "--sections", "hidden", "--out", str(tmp_path / "r.html"),
                                       "--cache-dir", str(tmp_path / "tables")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("charge-spark: hidden phases solved: ")]
    assert lines and all(" of " in line and ("left" in line or "not known" in line) for line in lines)


def test_a_terminal_without_a_width_gets_lines_not_a_bar():
    """A pseudo-terminal opened without a size has 0 columns, where tqdm draws
    nothing: a long phase there would be silent, so it gets the lines."""
    import fcntl
    import os
    import struct
    import termios

    from solver.core.progress import draws_bars

    main, side = os.openpty()
    try:
        with os.fdopen(side, "w", closefd=False) as stream:
            fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
            assert stream.isatty() and not draws_bars(stream)
            assert not PhaseProgress("solving", 10, stream=stream).terminal
            fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
            assert draws_bars(stream) and PhaseProgress("solving", 10, stream=stream, shown=False).terminal
        assert not draws_bars(io.StringIO())
    finally:
        os.close(main)
        os.close(side)


def test_seconds_left_is_at_the_rate_since_the_first_step():
    """What the lines and the explorer's progress page both foretell."""
    assert seconds_left(100, 0, 50.0, 0.0, None) is None  # no step yet
    assert seconds_left(100, 10, 30.0, 0.0, (30.0, 10)) == 270.0  # one step: since the start, 10 in 30 s
    assert seconds_left(100, 50, 40.0, 0.0, (30.0, 10)) == 12.5  # 40 more in the 10 s since the first step


def test_solve_off_a_terminal_says_where_it_stands_after_the_last_rank(monkeypatch, tmp_path):
    """After the last rank: the table assembled and stored, play followed from
    the start and its length distribution, each a phase with its own lines
    (at the printed rules together about three minutes, once silent), in that order."""
    from click.testing import CliRunner

    from solver.cli import main
    from solver.core import progress

    monkeypatch.setattr(progress, "LINE_EVERY", 0.0)  # a line at every step, not every 30 s
    # The example's rules: a table of about 50 MB, so that storing it takes several steps of a megabyte.
    result = CliRunner().invoke(main, ["solve", "--set", "board=S*M", "--set", "health=1", "--cache-dir", str(tmp_path),
                                       "--workers", "1"])
    assert result.exit_code == 0, result.output
    lines = [line.removeprefix("charge-spark: ") for line in result.stderr.splitlines()]
    phases = ["solving: ", "assembling the table: ", "storing the table: ", "following play from the start: ",
              "the length distribution: "]
    firsts = [next(k for k, line in enumerate(lines) if line.startswith(phase)) for phase in phases]
    assert firsts == sorted(firsts)
    assert all(" steps (" in line and "left" in line for line in lines if line.startswith(phases[1]))
    assert all(" MB (" in line for line in lines if line.startswith(phases[2]))
    assert all(" states so far, in " in line for line in lines if line.startswith(phases[3]))
    assert any(line.startswith("the length distribution: 199 of 200 turns") for line in lines)
