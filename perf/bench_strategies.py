"""Replay strategies: endpoint calls per video hour, measured over real HTTP, and polling frequency vs ESTP-F1.

    python perf/bench_strategies.py

1. Call cost: each strategy plays a one-hour record at 1 fps against the stub OpenAI-compatible
   server on 127.0.0.1, without the cache (answers: never the right time, never completed, the
   last caption always still holds, so the schedule alone decides) and the server counts the chat
   completions. OASIS memory adds its summary calls.
2. Polling frequency: a scripted model that says yes only within 1 s of the best moment of a
   true interval (once per interval) answers 40 ESTP template questions (NAR, GoalStep val)
   polled at 1 Hz and at 0.175 Hz; both runs are scored with ESTP-F1 (exact judge).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")
os.environ["STREAMCUE_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-strategies-")

import numpy as np  # noqa: E402
from strategy_models import OracleTiming  # noqa: E402

from streamcue.dataset_builders import ego4d  # noqa: E402
from streamcue.llm import LLMSettings  # noqa: E402
from streamcue.loaders.engine import play  # noqa: E402
from streamcue.loaders.strategies import make_strategy  # noqa: E402
from streamcue.loaders.strategies.oasis import OasisMemory  # noqa: E402
from streamcue.metrics import evaluate  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer, message_text, request_schema  # noqa: E402

HOUR = 3600.0
GOALSTEP = REPO.parent / "shared" / "data" / "ego4d_goalstep" / "data" / "goalstep_valid.json"


def silent(body):
    props = (request_schema(body) or {}).get("properties", {})
    if "answer" in props:  # never the right time, never completed; the last caption always still holds
        return json.dumps({"answer": "yes" if "still hold" in message_text(body["messages"][0]) else "no"})
    if "mistake" in props:
        return json.dumps({"mistake": False, "feedback": ""})
    if "speak" in props:
        return json.dumps({"speak": False, "text": "", **({"type": "instruction"} if "type" in props else {})})
    return json.dumps({"text": "a person works at a kitchen counter"})


class Words:
    def encode(self, texts):
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.split():
                out[i, sum(map(ord, word)) % 32] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def hour_records():
    qa = {"qa_id": "q", "video_id": "v", "task_type": "OR", "proactive_type": "explicit",
          "question": "Where is my cup?", "query_time_s": 0.0,
          "answers": [{"start_s": 10.0, "end_s": 20.0, "text": "on the table"}]}
    caption = {"task_id": "t", "video_id": "v", "task_type": "present", "prompt": "What is happening now?"}
    plan = [{"index": i, "text": f"Step {i + 1}.", "step_ids": [i], "actions": []} for i in range(5)]
    guidance = {"video_id": "v", "activity": "Cooking", "plan": plan, "events": []}
    return {"interval_qa": qa, "dense_caption": caption, "guidance": guidance}


def call_costs():
    rows = []
    records = hour_records()
    runs = [("single-call", "interval_qa", {}), ("polling", "interval_qa", {"hz": 0.175}),
            ("polling", "interval_qa", {"hz": 1.0}), ("response-in-last", "interval_qa", {}),
            ("turn-loop", "guidance", {}), ("self-check", "dense_caption", {})]
    with StubLLMServer(silent) as server:
        settings = LLMSettings(base_url=server.base_url, model="stub")
        for name, kind, options in runs:
            before, started = server.completions, time.perf_counter()
            model = make_strategy(name, settings, kind, use_cache=False, **options)
            play([records[kind]], kind, strategy=model, durations={"v": HOUR}, k=4)
            label = name + (f" {options['hz']} Hz" if "hz" in options else "")
            rows.append((label, server.completions - before, time.perf_counter() - started))
        memory = OasisMemory(settings, embedder=Words(), use_cache=False)
        before, started = server.completions, time.perf_counter()
        model = make_strategy("polling", settings, "interval_qa", hz=0.175, use_cache=False)
        play([records["interval_qa"]], "interval_qa", strategy=model, durations={"v": HOUR}, k=64, memory=memory)
        rows.append(("polling 0.175 Hz + OASIS memory", server.completions - before, time.perf_counter() - started))
    print("calls per video hour at 1 fps (stub server, real HTTP; a silent model)")
    for label, calls, seconds in rows:
        print(f"  {label:34s} {calls:6d} calls  ({seconds:.1f} s wall)")


def polling_frequency():
    out = {}
    for kind, record in ego4d.build(ego4d.Config(goalstep=GOALSTEP)):
        out.setdefault(kind, []).append(record)
    unique = {}  # one record per question text, so the scripted model knows which question it is asked
    for r in out["interval_qa"]:
        if r["task_type"] == "NAR" and r["answers"][-1]["end_s"] - r["query_time_s"] < 90:
            unique.setdefault(r["question"], r)
    records = list(unique.values())[:40]
    durations = {v["video_id"]: v["duration_s"] for v in out["video"]}
    tmp = Path(tempfile.mkdtemp(prefix="bench-polling-"))
    (tmp / "gt.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"ESTP-F1 of a model right only within 1 s of the best moment, {len(records)} NAR questions (GoalStep val)")
    with StubLLMServer(OracleTiming(records)) as server:
        settings = LLMSettings(base_url=server.base_url, model="oracle")
        for hz in (1.0, 0.175):
            before = server.completions
            model = make_strategy("polling", settings, "interval_qa", hz=hz, use_cache=False)
            predictions, _ = play(records, "interval_qa", strategy=model, durations=durations, span="clip")
            (tmp / "pred.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
            report = evaluate("estp-f1", tmp / "gt.jsonl", tmp / "pred.jsonl", judge="exact")
            print(f"  polling {hz:5.3f} Hz: ESTP-F1 {report['overall']['f1']:.3f}, "
                  f"{server.completions - before} calls")


if __name__ == "__main__":
    call_costs()
    polling_frequency()
