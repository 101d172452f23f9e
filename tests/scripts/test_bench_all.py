"""scripts/bench/all and scripts/benchlib.py: benchmarks report rows, the runner gathers them into one table and one
JSON file (not timed: the benchmarks here are tiny scripts written by the test)."""

from __future__ import annotations

import json
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load(name: str, path: Path) -> ModuleType:
    loader = SourceFileLoader(name, str(path))
    spec = spec_from_loader(name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def benchlib() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        return load("benchlib", SCRIPTS / "benchlib.py")
    finally:
        sys.path.remove(str(SCRIPTS))


@pytest.fixture(scope="module")
def bench_all(benchlib: ModuleType) -> ModuleType:
    return load("bench_all", SCRIPTS / "bench" / "all")


FAKE_BENCH = """
import argparse, sys
from pathlib import Path
sys.path.insert(0, {scripts!r})
import benchlib
parser = argparse.ArgumentParser()
parser.add_argument("--json", type=Path)
parser.add_argument("--fail", action="store_true")
args = parser.parse_args()
print("the benchmark's own output")
if args.fail:
    sys.exit(3)
benchlib.write_json(args.json, [
    benchlib.row("requests/s", 1500.0, anchor="bare app requests/s", anchor_value=3000.0, goal=">= 0.4x",
                 met=True),
    benchlib.row("p99 ms", 120.0, goal="<= 100 ms", met=False)], {{"runs": 1}})
"""


def test_a_row_carries_its_ratio_to_the_anchor_and_whether_its_goal_is_met(benchlib: ModuleType) -> None:
    row = benchlib.row("creates/s", 50.0, anchor="etcd puts/s", anchor_value=200.0, goal=">= 1.0x", met=False)
    assert row == {"figure": "creates/s", "value": 50.0, "anchor": "etcd puts/s", "anchor_value": 200.0,
                   "ratio": 0.25, "goal": ">= 1.0x", "met": False}
    assert benchlib.row("not measured", None, goal="<= 1 s", met=True)["met"] is None
    assert benchlib.row("no anchor", 3.0)["ratio"] is None


def test_the_table_shows_every_column_and_marks_goals_not_met(benchlib: ModuleType) -> None:
    text = benchlib.table([benchlib.row("creates/s", 4364.0, anchor="etcd puts/s", anchor_value=6447.0,
                                        goal=">= 1.0x", met=False),
                           benchlib.row("start-up s", 0.46, goal="< 0.5 s", met=True)])
    header, rule, first, second = text.splitlines()
    assert header.split() == ["figure", "value", "anchor", "ratio", "goal", "met"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert "4,364" in first and "etcd puts/s: 6,447" in first and "0.68" in first and first.endswith("NO")
    assert "0.46" in second and second.endswith("yes")


def test_bench_all_gathers_each_benchmarks_rows_into_one_table_and_json(bench_all: ModuleType, tmp_path: Path,
                                                                         capfd: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bench_fake.py"
    script.write_text(FAKE_BENCH.format(scripts=str(SCRIPTS)))
    good = bench_all.Bench("fake", str(script), timeout=120)
    bad = bench_all.Bench("broken", str(script), args=("--fail",), timeout=120)
    rows, run = bench_all.run_bench(good, False, tmp_path)
    failed_rows, failed_run = bench_all.run_bench(bad, False, tmp_path)
    assert "the benchmark's own output" in capfd.readouterr().out
    assert [(r["bench"], r["figure"], r["met"]) for r in rows] == [("fake", "requests/s", True),
                                                                    ("fake", "p99 ms", False)]
    assert rows[0]["ratio"] == 0.5 and run["exit_code"] == 0 and run["details"] == {"runs": 1}
    assert failed_run["exit_code"] == 3 and "error" in failed_run
    assert failed_rows[0]["figure"] == "broken: FAILED (exit code 3)" and failed_rows[0]["value"] is None

    out = tmp_path / "out" / "all.json"
    bench_all.write_report(out, rows + failed_rows, {"fake": run, "broken": failed_run}, quick=True)
    report = json.loads(out.read_text())
    assert report["quick"] is True and report["machine"]["cpus"]
    assert [r["figure"] for r in report["rows"]] == ["requests/s", "p99 ms", "broken: FAILED (exit code 3)"]
    table = bench_all.benchlib.table(report["rows"])
    assert table.splitlines()[0].split()[:2] == ["bench", "figure"]


def test_bench_all_knows_every_benchmark_script_and_refuses_unknown_names(bench_all: ModuleType) -> None:
    on_disk = {p.name for p in SCRIPTS.glob("bench_*.py")}
    assert {b.script for b in bench_all.BENCHES} == on_disk
    assert [b.name for b in bench_all.select(["idle", "scale"], [], False)] == ["idle", "scale"]
    assert "pod_startup" not in [b.name for b in bench_all.select([], [], True)]
    with pytest.raises(SystemExit, match="no benchmark named 'nope'"):
        bench_all.select(["nope"], [], False)
