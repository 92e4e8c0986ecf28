"""The ``streamcue`` command line: one module per command group, registered in pipeline order in :mod:`.main`.

Library code raises :class:`streamcue.errors.StreamcueError`; :func:`main` alone turns it into
a one-line message on stderr and a non-zero exit code.
"""

from streamcue.cli.main import app, main

__all__ = ["app", "main"]
