"""``streamcue build <builder>``: turn source annotations into streamcue records (one command per builder).

Every builder that streamcue/registry.py names gets its command from its own module
(``dataset_builders/<module>.py``): the ``command`` it writes by hand, else one generated from its ``Config``
(``build_generated.py``). This module names none of them.
"""

from __future__ import annotations

import typer

from streamcue.cli.build_generated import BuildGroup

__all__ = ["build_app"]


build_app = typer.Typer(cls=BuildGroup, help="Turn source annotations into streamcue records.", no_args_is_help=True)
