"""One registry pattern for every pluggable kind (models, datasets formats, tasks, perturbations).

Entries may be objects or lazy "module:attr" strings, so importing the registry never imports heavy
dependencies (torch, transformers) until the entry is used.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, TypeVar

from argus_eval.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named mapping from string keys to objects, with lazy entries and entry-point plugins."""

    def __init__(self, kind: str, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._group = entry_point_group
        self._plugins_loaded = False

    def register(self, name: str, obj: T | str | None = None) -> Callable[[T], T]:
        """Register obj under name; usable as a decorator when obj is None."""

        def deco(o: T) -> T:
            self._add(name, o)
            return o

        if obj is not None:
            self._add(name, obj)
        return deco

    def _add(self, name: str, obj: T | str) -> None:
        if name in self._entries and self._entries[name] is not obj:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = obj

    def unregister(self, name: str) -> None:
        """Remove an entry (a plugin or test that registered it takes it back); absent names are ignored."""
        self._entries.pop(name, None)

    def _load_plugins(self) -> None:
        if self._plugins_loaded or self._group is None:
            return
        self._plugins_loaded = True
        for ep in metadata.entry_points(group=self._group):
            if ep.name not in self._entries:
                self._entries[ep.name] = ep.value

    def get(self, name: str) -> T:
        """Return the entry for name, importing it if lazy; raise UnknownNameError listing valid names."""
        self._load_plugins()
        if name not in self._entries:
            close = difflib.get_close_matches(name, self._entries, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{hint}; valid: {', '.join(sorted(self._entries))}"
            )
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            obj: T = getattr(importlib.import_module(module), attr)
            self._entries[name] = obj
            return obj
        return entry

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
