"""OVO-Bench: backward and real-time multiple choice, forward active probes (OVO-Bench; PAPERS.md section 7).

* ``mc_question`` (backward, realtime): the question with lettered options is asked once at
  ``query_time_s``; the model sees the frames up to then.
* ``active_item`` (forward: REC, SSR, CRR): the item is asked again at every probe time, each
  probe on its own (no dialogue). Responses carry the probe index.

Prompt sets (``prompt_set``, :mod:`~streamcue.loaders.protocols.choice`):

* ``official``: ``constant.py``'s templates at commit c34093f as ``utils/OVOBench.py`` fills them:
  ``ovo_official_choice.v1`` (options joined as ``A. x; B. y;``), ``ovo_official_rec.v1`` ("How
  many times did they <activity>?"), ``ovo_official_ssr.v1`` (the probe's step),
  ``ovo_official_crr.v1`` (the item's question). The raw answer is the prediction; the scorer
  applies the official rule (letter in response, joined digits, Yes/No).
* ``streamcue``: ``mc_question.v1`` answered with a letter (``bench_choice.v1``), REC
  ``ovo_rec_probe.v1`` (open), SSR ``ovo_ssr_probe.v1`` and CRR ``ovo_crr_probe.v1`` (yes/no).

Default and only strategy: single-call (one call per question or probe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn, prompt_text
from streamcue.loaders.protocols.choice import (DEFAULT_PROMPT_SET, PromptSets, check_prompt_set, choice_prompt,
                                                letters_in, lettered, official_prompt)

__all__ = ["OVOBench", "PROTOCOL", "probe_turn", "OFFICIAL_PROMPTS", "STREAMCUE_PROMPTS"]

OFFICIAL_PROMPTS = ("ovo_official_choice.v1", "ovo_official_rec.v1", "ovo_official_ssr.v1", "ovo_official_crr.v1")
STREAMCUE_PROMPTS = ("mc_question.v1", "ovo_rec_probe.v1", "ovo_ssr_probe.v1", "ovo_crr_probe.v1")


def probe_turn(record: Mapping[str, Any], probe: Mapping[str, Any], index: int, prompt_set: str = "streamcue") -> Turn:
    """One forward probe as a question at the probe's time."""
    official = prompt_set == "official"
    task = record["task"]
    name = f"ovo_official_{task.lower()}.v1" if official else f"ovo_{task.lower()}_probe.v1"
    values = ({"activity": record["activity"]} if task == "REC" else {"step": probe["step"]} if task == "SSR"
              else {"question": record["question"]})
    text = official_prompt(name, **values) if official else prompt_text(name, **values)
    form = "open" if task == "REC" else "yes_no"
    if official:  # the whole instruction: sent alone, the raw answer kept for the official rule
        return Turn(probe["t_s"], text, form=form, probe=index, prompt=name, plain=_kept)
    return Turn(probe["t_s"], text, form=form, probe=index)


def _kept(text: str | None) -> str | None:
    """A forward probe's raw answer, read by the scorer's official rule (joined digits, Y/N, Yes/No)."""
    return text


def official_choice(record: Mapping[str, Any]) -> str:
    """The official backward / real-time prompt: options joined as ``A. x; B. y;`` (utils/OVOBench.py)."""
    return official_prompt("ovo_official_choice.v1", question=record["question"],
                           options="; ".join(lettered(record["options"])) + ";")


class OVOBench(PromptSets, Protocol):
    official_prompts = OFFICIAL_PROMPTS
    streamcue_prompts = STREAMCUE_PROMPTS
    name = "ovo-bench"
    kinds = ("mc_question", "active_item")
    mode = {"mc_question": "ask", "active_item": "ask"}
    default_strategy = {"mc_question": "single-call", "active_item": "single-call"}
    history = "gold"
    options = ("prompt_set",)

    def __init__(self, prompt_set: str = DEFAULT_PROMPT_SET) -> None:
        self.prompt_set = check_prompt_set(prompt_set)

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        if "options" in record:
            if self.prompt_set == "official":
                n = len(record["options"])
                return [Turn(record["query_time_s"], official_choice(record), form="choice",
                             prompt="ovo_official_choice.v1", plain=lambda text: letters_in(text, n))]
            return [Turn(record["query_time_s"], choice_prompt(record), form="choice")]
        return [probe_turn(record, probe, i, self.prompt_set) for i, probe in enumerate(record["probes"])]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The raw answers as the model gave them: the scorer's rule (official or strict) reads them."""
        if "options" in record:
            said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
            return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}
        return {"item_id": record["item_id"],
                "responses": [{"t_s": r["t_s"], "probe": r["probe"], "text": r["text"]} for r in responses]}

    @staticmethod
    def parsed(record: Mapping[str, Any], text: str | None) -> Any:
        """What the official rule reads in a raw answer, for per-sample logs: the option letters it contains."""
        return letters_in(text, len(record["options"])) if "options" in record else text

    def __repr__(self) -> str:
        return f"<protocol {self.name} ({self.prompt_set} prompts): {', '.join(self.kinds)}>"


PROTOCOL = OVOBench()
