"""grep: regex over workspace files, with context, capped, binaries skipped."""

from __future__ import annotations

import os

from openprogram.programs.builtin.grep import grep


async def test_it_reports_matches_as_path_line_text(turn, workspace, call):
    (workspace / "a.py").write_text("import os\nx = 1\nimport re\n")
    result = await call(grep, {"pattern": r"^import \w+"})
    assert result.content.splitlines() == ["a.py:1:import os", "a.py:3:import re"]
    assert result.details["matches"] == 2


async def test_it_shows_context_lines_and_separates_groups(turn, workspace, call):
    lines = [f"l{n}" for n in range(1, 21)]
    lines[4], lines[15] = "hit one", "hit two"
    (workspace / "t.txt").write_text("\n".join(lines) + "\n")
    result = await call(grep, {"pattern": "hit", "context": 1})
    assert result.content.splitlines() == [
        "t.txt-4-l4",
        "t.txt:5:hit one",
        "t.txt-6-l6",
        "--",
        "t.txt-15-l15",
        "t.txt:16:hit two",
        "t.txt-17-l17",
    ]


async def test_it_filters_by_include_glob_and_ignores_case(turn, workspace, call):
    (workspace / "src").mkdir()
    (workspace / "src/a.py").write_text("Needle\n")
    (workspace / "src/b.md").write_text("needle\n")
    result = await call(grep, {"pattern": "needle", "include": "*.py", "ignore_case": True})
    assert result.content == "src/a.py:1:Needle"


async def test_it_caps_matches_and_says_so(turn, workspace, call):
    (workspace / "many.txt").write_text("x\n" * 50)
    result = await call(grep, {"pattern": "x", "max_matches": 5})
    assert result.content.count("many.txt:") == 5 and "stopped at 5 matches" in result.content


async def test_it_skips_binary_files(turn, workspace, call):
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01")
    (workspace / "text.txt").write_text("needle\n")
    result = await call(grep, {"pattern": "needle"})
    assert result.content == "text.txt:1:needle"


async def test_it_never_searches_outside_the_workspace(turn, workspace, call, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("sentinel-value\n")
    (workspace / "dirlink").symlink_to(outside)
    (workspace / "filelink").symlink_to(outside / "secret.txt")
    result = await call(grep, {"pattern": "sentinel"})
    assert "sentinel-value" not in result.content and result.details["matches"] == 0
    refused = await call(grep, {"pattern": "sentinel", "path": str(outside)})
    assert refused.is_error and "sentinel-value" not in refused.content


async def test_a_bad_regex_is_a_clear_error(turn, call):
    result = await call(grep, {"pattern": "(unclosed"})
    assert result.is_error and "not a valid regular expression" in result.content


async def test_no_match_is_said_plainly(turn, workspace, call):
    (workspace / "a.txt").write_text("nothing here\n")
    result = await call(grep, {"pattern": "absent"})
    assert not result.is_error and "No matches" in result.content


async def test_a_fifo_is_skipped_and_a_symlink_inside_is_not_followed(turn, workspace, call):
    os.mkfifo(workspace / "pipe")
    (workspace / "real.txt").write_text("needle\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    result = await call(grep, {"pattern": "needle"})
    assert result.content == "real.txt:1:needle"
    refused = await call(grep, {"pattern": "needle", "path": "pipe"})
    assert refused.is_error and "a FIFO" in refused.content
