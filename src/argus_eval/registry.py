"""One registry pattern for every pluggable kind (models, datasets formats, tasks, perturbations).

Entries may be objects or lazy "module:attr" strings, so importing the registry never imports heavy
dependencies (torch, transformers) until the entry is used. A registry given a ``base`` type checks
every entry against it: an object when it is registered, a lazy entry (a built-in "module:attr" or a
plugin's entry point) when it is first imported, so a plugin of the wrong type fails naming itself
instead of deep inside a run. ``freeze`` loads the entry points and makes the registry read-only; the
console command freezes every registry that takes plugins right after they load (``freeze_after_loading``), so
nothing changes the names a run chooses among while it runs.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import ClassVar, Generic, TypeVar

from argus_eval.errors import RegistryError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named mapping from string keys to objects, with lazy entries and entry-point plugins."""

    # set once by the console command: each registry freezes as soon as its entry points are loaded
    _freeze_on_load: ClassVar[bool] = False

    def __init__(self, kind: str, entry_point_group: str | None = None, *, base: type | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._group = entry_point_group
        self._plugins_loaded = False
        self._base = base
        self._frozen = False

    @classmethod
    def freeze_after_loading(cls) -> None:
        """From now on every registry of this process that takes plugins freezes once its entry points
        are loaded (at its first lookup)."""
        cls._freeze_on_load = True

    def freeze(self) -> None:
        """Load the entry points, then refuse every later register or unregister (RegistryError)."""
        self._load_plugins()
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    def _check(self, name: str, obj: object, origin: str) -> None:
        """RegistryError unless obj is an instance of the base type (a class entry: a subclass of it)."""
        base = self._base
        if base is None or isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base)):
            return
        raise RegistryError(
            f"{self.kind} {name!r} ({origin}) is a {type(obj).__name__}, not a {base.__name__}; "
            f"register a {base.__name__} (see {base.__module__})"
        )

    def _refuse_if_frozen(self, name: str) -> None:
        if self._frozen:
            raise RegistryError(
                f"{self.kind} registry is frozen (its plugins are loaded): cannot change {name!r}; "
                "register it before the run starts, or through its entry-point group"
                + (f" {self._group}" if self._group else "")
            )

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
        self._refuse_if_frozen(name)
        if not isinstance(obj, str):  # a lazy "module:attr" entry is checked when it is imported
            self._check(name, obj, "registered")
        self._entries[name] = obj

    def unregister(self, name: str) -> None:
        """Remove an entry (a plugin or test that registered it takes it back); absent names are ignored."""
        self._refuse_if_frozen(name)
        self._entries.pop(name, None)

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in metadata.entry_points(group=self._group) if self._group else ():
            if ep.name not in self._entries:
                self._entries[ep.name] = ep.value
        if Registry._freeze_on_load and self._group is not None:
            self._frozen = True

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
            self._check(name, obj, entry)
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
