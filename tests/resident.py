"""How much of a mapped array this process holds in memory, from /proc/self/smaps."""

from __future__ import annotations

import numpy as np


def resident_bytes(a: np.ndarray) -> int:
    """The resident bytes of the mapping that holds `a`'s first byte."""
    address = a.__array_interface__["data"][0]
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                inside = lo <= address < hi
            elif inside and fields[0] == "Rss:":
                return int(fields[1]) * 1024
    raise AssertionError("no mapping holds the array")
