"""Name -> factory registries, so every stage lists its valid names from one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from ctxselect.errors import UnknownNameError

F = TypeVar("F")


class Registry(Generic[F]):
    """Short lowercase names (the same in Python, CLI, MCP and manifest) to factories.

    ``F`` is the type of what is registered: a class, or a function.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorate a factory (class or function) to register it under ``name``."""

        def decorate(factory: F) -> F:
            self._factories[name] = factory
            return factory

        return decorate

    def get(self, name: str) -> F:
        """Return the factory for ``name`` or raise an error listing the valid names."""
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._factories) from None

    def check(self, name: str) -> str:
        """Return ``name`` if registered, else raise the same error as :meth:`get`."""
        self.get(name)
        return name

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)
