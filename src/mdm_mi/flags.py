"""Flag metadata for the verbs' argument dataclasses; imports nothing from ``mdm_mi``.

    sampler: str = field(default="sequential", metadata=h("which sampler"))
"""

from __future__ import annotations


def h(text: str, positional: bool = False, group: str | None = None, empty: bool = False) -> dict:
    """Field metadata carrying a flag's help text: ``field(metadata=h("..."))``; ``positional=True``
    makes the field an optional positional argument instead of a ``--flag``; ``group`` lists the flag
    under that heading in ``--help``; ``empty=True`` lets a required tuple flag be given with no values
    (``--indep-tau`` alone: none), as a config's empty list is passed."""
    return {"help": text, "positional": positional, "group": group, "empty": empty}
