"""The one registry type behind every extension point: kernel families, collective
algorithms, trace importers.

A registry maps names to implementations. An entry is either the implementation itself
(``register``) or where it lives, ``module:attribute`` (``register_lazy``): then the
name is known at once and the module is imported the first time the entry is asked
for, so that a lower layer may check a name (a chip config's ``family_values`` naming a
kernel family) without importing the implementations, which sit above it. Names keep
the order they were registered in; an unknown name is one line naming it and the known
ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from accelsim.errors import InputError, shown

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> implementations of one extension point; ``what`` names the kind of
    thing in errors ("kernel family")."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        """Add ``item`` as ``name``; returns it (so a decorator may return it too)."""
        self._add(name, item)
        self._loaded[name] = item
        return item

    def register_lazy(self, name: str, target: str) -> None:
        """Add ``name`` as the attribute ``target`` (``module:attribute``) of a module
        imported when the entry is first asked for."""
        module, colon, attribute = target.partition(":")
        if not colon or not module or not attribute:
            raise ValueError(f"expected module:attribute for {self.what} {name!r}, got {target!r}")
        self._add(name, target)

    def decorator(self, name: str) -> Callable[[T], T]:
        """``@registry.decorator("name")`` registers what it decorates."""
        return lambda item: self.register(name, item)

    def _add(self, name: str, entry: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._entries[name] = entry

    def get(self, name: str, *, source: str | None = None, field: str | None = None) -> T:
        """The implementation called ``name``; an unknown one is an :class:`InputError`
        located at ``source`` / ``field`` (where the name was given)."""
        if name not in self._entries:
            raise self.unknown(name, source=source, field=field)
        if name not in self._loaded:
            module, _, attribute = str(self._entries[name]).partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[name]

    def unknown(self, name: str, *, source: str | None = None, field: str | None = None,
                also: Sequence[str] = ()) -> InputError:
        """The error for a name that is not registered: the name and the known ones
        (``also``: names the caller accepts besides, such as ``auto``)."""
        return InputError(f"unknown {self.what} {shown(name)}; expected one of: {', '.join([*also, *self])}",
                          source=source, field=field)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's toy extension, say)."""
        self._entries.pop(name)
        self._loaded.pop(name, None)
