"""The ``streamcue`` command line: one subcommand per step of the pipeline.

Library code raises :class:`streamcue.errors.StreamcueError`; :func:`main` alone turns it into
a one-line message on stderr and a non-zero exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import click
import typer

from streamcue import console
from streamcue.errors import StreamcueError

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


@build_app.command("captaincook4d")
def build_captaincook4d(
    annotations: Annotated[Path, typer.Option(help="CaptainCook4D annotation repository folder (annotation_json/, data_splits/, metadata/).")],
    out: Annotated[Path, typer.Option(help="Output folder: guidance.jsonl and videos.jsonl are written there.")],
    count_mistakes: Annotated[str, typer.Option(help="Comma-separated mistake categories that become mistake events.")] =
        "technique,preparation,measurement,timing,temperature",
    recording: Annotated[Optional[list[str]], typer.Option(help="Build only these recording ids (repeatable).")] = None,
) -> None:
    """Build LiveCook-style guidance records for every CaptainCook4D recording.

    Example:

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d
    """
    from streamcue.dataset_builders import captaincook4d
    from streamcue.dataset_builders.output import write_outputs

    config = captaincook4d.Config(
        annotations=annotations,
        counted_mistakes=tuple(c.strip() for c in count_mistakes.split(",") if c.strip()),
        recordings=tuple(recording or ()),
    )
    result = write_outputs(captaincook4d.build(config), out)
    _print_guidance_summary(result.files["guidance"], result.files["video"])


def _print_guidance_summary(guidance_path: Path, videos_path: Path) -> None:
    from streamcue.dataset_builders.summaries import guidance_summary
    from streamcue.io import read_jsonl

    summary = guidance_summary(read_jsonl(guidance_path), read_jsonl(videos_path))
    console.out.print(console.table(f"guidance records ({guidance_path})", summary["columns"], summary["rows"], "split"))
    console.out.print(console.table("mistakes by category", ["mistakes"],
                                    {k: {"mistakes": v} for k, v in summary["mistakes_by_category"].items()}, "category"))


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="JSONL file of records, one per line.")],
    kind: Annotated[str, typer.Option(help="Record kind: video, interval_qa, dense_caption, guidance or a *_prediction kind.")],
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl to check times against (default: the one beside FILE, if any).")] = None,
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
        console.err.print(str(violation), markup=False)
    hidden = len(report.violations) - max_errors
    console.err.print(f"{file}: {len(report.violations)} violations in {report.records} records"
                      + (f" ({hidden} not shown)" if hidden > 0 else ""), markup=False)
    raise typer.Exit(2)


@app.command()
def evaluate(
    metric: Annotated[str, typer.Argument(help="estp-f1 (interval_qa), vsas (dense_caption) or livecook (guidance).")],
    gt: Annotated[Path, typer.Option(help="Ground truth JSONL: full records or minimal ones.")],
    pred: Annotated[Path, typer.Option(help="Predictions JSONL in the matching *_prediction schema.")],
    judge: Annotated[str, typer.Option(help="Answer judge: exact, token-f1, embedding or llm.")] = "token-f1",
    output: Annotated[Optional[Path], typer.Option(help="Write the full JSON report (overall, groups, per_item) here.")] = None,
    config_version: Annotated[Optional[int], typer.Option(help="Metric config version (default: latest).")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="embedding: model folder; llm: model name.")] = None,
    llm_base_url: Annotated[Optional[str], typer.Option(help="llm judge: OpenAI-compatible base URL (or $STREAMCUE_LLM_BASE_URL).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the persistent judge cache.")] = False,
    bertscore: Annotated[bool, typer.Option(help="livecook: compute BERTScore (needs the [embed] extra).")] = True,
    bertscore_model: Annotated[Optional[str], typer.Option(help="livecook: local BERTScore model folder (default: packaged MiniLM, layer 4).")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="Override a metric parameter, NAME=VALUE (e.g. window_s=10); recorded in the report.")] = None,
) -> None:
    """Score predictions against ground truth and print a table (overall and per group).

    Examples:

        streamcue evaluate estp-f1 --gt qa.jsonl --pred pred.jsonl --judge token-f1

        streamcue evaluate vsas --gt captions.jsonl --pred pred.jsonl --judge embedding --output report.json

        streamcue evaluate livecook --gt guidance.jsonl --pred pred.jsonl --param window_s=10
    """
    from streamcue.io import write_json
    from streamcue.metrics import evaluate as run_evaluate
    from streamcue.metrics.report import print_report

    report = run_evaluate(metric, gt, pred, judge=judge, config_version=config_version, use_cache=not no_cache,
                          judge_options={"model_path" if judge == "embedding" else "model": judge_model,
                                         **({"base_url": llm_base_url} if judge == "llm" else {})},
                          bertscore=bertscore, bertscore_model=bertscore_model, **_params(param or []))
    print_report(report)
    if output:
        write_json(output, report)
        console.out.print(f"report written to {output}")


def _params(items: list[str]) -> dict:
    import json

    from streamcue.errors import ConfigError

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            out[name] = json.loads(value)
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
    try:
        from streamcue.metrics import METRICS
        console.out.print("metrics:      " + ", ".join(METRICS))
    except ImportError:  # pragma: no cover - metrics always ship
        pass


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's outputs.")] = Path("streamcue-demo"),
    annotations: Annotated[Optional[Path], typer.Option(help="CaptainCook4D annotations (default: ../shared/data/captaincook4d beside the repository, or $STREAMCUE_CAPTAINCOOK4D).")] = None,
) -> None:
    """Run the main job offline on the embedded defaults: no network, no API key.

    Builds the CaptainCook4D guidance set, validates it and prints a summary.

    Example:

        streamcue demo --out streamcue-demo
    """
    from streamcue.demo import run_demo

    run_demo(out, annotations)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``streamcue`` console script."""
    try:
        code = app(args=argv, prog_name="streamcue", standalone_mode=False)
    except StreamcueError as exc:
        console.err.print(f"error: {exc}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        console.err.print("interrupted", markup=False)
        sys.exit(130)
    # Without standalone mode click returns the code of a typer.Exit instead of exiting.
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
