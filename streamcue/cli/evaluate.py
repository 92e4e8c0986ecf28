"""``streamcue evaluate``: score predictions against ground truth with a registered metric."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.metrics.timing import RULES as TIMING_RULES
from streamcue.registry import BENCHMARKS

#: ``--timing-rule`` choices: the shared timing module's rule table.
TimingRule = Enum("TimingRule", {name: name for name in TIMING_RULES}, type=str)

__all__ = ["evaluate"]

#: Each benchmark's metric (streamcue/registry.py) with the record kinds it scores, then reasoning.
_METRIC_HELP = (", ".join(f"{b.metric} ({b.title}: {' / '.join(b.kinds)})" for b in BENCHMARKS.values())
                + " or reasoning (reasoning_trace). streamcue ls lists them.")


def evaluate(
    metric: Annotated[str, typer.Argument(help=_METRIC_HELP)],
    pred: Annotated[Path, typer.Option(help="Predictions JSONL in the matching *_prediction schema.")],
    gt: Annotated[Optional[str], typer.Option(help="Ground truth: a JSONL of full records or minimal ones, a build "
                                                   "folder, a release folder or a Hub dataset ORG/NAME@REVISION. "
                                                   "Needed, except to re-score an OVO-Bench results folder or "
                                                   "lmms-eval logs by the gold answers they carry.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Answer judge: exact, token-f1 (default), embedding or llm; "
                                                      "mira for reasoning.")] = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the full JSON report (overall, groups, per_item) "
                                                        "here.")] = None,
    config_version: Annotated[Optional[int], typer.Option(help="Metric config version (default: the latest, "
                                                          "livecook v2 and vsas v2 since 2026-11-23; 1 reproduces "
                                                          "earlier reports). The report names it "
                                                          "(config_version).")] = None,
    llm_base_url: Annotated[Optional[str], typer.Option(help="llm and mira judges: OpenAI-compatible base URL (or "
                                                             "$STREAMCUE_LLM_BASE_URL).")] = None,
    llm_model: Annotated[Optional[str], typer.Option(help="llm and mira judges: model name at --llm-base-url (or "
                                                          "$STREAMCUE_LLM_MODEL).")] = None,
    embedding_model: Annotated[Optional[str], typer.Option(help="embedding judge: sentence-transformers model folder "
                                                                "(default: the packaged all-MiniLM-L6-v2).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the persistent judge "
                                                              "cache.")] = False,
    bertscore: Annotated[bool, typer.Option(help="livecook: compute BERTScore (needs the embed extra).")] = True,
    bertscore_model: Annotated[Optional[str], typer.Option(help="livecook: local BERTScore model folder (default: "
                                                                "packaged MiniLM, layer 4).")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="Override a metric parameter, NAME=VALUE (e.g. "
                                                            "window_s=10); recorded in the report.")] = None,
    pred_format: Annotated[str, typer.Option(
        help="ovo-bench: streamcue, ovo-results (a results folder) or lmms-eval (lmms-eval sample logs: a "
             "samples_*.jsonl file or a folder of them); streamingbench: streamcue or streamingbench (an answered "
             "questions file).")] = "streamcue",
    pred_model: Annotated[Optional[str], typer.Option(
        "--pred-model", help="--pred-format streamingbench: the key the model's answers are stored "
                                        "under.")] = None,
    timing_rule: Annotated[Optional[TimingRule], typer.Option(
        help="A proactive metric: re-score its predictions under this matching rule instead of its own "
             "(metrics/timing.py): time precision, recall and F1 and content accuracy apart; the report's "
             "config_version ends in +timing=NAME.")] = None,
) -> None:
    """Score predictions against ground truth and print a table (overall and per group).

    Examples:

        streamcue evaluate estp-f1 --gt qa.jsonl --pred pred.jsonl --judge token-f1

        streamcue evaluate vsas --gt captions.jsonl --pred pred.jsonl --judge embedding --output report.json

        streamcue evaluate livecook --gt guidance.jsonl --pred pred.jsonl --param window_s=10

        streamcue evaluate reasoning --gt traces.jsonl --pred pred.jsonl --judge mira --llm-model MODEL \\
            --llm-base-url http://127.0.0.1:8000/v1

        streamcue evaluate ovo-bench --gt out/ovo --pred ../shared/data/ovo_bench/results/GPT --pred-format ovo-results

        streamcue evaluate ovo-bench --gt out/ovo --pred logs/ --pred-format lmms-eval --param rules=lmms-eval

        streamcue evaluate streamingbench --gt out/sb --pred real_output.json --pred-format streamingbench \\
            --pred-model MiniCPM-V --param rules=strict
    """
    from streamcue.errors import ConfigError, InputError
    from streamcue.io import write_json
    from streamcue.metrics import evaluate as run_evaluate
    from streamcue.metrics.report import print_report
    from streamcue.prologue import check_io, is_blank

    if gt is None and not (metric == "ovo-bench" and pred_format != "streamcue"):
        raise ConfigError("--gt is needed (only ovo-bench re-scoring of a results folder or lmms-eval logs can take "
                          "the gold answers from the file)")
    from streamcue.loaders.sources import is_hub_id

    local = Path(gt) if gt is not None and not is_hub_id(gt) else None
    inputs = [p for p in (local, pred) if p is not None]
    if output is not None:  # refused before any scoring: a folder, or one of the inputs
        if output.is_dir():
            raise ConfigError(f"--output {output} is a folder; give the report's file name")
        # ovo-bench / streamingbench read folders (--gt out/ovo, --pred results/GPT): their files are inputs too
        read = [*inputs, *(f for p in inputs if p.is_dir() for f in p.iterdir())]
        check_io({output: "--output"}, read)
    # an empty ground truth: the metric says it
    if pred.is_file() and is_blank(pred) and (local is None or local.is_file() and not is_blank(local)):
        raise InputError("empty file: no predictions to score", file=pred)
    if config_version is not None and config_version < 1:
        raise ConfigError(f"--config-version must be 1 or more, got {config_version}")
    if embedding_model and judge != "embedding":
        raise ConfigError("--embedding-model is the embedding judge's model folder: add --judge embedding")
    if llm_model and judge == "embedding":
        raise ConfigError("--llm-model is the llm and mira judges' model; the embedding judge takes --embedding-model")
    if metric == "streamingbench" and pred_format == "streamingbench" and not pred_model:
        raise ConfigError("--pred-format streamingbench needs --pred-model NAME (the key each answer is stored under)")
    import tempfile

    from streamcue.cli.options import parse_params

    judge_option = embedding_model if judge == "embedding" else llm_model
    with tempfile.TemporaryDirectory(prefix="streamcue-gt-") as staged:
        gt_path = _ground_truth(gt, metric, Path(staged)) if gt is not None else None
        report = run_evaluate(metric, gt_path, pred, judge=judge, config_version=config_version,
                              use_cache=not no_cache,
                              judge_options={"model_path" if judge == "embedding" else "model": judge_option,
                                             **({"base_url": llm_base_url} if llm_base_url else {})},
                              bertscore=bertscore, bertscore_model=bertscore_model, pred_format=pred_format,
                              model=pred_model, timing_rule=timing_rule and timing_rule.value,
                              **parse_params(param))
    print_report(report)
    if output:
        write_json(output, report)
        console.out.print(f"report written to {output}")



def _ground_truth(gt: str, metric: str, staged: Path) -> Path:
    """``gt`` as a path the metric reads: a local file or build folder as it is; a release folder or a Hub dataset
    opened (:func:`streamcue.loaders.open_records`) and its metric's records written under ``staged``."""
    from streamcue.io import write_jsonl
    from streamcue.loaders.sources import is_hub_id
    from streamcue.metrics import get_metric
    from streamcue.schemas.discovery import FILE_NAMES, MANIFEST

    path = Path(gt)
    if not is_hub_id(gt) and not (path / MANIFEST).is_file():
        return path
    from streamcue.loaders import open_records

    kinds = [b.kinds for b in BENCHMARKS.values() if b.metric == metric]
    source = open_records(gt, kind=kinds[0] if kinds else get_metric(metric).record_kind)
    for kind, rows in source.by_kind.items():
        write_jsonl(staged / FILE_NAMES[kind], rows)
    write_jsonl(staged / FILE_NAMES["video"], list(source.videos.values()))
    return staged if len(source.by_kind) > 1 else staged / FILE_NAMES[source.kind]
