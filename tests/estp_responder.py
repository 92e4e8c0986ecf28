"""A deterministic stand-in model for the ESTP-Gen prompts, served over real HTTP by StubLLMServer.

It reads the prompt the way a model would and answers with plausible JSON:
one-to-one asks about the marked caption; one-to-many confirms candidates that share at least
two content words with the visual cue; many-to-many pairs consecutive questions.
"""

import json
import re

from streamcue.testing.stub_llm import default_responder, message_text

STOP = {"the", "a", "an", "and", "of", "on", "to", "c", "with", "from", "at", "in", "his", "her", "again"}


def words(text):
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP}


def estp_responder(body):
    text = message_text(body["messages"][-1])
    if "key moment is marked with >>" in text:
        line = next(x for x in text.splitlines() if x.startswith(">>"))
        caption = line.split(") ", 1)[1]
        return json.dumps({"task_type": "OR", "question": f"Tell me when this happens: {caption}",
                           "visual_cue": caption, "answer": caption})
    if "Candidate moments:" in text:
        cue = re.search(r"Visual cue the answer depends on: (.*)", text).group(1)
        matches = []
        for n, cand in re.findall(r"^\[(\d+)\] [\d.]+-[\d.]+ s: (.*)$", text, re.M):
            if len(words(cand) & words(cue)) >= 2:
                matches.append({"index": int(n), "answer": f"Again: {cand}"})
        return json.dumps({"matches": matches})
    if "multi-turn conversations" in text:
        n = len(re.findall(r"^\[\d+\]", text, re.M))
        groups = [{"members": [i, i + 1], "questions": [f"Turn one {i}", f"And then {i + 1}?"]}
                  for i in range(0, n - 1, 2)]
        return json.dumps({"groups": groups})
    return default_responder(body)
