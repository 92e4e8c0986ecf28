"""The summary line ``streamcue anonymize`` ends a run over a folder with, on either engine."""

from __future__ import annotations

import json
import re

import pytest


def check_throughput(stdout, reports):
    """The summary's line: the videos anonymized in this run, their hours, and hours over the run's wall time."""
    found = re.search(r"throughput: (\d+) videos?, ([0-9.e+-]+) video hours in ([0-9.]+) s: ([0-9.e+-]+) video hours "
                      r"per hour", stdout)
    assert found, stdout
    count, hours, wall, rate = int(found[1]), float(found[2]), float(found[3]), float(found[4])
    seconds = sum(json.loads(path.read_text())["input"]["duration_s"] for path in reports)
    assert count == len(reports) and seconds > 0
    assert hours == pytest.approx(seconds / 3600, rel=1e-3)
    assert 0 < wall
    # the line prints the wall time to 0.1 s and the rate to 3 significant digits: bounds from that rounding
    low, high = hours / ((wall + 0.05) / 3600), hours / (max(wall - 0.05, 1e-6) / 3600)
    assert low * (1 - 6e-3) <= rate <= high * (1 + 6e-3), (rate, low, high)
