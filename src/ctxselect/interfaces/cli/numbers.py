"""Numeric option types: the CLI checks a number against the same Bound as the Python API.

A value out of range is a usage error (exit 2) whose message is the API's ConfigError.
"""

from __future__ import annotations

from typing import Any

import click

from ctxselect.config import Bound
from ctxselect.errors import ConfigError


class BoundedNumber(click.ParamType):
    """A whole or finite number within a :class:`~ctxselect.config.Bound`."""

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        self.name = "integer" if bound.whole else "float"  # metavar as click's own int/float

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` and check it, failing as a usage error with the API's message."""
        try:
            number = parse(value, self.bound)
            self.bound.check(number)
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)
        return number


def parse(value: Any, bound: Bound) -> int | float:
    """Turn an option's text into a number of the bound's kind, or raise ConfigError."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        return int(text) if bound.whole else float(text)
    except ValueError:
        kind = "whole number" if bound.whole else "number"
        raise ConfigError(
            f"{bound.what} must be {bound.describe()}, got {text!r} (not a {kind})"
        ) from None


def number(bound: Bound) -> BoundedNumber:
    """The click type of an option checked against ``bound``."""
    return BoundedNumber(bound)


def number_list(bound: Bound) -> Any:
    """A click callback parsing "400,800,1600" into numbers, each checked against ``bound``."""

    def callback(
        _ctx: click.Context, _param: click.Parameter, value: str | None
    ) -> tuple[Any, ...]:
        if value is None:
            return ()
        try:
            numbers = tuple(parse(part, bound) for part in value.split(",") if part.strip())
            for item in numbers:
                bound.check(item)
        except ConfigError as exc:
            raise click.BadParameter(f"{exc} (in the comma-separated list {value!r})") from None
        return numbers

    return callback
