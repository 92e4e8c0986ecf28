"""ESTP-Gen, the data engine behind ESTP-Bench (appendix B.2, B.4, B.5), as separate stages.

``clean`` -> ``templates`` (no LLM) -> ``one_to_one`` (LLM) -> ``one_to_many`` (retrieval + LLM)
-> ``many_to_many`` (LLM). Each stage is a function over plain data and records, testable on
its own; :mod:`streamcue.dataset_builders.ego4d` chains them.
"""

__all__: list[str] = []
