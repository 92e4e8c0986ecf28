"""ruff with the project's small rule set (pyproject.toml [tool.ruff]): lines <= 120, pycodestyle, pyflakes, and
McCabe complexity at most 15 (C901) over the package and the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff comes with the [dev] extra")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           str(REPO)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
