"""The `argus` command line: thin; it parses arguments and calls the wings."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from argus_eval.errors import ArgusError
from argus_eval.runner.threads import quiet_openmp

try:  # typer vendors click from 0.2x on; usage errors are raised from its copy
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover (an older typer raises click's own)
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[assignment]

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never hit a hub by accident; a user can export 0 to allow it
# before anything loads torch (nothing above does): its OpenMP runtime reads the wait policy once, as it
# starts, and idle workers that spin take the cores a busy machine has left (runner/threads.py)
quiet_openmp()

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="ARGUS-EVAL: capability, consistency, robustness and efficiency of vision-language models.",
)
zoo_app = typer.Typer(
    no_args_is_help=True, help="The built-in model zoo (tiny models trained on ShapesWorld)."
)
app.add_typer(zoo_app, name="zoo")
console = Console()
err_console = Console(stderr=True)


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False) -> None:
    """Global options."""


@app.command()
def run(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Run config (YAML). Default: the built-in suite.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default runs/<config name>).")
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Any skipped record, failed sample or model that cannot load is fatal."
        ),
    ] = False,
    max_failed: Annotated[
        float,
        typer.Option(
            "--max-failed",
            min=0.0,
            max=1.0,
            help="Exit 1 (after writing everything) when more than this share of any model's samples "
            "failed; a model that cannot load counts as all failed.",
        ),
    ] = 0.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and check paths; run no model.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    executor: Annotated[str | None, typer.Option("--executor", help="local (default) or ray.")] = None,
    data_root: Annotated[
        Path | None,
        typer.Option("--data-root", help="Resolve the config's relative data paths against this."),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option("--address", help="Ray cluster: ray://HOST:PORT or auto (with --executor ray)."),
    ] = None,
    workers: Annotated[
        str | None,
        typer.Option(
            "--workers",
            help="Threads that decode and perturb the next batches while the model runs (default: one "
            "per available core, at most 8; more than the cores is clipped with a note).",
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed/--no-retry-failed",
            help="Compute the failed records of an earlier run again (default) or keep them.",
        ),
    ] = True,
) -> None:
    """Evaluate the configured models (or the default suite) and write results.json, samples.jsonl, report."""
    from argus_eval.commands.run_cmd import dry_run_plan, run_command, run_overrides
    from argus_eval.runner.config import default_config_path

    cfg_path = config or default_config_path()
    overrides = run_overrides(data_root, executor, address, workers)
    if dry_run:
        dry_run_plan(cfg_path, console, as_json, overrides)
        return
    code = run_command(
        cfg_path,
        out,
        strict=strict,
        as_json=as_json,
        quiet=quiet,
        console=console,
        overrides=overrides,
        retry_failed=retry_failed,
        max_failed=max_failed,
    )
    if code:
        raise typer.Exit(code)


@app.command()
def models(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List model presets and zoo models with what each can do, and every installed plugin (entry
    point) with why one cannot be used."""
    from argus_eval.commands.listing import list_models

    list_models(console, as_json)


@app.command()
def datasets(
    check: Annotated[
        Path | None, typer.Option("--check", help="Validate the datasets of this run config.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="With --check: any skipped record is fatal too, as `argus run --strict` makes it.",
        ),
    ] = False,
) -> None:
    """List dataset formats, or validate a config's datasets (paths, schema, images) without models."""
    from argus_eval.commands.listing import check_datasets, list_formats

    if check is not None:
        check_datasets(check, console, as_json, strict=strict)
    else:
        list_formats(console, as_json)


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory with results.json.")]) -> None:
    """Rebuild report.html and summary.md of a run from results.json and samples.jsonl."""
    from argus_eval.commands.report_cmd import report_command

    report_command(run_dir, console)


@app.command()
def compare(
    dir_a: Annotated[Path, typer.Argument(help="The baseline run directory (A).")],
    dir_b: Annotated[Path, typer.Argument(help="The run to compare against it (B); deltas are B - A.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    resamples: Annotated[int, typer.Option("--resamples", min=0, help="Paired bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the paired bootstrap.")] = 0,
) -> None:
    """Differences between two runs per model and axis and per common cell, with paired intervals."""
    from argus_eval.commands.compare_cmd import compare_command

    compare_command(dir_a, dir_b, console, as_json=as_json, resamples=resamples, seed=seed)


@app.command()
def recommend(
    run_dir: Annotated[Path, typer.Argument(help="A run directory with results.json.")],
    device: Annotated[str | None, typer.Option("--device", help="Device profile name.")] = None,
    max_latency_ms: Annotated[float | None, typer.Option("--max-latency-ms", help="p50 at batch 1.")] = None,
    max_memory_gb: Annotated[float | None, typer.Option("--max-memory-gb", help="Peak memory, GB.")] = None,
    min_rr: Annotated[float | None, typer.Option("--min-rr", help="Robustness retention floor.")] = None,
    weights: Annotated[
        str | None,
        typer.Option("--weights", help="ARGUS weights P,CDC,RR,E, or NAME=W,... over the run's terms."),
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Restrict P to one task.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    min_axes: Annotated[
        list[str] | None,
        typer.Option(
            "--min", help="Floor on any axis of the run, AXIS=VALUE (repeatable), e.g. --min CDC=0.8."
        ),
    ] = None,
) -> None:
    """Recommend a model under deployment constraints, from results.json (exit 1: no model fits)."""
    from argus_eval.commands.recommend_cmd import recommend_command

    code = recommend_command(
        run_dir,
        console,
        device=device,
        max_latency_ms=max_latency_ms,
        max_memory_gb=max_memory_gb,
        min_rr=min_rr,
        weights=weights,
        task=task,
        as_json=as_json,
        min_axes=min_axes,
    )
    if code:
        raise typer.Exit(code)


@zoo_app.command("list")
def zoo_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the zoo: family, capabilities, parameters, size and hash of each checkpoint."""
    from argus_eval.commands.zoo_cmd import list_zoo

    list_zoo(console, as_json)


_ZOO_OUT = typer.Option(
    "--out", "-o", help="Parent folder of the measuring runs, one per model: OUT/zoo-NAME (default runs)."
)


@zoo_app.command("train")
def zoo_train(
    name: Annotated[str | None, typer.Argument(help="Zoo model to train (default: all, in order).")] = None,
    seconds: Annotated[
        float | None, typer.Option("--seconds", help="Wall-clock budget instead of the recipe's steps.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed (default: the recipe's).")] = None,
    out: Annotated[Path | None, _ZOO_OUT] = None,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="Replace the shipped checkpoint and its manifest entry (default: both go to OUT/zoo-NAME).",
        ),
    ] = False,
) -> None:
    """Rebuild zoo checkpoints from their recipes (ShapesWorld, CPU) and evaluate them; --install puts them
    in the shipped zoo."""
    from argus_eval.commands.zoo_cmd import train_zoo

    train_zoo(name, seconds, seed, out, console, install)


@zoo_app.command("eval")
def zoo_eval(
    name: Annotated[str | None, typer.Argument(help="Zoo model to measure (default: all, in order).")] = None,
    out: Annotated[Path | None, _ZOO_OUT] = None,
) -> None:
    """Measure shipped checkpoints with the harness on held-out ShapesWorld (a run of the model, its tasks
    and the swap/blank controls; no training) and write the run's figures to the manifest's eval."""
    from argus_eval.commands.zoo_cmd import eval_zoo

    eval_zoo(name, out, console)


@zoo_app.command("complete")
def zoo_complete(
    name: Annotated[str | None, typer.Argument(help="Zoo model to complete (default: all).")] = None,
) -> None:
    """Add the processor files a shipped checkpoint lacks (e.g. Qwen2.5-VL's video processor config, which
    transformers needs where torchvision is installed), derived from its own configs; weights untouched."""
    from argus_eval.commands.zoo_cmd import complete_zoo

    complete_zoo(name, console)


@app.command("score-captions")
def score_captions(
    results: Annotated[Path, typer.Argument(help='COCO results file: [{"image_id", "caption"}].')],
    annotations: Annotated[Path, typer.Argument(help="COCO captions annotation file (captions_*.json).")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Score caption results exactly as pycocoevalcap's COCOEvalCap (BLEU, METEOR, ROUGE-L, CIDEr-D)."""
    from argus_eval.commands.metrics_cmd import score_captions_command

    score_captions_command(results, annotations, as_json, console)


@app.command("meteor-server")
def meteor_server(
    port: Annotated[int, typer.Option(help="Loopback port; 0 picks a free one.")] = 0,
    state: Annotated[
        Path | None, typer.Option(help="State file clients find it by (default ~/.cache/argus-eval/).")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="METEOR JVMs (each wants about 4 cores).")] = 1,
) -> None:
    """Keep METEOR's JVMs alive across runs, so a run's scoring skips their start-up."""
    from argus_eval.commands.meteor_server_cmd import meteor_server_command

    meteor_server_command(port, state, workers, console)


@app.command()
def profile(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Model spec (hf:ID_OR_DIR, zoo:NAME, a preset) or the name of a model of the config.",
        ),
    ],
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            help="Task to profile (default: retrieval; a composite model: each of its tasks).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Take datasets, models and timing settings from this config."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Batch size of the throughput call (and the model).")
    ] = 32,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda or auto.")] = "auto",
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="float32, bfloat16, float16 or auto (default: the model's; size-only: the config's).",
        ),
    ] = None,
    trials: Annotated[
        int | None, typer.Option("--trials", min=1, help="Timing trials (default: the config's, 5).")
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option(
            "--repeats", min=1, help="Batch-1 calls per trial, fastest kept (default: config's, 10)."
        ),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option("--warmup", min=0, help="Untimed calls of each path first (default: config's, 2)."),
    ] = None,
    max_new_tokens: Annotated[
        int | None, typer.Option("--max-new-tokens", min=1, help="Cap on every generation's new tokens.")
    ] = None,
    size_only: Annotated[
        bool,
        typer.Option(
            "--size-only",
            help="Size from config.json alone on the meta device (no weights, no "
            "download): params, weight bytes, FLOPs per task, fit and projections per device.",
        ),
    ] = False,
    project_on: Annotated[
        list[str] | None,
        typer.Option("--project-on", help="Size-only: project onto this device profile (repeatable)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Latency p50/p95 at batch 1, throughput, peak memory, FLOPs per sample and params of one model."""
    from argus_eval.commands.profile_cmd import ProfileSettings, profile_command

    settings = ProfileSettings(
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        trials=trials,
        repeats=repeats,
        warmup=warmup,
        max_new_tokens=max_new_tokens,
        size_only=size_only,
        project_on=tuple(project_on or ()),
    )
    profile_command(model, task, config, settings, as_json, console)


def main() -> None:
    """Console-script entry: every failure is one line on stderr (traceback with --debug).

    ArgusError and an unusable file or folder (OSError: disk full, permission, read-only, name too
    long) exit 2; a usage error exits 2 with click's message on one line; Ctrl-C exits 130 saying how
    to resume. A run on Ray is supervised (commands/supervise.py), so that a driver Ray ends abruptly
    still ends with one error line."""
    try:
        _main()
    except Exception:  # a traceback (--debug, or a bug) is this process's own end too
        from argus_eval.runner.ray.loss import note_exit

        note_exit()
        raise


def debug_first(argv: list[str]) -> tuple[list[str], bool]:
    """argv with every --debug moved to the front, where the root callback reads it, and whether there
    was one: a user types it after the subcommand as often as before (`argus run -c x.yaml --debug`).
    Arguments after a bare "--" are left as they are."""
    end = argv.index("--") if "--" in argv else len(argv)
    rest = [a for a in argv[:end] if a != "--debug"]
    debug = len(rest) < end
    return (["--debug"] if debug else []) + rest + argv[end:], debug


def _main() -> None:
    args, debug = debug_first(sys.argv[1:])
    try:
        from argus_eval.commands.supervise import supervised_run

        supervised = supervised_run(args)  # a run on Ray: its child's status (it printed)
        if supervised is not None:
            _exit(supervised)
        code = app(args=args, standalone_mode=False)
    except NoArgsIsHelpError as e:
        err_console.print(e.format_message(), highlight=False, markup=False)
        _exit(2)
    except UsageError as e:
        command = e.ctx.command_path if e.ctx is not None else "argus"
        _fail(f"{e.format_message()} (see {command} --help)")
    except (KeyboardInterrupt, typer.Abort):
        _interrupted()
    except ArgusError as e:
        _traceback(debug)
        _fail(str(e))
    except OSError as e:
        _traceback(debug)
        from argus_eval.runner.write.outputs import os_error_line

        _fail(os_error_line(e))
    if code == 130:  # typer turns Ctrl-C inside a command into exit code 130, silently
        _interrupted()
    _exit(code if isinstance(code, int) else 0)


def _traceback(debug: bool) -> None:
    # --debug adds the traceback above the error line; bad input still exits 2, as without it
    if debug:
        traceback.print_exc(file=sys.stderr)


def _interrupted() -> NoReturn:
    err_console.print("interrupted; rerun the same command to resume", highlight=False)
    _exit(130)


def _exit(code: int) -> NoReturn:
    from argus_eval.runner.ray.loss import note_exit

    note_exit()  # a supervised run on Ray: this end is the CLI's own (commands/supervise.py)
    sys.exit(code)


def _fail(message: str) -> NoReturn:
    from argus_eval.models.secrets import redact_text

    # Last line of defence: no URL credential reaches stderr, whichever error quoted it.
    err_console.print(f"[bold red]error:[/] {escape(redact_text(message))}", highlight=False, soft_wrap=True)
    _exit(2)


if __name__ == "__main__":
    main()
