"""One registry pattern for every pluggable kind (models, datasets formats, tasks, perturbations).

Entries may be objects or lazy "module:attr" strings, so importing the registry never imports heavy
dependencies (torch, transformers) until the entry is used. A registry given a ``base`` type checks
every entry against it: an object when it is registered, a lazy entry (a built-in "module:attr" or a
plugin's entry point) when it is first imported, so a plugin of the wrong type fails naming itself
instead of deep inside a run. ``freeze`` loads the entry points and makes the registry read-only; under
the console command a planned run freezes every registry whose plugins it loaded (``freeze_loaded``),
so nothing changes the names it chooses among while it runs.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import Any, ClassVar, Generic, TypeVar
from weakref import WeakSet

from argus_eval.errors import RegistryError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named mapping from string keys to objects, with lazy entries and entry-point plugins."""

    # on while the console command runs (``freezing``): then a run freezes what it chose from
    _freezing: ClassVar[bool] = False
    _every: ClassVar[WeakSet[Registry[Any]]] = WeakSet()
    _frozen_by_run: ClassVar[list[Registry[Any]]] = []

    def __init__(self, kind: str, entry_point_group: str | None = None, *, base: type | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._group = entry_point_group
        self._plugins_loaded = False
        self._base = base
        self._frozen = False
        Registry._every.add(self)

    @classmethod
    @contextmanager
    def freezing(cls) -> Iterator[None]:
        """Within it (the console command), ``freeze_loaded`` freezes; leaving it opens those registries
        again, so a caller of the console command in-process (the tests) can still add to them."""
        cls._freezing = True
        try:
            yield
        finally:
            cls._freezing = False
            for registry in cls._frozen_by_run:
                registry._frozen = False
            cls._frozen_by_run.clear()

    @classmethod
    def freeze_loaded(cls) -> None:
        """Inside ``freezing``: freeze every registry that takes plugins and has loaded them. A run calls
        it once it is planned (every built-in entry registered, every plugin it names loaded), so the
        names it chooses among cannot change while it runs; elsewhere it does nothing."""
        if not cls._freezing:
            return
        for registry in list(cls._every):
            if registry._group is not None and registry._plugins_loaded and not registry._frozen:
                registry._frozen = True
                cls._frozen_by_run.append(registry)

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
