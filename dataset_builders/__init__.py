"""Builders: source annotations -> streamcue records.

Each builder module has a ``Config`` and a ``build(config, ...)`` generator of
``(kind, record)`` pairs; :data:`BUILDERS` lists them all (module name: what it makes).
Releases (``release*.py``) and the caption agreement statistics live here too.
"""

from __future__ import annotations

#: builder name (module ``streamcue.dataset_builders.<name>``, command ``streamcue build <name>``) -> what it makes.
BUILDERS = {
    "captaincook4d": "guidance records (LiveCook protocol) from CaptainCook4D annotations",
    "ego4d": "interval_qa proactive questions (ESTP-Gen) from Ego4D GoalStep and narrations",
    "recorded": "dense_caption records (VSAS-Bench style) from anonymized recorded videos",
    "livecook-summaries": "mistake_summary records (LiveCook) for CaptainCook4D instructions, from the training split",
    "livecook-augment": "LiveCook training data from Ego4D GoalStep: success-only guidance and counterfactual mistakes",
    "ovo_bench": "mc_question and active_item records from OVO-Bench's annotation file (command: build ovo-bench)",
    "streamingbench": "mc_question and active_item records from StreamingBench's question files",
}

__all__ = ["BUILDERS"]
