"""How fast the served-model client keeps a server busy: a loopback server that answers every chat
completion after a fixed latency (in its own process, so its work never takes the client's GIL) counts
requests and the most it held in flight at once; the client sends N requests at a given concurrency.

Two clients against the same server in the same run:
- argus: OpenAICompatibleModel.generate over the requests, in batches of --batch sent as the runner
  sends them (one image per request, 50 distinct images as a question set has);
- pool: a plain thread pool of `concurrency` threads, each posting the same bodies (images encoded
  beforehand) with its own httpx client: what the machine and the server allow, the reference.

Usage: python benchmarks/bench_served.py [--latency-ms 200] [--concurrency 32 128] [--requests 4000]
Prints requests/s, the peak in flight the server saw, client CPU per request, and retries counted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np

ANSWER = json.dumps(
    {"choices": [{"message": {"content": "yes"}}], "usage": {"prompt_tokens": 12, "completion_tokens": 1}}
).encode()


def _serve(port_q: Any, latency_s: float) -> None:
    state = {"in_flight": 0, "peak": 0, "requests": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers

        def do_POST(self) -> None:
            with lock:
                state["in_flight"] += 1
                state["requests"] += 1
                state["peak"] = max(state["peak"], state["in_flight"])
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if latency_s:
                time.sleep(latency_s)
            with lock:
                state["in_flight"] -= 1
            self._send(ANSWER)

        def do_GET(self) -> None:  # /stats, then reset
            with lock:
                body = json.dumps(state).encode()
                state.update(peak=0, requests=0)
            self._send(body)

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

    httpd = Server(("127.0.0.1", 0), Handler)
    port_q.put(httpd.server_address[1])
    httpd.serve_forever()


def _stats(base: str) -> dict[str, int]:
    out: dict[str, int] = httpx.get(f"{base}/stats").json()
    return out


def _images(n_distinct: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (120, 160, 3), dtype=np.uint8) for _ in range(n_distinct)]


def bench_argus(base: str, concurrency: int, n: int, batch: int) -> dict[str, Any]:
    """The adapter, batch after batch as the runner sends them: the next batches go out while one is
    in flight (runner/execute/ahead.py), as many as the model's max_in_flight asks."""
    from argus_eval.models.api import OpenAICompatibleModel
    from argus_eval.models.spec import ModelConfig
    from argus_eval.runner.execute.ahead import Ahead, window

    spec = f"api:{base}/v1#bench"
    cfg = ModelConfig(name="bench", spec=spec, options={"concurrency": concurrency, "adaptive": False})
    model = OpenAICompatibleModel(cfg, spec.removeprefix("api:"), "bench")
    images = _images(50)
    starts = list(range(0, n, batch))

    def work(k: int) -> list[Any]:
        idx = range(starts[k], min(starts[k] + batch, n))
        return model.generate([images[i % len(images)] for i in idx], [f"question {i}?" for i in idx], 8)

    _stats(base)
    t0, c0 = time.perf_counter(), time.process_time()
    ahead: Ahead[list[Any]] = Ahead()
    try:
        for k in range(len(starts)):
            ahead.fill(k, window([model], batch), lambda j: j < len(starts), work)
            sent = ahead.take(k)
            assert sent is not None
            sent.result()
    finally:
        ahead.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    served = _stats(base)
    model.close()
    log = model.call_log
    return {"wall_s": wall, "cpu_s": cpu, **served, "retries": log["retries"]["total"]}


def bench_pool(base: str, concurrency: int, n: int) -> dict[str, Any]:
    """A plain thread pool, one httpx client per thread: the reference."""
    from argus_eval.models.api_images import png_data_url

    local = threading.local()
    urls = [png_data_url(im) for im in _images(50)]  # the same bodies the adapter sends, encoded once

    def one(i: int) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(timeout=60)
        content = [
            {"type": "image_url", "image_url": {"url": urls[i % 50]}},
            {"type": "text", "text": f"{i}?"},
        ]
        body = {"model": "bench", "messages": [{"role": "user", "content": content}], "max_tokens": 8}
        client.post(f"{base}/v1/chat/completions", json=body).raise_for_status()

    _stats(base)
    t0, c0 = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "cpu_s": cpu, **_stats(base)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument(
        "--batch", type=int, default=32, help="requests per generate() call (the model's batch_size)"
    )
    ap.add_argument("--skip-pool", action="store_true", help="time only the argus client")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    server = ctx.Process(target=_serve, args=(q, args.latency_ms / 1000), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{q.get(timeout=30)}"
    print(
        f"loopback server, {args.latency_ms:g} ms per answer, {args.requests} requests, cpus {os.cpu_count()}"
    )
    try:
        for c in args.concurrency:
            rows = {"argus": bench_argus(base, c, args.requests, args.batch)}
            if not args.skip_pool:
                rows["pool"] = bench_pool(base, c, args.requests)
            for name, r in rows.items():
                rate = r["requests"] / r["wall_s"]
                print(
                    f"concurrency {c:4d} {name:6s}: {rate:8.1f} req/s, peak in flight {r['peak']:4d}, "
                    f"client CPU {1000 * r['cpu_s'] / r['requests']:.2f} ms/request, server saw "
                    f"{r['requests']} requests" + (f", retries {r['retries']}" if "retries" in r else "")
                )
            if "pool" in rows:
                ratio = (rows["argus"]["requests"] / rows["argus"]["wall_s"]) / (
                    rows["pool"]["requests"] / rows["pool"]["wall_s"]
                )
                ideal = c / (args.latency_ms / 1000) if args.latency_ms else float("nan")
                argus_rate = rows["argus"]["requests"] / rows["argus"]["wall_s"]
                print(f"  argus/pool {ratio:.2f}x; argus/ideal ({ideal:.0f} req/s) {argus_rate / ideal:.2f}x")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
