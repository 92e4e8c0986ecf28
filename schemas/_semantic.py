"""Checks JSON Schema cannot express: ordering, start <= end, times inside the video, consistency, and names
that only the registry knows.

A video's ``source`` and a question's ``benchmark`` are not listed in the schema files: they are checked here
against ``streamcue/registry.py`` (a source of ``SOURCES`` or ``other``; a benchmark of ``BENCHMARKS`` whose
kinds include the record's), so adding a benchmark changes no schema file.

Each checker takes one schema-valid record and an optional ``{video_id: duration_s}`` index
and returns ``(json_path, message)`` pairs; a kind's row (``streamcue/schemas/kinds.py``) names its checker.
"""

from __future__ import annotations

import difflib
from collections.abc import Generator, Iterable, Iterator, Mapping
from typing import Any

from streamcue.registry import BENCHMARKS, SOURCES
from streamcue.schemas.taxonomy import PROACTIVE_TYPE

__all__ = ["Problem", "Durations", "DURATION_TOLERANCE_S", "check_video", "check_interval_qa", "check_dense_caption",
           "check_guidance", "check_interval_qa_minimal", "check_dense_caption_minimal", "check_mc_question",
           "check_active_item", "check_open_question", "check_counterfactual_mistake", "registered_source",
           "registered_benchmark"]


Problem = tuple[str, str]
Durations = Mapping[str, float] | None

#: Slack for times compared with a video's duration (source durations are rounded to 10 ms).
DURATION_TOLERANCE_S = 0.05


def _span(path: str, start: float, end: float) -> Iterator[Problem]:
    if end < start:
        yield f"{path}.end_s", f"end_s {end} is before start_s {start}"


def _inside(path: str, t: float, duration: float | None) -> Iterator[Problem]:
    if duration is not None and t > duration + DURATION_TOLERANCE_S:
        yield path, f"time {t} s is past the end of the video ({duration} s)"



def _asked_inside(record: Mapping[str, Any], duration: float | None) -> Iterator[Problem]:
    """A question's query time inside the video, and its clip (if any) a span that ends inside the video."""
    yield from _inside("$.query_time_s", record["query_time_s"], duration)
    clip = record.get("clip")
    if clip:
        yield from _span("$.clip", clip["start_s"], clip["end_s"])
        yield from _inside("$.clip.end_s", clip["end_s"], duration)


def _duration(record: Mapping[str, Any], durations: Durations) -> tuple[float | None, Iterator[Problem]]:
    if durations is None:
        return None, iter(())
    vid = record.get("video_id")
    if vid not in durations:
        return None, iter([("$.video_id", f"unknown video_id {vid!r} (not in the videos file)")])
    return durations[vid], iter(())


def _unknown(name: str, known: Iterable[str], what: str) -> str:
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{name!r} is not one of {what} ({', '.join(known)}){hint}"


def registered_source(record: Mapping[str, Any]) -> Iterator[Problem]:
    """A video's ``source``: a source of streamcue/registry.py, or ``other``."""
    if record["source"] not in SOURCES and record["source"] != "other":
        yield "$.source", _unknown(record["source"], [*SOURCES, "other"], "the sources of streamcue/registry.py")


def registered_benchmark(record: Mapping[str, Any], kind: str) -> Iterator[Problem]:
    """A record's ``benchmark``: a benchmark of streamcue/registry.py that has ``kind`` records."""
    known = [name for name, bench in BENCHMARKS.items() if kind in bench.kinds]
    if record["benchmark"] not in known:
        yield "$.benchmark", _unknown(record["benchmark"], known, f"the benchmarks of {kind} records in "
                                      "streamcue/registry.py")


def _benchmark_duration(record: Mapping[str, Any], kind: str, durations: Durations
                        ) -> Generator[Problem, None, float | None]:
    """Yield the problems of a benchmark record's ``benchmark`` and ``video_id``; return its video's duration
    (None when not known or not checked)."""
    yield from registered_benchmark(record, kind)
    duration, problems = _duration(record, durations)
    yield from problems
    return duration


def check_video(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    yield from registered_source(record)
    anon = record["anonymization"]
    if record["source"] == "recorded" and anon["status"] == "not_required":
        yield "$.anonymization.status", "a recorded video always needs anonymization (pending, passed or failed)"
    if anon["status"] in ("passed", "failed") and not anon.get("report"):
        yield "$.anonymization.report", f"status {anon['status']} needs the path of its report"


def check_interval_qa(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration, problems = _duration(record, durations)
    yield from problems
    expected = PROACTIVE_TYPE[record["task_type"]]
    if record["proactive_type"] != expected:
        yield "$.proactive_type", f"task_type {record['task_type']} is {expected}, not {record['proactive_type']}"
    if expected == "contextual" and "context" not in record:
        yield "$.context", f"a contextual question ({record['task_type']}) needs context.group_id and context.turn"
    q, clip = record["query_time_s"], record.get("clip")
    yield from _asked_inside(record, duration)
    if clip:
        if not clip["start_s"] <= q <= clip["end_s"]:
            yield "$.query_time_s", f"query time {q} s is outside the clip [{clip['start_s']}, {clip['end_s']}]"
    previous = None
    for i, ans in enumerate(record["answers"]):
        path = f"$.answers[{i}]"
        yield from _span(path, ans["start_s"], ans["end_s"])
        yield from _inside(f"{path}.end_s", ans["end_s"], duration)
        if ans["end_s"] < q:
            yield f"{path}.end_s", f"answer interval ends at {ans['end_s']} s, before the question is asked ({q} s)"
        opt = ans.get("optimal_s")
        if opt is not None and not ans["start_s"] <= opt <= ans["end_s"]:
            yield f"{path}.optimal_s", f"optimal_s {opt} is outside its interval [{ans['start_s']}, {ans['end_s']}]"
        if clip and not (clip["start_s"] <= ans["start_s"] and ans["end_s"] <= clip["end_s"]):
            yield path, "answer interval is outside the clip"
        if previous is not None and (ans["start_s"], ans["end_s"]) < previous:
            yield f"{path}.start_s", "answers are not sorted by start_s"
        previous = (ans["start_s"], ans["end_s"])


def check_dense_caption(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration, problems = _duration(record, durations)
    yield from problems
    for i, cap in enumerate(record["captions"]):
        if cap["t_s"] != i:
            yield f"$.captions[{i}].t_s", f"expected one caption per second: t_s should be {i}, got {cap['t_s']}"
            break
    last = record["captions"][-1]["t_s"]
    yield from _inside(f"$.captions[{len(record['captions']) - 1}].t_s", last, duration)


def check_guidance(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration, problems = _duration(record, durations)
    yield from problems
    known_steps = set()
    for i, step in enumerate(record["plan"]):
        if step["index"] != i:
            yield f"$.plan[{i}].index", f"plan steps must be numbered 0.. in order, got {step['index']}"
        for j, action in enumerate(step["actions"]):
            yield from _span(f"$.plan[{i}].actions[{j}]", action["start_s"], action["end_s"])
            yield from _inside(f"$.plan[{i}].actions[{j}].end_s", action["end_s"], duration)
        known_steps.update(step["step_ids"])
    events = record["events"]
    previous = None
    for i, ev in enumerate(events):
        path = f"$.events[{i}]"
        yield from _inside(f"{path}.t_s", ev["t_s"], duration)
        if previous is not None and ev["t_s"] < previous:
            yield f"{path}.t_s", f"events are not sorted by time ({ev['t_s']} after {previous})"
        previous = ev["t_s"]
        is_mistake = ev["type"] == "mistake"
        if is_mistake != (ev["mistake_category"] is not None):
            yield f"{path}.mistake_category", "mistake events need a mistake_category, other events must have null"
        unknown = [s for s in ev["step_ids"] if s not in known_steps]
        if unknown:
            yield f"{path}.step_ids", f"step ids {unknown} are not in the plan"
        plan_index = ev.get("plan_index")
        if plan_index is not None and plan_index >= len(record["plan"]):
            yield f"{path}.plan_index", f"plan_index {plan_index} is past the plan ({len(record['plan'])} steps)"
    if events[0]["type"] != "instruction":
        yield "$.events[0].type", "the first event must be an instruction"
    finishes = [i for i, ev in enumerate(events) if ev["type"] == "finish"]
    if finishes != [len(events) - 1]:
        yield "$.events", "exactly one finish event, as the last event"
    n_instructions = sum(ev["type"] == "instruction" for ev in events)
    if n_instructions != len(record["plan"]):
        yield "$.events", f"{n_instructions} instruction events for {len(record['plan'])} plan steps"


def check_counterfactual_mistake(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration, problems = _duration(record, durations)
    yield from problems
    critical = record["critical"]
    yield from _span("$.critical", critical["start_s"], critical["end_s"])
    yield from _inside("$.critical.end_s", critical["end_s"], duration)
    slot = record["changed_slot"]
    kept = "verb" if slot == "noun" else "noun"
    original, counterfactual = record["original"], record["counterfactual"]
    if original[slot] == counterfactual[slot]:
        yield f"$.counterfactual.{slot}", f"changed_slot is {slot} but the {slot} is unchanged ({original[slot]!r})"
    if original[kept] != counterfactual[kept]:
        yield (f"$.counterfactual.{kept}",
               f"only the {slot} may change, the {kept} differs ({original[kept]!r} -> {counterfactual[kept]!r})")
    if record["mistake"]["t_s"] < record["instruction"]["t_s"]:
        yield "$.mistake.t_s", "the mistake feedback comes before the instruction"
    yield from _inside("$.mistake.t_s", record["mistake"]["t_s"], duration)


def check_interval_qa_minimal(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    for i, ans in enumerate(record["answers"]):
        yield from _span(f"$.answers[{i}]", ans["start_s"], ans["end_s"])


def check_dense_caption_minimal(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    for i, cap in enumerate(record["captions"]):
        if cap["t_s"] != i:
            yield f"$.captions[{i}].t_s", f"expected one caption per second: t_s should be {i}, got {cap['t_s']}"
            break


def _required_by_benchmark(record: Mapping[str, Any], kind: str) -> Iterator[Problem]:
    """The fields its benchmark's registry entry requires of a ``kind`` record (``Benchmark.requires``), filled in."""
    bench = BENCHMARKS.get(record.get("benchmark"))
    for name, problem in bench.requires.get(kind, ()) if bench else ():
        if record.get(name) in (None, []):
            yield f"$.{name}", problem


def check_mc_question(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration = yield from _benchmark_duration(record, "mc_question", durations)
    if record["answer"] >= len(record["options"]):
        yield "$.answer", f"answer index {record['answer']} is out of range ({len(record['options'])} options)"
    yield from _inside("$.query_time_s", record["query_time_s"], duration)
    clip = record.get("clip")
    if clip:
        yield from _span("$.clip", clip["start_s"], clip["end_s"])


def check_active_item(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration = yield from _benchmark_duration(record, "active_item", durations)
    yield from _inside("$.query_time_s", record["query_time_s"], duration)
    probes, target = record["probes"], record.get("target")
    yield from _required_by_benchmark(record, "active_item")
    for i, probe in enumerate(probes):
        yield from _inside(f"$.probes[{i}].t_s", probe["t_s"], duration)
        expected = probe["expected"]
        if record["task"] == "REC" and not expected.isdigit():
            yield f"$.probes[{i}].expected", f"a REC probe expects a count, got {expected!r}"
        if record["task"] in ("SSR", "CRR") and expected not in ("Yes", "No"):
            yield f"$.probes[{i}].expected", f"an {record['task']} probe expects Yes or No, got {expected!r}"
    for i, span in enumerate(record.get("spans") or ()):
        yield from _span(f"$.spans[{i}]", span["start_s"], span["end_s"])
    if target is not None:
        yield from _inside("$.target.t_s", target["t_s"], duration)


def check_open_question(record: Mapping[str, Any], durations: Durations) -> Iterator[Problem]:
    duration = yield from _benchmark_duration(record, "open_question", durations)
    q, clip = record["query_time_s"], record.get("clip")
    yield from _asked_inside(record, duration)
    if clip:
        if clip["start_s"] > q:
            yield "$.clip.start_s", f"the clip starts at {clip['start_s']} s, after the question is asked ({q} s)"

