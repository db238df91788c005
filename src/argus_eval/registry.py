"""One registry pattern for every pluggable kind (models, datasets formats, tasks, perturbations).

Entries may be objects or lazy "module:attr" strings, so importing the registry never imports heavy
dependencies (torch, transformers) until the entry is used. A registry given a ``base`` type checks
every entry against it (and an ``admit`` function turns an entry into what the registry holds, refusing
it with an ArgusError): an object when it is registered, a lazy entry when it is first imported.

Plugins are entry points of the registry's group, and nothing a plugin ships is trusted before a run
names it: reading the installed distributions' entry_points.txt imports nothing, and a lookup of a name
that is not registered loads that one entry point only. Whatever goes wrong with it (its module is
missing or raises while importing, it names an object of the wrong type, it claims the name of a
built-in, two distributions claim the same name) is one PluginError naming the distribution, the group
and the entry point, raised to the run that named it alone; ``plugin_statuses`` loads every entry point
for a listing (``argus models``) and reports each problem instead of raising.

Every registry has a base type (``base``, required), and an ``admit`` function may turn an entry into
what it holds. ``freeze`` reads the entry points and makes the registry read-only; a run freezes every
registry while it runs (``frozen_for_run``, nest-safe), so nothing changes the names it chooses among (a
named plugin still loads then: its name was there already). A lookup never writes to the registrations:
an imported lazy entry or a loaded plugin is kept in a cache beside them.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any, ClassVar, Generic, TypeVar, cast
from weakref import WeakSet

from argus_eval.errors import ArgusError, PluginError, RegistryError, UnknownNameError, did_you_mean

T = TypeVar("T")
# The base type of a registry of functions (or classes called as one): what is callable.
CALLABLE = cast(type, Callable)

# What importing a plugin's module may raise. SystemExit too: a plugin that calls sys.exit while it
# imports must not end the run with no word; Ctrl-C (KeyboardInterrupt) still interrupts.
_IMPORT_FAILURES = (Exception, SystemExit)
_WHY_CHARS = 240  # a plugin's own exception text, as quoted in the one error line


@dataclass(frozen=True)
class PluginStatus:
    """One entry point of a registry's group as a listing shows it; problem None: it is usable.
    A distribution whose entry_points.txt cannot be read is one status with no name or value."""

    group: str
    name: str
    value: str
    distribution: str
    problem: str | None


@dataclass(frozen=True)
class _Installed:
    """Every installed distribution's entry points by group, and the distributions whose entry points
    cannot be read (one malformed entry_points.txt must not hide every other plugin, or end a run)."""

    by_group: dict[str, list[metadata.EntryPoint]]
    unreadable: list[tuple[str, str]]  # (distribution, why)


def _one_line(text: str, limit: int = _WHY_CHARS) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _label(dist: metadata.Distribution | None) -> str:
    """'NAME VERSION' of a distribution, as its METADATA says."""
    if dist is None:
        return "an unknown distribution"
    name: str | None = None
    version: str | None = None
    try:
        meta = dist.metadata
        name, version = meta["Name"], meta["Version"]
    except Exception:  # a METADATA file that cannot be read still names its folder below
        pass
    if not name:
        return _one_line(f"the distribution at {getattr(dist, '_path', '?')}", 200)
    return _one_line(f"{name} {version}" if version else str(name), 200)


@cache
def _installed() -> _Installed:
    """Read once per process: every distribution on sys.path, the first of each name winning (as
    importlib.metadata.entry_points does); no plugin module is imported."""
    by_group: dict[str, list[metadata.EntryPoint]] = {}
    unreadable: list[tuple[str, str]] = []
    seen: set[str] = set()
    for dist in metadata.distributions():
        label = _label(dist)
        try:
            raw = dist.metadata["Name"]
        except Exception:
            raw = None
        key = re.sub(r"[-_.]+", "-", str(raw)).lower() if raw else f"<{id(dist)}>"
        if key in seen:
            continue
        seen.add(key)
        try:
            eps = list(dist.entry_points)
        except Exception as e:
            unreadable.append((label, f"its entry_points.txt cannot be read ({_why(e)})"))
            continue
        for ep in eps:
            by_group.setdefault(ep.group, []).append(ep)
    return _Installed(by_group, unreadable)


def _why(e: BaseException) -> str:
    text = str(e)
    return _one_line(f"{type(e).__name__}: {text}" if text else type(e).__name__)


def _where(ep: metadata.EntryPoint, group: str) -> str:
    dist = _label(getattr(ep, "dist", None))
    value = _one_line(ep.value, 120)
    return f"plugin {_one_line(ep.name, 80)!r} of group {group} (entry point {value}, distribution {dist})"


def _module_of(entry: object) -> str:
    """The module that registered entry (a function's or class's own, an instance's class's)."""
    if isinstance(entry, str):
        return entry.partition(":")[0]
    return str(getattr(entry, "__module__", None) or type(entry).__module__)


class Registry(Generic[T]):
    """A named mapping from string keys to objects, with lazy entries and entry-point plugins."""

    _every: ClassVar[WeakSet[Registry[Any]]] = WeakSet()
    _runs: ClassVar[int] = 0  # how many runs are under way (a run inside a run: 2)
    _frozen_by_run: ClassVar[list[Registry[Any]]] = []

    def __init__(
        self,
        kind: str,
        entry_point_group: str | None = None,
        *,
        base: type,
        admit: Callable[[str, Any], T] | None = None,
    ) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}  # the registrations: objects or lazy "module:attr"
        self._cache: dict[str, T] = {}  # imported lazy entries and loaded plugins, by name
        self._group = entry_point_group
        self._index: dict[str, list[metadata.EntryPoint]] | None = None  # read on first lookup
        self._base = base
        self._admit = admit
        self._frozen = False
        self._loading: str | None = None  # the entry point being imported: its module may register it
        Registry._every.add(self)

    @property
    def group(self) -> str | None:
        """The entry-point group plugins add to it through; None: no plugin reaches it."""
        return self._group

    @classmethod
    def with_plugins(cls) -> list[Registry[Any]]:
        """Every registry constructed so far that takes plugins, by group."""
        return sorted((r for r in cls._every if r._group is not None), key=lambda r: r._group or "")

    @property
    def base(self) -> type:
        """The type every entry is (a class entry: a subclass of it)."""
        return self._base

    @classmethod
    @contextmanager
    def frozen_for_run(cls) -> Iterator[None]:
        """Within it (``pipeline.run``), every registry is frozen; leaving the outermost one opens those it
        froze again (a registry frozen before stays frozen), so a caller in-process (the tests) can still
        add to them between runs. A registry constructed inside it (a module first imported by the run)
        freezes at its first lookup, once its own module has registered its entries."""
        if cls._runs == 0:
            for registry in list(cls._every):
                registry._freeze_for_run()
        cls._runs += 1
        try:
            yield
        finally:
            cls._runs -= 1
            if cls._runs == 0:
                for registry in cls._frozen_by_run:
                    registry._frozen = False
                cls._frozen_by_run.clear()

    def _freeze_for_run(self) -> None:
        if not self._frozen:
            self.freeze()
            Registry._frozen_by_run.append(self)

    def freeze(self) -> None:
        """Read the entry points, then refuse every later register or unregister (RegistryError)."""
        self._read_plugins()
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    def _check(self, name: str, obj: object, origin: str) -> T:
        """obj as the registry holds it: through ``admit`` (which raises an ArgusError naming what it
        wants), then RegistryError unless an instance of the base type (a class entry: a subclass)."""
        if self._admit is not None:
            obj = self._admit(name, obj)
        base = self._base
        if not (isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base))):
            raise RegistryError(
                f"{self.kind} {name!r} ({origin}) is a {type(obj).__name__}, not a {base.__name__}; "
                f"register a {base.__name__} (see {base.__module__})"
            )
        return obj  # type: ignore[return-value]

    def _refuse_if_frozen(self, name: str) -> None:
        if self._frozen and name != self._loading:
            raise RegistryError(
                f"{self.kind} registry is frozen (a run is under way, or it was frozen): cannot change "
                f"{name!r}; register it before the run starts, or through its entry-point group"
                + (f" {self._group}" if self._group else "")
            )

    def register(self, name: str, obj: T | str | None = None, *, replace: bool = False) -> Callable[[T], T]:
        """Register obj under name; usable as a decorator when obj is None. A name already registered to
        another object is a ValueError, unless replace (a notebook cell run again): then obj takes it."""

        def deco(o: T) -> T:
            self._add(name, o, replace)
            return o

        if obj is not None:
            self._add(name, obj, replace)
        return deco

    def _add(self, name: str, obj: T | str, replace: bool = False) -> None:
        held = self._entries.get(name, self._cache.get(name))  # a loaded plugin holds its name too
        if held is not None and held is not obj and not replace:
            raise ValueError(
                f"{self.kind} {name!r} is already registered; pass replace=True to register() to replace "
                f"it (a notebook cell run again), or unregister({name!r}) first"
            )
        self._refuse_if_frozen(name)
        # a lazy "module:attr" entry is checked when it is imported
        self._entries[name] = obj if isinstance(obj, str) else self._check(name, obj, "registered")
        self._cache.pop(name, None)

    def unregister(self, name: str) -> None:
        """Remove an entry (a plugin or test that registered it takes it back); absent names are ignored."""
        self._refuse_if_frozen(name)
        self._entries.pop(name, None)
        self._cache.pop(name, None)

    def _plugins(self) -> dict[str, list[metadata.EntryPoint]]:
        """The group's entry points by name (nothing imported), read on the first lookup."""
        if Registry._runs and not self._frozen:  # constructed during the run: its entries are in
            self._freeze_for_run()
        return self._read_plugins()

    def _read_plugins(self) -> dict[str, list[metadata.EntryPoint]]:
        if self._index is None:
            index: dict[str, list[metadata.EntryPoint]] = {}
            for ep in _installed().by_group.get(self._group, []) if self._group else ():
                index.setdefault(ep.name, []).append(ep)
            self._index = index
        return self._index

    def get(self, name: str) -> T:
        """The entry for name, importing it if lazy. A name that is not registered loads the one entry
        point of that name (PluginError when it cannot be used); UnknownNameError lists valid names."""
        plugins = self._plugins()
        if name in self._entries:
            if name in plugins and self._claimed(name, plugins[name]):
                raise PluginError(self._problem_line(plugins[name][0], self._clash(name)))
            return self._resolved(name)
        if name in plugins:
            if name not in self._cache:
                self._cache[name] = self._load_plugin(name, plugins[name])
            return self._cache[name]
        hint = did_you_mean(name, self.names())
        raise UnknownNameError(f"unknown {self.kind} {name!r}{hint}; valid: {', '.join(self.names())}")

    def _resolved(self, name: str) -> T:
        entry = self._entries[name]
        if not isinstance(entry, str):
            return entry
        if name not in self._cache:
            module, _, attr = entry.partition(":")
            self._cache[name] = self._check(name, getattr(importlib.import_module(module), attr), entry)
        return self._cache[name]

    def _claimed(self, name: str, eps: list[metadata.EntryPoint]) -> bool:
        """Whether entry points eps claim the registered name of another: not when the entry was
        registered by the plugin's own module (as it was imported, elsewhere or by loading it)."""
        return not (len(eps) == 1 and _module_of(self._entries[name]) == _module_of(eps[0].value.strip()))

    def _clash(self, name: str) -> str:
        entry = self._entries[name]
        if _module_of(entry).split(".")[0] == "argus_eval":
            return (
                f"{name!r} is a built-in {self.kind}, which a plugin cannot replace (rename its entry point)"
            )
        return f"{name!r} is already registered as a {self.kind} in this process (rename its entry point)"

    @staticmethod
    def _duplicate(name: str, eps: list[metadata.EntryPoint]) -> str:
        dists = " and ".join(_label(getattr(e, "dist", None)) for e in eps)
        return f"{dists} both declare {name!r}, so neither is used"

    def _problem_line(self, ep: metadata.EntryPoint, problem: str) -> str:
        dist = _label(getattr(ep, "dist", None))
        return f"{_where(ep, self._group or '')} is refused: {problem}; fix the plugin or uninstall {dist}"

    def _load_plugin(self, name: str, eps: list[metadata.EntryPoint]) -> T:
        """The object entry point eps[0] names, checked; PluginError naming it otherwise."""
        if len(eps) > 1:
            raise PluginError(self._problem_line(eps[0], self._duplicate(name, eps)))
        ep = eps[0]
        self._loading = name
        try:
            obj = ep.load()
        except _IMPORT_FAILURES as e:
            raise PluginError(self._problem_line(ep, f"it cannot be imported ({_why(e)})")) from None
        finally:
            self._loading = None
        try:
            return self._check(name, obj, ep.value)
        except ArgusError as e:
            raise PluginError(self._problem_line(ep, _one_line(str(e), 400))) from None
        except Exception as e:  # a hostile object's isinstance or attribute raising
            raise PluginError(self._problem_line(ep, f"checking it raised {_why(e)}")) from None

    def plugin_statuses(self) -> list[PluginStatus]:
        """Every entry point of the group, each loaded and checked (nothing kept: a listing makes no
        plugin part of a later run), its problem instead of an error."""
        if self._group is None:
            return []
        group = self._group
        out: list[PluginStatus] = []
        for name, eps in sorted(self._plugins().items()):
            for ep in eps:
                problem: str | None = None
                try:
                    if name in self._entries and self._claimed(name, eps):
                        raise PluginError(self._problem_line(ep, self._clash(name)))
                    if len(eps) > 1:
                        raise PluginError(self._problem_line(ep, self._duplicate(name, eps)))
                    if name not in self._entries and name not in self._cache:
                        self._load_plugin(name, eps)
                except PluginError as e:
                    problem = str(e)
                dist = _label(getattr(ep, "dist", None))
                out.append(
                    PluginStatus(group, _one_line(ep.name, 80), _one_line(ep.value, 120), dist, problem)
                )
        return out

    def names(self) -> list[str]:
        """Every name a config may use: registered ones and the group's entry points (none imported)."""
        return sorted(set(self._entries) | set(self._plugins()))

    def registered(self) -> dict[str, T]:
        """The registered entries (built in, registered, plugins loaded so far), imported, without
        consulting the entry points: what a run uses whether or not it names it (the scorecard axes)."""
        self._plugins()  # a lookup: during a run, it freezes a registry born in it
        plugins = {name: obj for name, obj in self._cache.items() if name not in self._entries}
        return dict(sorted({**plugins, **{name: self._resolved(name) for name in self._entries}}.items()))

    def __contains__(self, name: object) -> bool:
        plugins = self._plugins()  # first: a lookup during a run freezes a registry born in it
        return name in self._entries or name in plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def unreadable_distributions() -> list[PluginStatus]:
    """One status per installed distribution whose entry_points.txt cannot be read (no group known)."""
    return [PluginStatus("", "", "", dist, why) for dist, why in _installed().unreadable]
