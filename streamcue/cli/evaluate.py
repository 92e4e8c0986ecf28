"""``streamcue evaluate``: score predictions against ground truth with a registered metric.

Every option that only some metrics read has its help made from what those metrics declare
(:attr:`~streamcue.metrics.Metric.option_help`, ``gold_pred_formats``, ``keyed_pred_formats``), so this module
names no benchmark. To add an option: a parameter of :func:`evaluate` (its help from :func:`per_metric` when it
means something per metric, each metric declaring its part in ``option_help``), its check in :func:`_check`, and
its value passed on in :func:`_score`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.metrics.timing import RULES as TIMING_RULES
from streamcue.registry import BENCHMARKS

#: ``--timing-rule`` choices: the shared timing module's rule table.
TimingRule = Enum("TimingRule", {name: name for name in TIMING_RULES}, type=str)

__all__ = ["evaluate", "per_metric"]

#: Each benchmark's metric (streamcue/registry.py) with the record kinds it scores, then reasoning.
_METRIC_HELP = (", ".join(f"{b.metric} ({b.title}: {' / '.join(b.kinds)})" for b in BENCHMARKS.values())
                + " or reasoning (reasoning_trace). streamcue ls lists them.")


def _metrics() -> list[Any]:
    from streamcue.metrics import METRICS

    return list(METRICS.values())


def per_metric(flag: str, joiner: str = "; ", named: bool = True) -> str:
    """What each metric that declares ``flag`` in its ``option_help`` says of it, in registry order
    (``name: text``, or the texts alone without ``named``)."""
    return joiner.join(f"{m.name}: {m.option_help[flag]}" if named else m.option_help[flag]
                       for m in _metrics() if flag in m.option_help)


def _versions_help() -> str:
    from streamcue.metrics.configs import latest_version

    later = [f"{m.name} v{latest_version(m.config)}" for m in _metrics() if latest_version(m.config) > 1]
    return (f"Metric config version (default: the latest{': ' + ', '.join(later) if later else ''}; 1 reproduces "
            "earlier reports). The report names it (config_version).")


def _keyed_formats() -> list[str]:
    return [f for m in _metrics() for f in m.keyed_pred_formats]


def evaluate(
    metric: Annotated[str, typer.Argument(help=_METRIC_HELP)],
    pred: Annotated[Path, typer.Option(help="Predictions JSONL in the matching *_prediction schema.")],
    gt: Annotated[Optional[str], typer.Option(help="Ground truth: a JSONL of full records or minimal ones, a build "
                                                   "folder, a release folder or a Hub dataset ORG/NAME@REVISION. "
                                                   "Needed, except "
                                                   + per_metric("--gt", " or ", named=False) + ".")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Answer judge: exact, token-f1 (default), embedding or llm; "
                                                      "mira for reasoning.")] = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the full JSON report (overall, groups, per_item) "
                                                        "here.")] = None,
    config_version: Annotated[Optional[int], typer.Option(help=_versions_help())] = None,
    llm_base_url: Annotated[Optional[str], typer.Option(help="llm and mira judges: OpenAI-compatible base URL (or "
                                                             "$STREAMCUE_LLM_BASE_URL).")] = None,
    llm_model: Annotated[Optional[str], typer.Option(help="llm and mira judges: model name at --llm-base-url (or "
                                                          "$STREAMCUE_LLM_MODEL).")] = None,
    llm_timeout: Annotated[Optional[float], typer.Option(help="LLM judges: seconds one call may take in all, "
                                                              "retries included (default 300).")] = None,
    llm_retries: Annotated[Optional[int], typer.Option(help="LLM judges: retries of a call answered HTTP "
                                                            "408/409/429/5xx or not answered (default 4).")] = None,
    embedding_model: Annotated[Optional[str], typer.Option(help="embedding judge: sentence-transformers model folder "
                                                                "(default: the packaged all-MiniLM-L6-v2).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the persistent judge "
                                                              "cache.")] = False,
    bertscore: Annotated[bool, typer.Option(help=per_metric("--bertscore") + ".")] = True,
    bertscore_model: Annotated[Optional[str], typer.Option(help=per_metric("--bertscore-model") + ".")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="Override a metric parameter, NAME=VALUE (e.g. "
                                                            "window_s=10); recorded in the report.")] = None,
    pred_format: Annotated[str, typer.Option(help=per_metric("--pred-format") + ".")] = "streamcue",
    pred_model: Annotated[Optional[str], typer.Option(
        "--pred-model", help=f"--pred-format {' or '.join(_keyed_formats())}: the key the model's answers are stored "
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
    from streamcue.io import write_json
    from streamcue.metrics.report import print_report

    options = dict(judge=judge, config_version=config_version, llm_base_url=llm_base_url, llm_model=llm_model,
                   llm_timeout=llm_timeout, llm_retries=llm_retries, embedding_model=embedding_model,
                   no_cache=no_cache, bertscore=bertscore,
                   bertscore_model=bertscore_model, param=param, pred_format=pred_format, pred_model=pred_model,
                   timing_rule=timing_rule and timing_rule.value)
    _check(metric, gt, pred, output, **options)
    report = _score(metric, gt, pred, **options)
    print_report(report)
    if output:
        write_json(output, report)
        console.out.print(f"report written to {output}")


def _check(metric: str, gt: str | None, pred: Path, output: Path | None, **options: Any) -> None:
    """Refuse, before any scoring, what cannot be scored: the inputs and ``--output``, then the options."""
    from streamcue.errors import ConfigError
    from streamcue.metrics import get_metric

    info = get_metric(metric)
    if gt is None and options["pred_format"] not in info.gold_pred_formats:
        readers = [f"{m.name} --pred-format {' or '.join(m.gold_pred_formats)}"
                   for m in _metrics() if m.gold_pred_formats]
        raise ConfigError(f"--gt is needed (only {' and '.join(readers) or 'no metric'} can take the gold answers "
                          "from the file)")
    _check_files(gt, pred, output)
    if options["config_version"] is not None and options["config_version"] < 1:
        raise ConfigError(f"--config-version must be 1 or more, got {options['config_version']}")
    judge = options["judge"]
    if options["embedding_model"] and judge != "embedding":
        raise ConfigError("--embedding-model is the embedding judge's model folder: add --judge embedding")
    if options["llm_model"] and judge == "embedding":
        raise ConfigError("--llm-model is the llm and mira judges' model; the embedding judge takes --embedding-model")
    bounds = [name for name in ("llm_timeout", "llm_retries") if options[name] is not None]
    if bounds and judge in ("exact", "token-f1", "embedding"):
        raise ConfigError(f"--{bounds[0].replace('_', '-')} bounds an LLM judge's calls; --judge {judge} "
                          "makes none")
    if options["pred_format"] in info.keyed_pred_formats and not options["pred_model"]:
        raise ConfigError(f"--pred-format {options['pred_format']} needs --pred-model NAME (the key each answer is "
                          "stored under)")


#: The files of a replay or run folder (docs/runs.md) that ``--output`` may not replace: a finished run is never
#: replaced (its reports first: they tell a run folder).
RUN_FILES = ("replay_report.json", "results.json", "predictions.jsonl", "samples.jsonl", "report.html",
             "prompts.jsonl")


def _check_files(gt: str | None, pred: Path, output: Path | None) -> None:
    """``--output`` is a file that is none of the inputs (nor inside an input folder); the predictions are not
    empty (an empty ground truth: the metric says it)."""
    from streamcue.errors import ConfigError, InputError
    from streamcue.loaders.sources import is_hub_id
    from streamcue.prologue import check_io, is_blank

    local = Path(gt) if gt is not None and not is_hub_id(gt) else None
    inputs = [p for p in (local, pred) if p is not None]
    if output is not None:
        if output.is_dir():
            raise ConfigError(f"--output {output} is a folder; give the report's file name")
        # a metric may read folders (--gt out/ovo, --pred results/GPT): their files are inputs too
        read = [*inputs, *(f for p in inputs if p.is_dir() for f in p.iterdir())]
        check_io({output: "--output"}, read)
        if output.name in RUN_FILES and any((output.parent / name).is_file() for name in RUN_FILES[:2]):
            raise ConfigError(f"--output {output} is a file of the run folder {output.parent}: a run's files are "
                              "never replaced; give the report another name or folder")
    if pred.is_file() and is_blank(pred) and (local is None or local.is_file() and not is_blank(local)):
        raise InputError("empty file: no predictions to score", file=pred)


def _score(metric: str, gt: str | None, pred: Path, **options: Any) -> dict[str, Any]:
    """The metric's report: the ground truth staged where the metric reads it, the judge given its options."""
    import tempfile

    from streamcue.cli.options import parse_params
    from streamcue.metrics import evaluate as run_evaluate

    judge = options["judge"]
    judge_options = {"model_path" if judge == "embedding" else "model":
                     options["embedding_model"] if judge == "embedding" else options["llm_model"],
                     **({"base_url": options["llm_base_url"]} if options["llm_base_url"] else {}),
                     "timeout_s": options["llm_timeout"], "max_retries": options["llm_retries"]}
    with tempfile.TemporaryDirectory(prefix="streamcue-gt-") as staged:
        gt_path = _ground_truth(gt, metric, Path(staged)) if gt is not None else None
        return run_evaluate(metric, gt_path, pred, judge=judge, config_version=options["config_version"],
                            use_cache=not options["no_cache"], judge_options=judge_options,
                            bertscore=options["bertscore"], bertscore_model=options["bertscore_model"],
                            pred_format=options["pred_format"], model=options["pred_model"],
                            timing_rule=options["timing_rule"], **parse_params(options["param"]))


def _ground_truth(gt: str, metric: str, staged: Path) -> Path:
    """``gt`` as a path the metric reads: a local record file as it is; a build folder as it is when the metric
    reads several kinds (OVO-Bench, StreamingBench), else its one record file of the metric's kind (estp-f1 reads
    ``interval_qa.jsonl`` of ``--gt out/estp``); a release folder or a Hub dataset opened
    (:func:`streamcue.loaders.open_records`) and its metric's records written under ``staged``."""
    from streamcue.io import write_jsonl
    from streamcue.loaders.sources import is_hub_id
    from streamcue.metrics import get_metric
    from streamcue.schemas.discovery import FILE_NAMES, MANIFEST

    path = Path(gt)
    kinds = [b.kinds for b in BENCHMARKS.values() if b.metric == metric]
    if not is_hub_id(gt) and not (path / MANIFEST).is_file():
        return _one_record_file(path, metric, kinds[0] if kinds else ())
    from streamcue.loaders import open_records

    source = open_records(gt, kind=kinds[0] if kinds else get_metric(metric).record_kind)
    for kind, rows in source.by_kind.items():
        write_jsonl(staged / FILE_NAMES[kind], rows)
    write_jsonl(staged / FILE_NAMES["video"], list(source.videos.values()))
    return staged if len(source.by_kind) > 1 else staged / FILE_NAMES[source.kind]


def _one_record_file(path: Path, metric: str, kinds: tuple[str, ...]) -> Path:
    """A build folder's one record file of ``metric``'s kind, for a metric of one kind; else ``path`` itself."""
    from streamcue.metrics import get_metric
    from streamcue.schemas.discovery import FILE_NAMES

    kind = get_metric(metric).record_kind
    one = path / FILE_NAMES[kind] if kind in FILE_NAMES else None
    return one if path.is_dir() and len(kinds) <= 1 and one is not None and one.is_file() else path
