"""Wall time of ``streamcue demo`` (the README's figure), run as a user runs it.

The demo builds and validates the CaptainCook4D guidance set, publishes a local v1.0.0 release,
loads it back through ``datasets.load_dataset``, replays the periodic baseline and scores it
(BERTScore included when the [embed] extra is installed), builds the Ego4D template questions
and anonymizes a sample clip. Each run writes into a fresh temporary folder and uses a fresh
streamcue cache, so nothing is reused between runs.

    python perf/bench_demo.py [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STREAMCUE_CACHE_DIR=str(Path(tmp) / "cache"), STREAMCUE_NO_PROGRESS="1")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "streamcue", "demo", "--out", str(Path(tmp) / "demo")], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    times = [run_once() for _ in range(args.runs)]
    print(f"streamcue demo: {statistics.median(times):.1f} s median of {args.runs} runs "
          f"({', '.join(f'{t:.1f}' for t in times)} s), process start included")


if __name__ == "__main__":
    main()
