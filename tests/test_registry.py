"""The Registry's own rules: a registry with a base type refuses an entry of another type (registered,
lazy or from a plugin's entry point), and a frozen registry refuses changes; a run freezes
every registry while it runs, and only then."""

from __future__ import annotations

import sys
import types
from importlib import metadata
from pathlib import Path

import pytest

from argus_eval import registry as registry_module
from argus_eval.errors import PluginError, RegistryError, UnknownNameError
from argus_eval.registry import Registry


class Shape:
    """A base type for these tests."""


class Square(Shape):
    pass


def _plugins(monkeypatch: pytest.MonkeyPatch, group: str, **entries: str) -> None:
    """Entry points of group, as an installed distribution would declare them."""
    eps = [metadata.EntryPoint(name, value, group) for name, value in entries.items()]
    installed = registry_module._Installed({group: eps}, [])
    monkeypatch.setattr(registry_module, "_installed", lambda: installed)


def test_a_registered_object_of_the_wrong_type_is_refused() -> None:
    shapes: Registry[Shape] = Registry("shape", base=Shape)
    shapes.register("square", Square())
    with pytest.raises(RegistryError, match=r"shape 'circle' \(registered\) is a int, not a Shape"):
        shapes.register("circle", 3)  # type: ignore[arg-type]
    assert shapes.names() == ["square"]
    classes: Registry[type[Shape]] = Registry("shape class", base=Shape)
    classes.register("square", Square)  # a class entry: a subclass of the base
    with pytest.raises(RegistryError, match=r"is a type, not a Shape"):
        classes.register("int", int)  # type: ignore[arg-type]


def test_a_lazy_entry_is_checked_when_it_is_imported() -> None:
    shapes: Registry[Shape | type[Shape]] = Registry("shape", base=Shape)  # instances and subclasses
    shapes.register("path", "pathlib:Path")  # importing nothing yet
    with pytest.raises(RegistryError, match=r"shape 'path' \(pathlib:Path\) is a type, not a Shape"):
        shapes.get("path")
    shapes.register("square", f"{__name__}:Square")
    assert shapes.get("square") is Square


def test_a_plugin_of_the_wrong_type_fails_naming_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "argus_eval.test_shapes", good=f"{__name__}:Square", bad="os.path:join")
    shapes: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    assert shapes.names() == ["bad", "good"]
    assert shapes.get("good") is Square
    with pytest.raises(RegistryError, match=r"shape 'bad' \(os.path:join\) is a function, not a Shape"):
        shapes.get("bad")


def test_a_frozen_registry_refuses_changes_and_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "argus_eval.test_shapes", plugin=f"{__name__}:Square")
    shapes: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    shapes.register("square", Square)
    shapes.freeze()  # loads the entry points first
    assert shapes.frozen and shapes.names() == ["plugin", "square"]
    with pytest.raises(RegistryError, match=r"shape registry is frozen .* cannot change 'circle'"):
        shapes.register("circle", Square)
    with pytest.raises(RegistryError, match="cannot change 'square'"):
        shapes.unregister("square")
    assert shapes.get("plugin") is Square
    with pytest.raises(UnknownNameError, match="unknown shape 'circle'"):
        shapes.get("circle")


def test_a_run_freezes_every_registry_until_the_outermost_run_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "argus_eval.test_shapes")
    plugins: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    built_in: Registry[type[Shape]] = Registry("built-in shape", base=Shape)
    frozen_before: Registry[type[Shape]] = Registry("frozen shape", base=Shape)
    frozen_before.freeze()
    with Registry.frozen_for_run():
        with Registry.frozen_for_run():  # a run inside a run
            pass
        for registry in (plugins, built_in):  # still frozen: the outer run goes on
            with pytest.raises(RegistryError, match=rf"{registry.kind} registry is frozen .* 'late'"):
                registry.register("late", Square)
        born: Registry[type[Shape]] = Registry("new shape", base=Shape)
        born.register("square", Square)  # its own module registers its entries as it is imported
        assert "square" in born  # its first lookup freezes it
        with pytest.raises(RegistryError, match="new shape registry is frozen"):
            born.register("late", Square)
    plugins.register("late", Square)  # open again once the run is done
    built_in.register("late", Square)
    born.register("late", Square)
    assert plugins.names() == built_in.names() == ["late"]
    assert frozen_before.frozen  # frozen by its owner, not by the run


def test_a_name_registered_by_the_plugins_own_module_is_no_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin module that registers itself when imported (imported first by other code) is the same
    plugin as its entry point; a name registered from elsewhere is claimed, and refused naming both."""
    _plugins(monkeypatch, "argus_eval.test_shapes", square=f"{__name__}:Square", path="pathlib:Path")
    shapes: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    shapes.register("square", Square)  # what the plugin's module does as it is imported
    shapes.register("path", Square)  # this module is not pathlib's
    assert shapes.get("square") is Square
    with pytest.raises(PluginError) as e:
        shapes.get("path")
    assert str(e.value) == (
        "plugin 'path' of group argus_eval.test_shapes (entry point pathlib:Path, distribution an unknown "
        "distribution) is refused: 'path' is already registered as a shape in this process (rename its "
        "entry point); fix the plugin or uninstall an unknown distribution"
    )


def test_a_plugins_own_message_is_one_line_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loud_plugin.py").write_text("raise ValueError('x\\n' * 5000)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugins(monkeypatch, "argus_eval.test_shapes", loud="loud_plugin:Shape")
    shapes: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    with pytest.raises(PluginError) as e:
        shapes.get("loud")
    line = str(e.value)
    assert "\n" not in line and "it cannot be imported (ValueError: x x x" in line
    assert len(line) < 600  # 5,000 lines of the plugin's own cut to 240 characters
    assert "loud_plugin" not in sys.modules  # a failed import leaves nothing behind


def test_a_plugin_loaded_during_a_run_may_register_its_own_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin module that registers itself as it is imported still loads while a run has the registry
    frozen (its name was there already); registering any other name from it is refused."""
    holder = types.ModuleType("shape_holder")
    shapes: Registry[type[Shape]] = Registry("shape", entry_point_group="argus_eval.test_shapes", base=Shape)
    holder.SHAPES = shapes  # type: ignore[attr-defined]
    holder.Shape = Shape  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "shape_holder", holder)
    (tmp_path / "self_shape.py").write_text(
        "from shape_holder import SHAPES, Shape\nclass Own(Shape):\n    pass\nSHAPES.register('own', Own)\n"
    )
    (tmp_path / "greedy_shape.py").write_text(
        "from shape_holder import SHAPES, Shape\n"
        "class Greedy(Shape):\n    pass\n"
        "SHAPES.register('other', Greedy)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugins(monkeypatch, "argus_eval.test_shapes", own="self_shape:Own", greedy="greedy_shape:Greedy")
    with Registry.frozen_for_run():
        assert shapes.get("own").__name__ == "Own"
        with pytest.raises(
            PluginError, match=r"cannot be imported \(RegistryError: shape registry is frozen"
        ):
            shapes.get("greedy")
    assert shapes.names() == ["greedy", "own"]
    sys.modules.pop("self_shape", None)
    sys.modules.pop("greedy_shape", None)
