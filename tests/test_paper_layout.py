"""benchmarks/paper_layout.py: synthetic data in configs/paper.yaml's layout, at a tiny scale. The files
are what the official formats hold (counted here by reading them, not through the loaders), every image
file they name is there and decodes (`argus datasets --check`), the dry run
of the paper config on them exits 0 and its plan and cost table give the counts worked out below by hand
from the config, and writing is deterministic and idempotent.

The hand count. paper.yaml's `perturbations: [{preset: default}]` is clean, gaussian_noise and
defocus_blur at severities 1, 3, 5 and typos at 1, 3, 5: 10 conditions for retrieval and reasoning,
7 for captioning (its texts are references, so a text perturbation does not apply). Retrieval and
captioning read the image-level sets (COCO, Flickr30k, VG's regions), reasoning the question sets (VG's
QA, cut to the entry's limit; CLEVR; VCR, two items per annotation: Q->A and QA->R). BLIP, Gemma and
Qwen serve all three tasks (natively or through a substitute), LXMERT only reasoning (it classifies
answers), CLIP retrieval and reasoning but not captioning (its substitute, caption-by-retrieval, needs a
caption bank, which no entry names) nor VG's reasoning (choosing among answers needs candidates, and
VG's questions are open, without choices or an answer vocabulary). A record is one sample under one
condition for one model (runner/plan/dryrun_cost.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml

from argus_eval.cli import main
from argus_eval.commands import run_cmd
from argus_eval.runner.plan.harness_cost import estimate_or_why, write_calibration

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "paper_layout.py"
CONFIG = ROOT / "configs" / "paper.yaml"
SCALE = 0.002
# the paper's counts (docs of the script: the sets paper.yaml names, at --scale 1.0)
COCO, FLICKR, VG, VG_QAS_PER_IMAGE = 5000, 1000, 5000, 3
CLEVR_IMAGES, CLEVR_QUESTIONS, VCR_IMAGES, VCR_ITEMS = 15_000, 149_991, 9_929, 26_534
CONDITIONS = {"retrieval": 1 + 2 * 3 + 3, "captioning": 1 + 2 * 3, "reasoning": 1 + 2 * 3 + 3}


def _n(count: int, scale: float = SCALE) -> int:
    return max(1, round(count * scale))


def _write(folder: Path, scale: float = SCALE) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), str(folder), "--scale", str(scale)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("paper") / "data"
    done = _write(folder)
    assert done.returncode == 0, done.stderr
    return folder


def _vg_limit() -> int:
    entry = next(e for e in yaml.safe_load(CONFIG.read_text())["datasets"] if e["format"] == "visual_genome")
    return int(entry["limit"])


def _samples() -> dict[tuple[str, str], int]:
    """(task, dataset) -> samples, by hand from the scaled counts."""
    vg_questions = min(_vg_limit(), VG_QAS_PER_IMAGE * _n(VG))
    image_sets = {"COCO-5k": _n(COCO), "Flickr30k": _n(FLICKR), "VisualGenome": _n(VG)}
    question_sets = {
        "VisualGenome": vg_questions,
        "CLEVR-val": _n(CLEVR_QUESTIONS),
        "VCR-val": 2 * _n(VCR_ITEMS),
    }
    out = {(t, d): n for t in ("retrieval", "captioning") for d, n in image_sets.items()}
    return out | {("reasoning", d): n for d, n in question_sets.items()}


def _serves(model: str, task: str, dataset: str) -> bool:
    if model == "LXMERT":
        return task == "reasoning"
    if model == "CLIP":
        return task == "retrieval" or (task == "reasoning" and dataset != "VisualGenome")
    return True


def test_the_files_hold_the_scaled_counts_in_the_official_formats(layout: Path) -> None:
    coco = json.loads((layout / "karpathy/dataset_coco.json").read_text())["images"]
    assert len(coco) == _n(COCO) and {e["split"] for e in coco} == {"test"}
    assert all(len(e["sentences"]) == 5 for e in coco)
    for e in coco:  # real images where the Karpathy file says: coco/<filepath>/<filename>
        assert (layout / "coco" / e["filepath"] / e["filename"]).read_bytes()[:2] == b"\xff\xd8"  # JPEG
    flickr = json.loads((layout / "karpathy/dataset_flickr30k.json").read_text())["images"]
    assert len(flickr) == _n(FLICKR) and all((layout / "flickr30k" / e["filename"]).is_file() for e in flickr)
    image_data = json.loads((layout / "vg/image_data.json").read_text())
    assert len(image_data) == _n(VG)
    for e in image_data:  # VG's urls end in <folder>/<id>.jpg, under the entry's images folder
        assert (layout / "vg/images" / "/".join(e["url"].split("/")[-2:])).is_file()
    qas = json.loads((layout / "vg/question_answers.json").read_text())
    assert sum(len(e["qas"]) for e in qas) == VG_QAS_PER_IMAGE * _n(VG)
    questions = json.loads((layout / "clevr/questions/CLEVR_val_questions.json").read_text())["questions"]
    assert len(questions) == _n(CLEVR_QUESTIONS)
    assert len({q["image_index"] for q in questions}) == _n(CLEVR_IMAGES)
    assert len(list((layout / "clevr/images/val").glob("*.png"))) == _n(CLEVR_IMAGES)
    assert (layout / "clevr/questions/CLEVR_train_questions.json").is_file()
    vcr = [json.loads(line) for line in (layout / "vcr/val.jsonl").read_text().splitlines()]
    assert len(vcr) == _n(VCR_ITEMS) and len({r["img_fn"] for r in vcr}) == _n(VCR_IMAGES)
    assert all((layout / "vcr/vcr1images" / r["img_fn"]).is_file() for r in vcr)
    assert (layout / "vcr/train.jsonl").stat().st_size > 0


def test_every_image_the_datasets_name_is_there_and_decodes(
    layout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = yaml.safe_load(CONFIG.read_text()) | {"data_root": str(layout)}  # --check takes no --data-root
    (tmp_path / "paper.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setattr(sys, "argv", ["argus", "datasets", "--check", str(tmp_path / "paper.yaml"), "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    checked = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    files = {"COCO-5k": _n(COCO), "Flickr30k": _n(FLICKR), "VisualGenome": _n(VG)}
    files |= {"CLEVR-val": _n(CLEVR_IMAGES), "VCR-val": _n(VCR_IMAGES)}
    for name, n in files.items():
        d = checked[name]
        assert d["ok"] and (d["images"], d["missing"], d["corrupt"], d["skipped"]) == (n, [], [], 0), d


def _dry_run(
    layout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *flags: str
) -> str:
    argv = ["argus", "run", "--config", str(CONFIG), "--data-root", str(layout), "--dry-run", *flags]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setenv("COLUMNS", "250")  # the plan table whole, not cut to the test's terminal
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    return capsys.readouterr().out


def test_the_dry_run_plans_every_model_on_every_dataset_with_the_hand_counts(
    layout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calibration = tmp_path / "harness_cost.json"  # this machine's, as bench_scale writes it
    per_ms = {"retrieval": 2.0, "captioning": 3.0, "reasoning": 0.5}
    write_calibration(per_ms, "bench_scale (test)", calibration)
    monkeypatch.setattr(run_cmd, "estimate_or_why", partial(estimate_or_why, path=calibration))
    plan = json.loads(_dry_run(layout, monkeypatch, capsys, "--json"))
    samples = _samples()
    models = [m["name"] for m in yaml.safe_load(CONFIG.read_text())["models"]]
    cells = {(r["model"], r["task"], r["dataset"]): r for r in plan["cells"]}
    expected = {(m, t, d) for m in models for (t, d) in samples if _serves(m, t, d)}
    assert set(cells) == expected
    for (m, t, d), row in cells.items():
        assert (row["samples"], row["conditions"]) == (samples[t, d], CONDITIONS[t]), (m, t, d)
    batch = 32  # every model of paper.yaml
    for m in models:
        mine = [(t, d) for (t, d) in samples if _serves(m, t, d)]
        records = sum(samples[k] * CONDITIONS[k[0]] for k in mine)
        batches = sum(math.ceil(samples[k] / batch) * CONDITIONS[k[0]] for k in mine)
        assert plan["cost"]["models"][m] == {
            "records": records,
            "batches": batches,
            "requests": 0,
            "judged": 0,
        }
    # corruptions, shared by the models: gaussian_noise is seeded (one per sample shown), defocus_blur
    # is not (one per image file), 3 severities each; question and image-level samples of a set share
    # its image files (VG's questions are on its first images, CLEVR's and VCR's cover all of theirs)
    files = {"COCO-5k": _n(COCO), "Flickr30k": _n(FLICKR), "VisualGenome": _n(VG)}
    files |= {"CLEVR-val": _n(CLEVR_IMAGES), "VCR-val": _n(VCR_IMAGES)}
    shown = {d: sum(n for (t, dd), n in samples.items() if dd == d and t != "captioning") for d in files}
    assert plan["cost"]["total"]["corruptions"] == sum(3 * shown[d] + 3 * files[d] for d in files)
    # LXMERT's regions, on the reasoning sets: clean and blurred per image file its questions show, noised
    # per question; typos show the clean image (no new extraction)
    vg_images = math.ceil(samples["reasoning", "VisualGenome"] / VG_QAS_PER_IMAGE)
    on = {"VisualGenome": vg_images, "CLEVR-val": files["CLEVR-val"], "VCR-val": files["VCR-val"]}
    regions = sum((1 + 3) * on[d] + 3 * samples["reasoning", d] for d in on)
    assert plan["cost"]["total"]["region_extractions"] == regions
    # the harness estimate: each task's planned records times this machine's cost per record
    by_task = {
        t: sum(r["samples"] * r["conditions"] for r in cells.values() if r["task"] == t) for t in per_ms
    }
    want = sum(by_task[t] * per_ms[t] / 1000 for t in per_ms)
    assert plan["cost"]["estimate"]["harness_seconds"] == round(want, 1) > 0

    table = _dry_run(layout, monkeypatch, capsys)
    cost = table[table.index("cost (counted") :]
    for m in models:  # the printed cost table: every model with its records
        line = next(row for row in cost.splitlines() if f" {m} " in row)
        assert f"{plan['cost']['models'][m]['records']:,}" in line
    assert want < 90 and f"estimate (harness only, this machine): {want:.1f} s," in table


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_writing_is_seeded_idempotent_and_rewrites_only_its_own_files(layout: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert _write(again).returncode == 0
    assert _digests(again) == _digests(layout)  # the same scale writes the same bytes
    coco = again / "karpathy/dataset_coco.json"
    written = coco.stat().st_mtime_ns
    assert _write(again).returncode == 0 and coco.stat().st_mtime_ns == written  # complete: skipped
    assert _write(again, SCALE / 2).returncode == 0  # another scale: written again, nothing stale left
    assert len(list((again / "coco/val2014").iterdir())) == _n(COCO, SCALE / 2) < _n(COCO)
    # an interrupted write (its marker still says incomplete) is redone, not refused
    marker = again / ".paper_layout/COCO-5k.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "complete": False}))
    assert _write(again, SCALE / 2).returncode == 0 and json.loads(marker.read_text())["complete"] is True
    real = tmp_path / "real"
    (real / "karpathy").mkdir(parents=True)
    (real / "karpathy/dataset_coco.json").write_text("{}")  # not ours: never overwritten
    done = _write(real)
    assert done.returncode == 2 and "was not written by paper_layout.py" in done.stderr
    assert (real / "karpathy/dataset_coco.json").read_text() == "{}"
