"""Scripted models for the strategy tests, served over real HTTP by StubLLMServer.

Each reads the request the way a model would (the system prompt says which question is asked,
the user message carries "Time now", the task and the dialogue so far) and answers from the
ground truth it was given, so a test can tell exactly which calls a strategy makes.
"""

import json
import re

import numpy as np

from streamcue.metrics.estp import Answer, optimal_time
from streamcue.testing.stub_llm import message_text

NOW = re.compile(r"Time now: ([\d.]+) s")


def system(body):
    return message_text(body["messages"][0])


def user(body):
    return message_text(body["messages"][-1])


def now_of(body):
    return float(NOW.search(user(body)).group(1))


def task_of(body):
    return user(body).split("Task: ", 1)[1].split("\n", 1)[0]


def said_since(body, t0):
    """Did the assistant speak at or after ``t0`` (from the dialogue in the request)?"""
    return any(float(t) >= t0 - 1e-6 for t in re.findall(r"^\[([\d.]+) s\] assistant:", user(body), re.M))


class OracleTiming:
    """Polling: says yes only inside a true interval, within ``reach_s`` of its best moment, once per interval."""

    def __init__(self, records, reach_s=1.0):
        self.gold = {}  # the same template question recurs across videos: keep every record's answers
        for r in records:
            self.gold.setdefault(r["question"], []).extend((r["task_type"], a) for a in r["answers"])
        self.reach_s = reach_s

    def _interval(self, body):
        now = now_of(body)
        for task_type, a in self.gold[task_of(body)]:
            best = optimal_time(task_type, Answer(a["start_s"], a["end_s"], a["text"]))
            if a["start_s"] <= now <= a["end_s"] and abs(now - best) <= self.reach_s:
                return a
        return None

    def __call__(self, body):
        a = self._interval(body)
        if '"yes" or "no"' in system(body):
            return json.dumps({"answer": "yes" if a and not said_since(body, a["start_s"]) else "no"})
        return json.dumps({"text": a["text"] if a else "not sure"})


class GuidanceOracle:
    """Turn loop: 'completed' once the current step's last action has ended; a mistake when one happened
    in the last ``every_s`` seconds of the current step."""

    def __init__(self, record, every_s=5.0):
        self.plan = record["plan"]
        self.mistakes = [e for e in record["events"] if e["type"] == "mistake"]
        self.every_s = every_s

    def __call__(self, body):
        step = int(re.search(r"Current instruction \(step (\d+) of", user(body)).group(1)) - 1
        now = now_of(body)
        if "completed the current instruction" in system(body):
            done = now >= max(a["end_s"] for a in self.plan[step]["actions"])
            return json.dumps({"answer": "yes" if done else "no"})
        hits = [m for m in self.mistakes if m["plan_index"] == step and now - self.every_s < m["t_s"] <= now]
        return json.dumps({"mistake": bool(hits), "feedback": hits[0]["text"] if hits else ""})


class WordEmbedder:
    """Bag-of-words hashing vectors in ``dims`` dimensions (a real, lexical embedding; no model download)."""

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims

    def encode(self, texts):
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % self.dims] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
