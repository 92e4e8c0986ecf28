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
    """List benchmarks and sources (from streamcue/registry.py), then record kinds, builders, strategies and metrics.

    Example:

        streamcue ls
    """
    from streamcue.registry import BENCHMARKS, SOURCES

    console.out.print("benchmarks:", markup=False)
    for name, bench in BENCHMARKS.items():
        builders = ", ".join(SOURCES[s].builder for s in bench.sources)
        licences = ", ".join(SOURCES[s].licence for s in bench.sources)
        console.out.print(f"  {name} ({bench.title}): kinds {', '.join(bench.kinds)}; build {builders}; "
                          f"evaluate {bench.metric}; licence {licences}", markup=False)
    console.out.print("sources:", markup=False)
    for name, source in SOURCES.items():
        shared = "redistributable" if source.redistributable else "not redistributable"
        console.out.print(f"  {name} ({source.title}): {source.licence}, {shared}; {source.licence_note}",
                          markup=False)

    from streamcue.dataset_builders import BUILDERS
    from streamcue.schemas import KINDS

    console.out.print("record kinds: " + ", ".join(KINDS))
    console.out.print("builders:     " + ", ".join(BUILDERS))
    for name, builder in BUILDERS.items():
        console.out.print(f"  build {name}: {builder.summary}", markup=False)
    from streamcue.loaders.strategies import STRATEGIES

    console.out.print("strategies:   " + ", ".join(STRATEGIES) + " (streamcue replay)", markup=False)
    from streamcue.metrics import METRICS
    from streamcue.metrics.configs import latest_version

    metrics = [f"{name} (default config {m.config}.v{latest_version(m.config)})" for name, m in METRICS.items()]
    console.out.print("metrics:      " + ", ".join(metrics), markup=False)
