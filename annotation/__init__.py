"""Annotation: records <-> Label Studio tasks (push, pull, status), the double-check rule, agreement, evidence checks.

The modules are imported by name (``streamcue.annotation.roundtrip``, ``.verify``, ``.agreement``, ...);
the package itself exports nothing.
"""

__all__: list[str] = []
