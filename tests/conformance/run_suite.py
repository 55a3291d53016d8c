"""Run the MCP client conformance suite against our headless client; print a table.

``make conformance`` calls this with the pinned suite and Node (see
``tests/conformance/package.json``). Every client scenario the suite lists is
run, one at a time (the suite's own ``--suite`` mode starts them all at once,
which on a small machine pushes Python start-up past the 30 s scenario limit).
A scenario passes when the suite reports no failed check, no warning, and the
client exited cleanly (or the scenario allows a client error). Exit status 1
when any run scenario did not pass.

    python tests/conformance/run_suite.py --node NODE --suite-js INDEX_JS [--group core]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CLIENT = f"{sys.executable} -m openprogram.mcp.conformance_client"
ROOT = Path(__file__).resolve().parents[2]
_LISTED = re.compile(r"^\s+- (\S+)(?: \[([^\]]*)\])?$")


@dataclass
class Outcome:
    scenario: str
    group: str
    passed: int
    failed: int
    warnings: int
    ok: bool
    seconds: float
    problems: list[str]


def group_of(spec_versions: str) -> str:
    """The suite's own grouping, read from the spec versions ``list`` prints."""
    versions = {v.strip() for v in spec_versions.split(",") if v.strip()}
    if "extension" in versions:
        return "extension"
    if "draft" in versions:
        return "draft"
    if versions == {"2025-03-26"}:
        return "backcompat"
    return "core"


def listed_scenarios(suite: list[str]) -> list[tuple[str, str]]:
    out = subprocess.run([*suite, "list", "--client"], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        match = _LISTED.match(line)
        if match:
            found.append((match.group(1), group_of(match.group(2) or "")))
    if not found:
        raise SystemExit(f"the suite listed no client scenarios:\n{out.stdout}{out.stderr}")
    return found


def run_one(suite: list[str], scenario: str, group: str, timeout_ms: int) -> Outcome:
    started = time.monotonic()
    proc = subprocess.run(
        [
            *suite,
            "client",
            "--command",
            CLIENT,
            "--scenario",
            scenario,
            "--verbose",
            "--timeout",
            str(timeout_ms),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_ms / 1000 + 60,
    )
    seconds = time.monotonic() - started
    try:
        checks = json.loads(proc.stdout)
    except json.JSONDecodeError:
        checks = []
    statuses = [check.get("status") for check in checks]
    problems = [
        f"{check.get('id')}: {check.get('errorMessage') or check.get('description')}"
        for check in checks
        if check.get("status") in ("FAILURE", "WARNING")
    ]
    if proc.returncode != 0 and not problems:
        tail = " ".join(proc.stderr.split())[-300:]
        problems.append(f"suite exited {proc.returncode}: {tail}")
    return Outcome(
        scenario=scenario,
        group=group,
        passed=statuses.count("SUCCESS"),
        failed=statuses.count("FAILURE"),
        warnings=statuses.count("WARNING"),
        ok=proc.returncode == 0 and bool(checks),
        seconds=seconds,
        problems=problems,
    )


def table(outcomes: list[Outcome]) -> str:
    width = max(len(o.scenario) for o in outcomes)
    lines = [
        f"{'scenario':<{width}}  {'group':<10}  result  checks (ok/failed/warn)  seconds",
        f"{'-' * width}  {'-' * 10}  ------  -----------------------  -------",
    ]
    for o in outcomes:
        result = "pass" if o.ok else "FAIL"
        counts = f"{o.passed}/{o.failed}/{o.warnings}"
        lines.append(
            f"{o.scenario:<{width}}  {o.group:<10}  {result:<6}  {counts:<23}  {o.seconds:7.1f}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True)
    parser.add_argument("--suite-js", required=True)
    parser.add_argument(
        "--group",
        action="append",
        help="only these groups (core, backcompat, "
        "draft, extension); default: every scenario the suite lists",
    )
    parser.add_argument("--scenario", action="append", help="only these scenarios")
    parser.add_argument("--timeout-ms", type=int, default=30000)
    options = parser.parse_args()
    suite = [options.node, options.suite_js]
    listed = listed_scenarios(suite)
    chosen = [
        (name, group)
        for name, group in listed
        if (name in options.scenario if options.scenario else True)
        and (group in options.group if options.group else True)
    ]
    if not chosen:
        raise SystemExit(f"no listed scenario matches; the suite lists: {[n for n, _ in listed]}")
    started = time.monotonic()
    outcomes = []
    for name, group in chosen:
        outcome = run_one(suite, name, group, options.timeout_ms)
        print(f"{'pass' if outcome.ok else 'FAIL'}  {name}", file=sys.stderr, flush=True)
        outcomes.append(outcome)
    print()
    print(table(outcomes))
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"\n{o.scenario}:")
        for problem in o.problems[:8]:
            print(f"  - {problem}")
    total = time.monotonic() - started
    print(f"\n{len(outcomes) - len(failed)}/{len(outcomes)} scenarios passed in {total:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
