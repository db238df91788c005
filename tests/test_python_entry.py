"""The Python entry, argus_eval.evaluate (runner/entry.py, models/objects.py, docs/python.md): a plain object
wrapping a zoo model gives the results.json `argus run` gives for that model (its identity and timings
aside), a rerun of a new object of the same name asks it nothing, and a changed fingerprint recomputes; an
object with no capability is one error naming the missing members; Results show their scorecard in a
notebook and as a DataFrame; `import argus_eval` stays cheap."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
import yaml

import argus_eval
from argus_eval.cli import main
from argus_eval.errors import ArgusError, ConfigError, ModelObjectError
from argus_eval.models import protocols
from argus_eval.models.loading import load_model
from argus_eval.models.objects import ObjectModel
from argus_eval.models.protocols import ModelInfo, classifies, embeds, generates
from argus_eval.models.spec import ModelConfig
from argus_eval.report.build import write_reports
from argus_eval.report.csv_export import scorecard_csv
from argus_eval.results_model import load_results, results_json
from argus_eval.runner.config import load_config, parse_config
from argus_eval.runner.entry import _config_data, _model_entries
from report_fixtures import HOSTILE_MODEL, make_run

# What results.json holds that timing measured: the timing trials, and latency and throughput in each
# efficiency profile (memory on CPU, FLOPs and parameters are counted, so they must agree; E, relative to
# the best model of each timing round, is 1 for a lone model either way).
TIMED = ("latency_ms_p50", "latency_ms_p95", "throughput_per_s")
# Every member of the capability protocols (models/protocols.py), listed by hand.
MEMBERS = (
    "embed_images",
    "embed_texts",
    "score_pairs",
    "pool_images",
    "pool_texts",
    "generate",
    "choose",
    "classify",
    "labels",
)


class WrappedClip:
    """A user's own model: the zoo's CLIP behind the two embedding methods, each call counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.params = inner.info.params  # for the memory and FLOPs figures
        self.calls = 0

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        self.calls += 1
        return self.inner.embed_images(images)  # type: ignore[no-any-return]

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return self.inner.embed_texts(texts)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def clip() -> Any:
    return load_model(ModelConfig(name="CLIP", spec="zoo:clip", device="cpu"))


ENTRY = {"device": "cpu", "batch_size": 4}


def _config(cache: Path) -> dict[str, Any]:
    """One task on one small dataset, clean only, timed once."""
    return {
        "name": "pyentry",
        "seed": 2,
        "cache_dir": str(cache),
        "models": [{"name": "CLIP", "spec": "zoo:clip", **ENTRY}],
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": 6,
                "train_images": 8,
                "questions_per_image": 2,
            }
        ],
        "tasks": ["retrieval"],
        "scoring": {"resamples": 20},
        "efficiency": {"batch_size": 2, "repeats": 1, "warmup": 0, "trials": 1, "min_trials": 1},
    }


def _cli(argv: list[str]) -> int:
    with mock.patch.object(sys, "argv", ["argus", *argv]):
        try:
            main()
        except SystemExit as e:
            return int(e.code or 0)
    return 0


def _doc(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())  # type: ignore[no-any-return]


def _log(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_log.json").read_text())  # type: ignore[no-any-return]


def _untimed(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc.pop("timing")
    for profile in (*doc["efficiency"].values(), *(m["efficiency"] for m in doc["models"].values())):
        for key in TIMED:
            profile.pop(key)
    return doc


def test_a_wrapped_zoo_model_gives_the_clis_results_and_a_rerun_asks_it_nothing(
    cache: Path, clip: Any, tmp_path: Path
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_config(cache)))
    assert _cli(["run", "-c", str(path), "-o", str(tmp_path / "cli"), "-q"]) == 0
    cli = _doc(tmp_path / "cli")

    wrapped = WrappedClip(clip)
    out = tmp_path / "py"
    res = argus_eval.evaluate(path, models={"CLIP": {"spec": wrapped, **ENTRY}}, out=out, quiet=True)
    mine = _doc(out)
    first = _log(out)
    assert wrapped.calls > 0 and wrapped.calls == first["forward_calls"]
    assert results_json(res) == mine  # what it returns is the file it wrote

    # the model's identity: its object: spec, class, capabilities and a fingerprint of its own (not the zoo's)
    kind = f"{WrappedClip.__module__}.{WrappedClip.__qualname__}"
    entry = mine["manifest"]["config"]["models"][0]
    assert entry == {
        **cli["manifest"]["config"]["models"][0],
        "spec": "object:CLIP",
        "options": {"object_class": kind, "capabilities": ["embed"]},
    }
    assert mine["manifest"]["models"]["CLIP"]["spec"] == "object:CLIP"
    fp = mine["manifest"]["models"]["CLIP"]["fingerprint"]
    assert fp != cli["manifest"]["models"]["CLIP"]["fingerprint"]
    assert {(c["checkpoint"], c["model_fingerprint"]) for c in mine["cells"]} == {("object:CLIP", fp)}
    mine["manifest"]["config"]["models"] = cli["manifest"]["config"]["models"]
    mine["manifest"]["models"] = cli["manifest"]["models"]
    for a, b in zip(mine["cells"], cli["cells"], strict=True):
        a["checkpoint"], a["model_fingerprint"] = b["checkpoint"], b["model_fingerprint"]
    assert _untimed(mine) == _untimed(cli)

    # a new object of the same class under the same name (a notebook's rerun): nothing is asked of it
    again = WrappedClip(clip)
    text = (out / "results.json").read_text()
    models = {"CLIP": {"spec": again, **ENTRY}}
    argus_eval.evaluate(path, models=models, out=out, quiet=True, reports=write_reports)
    log = _log(out)
    assert (again.calls, log["forward_calls"], log["records_written"]) == (0, 0, 0)
    assert (out / "results.json").read_text() == text
    assert "object:CLIP" in (out / "report.html").read_text()  # the reports argus run writes, on asking

    # a fingerprint of its own (the model changed under the same name): every record again
    changed = WrappedClip(clip)
    entry_v2 = {"spec": changed, **ENTRY, "options": {"fingerprint": "v2"}}
    argus_eval.evaluate(path, models={"CLIP": entry_v2}, out=out, quiet=True)
    assert changed.calls > 0
    assert _log(out)["records_written"] == first["records_written"] > 0


def test_an_object_with_no_capability_is_one_error_naming_the_members(cache: Path, tmp_path: Path) -> None:
    class Nothing:
        pass

    out = tmp_path / "out"
    with pytest.raises(ModelObjectError) as ei:
        argus_eval.evaluate(_config(cache), models={"mine": Nothing()}, out=out, quiet=True)
    msg = str(ei.value)
    assert isinstance(ei.value, ArgusError) and "'mine'" in msg and "Nothing" in msg
    assert all(m in msg for m in MEMBERS), msg
    assert not out.exists()  # refused before any work

    class HalfEmbedder:
        def embed_images(self, images: Any) -> None: ...

    with pytest.raises(ModelObjectError, match="has embed_images but not embed_texts"):
        argus_eval.evaluate(_config(cache), models={"half": HalfEmbedder()}, out=out, quiet=True)

    class Unlabelled:
        capabilities = frozenset({"classify"})

        def classify(self, images: Any, questions: Any) -> None: ...

    with pytest.raises(ModelObjectError, match="classify needs labels"):
        argus_eval.evaluate(_config(cache), models={"vqa": Unlabelled()}, out=out, quiet=True)

    for declared, wanted in (("embed", "give a set of capability names"), ({"telepathy"}, "unknown")):
        odd = _Generator()
        odd.capabilities = declared  # type: ignore[attr-defined]
        with pytest.raises(ModelObjectError, match=wanted):
            argus_eval.evaluate(_config(cache), models={"odd": odd}, out=out, quiet=True)
    assert not out.exists()


def test_the_command_line_cannot_load_an_object_and_says_where_one_is_given(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config(cache)
    cfg["models"] = [{"name": "mine", "spec": "object:mine"}]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert _cli(["run", "-c", str(path), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "argus_eval.evaluate" in err and "docs/python.md" in err, err


def test_docs_example_runs_and_its_rerun_calls_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (Path(__file__).parents[1] / "docs" / "python.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/python.md", "exec"), scope)
    res = scope["results"]
    assert set(res.models) == {"mine", "CLIP"}
    assert res.models["mine"].value("P") == res.models["CLIP"].value("P") is not None  # the same answers
    assert sorted(res.to_pandas().index) == ["CLIP", "mine"]
    exec(compile(code, "docs/python.md", "exec"), {})
    log = _log(tmp_path / "runs" / "python-demo")
    assert (log["forward_calls"], log["records_written"]) == (0, 0)


def test_a_model_value_may_be_a_spec_an_entry_or_a_model_config() -> None:
    entries, objects = _model_entries(
        {
            "a": "zoo:clip",
            "b": {"spec": "zoo:clip", "batch_size": 3},
            "c": ModelConfig(name="ignored", spec="zoo:clip", batch_size=5),
            "d": {"spec": _Generator(), "options": {"fingerprint": "v1"}},
        }
    )
    assert [(e["name"], e["spec"], e.get("batch_size")) for e in entries] == [
        ("a", "zoo:clip", None),
        ("b", "zoo:clip", 3),
        ("c", "zoo:clip", 5),
        ("d", "object:d", None),
    ]
    kind = f"{_Generator.__module__}.{_Generator.__qualname__}"
    assert entries[3]["options"] == {
        "object_class": kind,
        "capabilities": ["classify", "generate"],
        "fingerprint": "v1",
    }
    assert list(objects) == ["object:d"] and isinstance(objects["object:d"], _Generator)


def test_a_config_may_be_a_path_a_mapping_or_a_run_config(tmp_path: Path) -> None:
    cfg = _config(tmp_path / "cache")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    spec = load_config(path)
    for given in (path, str(path), cfg, spec, spec.written):
        data, source = _config_data(given)
        assert parse_config(data, source).written == spec.written, given
    with pytest.raises(ConfigError, match="give a config file's path"):
        _config_data(42)  # type: ignore[arg-type]


class _Generator:
    labels = ("yes", "no")

    def generate(self, images: Any, prompts: Sequence[str], max_new_tokens: int) -> list[str]:
        return ["yes" for _ in prompts]

    def classify(self, images: Any, questions: Sequence[str]) -> np.ndarray:
        return np.zeros((len(questions), 2), np.float32)


def test_an_objects_capabilities_are_its_members_or_what_it_declares() -> None:
    cfg = ModelConfig(name="g", spec="object:g")
    model = ObjectModel(cfg, _Generator(), "fp")
    counted = model  # an ObjectModel still where the interface checks below narrow `model` to Classifier
    assert model.info.capabilities == {"generate", "classify"} and model.info.fingerprint == "fp"
    assert generates(model) and classifies(model) and not embeds(model)
    assert model.labels == ("yes", "no")
    model.generate([], ["a", "b"], 4)  # type: ignore[attr-defined]
    model.classify([], ["q"])
    assert counted.forward_calls == 2

    captioner = _Generator()
    captioner.capabilities = {"caption"}  # type: ignore[attr-defined]
    assert ObjectModel(cfg, captioner, "fp").info.capabilities == {"caption"}

    # an adapter's own ModelInfo gives what the object does not say itself
    adapter = _Generator()
    adapter.info = ModelInfo("x", "zoo:x", "zoo-fp", frozenset({"generate"}), "blip", params=7)  # type: ignore[attr-defined]
    info = ObjectModel(cfg, adapter, "fp").info
    assert (info.capabilities, info.family, info.params) == (frozenset({"generate"}), "blip", 7)


def test_the_capability_table_lists_each_protocols_members() -> None:
    interfaces = {
        "embed": protocols.Embedder,
        "score_pairs": protocols.PairScorer,
        "pool": protocols.Pooler,
        "generate": protocols.Generator,
        "caption": protocols.Generator,
        "choose": protocols.Chooser,
        "classify": protocols.Classifier,
    }
    for capability, cls in interfaces.items():
        members = {n for n in vars(cls) if not n.startswith("_")} | set(cls.__annotations__)
        assert set(protocols.CAPABILITY_MEMBERS[capability]) == members, capability
    assert set(protocols.CAPABILITY_MEMBERS) == set(interfaces)


class _Table(HTMLParser):
    """The rows of an HTML table as lists of (tag, text, title) cells."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, str, str | None]]] = []
        self._cell: list[Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = [tag, "", dict(attrs).get("title")]

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append((self._cell[0], self._cell[1], self._cell[2]))
            self._cell = None


def test_results_show_their_scorecard_in_a_notebook_and_as_a_dataframe(tmp_path: Path) -> None:
    res = load_results(make_run(tmp_path / "run") / "results.json")
    page = res._repr_html_()
    assert "<img" not in page  # the hostile model name is text
    table = _Table()
    table.feed(page)
    head, *rows = table.rows
    assert [text for _, text, _ in head] == ["model", *res.axis_names]
    assert [r[0][1] for r in rows] == list(res.models) and HOSTILE_MODEL in res.models
    undefined = 0
    for row in rows:
        m = res.models[row[0][1]]
        for axis, (tag, text, title) in zip(res.axis_names, row[1:], strict=True):
            value = m.value(axis)
            assert tag == "td"
            if value is None:
                undefined += 1
                assert text == "undefined" and title == m.why_undefined(axis)
                continue
            assert abs(float(text.split()[0]) - value) <= 5e-4
            if m.interval(axis) is not None:
                lo, hi = (float(x) for x in text.split(" ", 1)[1].strip("[]").split(","))
                assert lo <= value + 5e-4 and value - 5e-4 <= hi
    assert undefined > 0  # the fixture's run has undefined axes, shown with their reasons

    frame = res.to_pandas()
    import pandas

    assert list(frame.index) == list(res.models)
    assert ["model", *frame.columns] == list(pandas.read_csv(io.StringIO(scorecard_csv(res))).columns)
    for name, m in res.models.items():
        for axis in res.axis_names:
            value = m.value(axis)
            got = frame.loc[name, axis]
            assert pandas.isna(got) if value is None else got == pytest.approx(value)
            iv = m.intervals.get(axis)
            if iv is not None:
                assert (frame.loc[name, f"{axis}_lo"], frame.loc[name, f"{axis}_hi"]) == pytest.approx(iv)


def test_to_pandas_without_pandas_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = load_results(make_run(tmp_path / "run", hostile=False) / "results.json")
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match=r"argus-eval\[notebook\]"):
        res.to_pandas()


def test_import_argus_eval_loads_no_wing_and_no_torch() -> None:
    code = (
        "import sys, argus_eval; "
        "print(sorted(m for m in sys.modules if m.startswith('argus_eval')), 'torch' in sys.modules, "
        "'pydantic' in sys.modules, callable(argus_eval.evaluate))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['argus_eval', 'argus_eval.version'] False False True"
