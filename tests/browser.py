"""Headless Chromium for tests: screenshot a page, collect its console, and
tell a blank screenshot from a drawn one (a small PNG reader, no imaging library)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

CONSOLE = re.compile(r":CONSOLE[:(]")
NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    return next((path for name in NAMES if (path := shutil.which(name))), None)


@dataclass(frozen=True)
class PageRun:
    console: list[str]
    """Every console message the page produced (errors, warnings, logs)."""
    finished: bool
    """False if Chromium did not finish in time (e.g. a dialog blocked the page)."""


def screenshot(chromium: str, page: Path, png: Path, width: int = 1200, height: int = 3000, timeout: float = 45) -> PageRun:
    command = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}", "--virtual-time-budget=3000",
        f"--screenshot={png}", page.resolve().as_uri(),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else (expired.stderr or "")
        return PageRun([line for line in stderr.splitlines() if CONSOLE.search(line)], finished=False)
    return PageRun([line for line in done.stderr.splitlines() if CONSOLE.search(line)], finished=True)


def png_pixels(png: Path) -> tuple[int, int, int, bytes]:
    """(width, height, channels, raw pixel bytes) of an 8-bit RGB or RGBA PNG."""
    data = png.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png} is not a PNG")
    at, idat, header = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + length
    width, height, depth, colour = header[:4]
    if depth != 8 or colour not in (2, 6):
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {colour})")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out[y * stride : (y + 1) * stride] = line
        previous = line
    return width, height, channels, bytes(out)


def inked_fraction(png: Path) -> float:
    """Share of pixels that are not (near) white."""
    width, height, channels, pixels = png_pixels(png)
    inked = sum(
        1 for k in range(0, len(pixels), channels) if min(pixels[k], pixels[k + 1], pixels[k + 2]) < 235
    )
    return inked / (width * height)
