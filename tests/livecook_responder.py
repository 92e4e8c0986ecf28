"""A deterministic stand-in model for the LiveCook prompts, served over real HTTP by StubLLMServer.

It reads the prompt the way a model would: instructions are the step descriptions in the
imperative; a substep's verb is its first word and its noun its last; the critical substep is
the last; a mistake summary repeats the first three distinct mistakes it was shown.
"""

import json
import re

from streamcue.testing.stub_llm import default_responder, message_text

NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.M)
MISTAKE = re.compile(r"^- .* -> \[(\w+)\] (.*)$", re.M)


def livecook_responder(body):
    text = message_text(body["messages"][0])
    if "Rewrite each description" in text:
        return json.dumps({"instructions": [f"please {d.rstrip('.')}" for _, d in NUMBERED.findall(text)]})
    if "choose the critical sub-action" in text:
        subs = NUMBERED.findall(text.split("Its sub-actions, in order:")[1])
        actions = []
        for _, d in subs:
            words = re.findall(r"[A-Za-z]+", d) or ["do", "it"]
            actions.append({"verb": words[0], "noun": "the " + words[-1]})
        return json.dumps({"actions": actions, "critical": len(actions) - 1})
    if "Summarise the mistakes" in text:
        seen = list(dict.fromkeys(d for _, d in MISTAKE.findall(text)))[:3]
        return json.dumps({"possible_mistakes": seen or ["no typical mistake known"]})
    return default_responder(body)
