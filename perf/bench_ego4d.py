"""Ego4D builder figures: template-stage build time on GoalStep val, LLM calls per generated question.

    python perf/bench_ego4d.py [path/to/goalstep_valid.json]

The LLM stages run against streamcue's stub OpenAI-compatible server on 127.0.0.1 with the
test fixtures' captions (one video), so the call counts are the pipeline's own, not a model's.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("STREAMCUE_CACHE_DIR", tempfile.mkdtemp())
os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from estp_responder import estp_responder  # noqa: E402

from streamcue.dataset_builders import BuildReport, ego4d  # noqa: E402
from streamcue.llm import LLMSettings  # noqa: E402
from streamcue.paths import default_goalstep  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer  # noqa: E402


def main() -> None:
    goalstep = Path(sys.argv[1]) if len(sys.argv) > 1 else default_goalstep()
    best = float("inf")
    for _ in range(3):
        report = BuildReport("ego4d")
        start = time.perf_counter()
        types = Counter(r["task_type"] for kind, r in ego4d.build(ego4d.Config(goalstep=goalstep), report)
                        if kind == "interval_qa")
        best = min(best, time.perf_counter() - start)
    records = sum(types.values())
    print(f"template stage on {goalstep.name}: {records} questions from {report.details['usable_videos']} videos in "
          f"{best:.2f} s "
          f"(best of 3); by task type: {', '.join(f'{n} {t}' for t, n in sorted(types.items()))}")
    vid = "c2d06df7-5d3a-4116-9edb-f1c81a4f669b"
    with StubLLMServer(estp_responder) as server:
        report = BuildReport("ego4d")
        config = ego4d.Config(goalstep=goalstep, captions=REPO / "tests/data/ego4d/captions.jsonl", videos=(vid,),
                              llm=LLMSettings(base_url=server.base_url, model="stub-model"))
        start = time.perf_counter()
        generated = [r for kind, r in ego4d.build(config, report)
                     if kind == "interval_qa" and r["provenance"]["stage"] != "template"]
        elapsed = time.perf_counter() - start
    calls = report.llm["calls"]
    stages = report.details["by_stage"]
    print(f"LLM stages on 1 video, 11 captions: {len(generated)} generated questions "
          f"({stages.get('one_to_one', 0)} one-to-one, {stages.get('one_to_many', 0)} expanded, "
          f"{stages.get('many_to_many', 0)} contextual), {calls} LLM calls = "
          f"{calls / max(1, len(generated)):.2f} calls per generated question, {elapsed:.1f} s "
          "incl. embedding model load")


if __name__ == "__main__":
    main()
