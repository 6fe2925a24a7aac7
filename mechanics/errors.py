"""Typed errors raised by the mechanics package."""


class ParameterError(ValueError):
    """An invalid parameter; the message names the parameter (as in scene files) and the allowed range."""
