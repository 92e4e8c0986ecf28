"""Benchmark protocols: what each benchmark asks, when, and how answers become predictions.

:data:`PROTOCOLS` maps the benchmark's registry key to its protocol object (one module per
benchmark, named as the key with "-" -> "_"); :class:`~streamcue.loaders.protocols.base.Protocol`
documents the interface. :func:`protocol_for` finds the protocol of a record.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.protocols.base import Context, Protocol, Turn
from streamcue.registry import BENCHMARKS, Derived

__all__ = ["PROTOCOLS", "Context", "Protocol", "Turn", "protocol_for"]

#: benchmark name -> its protocol, read from the benchmark registry (streamcue/registry.py): a registered
#: benchmark's ``loaders/protocols/<protocol>.py`` defines ``PROTOCOL``, and nothing here names it (a module
#: is imported when its entry is read).
PROTOCOLS: Derived[Protocol] = Derived(
    "protocol", lambda: {name: benchmark.protocol for name, benchmark in BENCHMARKS.items()},
    lambda name, module: importlib.import_module(f"{__name__}.{module}").PROTOCOL)


def protocol_for(kind: str, record: Mapping[str, Any] | None = None, benchmark: str | None = None) -> Protocol:
    """The protocol that plays ``kind`` records: the one named by ``benchmark`` (or the record's ``benchmark``
    field), else the only one that plays that kind."""
    benchmark = benchmark or (record or {}).get("benchmark")
    if benchmark is not None:
        if benchmark not in PROTOCOLS:
            raise ConfigError(f"no replay protocol for benchmark {benchmark!r}; known: {', '.join(PROTOCOLS)}")
        protocol = PROTOCOLS[benchmark]
        if kind not in protocol.kinds:
            raise ConfigError(f"benchmark {benchmark} plays {', '.join(protocol.kinds)} records, not {kind}")
        return protocol
    playing = [p for p in PROTOCOLS.values() if kind in p.kinds]
    if len(playing) != 1:
        known = sorted({k for p in PROTOCOLS.values() for k in p.kinds})
        if not playing:
            raise ConfigError(f"no replay protocol plays {kind} records; playable kinds: {', '.join(known)}")
        raise ConfigError(f"{kind} records are played by {', '.join(p.name for p in playing)}: the records name "
                          "none (no benchmark field); pass --benchmark")
    return playing[0]
