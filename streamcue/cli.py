"""The ``streamcue`` command line: one subcommand per step of the pipeline.

Library code raises :class:`streamcue.errors.StreamcueError`; :func:`main` alone turns it into
a one-line message on stderr and a non-zero exit code.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.exceptions import TyperException

from streamcue import console
from streamcue.cli_annotate import annotate_app
from streamcue.cli_anonymize import anonymize
from streamcue.cli_benchmarks import build_ovo_bench, build_streamingbench, replay_benchmark_command
from streamcue.cli_evidence import evidence_stats, verify_evidence
from streamcue.cli_livecook import build_livecook_augment, build_livecook_summaries
from streamcue.cli_options import LLMBaseURL, LLMConcurrency, LLMModel, LLMStructured, NoCache
from streamcue.cli_recorded import build_recorded, stats_app
from streamcue.cli_release import release_app
from streamcue.cli_replay import replay_command
from streamcue.errors import StreamcueError

__all__ = ["app", "build_app", "build_captaincook4d", "build_ego4d", "validate", "evaluate", "schema", "list_things",
           "demo", "main"]


app = typer.Typer(
    name="streamcue",
    help="Build, verify, publish and score benchmarks for streaming-video assistants.\n\n"
         "Start with: streamcue demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
build_app = typer.Typer(help="Turn source annotations into streamcue records.", no_args_is_help=True)
app.add_typer(build_app, name="build")
app.add_typer(release_app, name="release")
app.command("anonymize")(anonymize)
app.command("verify-evidence")(verify_evidence)
build_app.command("recorded")(build_recorded)
build_app.command("livecook-summaries")(build_livecook_summaries)
build_app.command("livecook-augment")(build_livecook_augment)
build_app.command("ovo-bench")(build_ovo_bench)
build_app.command("streamingbench")(build_streamingbench)
app.command("replay-benchmark")(replay_benchmark_command)
app.add_typer(stats_app, name="stats")
stats_app.command("evidence")(evidence_stats)
app.add_typer(annotate_app, name="annotate")
app.command("replay")(replay_command)


@build_app.command("captaincook4d")
def build_captaincook4d(
    annotations: Annotated[Path, typer.Option(help="CaptainCook4D annotation repository folder (annotation_json/, "
                                                   "data_splits/, metadata/).")],
    out: Annotated[Path, typer.Option(help="Output folder: guidance.jsonl, videos.jsonl and build_report.json.")],
    count_mistakes: Annotated[str, typer.Option(help="Comma-separated mistake categories that become mistake "
                                                     "events.")] =
        "technique,preparation,measurement,timing,temperature",
    recording: Annotated[Optional[list[str]], typer.Option(help="Build only these recording ids (repeatable).")] = None,
    jitter_s: Annotated[float, typer.Option(
        help="Training export: shift train-split instruction times by up to +-this many seconds "
             "(LiveCook: 30).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of --jitter-s.")] = 0,
    warn_inconsistent: Annotated[bool, typer.Option(
        "--warn-inconsistent", help="Inconsistent sources (no error_annotations.json, a recording in two splits, "
        "repeated entries) become warnings in build_report.json instead of errors.")] = False,
) -> None:
    """Build LiveCook-style guidance records for every CaptainCook4D recording.

    Examples:

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d-train \
            --jitter-s 30 --seed 1    # training export: train-split instructions jittered, benchmark splits untouched
    """
    from streamcue.dataset_builders import captaincook4d, get_builder, run_builder
    from streamcue.dataset_builders.summaries import print_guidance_summary

    config = captaincook4d.Config(
        annotations=annotations,
        counted_mistakes=tuple(c.strip() for c in count_mistakes.split(",") if c.strip()),
        recordings=tuple(recording or ()),
        jitter_s=jitter_s,
        jitter_seed=seed,
        warn_inconsistent=warn_inconsistent,
    )
    result, report = run_builder(get_builder("captaincook4d"), config, out, inputs=[annotations])
    for warning in report.details.get("warnings", []):
        console.err.print(f"warning: {warning}", markup=False, soft_wrap=True)
    print_guidance_summary(result.files["guidance"], result.files["video"])


@build_app.command("ego4d")
def build_ego4d(
    goalstep: Annotated[Path, typer.Option(help="Ego4D GoalStep annotation JSON with timed steps (the val file).")],
    out: Annotated[Path, typer.Option(help="Output folder: interval_qa.jsonl, videos.jsonl and build_report.json.")],
    narrations: Annotated[Optional[Path], typer.Option(help="Ego4D narration.json: AR questions and the coverage "
                                                            "check.")] = None,
    captions: Annotated[Optional[Path], typer.Option(help="Captions JSONL {video_id, start_s, end_s, kind, text}: "
                                                          "enables the LLM stages.")] = None,
    llm_base_url: LLMBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: LLMStructured = "json_schema",
    llm_concurrency: LLMConcurrency = 4,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Run only the stages that need no LLM, even with "
                                                          "captions.")] = False,
    min_clip_s: Annotated[float, typer.Option(help="Drop clips (top-level steps) shorter than this.")] = 10.0,
    min_coverage: Annotated[float, typer.Option(help="Drop clips whose narration coverage is below this (with "
                                                     "--narrations).")] = 0.3,
    video: Annotated[Optional[list[str]], typer.Option(help="Build only these video ids (repeatable).")] = None,
    no_cache: NoCache = False,
) -> None:
    """Build ESTP-Bench style proactive questions (interval_qa) from Ego4D annotations.

    Without captions only the template stages run (NAR, TU, TRC from GoalStep; AR from
    narrations). With captions and an LLM endpoint the ESTP-Gen stages run too: one-to-one
    generation, one-to-many retrieval expansion and many-to-many grouping. LLM answers are
    cached: re-running makes no new calls and a killed build resumes.

    Examples:

        streamcue build ego4d --goalstep ../shared/data/ego4d_goalstep/data/goalstep_valid.json --out out/ego4d

        streamcue build ego4d --goalstep val.json --narrations narration.json --captions captions.jsonl \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-7B-Instruct --out out/ego4d
    """
    from streamcue.dataset_builders import ego4d, get_builder, run_builder
    from streamcue.dataset_builders.estp_gen.clean import CleanConfig
    from streamcue.dataset_builders.summaries import print_ego4d_summary
    from streamcue.llm import LLMSettings

    settings = None
    if captions and not no_llm:
        settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                       max_concurrency=llm_concurrency)
    config = ego4d.Config(goalstep=goalstep, narrations=narrations, captions=captions, llm=settings,
                          use_cache=not no_cache, clean=CleanConfig(min_duration_s=min_clip_s,
                                                                    min_coverage=min_coverage),
                          videos=tuple(video or ()))
    _, report = run_builder(get_builder("ego4d"), config, out,
                            inputs=[p for p in (goalstep, narrations, captions) if p])
    print_ego4d_summary(report)


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="JSONL file of records, one per line.")],
    kind: Annotated[str, typer.Option(help="Record kind: video, interval_qa, dense_caption, guidance or a "
                                           "*_prediction kind.")],
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl to check times against (default: the one "
                                                        "beside FILE, if any).")] = None,
    max_errors: Annotated[int, typer.Option(help="Print at most this many violations.")] = 50,
) -> None:
    """Check every record of FILE against its schema and the semantic rules.

    Every violation is printed on one line (file:line, record id, JSON path, message); the exit
    code is non-zero when there is any.

    Example:

        streamcue validate out/cc4d/guidance.jsonl --kind guidance
    """
    from streamcue.schemas import check_file

    report = check_file(file, kind, videos=videos)
    if report.ok:
        console.out.print(f"{file}: {report.records} {kind} records, all valid")
        return
    for violation in report.violations[:max_errors]:
        console.err.print(str(violation), markup=False, soft_wrap=True)  # one line each, piped or not
    hidden = len(report.violations) - max_errors
    console.err.print(f"{file}: {len(report.violations)} violations in {report.records} records"
                      + (f" ({hidden} not shown)" if hidden > 0 else ""), markup=False, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def evaluate(
    metric: Annotated[str, typer.Argument(help="estp-f1 (interval_qa), vsas (dense_caption), livecook (guidance) or "
                                               "reasoning (reasoning_trace).")],
    gt: Annotated[Path, typer.Option(help="Ground truth JSONL: full records or minimal ones.")],
    pred: Annotated[Path, typer.Option(help="Predictions JSONL in the matching *_prediction schema.")],
    judge: Annotated[Optional[str], typer.Option(help="Answer judge: exact, token-f1 (default), embedding or llm; "
                                                      "mira for reasoning.")] = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the full JSON report (overall, groups, per_item) "
                                                        "here.")] = None,
    config_version: Annotated[Optional[int], typer.Option(help="Metric config version (default: the latest, "
                                                          "livecook v2 and vsas v2 since 2026-11-23; 1 reproduces "
                                                          "earlier reports). The report names it "
                                                          "(config_version).")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="embedding: model folder; llm: model name.")] = None,
    llm_base_url: Annotated[Optional[str], typer.Option(help="llm judge: OpenAI-compatible base URL (or "
                                                             "$STREAMCUE_LLM_BASE_URL).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the persistent judge "
                                                              "cache.")] = False,
    bertscore: Annotated[bool, typer.Option(help="livecook: compute BERTScore (needs the embed extra).")] = True,
    bertscore_model: Annotated[Optional[str], typer.Option(help="livecook: local BERTScore model folder (default: "
                                                                "packaged MiniLM, layer 4).")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="Override a metric parameter, NAME=VALUE (e.g. "
                                                            "window_s=10); recorded in the report.")] = None,
    pred_format: Annotated[str, typer.Option(
        help="ovo-bench: streamcue or ovo-results (a results folder); streamingbench: streamcue or "
             "streamingbench (an answered questions file).")] = "streamcue",
    model: Annotated[Optional[str], typer.Option(
        help="--pred-format streamingbench: the key the model's answers are stored under.")] = None,
) -> None:
    """Score predictions against ground truth and print a table (overall and per group).

    Examples:

        streamcue evaluate estp-f1 --gt qa.jsonl --pred pred.jsonl --judge token-f1

        streamcue evaluate vsas --gt captions.jsonl --pred pred.jsonl --judge embedding --output report.json

        streamcue evaluate livecook --gt guidance.jsonl --pred pred.jsonl --param window_s=10

        streamcue evaluate reasoning --gt traces.jsonl --pred pred.jsonl --judge mira --judge-model MODEL \\
            --llm-base-url http://127.0.0.1:8000/v1

        streamcue evaluate ovo-bench --gt out/ovo --pred ../shared/data/ovo_bench/results/GPT --pred-format ovo-results

        streamcue evaluate streamingbench --gt out/sb --pred real_output.json --pred-format streamingbench \\
            --model MiniCPM-V --param rules=strict
    """
    from streamcue.errors import ConfigError
    from streamcue.io import write_json
    from streamcue.metrics import evaluate as run_evaluate
    from streamcue.metrics.report import print_report
    from streamcue.paths import check_outputs

    if output is not None:  # refused before any scoring: a folder, or one of the inputs
        if output.is_dir():
            raise ConfigError(f"--output {output} is a folder; give the report's file name")
        # ovo-bench / streamingbench read folders (--gt out/ovo, --pred results/GPT): their files are inputs too
        read = [gt, pred, *(f for p in (gt, pred) if p.is_dir() for f in p.iterdir())]
        check_outputs({output: "--output"}, read)
    report = run_evaluate(metric, gt, pred, judge=judge, config_version=config_version, use_cache=not no_cache,
                          judge_options={"model_path" if judge == "embedding" else "model": judge_model,
                                         **({"base_url": llm_base_url} if llm_base_url else {})},
                          bertscore=bertscore, bertscore_model=bertscore_model, pred_format=pred_format, model=model,
                          **_params(param or []))
    print_report(report)
    if output:
        write_json(output, report)
        console.out.print(f"report written to {output}")


def _params(items: list[str]) -> dict:
    import json

    from streamcue.errors import ConfigError
    from streamcue.finite import NonFiniteNumber
    from streamcue.io import loads

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            out[name] = loads(value)
        except NonFiniteNumber:
            raise ConfigError(f"--param {name}: {value} is not a finite number") from None
        except json.JSONDecodeError:
            out[name] = value
    return out


@app.command()
def schema(kind: Annotated[str, typer.Argument(help="Record kind, e.g. interval_qa.")]) -> None:
    """Print the fields of a record kind, from its JSON Schema file.

    Example:

        streamcue schema guidance
    """
    from streamcue.schemas.fields import field_rows

    console.out.print(console.table(f"{kind} fields", ["field", "type", "required", "meaning"], field_rows(kind)))


@app.command("ls")
def list_things() -> None:
    """List record kinds, builders and metrics.

    Example:

        streamcue ls
    """
    from streamcue.dataset_builders import BUILDERS
    from streamcue.schemas import KINDS

    console.out.print("record kinds: " + ", ".join(KINDS))
    console.out.print("builders:     " + ", ".join(BUILDERS))
    for name, builder in BUILDERS.items():
        console.out.print(f"  build {name}: {builder.summary}", markup=False)
    from streamcue.loaders.strategies import STRATEGIES

    console.out.print("strategies:   " + ", ".join(STRATEGIES) + " (streamcue replay)", markup=False)
    try:
        from streamcue.metrics import METRICS
        from streamcue.metrics.configs import LATEST

        console.out.print("metrics:      " + ", ".join(f"{name} (default config {info.config}.v{LATEST[info.config]})"
                                                       for name, info in METRICS.items()), markup=False)
    except ImportError:  # pragma: no cover - metrics always ship
        pass


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's outputs.")] = Path("streamcue-demo"),
    annotations: Annotated[Optional[Path], typer.Option(help="CaptainCook4D annotations (default: "
                                                             "../shared/data/captaincook4d beside the repository, "
                                                             "or $STREAMCUE_CAPTAINCOOK4D).")] = None,
) -> None:
    """Run the main job offline on the embedded defaults: no network, no API key.

    Builds the CaptainCook4D guidance set, validates it and prints a summary.

    Example:

        streamcue demo --out streamcue-demo
    """
    from streamcue.demo import run_demo

    run_demo(out, annotations)


def os_error_line(exc: OSError) -> str:
    """One line for an OS error: the path(s), then what the system said (no errno, no traceback)."""
    what = (exc.strerror or str(exc) or type(exc).__name__).rstrip(".")
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {what[:1].lower()}{what[1:]}" if paths else what


@functools.cache
def _command() -> Any:
    """The click command tree typer derives from ``app`` (built once per process: it takes ~0.3 s)."""
    return typer.main.get_command(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``streamcue`` console script.

    Exit codes: 0 done; 2 bad input, option or file system problem; 3 missing extra; 4 server
    failed; 130 Ctrl-C; 143 SIGTERM. Every error is one line on stderr, never a traceback.
    """
    import sqlite3
    import threading

    from streamcue import interrupt
    from streamcue.errors import mask_secrets

    def fail(message: str, code: int) -> None:
        console.err.print(f"error: {mask_secrets(message)}", markup=False, soft_wrap=True)
        sys.exit(code)

    restore = interrupt.install() if threading.current_thread() is threading.main_thread() else None
    try:
        code = _command()(args=argv, prog_name="streamcue", standalone_mode=False)
    except StreamcueError as exc:
        fail(str(exc), exc.exit_code)
    except TyperException as exc:  # usage errors: typer's vendored click reports them
        exc.show()
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        interrupt.finish(interrupt.EXIT_SIGINT)
    except interrupt.Terminated:
        interrupt.finish(interrupt.EXIT_SIGTERM, "terminated")
    except OSError as exc:  # the file system said no: a full disk, a read-only folder, a path that is a file
        fail(os_error_line(exc), 2)
    except sqlite3.Error as exc:
        fail(f"cache database: {exc} (delete it or point $STREAMCUE_CACHE_DIR elsewhere)", 2)
    finally:  # main() called in-process (tests, notebooks): leave the caller's handlers as they were
        if restore is not None:
            restore()
    # Without standalone mode click returns the code of a typer.Exit instead of exiting; it turns
    # Ctrl-C into an Abort and returns 130 for it.
    if code == interrupt.EXIT_SIGINT:
        interrupt.finish(interrupt.EXIT_SIGINT)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
