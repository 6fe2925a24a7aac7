"""The error raised for every invalid mesh input."""

from __future__ import annotations

__all__ = ["MeshError"]


class MeshError(ValueError):
    """A mesh file or array that cannot be used, with a message a person can act on.

    The message names the file (or ``<arrays>``), what is wrong, how many items are affected and the
    first offending ids.
    """
