"""Replay OVO-Bench and StreamingBench records to an OpenAI-compatible vision model, as their protocols do.

* ``mc_question``: the question (with lettered options) arrives at ``query_time_s``; the model sees
  only frames up to then (``window_s`` keeps the last N seconds, e.g. the leaderboards' 60 s) and
  answers with a letter. StreamingBench SQA questions carry the earlier turns of their video as
  dialogue, with the gold answers (``history="gold"``, as the official code does) or the
  model's own (``history="own"``).
* OVO-Bench ``active_item`` (REC, SSR, CRR): the item is asked again at every probe time
  (REC: how many times so far; SSR: is this step done; CRR: can the question be answered yet).
* StreamingBench proactive ``active_item``: polled every second from the question time + 1 s to
  the ground-truth time + 4 s with "is it the right time to output ...? yes or no"; on yes the
  question itself is asked and the answer ends the dialogue (``src/benchmark/StreamingBenchProactive.py``).

Predictions come out in the ``mc_question_prediction`` / ``active_item_prediction`` schemas, ready
for ``streamcue evaluate ovo-bench`` / ``streamingbench``.

>>> asker = BenchmarkAsker(LLMSettings.resolve(base_url=..., model="Qwen2.5-VL-7B"))      # doctest: +SKIP
>>> predictions, report = replay_benchmark(asker, records, window_s=60)                  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.replay import Frame, select_frames
from streamcue.loaders.strategies.base import TEXT, Asker, user_content
from streamcue.progress import track

__all__ = ["BenchmarkAsker", "replay_benchmark", "choice_prompt", "probe_prompt", "HISTORIES"]

HISTORIES = ("gold", "own")
#: ``frame_image(video_id, index, t_s)`` -> JPEG bytes or None.
FrameImage = Callable[[str, int, float], Any]


class BenchmarkAsker(Asker):
    """The OpenAI-compatible endpoint, asked with the versioned ``bench_*`` prompts."""

    name = "benchmark"

    def letter(self, content: list[dict[str, Any]]) -> str:
        return self.ask("bench_choice.v1", content, TEXT, "ask_choice")["text"]

    def text(self, content: list[dict[str, Any]]) -> str:
        return self.ask("bench_open.v1", content, TEXT, "ask_open")["text"]

    def yes_no(self, content: list[dict[str, Any]]) -> str:
        return "Yes" if self.yes("bench_yes_no.v1", content, "ask_yes_no") else "No"


def choice_prompt(record: dict[str, Any]) -> str:
    """The question and its options with letters (StreamingBench adds them where the file has none)."""
    options = "\n".join(f"{chr(65 + i)}. {text}" for i, text in enumerate(record["options"]))
    return f"Question: {record['question']}\nOptions:\n{options}"


def probe_prompt(record: dict[str, Any], probe: dict[str, Any]) -> tuple[str, str]:
    """``(prompt, answer kind)`` of one OVO-Bench forward probe; the kind is ``open`` or ``yes_no``."""
    if record["task"] == "REC":
        return f"How many times has the person done this so far: {record['activity']}? Answer with a number.", "open"
    if record["task"] == "SSR":
        return f"Has the person finished this step by now: {probe['step']}? Answer yes or no.", "yes_no"
    return (f"{record['question']}\nCan this question be answered from what you have seen so far? "
            "Answer yes or no."), "yes_no"


def _frames(video_id: str, now: float, fps: float, window_s: float | None, k: int, policy: str,
            frame_image: FrameImage | None) -> list[Frame]:
    start = 0 if window_s is None else max(0, math.ceil((now - window_s) * fps - 1e-9))
    indices = range(start, int(now * fps + 1e-9) + 1)
    frames = [Frame(i, i / fps) for i in indices]
    chosen = select_frames(frames, k, policy) if frames else []
    if frame_image is None:
        return chosen
    return [Frame(f.index, f.t_s, frame_image(video_id, f.index, f.t_s)) for f in chosen]


def replay_benchmark(asker: BenchmarkAsker, records: Iterable[Any], *, fps: float = 1.0, k: int = 8,
                     policy: str = "SW+U", window_s: float | None = None, history: str = "gold",
                     frame_image: FrameImage | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every record (mc_question and active_item, dicts or typed) and the endpoint report."""
    if history not in HISTORIES:
        raise ConfigError(f"history must be one of {', '.join(HISTORIES)}, got {history!r}")
    if fps <= 0 or k < 1 or (window_s is not None and not window_s > 0):
        raise ConfigError("fps and window_s must be positive and k at least 1")
    rows = [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in records]
    # SQA turns play in order inside their group, so that an earlier turn's own answer exists.
    rows.sort(key=lambda r: (r.get("context") or {}).get("turn", 0))
    own: dict[str, str] = {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("context"):
            groups.setdefault(r["context"]["group_id"], []).append(r)
    see = dict(fps=fps, window_s=window_s, k=k, policy=policy, frame_image=frame_image)
    predictions = []
    for record in track(rows, "replaying benchmark records"):
        if "options" in record:
            predictions.append(_ask_choice(asker, record, groups, own, history, see))
        elif record.get("target"):
            predictions.append(_poll_proactive(asker, record, see))
        else:
            predictions.append(_ask_probes(asker, record, see))
    return predictions, asker.report()


def _content(record: dict[str, Any], prompt: str, now: float, turns: Sequence[tuple[float, str, str]],
             see: dict[str, Any]) -> list[dict[str, Any]]:
    frames = _frames(record["video_id"], now, see["fps"], see["window_s"], see["k"], see["policy"],
                     see["frame_image"])
    return user_content(frames, prompt, turns, now)


def _ask_choice(asker: BenchmarkAsker, record: dict[str, Any], groups: dict[str, list[dict[str, Any]]],
                own: dict[str, str], history: str, see: dict[str, Any]) -> dict[str, Any]:
    turns: list[tuple[float, str, str]] = []
    context = record.get("context")
    for earlier in groups.get(context["group_id"], []) if context else []:
        if earlier["context"]["turn"] >= context["turn"]:
            continue
        said = (f"{chr(65 + earlier['answer'])}. {earlier['options'][earlier['answer']]}" if history == "gold"
                else own.get(earlier["question_id"], ""))
        turns += [(earlier["query_time_s"], "user", choice_prompt(earlier)),
                  (earlier["query_time_s"], "assistant", said)]
    now = record["query_time_s"]
    answer = asker.letter(_content(record, choice_prompt(record), now, turns, see))
    own[record["question_id"]] = answer
    return {"question_id": record["question_id"], "response": answer, "t_s": now}


def _ask_probes(asker: BenchmarkAsker, record: dict[str, Any], see: dict[str, Any]) -> dict[str, Any]:
    responses = []
    for i, probe in enumerate(record["probes"]):
        prompt, kind = probe_prompt(record, probe)
        content = _content(record, prompt, probe["t_s"], [], see)
        text = asker.text(content) if kind == "open" else asker.yes_no(content)
        responses.append({"t_s": probe["t_s"], "probe": i, "text": text})
    return {"item_id": record["item_id"], "responses": responses}


def _poll_proactive(asker: BenchmarkAsker, record: dict[str, Any], see: dict[str, Any]) -> dict[str, Any]:
    target = record["target"]
    query = (f"{record['question']} Is it the right time to output \"{target['text']}\"? "
             "You can only answer yes or no.")
    responses: list[dict[str, Any]] = []
    now = record["query_time_s"] + 1
    while now <= target["t_s"] + 4:
        said = asker.yes_no(_content(record, query, now, [], see))
        responses += [{"t_s": now, "role": "user", "text": query}, {"t_s": now, "role": "assistant", "text": said}]
        if said == "Yes":
            answer = asker.text(_content(record, record["question"], now, [], see))
            responses += [{"t_s": now, "role": "user", "text": record["question"]},
                          {"t_s": now, "role": "assistant", "text": answer}]
            break
        now += 1
    return {"item_id": record["item_id"], "responses": responses}
