"""`argus meteor-server`: keep METEOR's JVMs alive across runs (metrics/meteor_server.py)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from rich.console import Console


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the server as Ctrl-C does: JVMs stopped, state file removed


def meteor_server_command(port: int, state: Path | None, workers: int, console: Console) -> None:
    """Serve METEOR on 127.0.0.1:port until Ctrl-C or SIGTERM; state None: the default state file."""
    from argus_eval.metrics.meteor_server import DEFAULT_STATE, SERVER_ENV, serve

    state = state or DEFAULT_STATE

    def ready(address: str) -> None:
        console.print(
            f"METEOR server on {address} (state file {state}); runs use it "
            f"{'by default' if state == DEFAULT_STATE else f'with {SERVER_ENV}={state}'}; "
            "Ctrl-C stops it",
            highlight=False,
            soft_wrap=True,
        )
        sys.stdout.flush()

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        serve(port, state, workers, ready)
    except KeyboardInterrupt:
        console.print("METEOR server stopped", highlight=False)
