"""``streamcue replay``: play records of any kind to a model with a benchmark's protocol; predictions and a report.

Every option is a field of :class:`streamcue.loaders.replay_config.ReplayConfig` (its help declared there) and
every strategy flag an option a strategy declares (:data:`streamcue.loaders.strategies.STRATEGIES`): this
command is generated from those declarations (:func:`streamcue.cli.options.config_command`) and only maps its
flags onto the configuration; :func:`streamcue.loaders.replay_run.write_replay` does the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from streamcue.cli.options import config_command
from streamcue.loaders.replay_config import ReplayConfig

__all__ = ["replay_command"]


def _replay(
    config: ReplayConfig,
    records: Annotated[str, typer.Argument(
        help="Records: a build folder, one record file (interval_qa, dense_caption, guidance, mc_question, "
             "active_item, ...), a release folder or a Hub dataset ORG/NAME@REVISION.")],
    out: Annotated[Path, typer.Option(help="Output folder: predictions.jsonl, samples.jsonl and "
                                           "replay_report.json.")],
) -> Any:
    """Replay records to a vision model with a benchmark's protocol, a strategy and a memory; write its predictions.

    Every valid answer is cached: a re-run makes no call, and a run resumed after a kill repeats only the calls
    that were in flight. An --out that holds a finished replay is never replaced: the same settings do nothing,
    others are refused, naming the first difference. The predictions follow the *_prediction schema of each
    record's kind, ready for `streamcue evaluate`; samples.jsonl has one line per call (what was sent, the raw
    and parsed answer, latency, cache hit, retries). An unparseable answer is a recorded wrong answer, counted
    and listed in the report. A source that ships its videos (a release with videos/) needs no --video-root.
    See docs/replay.md.

    Example (ESTP-Bench polling at 1 Hz, then scoring):

        streamcue replay out/ego4d/interval_qa.jsonl --out runs/poll --strategy polling --poll-hz 1 \\
            --video-root /data/ego4d --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

        streamcue evaluate estp-f1 --gt out/ego4d/interval_qa.jsonl --pred runs/poll/predictions.jsonl

    Example (OVO-Bench with its official prompts, the default: each question's official text sent alone,
    the plain answer scored by the official rule; 8 requests at once, frames of at most 200,704 pixels):

        streamcue replay out/ovo --out runs/ovo --video-root /data/ovo --concurrency 8 \\
            --frame-pixels 200704 --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

    Example (StreamingBench as on its leaderboard, the last 60 s; or streamcue's JSON prompts):

        streamcue replay out/sb --out runs/sb --context last-60s --video-root /data/sb ...
        streamcue replay out/sb --out runs/sb-json --prompt-set streamcue --video-root /data/sb ...
    """
    from streamcue.loaders.replay_run import write_replay

    return write_replay(config, out)


replay_command = config_command(ReplayConfig, _replay, "replay_command")
