"""Stage 1, cleaning (ESTP-Bench appendix B.2): drop clips too short or too sparsely narrated.

A clip is one top-level GoalStep step. It is dropped when

* it lasts less than ``min_duration_s`` (default 10 s);
* it is marked irrelevant to the goal;
* narrations are given for its video and their coverage is below ``min_coverage``: the video
  span is cut into ``coverage_bin_s`` bins (default 10 s) and coverage is the share of the
  clip's bins holding at least one narration point.

Videos absent from the narration file are not coverage-checked (reported as such).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from streamcue.dataset_builders.ego4d_sources import GoalVideo, Narration, Step
from streamcue.errors import ConfigError

__all__ = ["CleanConfig", "CleanResult", "clean_video", "narration_coverage"]


@dataclass(frozen=True)
class CleanConfig:
    min_duration_s: float = 10.0
    min_coverage: float = 0.3
    coverage_bin_s: float = 10.0

    def __post_init__(self) -> None:
        # NaN compares false (nothing dropped), Infinity drops every clip: both are option mistakes, not settings
        if not (math.isfinite(self.min_duration_s) and self.min_duration_s >= 0):
            raise ConfigError(f"the minimum clip length must be a finite number of seconds >= 0, "
                              f"got {self.min_duration_s}")
        if not 0 <= self.min_coverage <= 1:
            raise ConfigError(f"the minimum narration coverage must lie in [0, 1], got {self.min_coverage}")
        if not (math.isfinite(self.coverage_bin_s) and self.coverage_bin_s > 0):
            raise ConfigError(f"the coverage bin must be a positive number of seconds, got {self.coverage_bin_s}")


@dataclass
class CleanResult:
    kept: list[Step]
    dropped: list[dict] = field(default_factory=list)
    coverage_checked: bool = False


def narration_coverage(start: float, end: float, points: Sequence[Narration], bin_s: float) -> float:
    """Share of ``bin_s`` bins in [start, end) that hold at least one narration point."""
    n_bins = max(1, math.ceil((end - start) / bin_s))
    hit = {int((p.t_s - start) // bin_s) for p in points if start <= p.t_s < end}
    return len(hit) / n_bins


def clean_video(video: GoalVideo, narrations: Sequence[Narration] | None, config: CleanConfig) -> CleanResult:
    result = CleanResult(kept=[], coverage_checked=narrations is not None)
    for step in video.steps:
        reason = None
        if step.duration_s < config.min_duration_s:
            reason = f"shorter than {config.min_duration_s:g} s ({step.duration_s:.1f} s)"
        elif step.relevance == "irrelevant":
            reason = "irrelevant to the goal"
        elif narrations is not None:
            coverage = narration_coverage(step.start_s, step.end_s, narrations, config.coverage_bin_s)
            if coverage < config.min_coverage:
                reason = f"narration coverage {coverage:.2f} below {config.min_coverage:g}"
        if reason:
            result.dropped.append({"video_id": video.video_uid, "step": step.index, "start_s": step.start_s,
                                   "end_s": step.end_s, "reason": reason})
        else:
            result.kept.append(step)
    return result
