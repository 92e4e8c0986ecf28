"""Evidence pre-check figures: how well it flags corrupted answer intervals, and what it costs.

    python perf/bench_evidence.py [--max-duration 600] [--seed 0]

Template questions are built from GoalStep val for the videos up to --max-duration seconds;
each video is stood in for by a generated one-colour file of the same length. Half of the
questions that can be moved get their answer intervals shifted by more than their length
(seeded); the other half stay as built. The model is the tests' scripted vision model behind
the stub OpenAI-compatible server on 127.0.0.1: it recognises an event from two or more frames
inside the true interval, so the figures measure the pre-check's protocol (where it looks, how
many rounds and calls it spends, what it concludes from correct observations), not a real
model's perception.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("STREAMCUE_CACHE_DIR", tempfile.mkdtemp())
os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from evidence_responder import scripted_model, shifted_records, write_test_videos  # noqa: E402

from streamcue.annotation.evidence import EvidenceConfig, verify_records  # noqa: E402
from streamcue.dataset_builders import ego4d  # noqa: E402
from streamcue.llm import LLMClient, LLMSettings  # noqa: E402
from streamcue.loaders import video_path  # noqa: E402
from streamcue.loaders.frames import SpanFrames  # noqa: E402
from streamcue.paths import default_goalstep  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-duration", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = list(ego4d.build(ego4d.Config(goalstep=default_goalstep())))
    videos = {r["video_id"]: r for kind, r in items if kind == "video" and r["duration_s"] <= args.max_duration}
    records = [r for kind, r in items if kind == "interval_qa" and r["video_id"] in videos]
    durations = {vid: v["duration_s"] for vid, v in videos.items()}
    root = Path(tempfile.mkdtemp())
    write_test_videos(videos.values(), root)
    movable = {r["qa_id"]: r for r in shifted_records(records, durations, args.seed)}
    rng = random.Random(args.seed)
    corrupt = set(rng.sample(sorted(movable), len(movable) // 2))
    mixed = [movable[r["qa_id"]] if r["qa_id"] in corrupt else r for r in records]
    frames = SpanFrames({vid: video_path(v, root) for vid, v in videos.items()}, side=64)
    with StubLLMServer(scripted_model(videos, records)) as server:
        client = LLMClient(LLMSettings(base_url=server.base_url, model="scripted-vlm", max_concurrency=4))
        start = time.perf_counter()
        checked, report = verify_records(mixed, durations, frames, client, EvidenceConfig(), concurrency=4)
        elapsed = time.perf_counter() - start
        rerun = LLMClient(LLMSettings(base_url=server.base_url, model="scripted-vlm"))
        verify_records(mixed, durations, frames, rerun, EvidenceConfig(), concurrency=4)
    flagged = {r["qa_id"] for r in checked if r["provenance"]["evidence_check"]["verdict"] != "supported"}
    caught = len(flagged & corrupt)
    print(f"{len(records)} GoalStep val questions on {len(videos)} videos up to {args.max_duration:.0f} s; "
          f"{len(corrupt)} with answer intervals shifted by more than their length")
    print(f"verdicts: {report['verdicts']}; rounds: {report['rounds']}")
    print(f"flagged (unsupported or unsure): {len(flagged)} = {len(flagged) / len(records):.1%} of the questions; "
          f"they hold {caught} of the {len(corrupt)} shifted ones (recall {caught / max(1, len(corrupt)):.1%}, "
          f"precision {caught / max(1, len(flagged)):.1%})")
    print(f"cost: {report['calls_per_record']:.2f} model calls per question "
          f"({report['llm']['calls']} sent, {report['llm']['cache_hits']} identical requests answered from the cache); "
          f"{elapsed:.1f} s wall incl. frame decoding; a re-run sent {rerun.usage.calls} calls")


if __name__ == "__main__":
    main()
