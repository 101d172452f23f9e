#!/usr/bin/env python3
"""Cold start: from spawning `minik up` to the first 200 from /readyz, next to a bare aiohttp app's start to its
first 200, measured in the same run (each the median of several runs, each on a fresh data directory, so minik
makes its CA, serving certificate and admin token every time, and answers over HTTPS as `minik up` does).

    python scripts/bench_startup.py [--runs 10] [--json out.json]

Goals: under 0.5 s, and at most 2.5x the bare aiohttp app.
"""

from __future__ import annotations

import argparse
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import benchlib


def time_to_ready(command: list[str], port: int, timeout: float = 20.0, scheme: str = "http") -> float:
    """Seconds from spawning ``command`` to the first 200 from SCHEME://127.0.0.1:PORT/readyz (for https the
    certificate is not checked: it does not exist before the server makes it, and only the time matters)."""
    context = ssl._create_unverified_context() if scheme == "https" else None  # noqa: S323
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/readyz", timeout=1,
                                            context=context) as response:
                    if response.status == 200:
                        return time.perf_counter() - began
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if process.poll() is not None:
                raise RuntimeError(f"{command[:3]} exited with {process.returncode} before it was ready")
            if time.perf_counter() - began > timeout:
                raise RuntimeError(f"{command[:3]} not ready after {timeout}s")
            time.sleep(0.002)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    minik_times: list[float] = []
    bare_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        bare = Path(tmp) / "bare.py"
        bare.write_text(benchlib.BARE_APP)
        for run in range(args.runs):  # interleaved, so both see the same machine
            port = benchlib.free_port()
            bare_times.append(time_to_ready([sys.executable, str(bare), str(port)], port))
            port = benchlib.free_port()
            data = Path(tmp) / f"data-{run}"
            minik_times.append(time_to_ready([sys.executable, "-m", "minik", "up", "--data-dir", str(data),
                                              "--port", str(port), "--log-file", os.devnull], port,
                                             scheme="https"))
    minik_s, bare_s = statistics.median(minik_times), statistics.median(bare_times)
    ratio = minik_s / bare_s
    rows = [
        ("minik up -> first 200 /readyz (s, median)", f"{minik_s:.3f}", "bare aiohttp app start (s, median)",
         f"{bare_s:.3f}", f"{ratio:.2f}", "< 0.5 s and ratio <= 2.5",
         "yes" if minik_s < 0.5 and ratio <= 2.5 else "no"),
    ]
    header = ("figure", "value", "anchor", "anchor value", "ratio", "goal", "met")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    print(f"  runs: {args.runs}; minik min/max {min(minik_times):.3f}/{max(minik_times):.3f} s, "
          f"bare min/max {min(bare_times):.3f}/{max(bare_times):.3f} s")
    benchlib.write_json(args.json, [benchlib.row(
        "minik up -> first 200 /readyz (s, median)", minik_s, anchor="bare aiohttp app start (s, median)",
        anchor_value=bare_s, goal="< 0.5 s and ratio <= 2.5", met=minik_s < 0.5 and ratio <= 2.5)],
        {"minik_seconds": minik_times, "bare_seconds": bare_times})
    return 0


if __name__ == "__main__":
    sys.exit(main())
