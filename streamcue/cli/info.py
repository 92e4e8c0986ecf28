"""``streamcue schema`` and ``streamcue ls``: what record kinds, builders, strategies and metrics exist."""

from __future__ import annotations

from typing import Annotated

import typer

from streamcue import console

__all__ = ["schema", "list_things"]


def schema(kind: Annotated[str, typer.Argument(help="Record kind, e.g. interval_qa.")]) -> None:
    """Print the fields of a record kind, from its JSON Schema file.

    Example:

        streamcue schema guidance
    """
    from streamcue.schemas.fields import field_rows

    console.out.print(console.table(f"{kind} fields", ["field", "type", "required", "meaning"], field_rows(kind)))



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

