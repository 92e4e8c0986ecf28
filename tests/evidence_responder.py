"""A scripted vision model for the evidence pre-check, served over real HTTP by the stub server.

It answers from the frames, the way a model that really recognises the event would: it tells
the videos apart by their colour (each generated test video has its own) and reads each frame's
timestamp; ``truth`` maps (video id, question) to the spans where the answer is really visible
and what is visible there. The observer reports an event once at least two of the frames it was shown fall inside
the true span (one frame is not enough to be sure); the reflector compares the evidence with
the record's claims; the planner watches the claims (padded for reasoning questions) at a low
rate in the first round, the claims densely in the second, and the whole video in the third.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
import subprocess

import cv2
import numpy as np

from streamcue.video import ffmpeg_exe
from streamcue.loaders import video_path
from streamcue.testing.stub_llm import message_text

SPAN = re.compile(r"\[([\d.]+)-([\d.]+) s\] (.*)")


def _listed(text, heading):
    """The ``- [a-b s] text`` lines right after ``heading``."""
    lines = text.split(heading + "\n", 1)[1].splitlines()
    items = []
    for line in lines:
        match = SPAN.fullmatch(line[2:]) if line.startswith("- [") else None
        if match is None:
            break
        items.append((float(match.group(1)), float(match.group(2)), match.group(3)))
    return items


def _claims(text):
    return _listed(text, "Claimed answers:")


def _question(text):
    """(question, asked at) as the prompt states them."""
    match = re.search(r"Question \((?:(?:factual|reasoning), )?asked at ([\d.]+) s\): (.*)", text)
    return match.group(2), float(match.group(1))


def overlaps(a, b, c, d):
    return a <= d and b >= c


def _first_image_colour(message):
    for part in message.get("content") or []:
        if isinstance(part, dict) and part.get("type") == "image_url":
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            return image.reshape(-1, 3).mean(axis=0)
    return None


class EvidenceModel:
    """``truth``: (video id, question, asked at) -> list of (start_s, end_s, what is visible).

    ``colours``: video id -> BGR.
    """

    def __init__(self, truth, colours, pad_s=10.0):
        self.truth = truth
        self.colours = colours
        self.pad_s = pad_s
        self.calls = {"evidence_plan": 0, "evidence_observe": 0, "evidence_reflect": 0}

    def __call__(self, body):
        name = body["response_format"]["json_schema"]["name"]
        self.calls[name] += 1
        message = body["messages"][-1]
        text = message_text(message)
        if name == "evidence_observe":
            return json.dumps(self.observe(text, _first_image_colour(message)))
        return json.dumps(getattr(self, name[len("evidence_"):])(text))

    def plan(self, text):
        duration = float(re.search(r"Video duration: ([\d.]+) s", text).group(1))
        round_ = int(re.search(r"Round (\d+) of", text).group(1))
        if round_ == 1:
            pad = self.pad_s if "(reasoning)" in text else 0.0
            spans = [{"start_s": a - pad, "end_s": b + pad} for a, b, _ in _claims(text)]
            return {"spans": spans, "fps": 0.25, "reason": "the claimed intervals first, sparsely"}
        if round_ == 2:
            spans = [{"start_s": a - 2, "end_s": b + 2} for a, b, _ in _claims(text)]
            return {"spans": spans, "fps": 2.0, "reason": "look closer at the claims"}
        return {"spans": [{"start_s": 0, "end_s": duration}], "fps": 0.25, "reason": "scan it all"}

    def observe(self, text, colour):
        times = [float(t) for t in re.findall(r"^Frame at ([\d.]+) s$", text, re.M)]
        if colour is None:
            return {"evidence": []}
        video = min(self.colours, key=lambda v: float(np.abs(np.asarray(self.colours[v]) - colour).sum()))
        evidence = []
        question, asked = _question(text)
        for start, end, what in self.truth.get((video, question, round(asked, 1)), []):
            inside = [t for t in times if start <= t <= end]
            if len(inside) >= 2:
                evidence.append({"start_s": min(inside), "end_s": max(inside), "description": what})
        return {"evidence": evidence}

    def reflect(self, text):
        claims = _claims(text)
        evidence = _listed(text, "Evidence gathered (time-stamped):")
        if not evidence:
            return {"verdict": "unsure", "sufficient": False, "confidence": 0.3,
                    "justification": "nothing relevant seen", "missing": "look at more of the video, more densely"}
        for a, b, claim in claims:
            if any(overlaps(a, b, c, d) and claim.lower() in what.lower() for c, d, what in evidence):
                return {"verdict": "supported", "sufficient": True, "confidence": 0.9,
                        "justification": f"seen at the claimed time: {claim}", "missing": ""}
        return {"verdict": "unsupported", "sufficient": True, "confidence": 0.85,
                "justification": "what the record claims is seen elsewhere or not at all", "missing": ""}


#: One colour per test video (RGB), so the scripted model can tell the videos apart from the pixels.
COLOURS = [(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
           (70, 240, 240), (240, 50, 230), (128, 128, 0), (0, 0, 128), (170, 110, 40), (128, 0, 0),
           (170, 255, 195), (255, 215, 180), (0, 128, 128), (220, 190, 255), (255, 250, 200), (128, 128, 128),
           (255, 255, 255), (0, 0, 0), (64, 0, 128), (0, 64, 0), (192, 64, 0), (64, 192, 192), (100, 60, 20)]


def write_test_videos(videos, root):
    """A small one-colour video (64x48, 2 fps) at each video record's uri under ``root``, as long as the video."""
    for n, video in enumerate(videos):
        path = video_path(video, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        r, g, b = COLOURS[n]
        source = f"color=c=0x{r:02x}{g:02x}{b:02x}:size=64x48:rate=2"
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", source,
                        "-t", f"{video['duration_s']:.3f}", "-pix_fmt", "yuv420p", str(path)], check=True)


def scripted_model(videos, records, what=None):
    """The scripted model for ``videos`` (in the order their files were written) whose truth is ``records``."""
    colours = {vid: COLOURS[n][::-1] for n, vid in enumerate(videos)}  # BGR, as OpenCV decodes
    truth = {(r["video_id"], r["question"], round(r["query_time_s"], 1)):
             [(a["start_s"], a["end_s"], what or a["text"]) for a in r["answers"]] for r in records}
    return EvidenceModel(truth, colours)


def shifted_records(records, durations, seed=0):
    """Each record whose answers can all move by more than their length inside the video, moved."""
    rng = random.Random(seed)
    out = []
    for record in records:
        duration = durations[record["video_id"]]
        moved = copy.deepcopy(record)
        for answer in moved["answers"]:
            shift = answer["end_s"] - answer["start_s"] + rng.uniform(5.0, 15.0)
            options = [s for s in (shift, -shift) if answer["start_s"] + s >= 0 and answer["end_s"] + s <= duration]
            if not options:
                break
            s = rng.choice(options)
            answer["start_s"], answer["end_s"] = answer["start_s"] + s, answer["end_s"] + s
        else:
            out.append(moved)
    return out
