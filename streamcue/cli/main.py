"""The ``streamcue`` command line: one subcommand per step of the pipeline.

Library code raises :class:`streamcue.errors.StreamcueError`; :func:`main` alone turns it into
a one-line message on stderr (one line per refusal when a gate refuses many videos or files) and a non-zero exit
code.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from typing import Annotated, Any, Optional

import typer
import typer.core
from typer.exceptions import TyperException

from streamcue import console
from streamcue.errors import StreamcueError

__all__ = ["COMMANDS", "PIPELINE", "app", "main", "os_error_line"]


def _version(value: bool) -> None:
    if value:
        from streamcue.version import __version__

        console.out.print(f"streamcue {__version__}")
        raise typer.Exit()


#: Every command and command group: name -> (module, attribute: a command function or a ``typer.Typer`` group),
#: in pipeline order (what ``streamcue --help`` lists, top to bottom). The whole tree is built from it; a run of
#: one command imports only that command's module (importing them all takes ~0.3 s).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("streamcue.cli.demo", "demo"),
    "build": ("streamcue.cli.build", "build_app"),
    "validate": ("streamcue.cli.validate", "validate"),
    "anonymize": ("streamcue.cli.anonymize", "anonymize"),
    "verify-evidence": ("streamcue.cli.evidence", "verify_evidence"),
    "annotate": ("streamcue.cli.annotate", "annotate_app"),
    "release": ("streamcue.cli.release", "release_app"),
    "replay": ("streamcue.cli.replay", "replay_command"),
    "run": ("streamcue.cli.run", "run_command"),
    "evaluate": ("streamcue.cli.evaluate", "evaluate"),
    "compare": ("streamcue.cli.compare", "compare_command"),
    "export": ("streamcue.cli.export", "export_command"),
    "stats": ("streamcue.cli.stats", "stats_app"),
    "schema": ("streamcue.cli.info", "schema"),
    "ls": ("streamcue.cli.info", "list_things"),
}

#: Pipeline order: what ``streamcue --help`` lists, top to bottom.
PIPELINE = tuple(COMMANDS)


class _PipelineOrder(typer.core.TyperGroup):
    """Lists commands and command groups together, in :data:`PIPELINE` order (typer puts groups last)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: PIPELINE.index(n) if n in PIPELINE else len(PIPELINE))


def _loaded_on_read(field: str) -> property:
    """A list attribute of :class:`_Root`, kept in ``field``, whose every read first loads the commands."""

    def read(self: _Root) -> list[Any]:
        self._load()
        return getattr(self, field)

    def write(self: _Root, value: list[Any]) -> None:
        setattr(self, field, value)

    return property(read, write)


class _Root(typer.Typer):
    """The ``streamcue`` app with the commands ``names`` of :data:`COMMANDS`, imported and registered when typer
    first reads them (building the command tree), not when the app is made."""

    def __init__(self, names: tuple[str, ...], **kwargs: Any) -> None:
        self._names, self._loaded = names, False
        super().__init__(**kwargs)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for name in self._names:
            module, attribute = COMMANDS[name]
            target = getattr(importlib.import_module(module), attribute)
            if isinstance(target, typer.Typer):
                self.add_typer(target, name=name)
            else:
                self.command(name)(target)

    # typer reads the app's commands and groups from these two lists: reading either loads the commands first
    registered_commands = _loaded_on_read("_commands")  # type: ignore[assignment]
    registered_groups = _loaded_on_read("_groups")  # type: ignore[assignment]


def _root(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the streamcue version and exit.")] = None) -> None:
    """Build, verify, publish and score benchmarks for streaming-video assistants.

    Start with: streamcue demo
    """


def _app(names: tuple[str, ...]) -> typer.Typer:
    """The root app, its ``--version`` option and help, with the commands ``names``."""
    root = _Root(
        names,
        name="streamcue",
        cls=_PipelineOrder,
        help="Build, verify, publish and score benchmarks for streaming-video assistants.\n\n"
             "Start with: streamcue demo",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
    )
    root.callback()(_root)
    return root


#: The whole app: every command of :data:`COMMANDS` (their modules are imported when its tree is first built).
app = _app(PIPELINE)


def os_error_line(exc: OSError) -> str:
    """One line for an OS error: the path(s), then what the system said (no errno, no traceback)."""
    what = (exc.strerror or str(exc) or type(exc).__name__).rstrip(".")
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {what[:1].lower()}{what[1:]}" if paths else what


@functools.cache
def _command(name: str | None = None) -> Any:
    """The click command tree typer derives from ``app`` (built once per process: it takes ~0.3 s); with ``name`` (a
    key of :data:`COMMANDS`), the same root with that command alone: its usage, options and help are those of the
    whole tree's."""
    tree = typer.main.get_command(app if name is None else _app((name,)))
    return _one_line_paragraphs(_plain_usage(_plain_numbers(tree)))


def _one_line_paragraphs(command: Any) -> Any:
    """Every help text of the tree with each prose paragraph on one line, for the terminal to wrap: typer keeps
    a docstring's line breaks, so at 80 columns its 95-column lines broke twice. Indented paragraphs
    (examples) and ``\\b`` ones stay as written."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(p if p.startswith((" ", "\b")) else " ".join(p.split("\n")) for p in paragraphs)
    for sub in getattr(command, "commands", {}).values():
        _one_line_paragraphs(sub)
    return command


def _plain_usage(command: Any) -> Any:
    """Every argument of the tree named in capitals on its usage line, as click writes it (``streamcue replay
    [OPTIONS] RECORDS``; typer writes ``{records}``, read as a blank left in a template)."""
    for param in getattr(command, "params", []):
        if param.param_type_name == "argument" and param.metavar is None:
            param.metavar = param.name.upper()
            piece = param.metavar + ("..." if param.nargs != 1 else "")
            param.get_usage_pieces = functools.partial(_usage_piece, piece if param.required else f"[{piece}]")
    for sub in getattr(command, "commands", {}).values():
        _plain_usage(sub)
    return command


def _usage_piece(piece: str, ctx: Any) -> list[str]:
    return [piece]


def _plain_numbers(command: Any) -> Any:
    """Every ``int`` and ``float`` option of the tree refuses a value with digit underscores (``--pad 1_0``), as
    the CSV readers do (:func:`streamcue.finite.parse_csv_number`): typer reads numbers as Python does, so ``1_0``
    would be 10. What typer refuses (``0x10``, ``abc``) and each command's own range checks (NaN, Infinity,
    ``1e999``) stay as they are."""
    for param in getattr(command, "params", []):
        if getattr(getattr(param, "type_descriptor", None), "annotation", None) in (int, float):
            param.process_value = functools.partial(_number_text, param.process_value, param)
    for sub in getattr(command, "commands", {}).values():
        _plain_numbers(sub)
    return command


def _number_text(process: Any, param: Any, ctx: Any, value: Any) -> Any:
    """``param``'s ``process_value``: a text with ``_`` is refused naming the option, else typer reads it."""
    for text in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(text, str) and "_" in text:
            raise typer.BadParameter(f"{text!r} is not a number (digit underscores are not read)", ctx=ctx,
                                     param=param)
    return process(ctx, value)


def _usage_line(exc: Exception) -> str:
    """One line for a usage error (a bad choice, an unknown or missing option): click's message, without the
    usage block it prints above it, and where to read the command's help."""
    format_message = getattr(exc, "format_message", None)
    message = " ".join((format_message() if format_message else str(exc)).replace("Value error, ", "").split())
    ctx = getattr(exc, "ctx", None)
    return f"{message} (see '{ctx.command_path} --help')" if ctx is not None else message


#: A refusal of many records (:class:`~streamcue.errors.RecordValidationError`) prints at most this many violations.
_MAX_VIOLATION_LINES = 50


def _error_lines(exc: StreamcueError) -> list[str]:
    """What the command line prints for ``exc``: its one line, or each violation of a
    :class:`~streamcue.errors.RecordValidationError` of separate refusals (``one_line_each``: every refused video
    of a release gate, every refused report of ``annotate anonymization push``) on its own line, at most
    :data:`_MAX_VIOLATION_LINES`, then how many more."""
    violations = getattr(exc, "violations", None) if getattr(exc, "one_line_each", False) else None
    if not violations:
        return [str(exc)]
    more = len(violations) - _MAX_VIOLATION_LINES
    return [str(v) for v in violations[:_MAX_VIOLATION_LINES]] + ([f"... and {more} more"] if more > 0 else [])


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``streamcue`` console script.

    Exit codes: 0 done; 2 bad input, option or file system problem; 3 missing extra; 4 server
    failed; 130 Ctrl-C; 143 SIGTERM. Every error is one line on stderr, never a traceback.
    """
    import sqlite3
    import threading

    from streamcue import interrupt
    from streamcue.redact import redact
    from streamcue.paths import release_outputs

    def fail(message: str | list[str], code: int) -> None:
        for line in [message] if isinstance(message, str) else message:
            console.err.print(f"error: {redact(line)}", markup=False, soft_wrap=True)
        sys.exit(code)

    restore = interrupt.install() if threading.current_thread() is threading.main_thread() else None
    try:
        args = sys.argv[1:] if argv is None else argv
        # `streamcue NAME ...`: build (and import) only that command; the root's --help, --version and
        # unknown names take the whole tree
        command = _command(args[0]) if args and args[0] in COMMANDS else _command()
        code = command(args=argv, prog_name="streamcue", standalone_mode=False)
    except StreamcueError as exc:
        fail(_error_lines(exc), exc.exit_code)
    except TyperException as exc:  # usage errors (an unknown option, a bad choice): one line, like every error
        fail(_usage_line(exc), getattr(exc, "exit_code", 2))
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
        release_outputs()  # the command's output locks (streamcue.paths.lock_output)
    # Without standalone mode click returns the code of a typer.Exit instead of exiting; it turns
    # Ctrl-C into an Abort and returns 130 for it.
    if code == interrupt.EXIT_SIGINT:
        interrupt.finish(interrupt.EXIT_SIGINT)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
