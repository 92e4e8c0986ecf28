"""The ``streamcue`` command line: one subcommand per step of the pipeline.

Library code raises :class:`streamcue.errors.StreamcueError`; :func:`main` alone turns it into
a one-line message on stderr and a non-zero exit code.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any, Optional

import typer
import typer.core
from typer.exceptions import TyperException

from streamcue import console
from streamcue.cli.annotate import annotate_app
from streamcue.cli.anonymize import anonymize
from streamcue.cli.build import build_app
from streamcue.cli.compare import compare_command
from streamcue.cli.demo import demo
from streamcue.cli.evaluate import evaluate
from streamcue.cli.evidence import verify_evidence
from streamcue.cli.info import list_things, schema
from streamcue.cli.options import hide_old_spellings
from streamcue.cli.release import release_app
from streamcue.cli.replay import replay_benchmark_command, replay_command
from streamcue.cli.run import run_command
from streamcue.cli.stats import stats_app
from streamcue.cli.validate import validate
from streamcue.errors import StreamcueError

__all__ = ["PIPELINE", "app", "main", "os_error_line"]


def _version(value: bool) -> None:
    if value:
        from streamcue.version import __version__

        console.out.print(f"streamcue {__version__}")
        raise typer.Exit()


#: Pipeline order: what ``streamcue --help`` lists, top to bottom.
PIPELINE = ("demo", "build", "validate", "anonymize", "verify-evidence", "annotate", "release", "replay",
            "run", "replay-benchmark", "evaluate", "compare", "stats", "schema", "ls")


class _PipelineOrder(typer.core.TyperGroup):
    """Lists commands and command groups together, in :data:`PIPELINE` order (typer puts groups last)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: PIPELINE.index(n) if n in PIPELINE else len(PIPELINE))


app = typer.Typer(
    name="streamcue",
    cls=_PipelineOrder,
    help="Build, verify, publish and score benchmarks for streaming-video assistants.\n\n"
         "Start with: streamcue demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


@app.callback()
def _root(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the streamcue version and exit.")] = None) -> None:
    """Build, verify, publish and score benchmarks for streaming-video assistants.

    Start with: streamcue demo
    """


app.command("demo")(demo)
app.add_typer(build_app, name="build")
app.command("validate")(validate)
app.command("anonymize")(anonymize)
app.command("verify-evidence")(verify_evidence)
app.add_typer(annotate_app, name="annotate")
app.add_typer(release_app, name="release")
app.command("replay")(replay_command)
app.command("run")(run_command)
app.command("replay-benchmark")(replay_benchmark_command)
app.command("evaluate")(evaluate)
app.command("compare")(compare_command)
app.add_typer(stats_app, name="stats")
app.command("schema")(schema)
app.command("ls")(list_things)


def os_error_line(exc: OSError) -> str:
    """One line for an OS error: the path(s), then what the system said (no errno, no traceback)."""
    what = (exc.strerror or str(exc) or type(exc).__name__).rstrip(".")
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {what[:1].lower()}{what[1:]}" if paths else what


@functools.cache
def _command() -> Any:
    """The click command tree typer derives from ``app`` (built once per process: it takes ~0.3 s), old option
    spellings hidden from help (:func:`streamcue.cli.options.hide_old_spellings`)."""
    return hide_old_spellings(typer.main.get_command(app))


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
