#!/usr/bin/env python3
"""Fuzz the API: 100,000 hypothesis-generated malformed and hostile requests (by default) to every route of the
server's own /openapi/v3, over HTTPS. Prints how many were sent, how fast, and every failure (a 5xx, or a rejected
request that stored something); exit code 1 when there was one. The test suite runs the same with a small budget
(tests/apiserver/test_fuzz.py).

    python scripts/fuzz_api.py [--requests N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from minik.testing.fuzz import ClusterThread, Fuzzer, FuzzRequest, fuzz_requests, routes  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    statuses: Counter[int] = Counter()
    began = time.perf_counter()
    with ClusterThread() as target:
        fuzzer = Fuzzer(target)
        every = routes(target.openapi())
        original = fuzzer.send

        def counted(request: FuzzRequest) -> tuple[int, bytes]:
            status, body = original(request)
            statuses[status] += 1
            return status, body

        fuzzer.send = counted  # type: ignore[method-assign]

        @seed(args.seed)
        @settings(max_examples=args.requests, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(fuzz_requests(every, target.token))
        def one(request: FuzzRequest) -> None:
            fuzzer.check(request)
            if fuzzer.sent % 10_000 == 0:
                print(f"  {fuzzer.sent} requests, {len(fuzzer.failures)} failures", flush=True)

        one()
        alive = fuzzer.still_serving()
        fuzzer.close()
    seconds = time.perf_counter() - began
    print(f"fuzz_api: {fuzzer.sent} requests to {len(every)} routes in {seconds:.0f} s "
          f"({fuzzer.sent / seconds:.0f} requests/s); statuses: "
          + ", ".join(f"{code}: {count}" for code, count in sorted(statuses.items())))
    print(f"fuzz_api: server still serving afterwards: {'yes' if alive else 'NO'}")
    print(f"fuzz_api: {len(fuzzer.failures)} failures")
    for failure in fuzzer.failures[:50]:
        print(f"  {failure}")
    return 0 if alive and not fuzzer.failures else 1


if __name__ == "__main__":
    sys.exit(main())
