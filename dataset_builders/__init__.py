"""Builders: source annotations -> streamcue records.

Each builder module has a ``Config`` and a ``build(config, ...)`` generator of
``(kind, record)`` pairs; :data:`BUILDERS` lists them all (module name: what it makes).
"""

from __future__ import annotations

#: builder name (module ``streamcue.dataset_builders.<name>``, command ``streamcue build <name>``) -> what it makes.
BUILDERS = {
    "captaincook4d": "guidance records (LiveCook protocol) from CaptainCook4D annotations",
    "ego4d": "interval_qa proactive questions (ESTP-Gen) from Ego4D GoalStep and narrations",
    "recorded": "dense_caption records (VSAS-Bench style) from anonymized recorded videos",
}

__all__ = ["BUILDERS"]
