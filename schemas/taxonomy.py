"""Fixed vocabularies of the record types (ESTP-Bench task types, LiveCook mistake categories).

Source: ESTP-Bench (Sec. 3 and appendix B.3) for the 14 task types and their proactive
types; LiveCook (Sec. 3) for the counted mistake categories.
"""

from __future__ import annotations

__all__ = ["PROACTIVE_TYPE", "TASK_TYPES", "OPTIMAL_AT_START", "EVENT_TYPES", "COUNTED_MISTAKES", "DENSE_TASK_TYPES",
           "SPLITS", "SPLIT_ALIASES"]


#: ESTP-Bench task type -> proactive type.
PROACTIVE_TYPE: dict[str, str] = {
    "OR": "explicit",    # object recognition
    "AP": "explicit",    # attribute perception
    "TRU": "explicit",   # text-rich understanding
    "OL": "explicit",    # object localization
    "OSC": "explicit",   # object state change
    "EOL": "explicit",   # ego object localization
    "EOSC": "explicit",  # ego object state change
    "AR": "explicit",    # action recognition
    "OFR": "implicit",   # object function reasoning
    "IFR": "implicit",   # information function reasoning
    "NAR": "implicit",   # next action reasoning
    "TU": "implicit",    # task understanding
    "ORC": "contextual", # object relative context
    "TRC": "contextual", # task relative context
}

TASK_TYPES: tuple[str, ...] = tuple(PROACTIVE_TYPE)

#: Task types whose optimal answer time is the interval start (answer as soon as the cue
#: appears); all others use the interval midpoint (ESTP-Bench appendix B.3).
OPTIMAL_AT_START: frozenset[str] = frozenset({"OR", "AP", "TRU", "OL", "OFR", "IFR", "ORC"})

#: Guidance event types, in the order they are emitted when they share a timestamp.
EVENT_TYPES: tuple[str, ...] = ("mistake", "success", "instruction", "finish")

#: LiveCook's counted mistake categories (order, missing step and other are not counted).
COUNTED_MISTAKES: tuple[str, ...] = ("technique", "preparation", "measurement", "timing", "temperature")

DENSE_TASK_TYPES: tuple[str, ...] = ("present", "cumulative", "future")

#: The splits every record is in (video.schema.json's enum), in release order.
SPLITS: tuple[str, ...] = ("train", "validation", "test")

#: A source's split name -> ours (CaptainCook4D says "val", Ego4D "val" or "valid").
SPLIT_ALIASES: dict[str, str] = {"train": "train", "val": "validation", "valid": "validation",
                                 "validation": "validation", "test": "test"}
