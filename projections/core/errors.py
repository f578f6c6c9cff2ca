"""Errors of the read side. Domain-level: they know nothing about HTTP."""

from __future__ import annotations


class ProjectionError(Exception):
    """Root of every error raised by the `projections` package (except embedding providers)."""


class ProjectionBusy(ProjectionError):
    """Another projector instance is already writing this projection directory."""


class RebuildRequired(ProjectionError):
    """The stored projection was built with another model, dimension or schema: replay it."""


class RebuildTargetNotEmpty(ProjectionError):
    """A rebuild was asked to write into a directory that already holds projections."""


class InvalidQuery(ProjectionError, ValueError):
    """A read was asked with invalid arguments (bad namespace, empty query, bad limit)."""
