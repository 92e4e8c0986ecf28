"""``python -m streamcue``: the same as the ``streamcue`` command."""

from streamcue.cli import main

__all__: list[str] = []

main()
