"""glob: sorted, capped matches inside the workspace."""

from __future__ import annotations

from openprogram.programs.builtin.glob import glob


def _tree(workspace):
    for path in ("a.py", "b.md", "src/c.py", "src/deep/d.py", ".git/x.py", "node_modules/m.py"):
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text("")


async def test_a_plain_pattern_matches_one_directory(turn, workspace, call):
    _tree(workspace)
    result = await call(glob, {"pattern": "*.py"})
    assert result.content == "a.py"


async def test_double_star_matches_at_any_depth_sorted_and_skips_noise(turn, workspace, call):
    _tree(workspace)
    result = await call(glob, {"pattern": "**/*.py"})
    assert result.content.splitlines() == ["a.py", "src/c.py", "src/deep/d.py"]


async def test_it_searches_from_a_subdirectory_and_marks_directories(turn, workspace, call):
    _tree(workspace)
    result = await call(glob, {"pattern": "*", "path": "src"})
    assert result.content.splitlines() == ["src/c.py", "src/deep/"]


async def test_it_caps_results_and_says_how_many_were_left_out(turn, workspace, call):
    for n in range(30):
        (workspace / f"f{n:02}.txt").write_text("")
    result = await call(glob, {"pattern": "*.txt", "max_results": 10})
    assert result.content.splitlines()[:10] == [f"f{n:02}.txt" for n in range(10)]
    assert "20 more matches" in result.content and result.details["total"] == 30


async def test_it_refuses_patterns_and_paths_that_leave_the_workspace(turn, workspace, call):
    for args in ({"pattern": "../*"}, {"pattern": "/etc/*"}, {"pattern": "*", "path": ".."}):
        result = await call(glob, args)
        assert result.is_error, args


async def test_it_does_not_follow_a_symlinked_directory_out(turn, workspace, call, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (workspace / "link").symlink_to(outside)
    result = await call(glob, {"pattern": "**/*.py"})
    assert "secret.py" not in result.content


async def test_no_match_is_said_plainly(turn, workspace, call):
    result = await call(glob, {"pattern": "*.rs"})
    assert not result.is_error and "No paths match" in result.content
