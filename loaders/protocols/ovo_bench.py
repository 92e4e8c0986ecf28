"""OVO-Bench: backward and real-time multiple choice, forward active probes (OVO-Bench; PAPERS.md section 7).

* ``mc_question`` (backward, realtime): the question with lettered options (``mc_question.v1``)
  is asked once at ``query_time_s``; the model sees the frames up to then and answers with a
  letter (``bench_choice.v1``).
* ``active_item`` (forward: REC, SSR, CRR): the item is asked again at every probe time, each
  probe on its own (no dialogue): REC "how many times so far" (``ovo_rec_probe.v1``, answered as
  an open question), SSR "is this step done" (``ovo_ssr_probe.v1``), CRR "can the question be
  answered yet" (``ovo_crr_probe.v1``), both yes/no. Responses carry the probe index.

Default and only strategy: single-call (one call per question or probe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn, prompt_text
from streamcue.loaders.protocols.choice import choice_prompt

__all__ = ["OVOBench", "PROTOCOL", "probe_turn"]


def probe_turn(record: Mapping[str, Any], probe: Mapping[str, Any], index: int) -> Turn:
    """One forward probe as a question at the probe's time."""
    if record["task"] == "REC":
        return Turn(probe["t_s"], prompt_text("ovo_rec_probe.v1", activity=record["activity"]), form="open",
                    probe=index)
    if record["task"] == "SSR":
        return Turn(probe["t_s"], prompt_text("ovo_ssr_probe.v1", step=probe["step"]), form="yes_no", probe=index)
    return Turn(probe["t_s"], prompt_text("ovo_crr_probe.v1", question=record["question"]), form="yes_no",
                probe=index)


class OVOBench(Protocol):
    name = "ovo-bench"
    kinds = ("mc_question", "active_item")
    prompts = ("mc_question.v1", "ovo_rec_probe.v1", "ovo_ssr_probe.v1", "ovo_crr_probe.v1")
    mode = {"mc_question": "ask", "active_item": "ask"}
    default_strategy = {"mc_question": "single-call", "active_item": "single-call"}
    history = "gold"

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        if "options" in record:
            return [Turn(record["query_time_s"], choice_prompt(record), form="choice")]
        return [probe_turn(record, probe, i) for i, probe in enumerate(record["probes"])]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if "options" in record:
            said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
            return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}
        return {"item_id": record["item_id"],
                "responses": [{"t_s": r["t_s"], "probe": r["probe"], "text": r["text"]} for r in responses]}


PROTOCOL = OVOBench()
