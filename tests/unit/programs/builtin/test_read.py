"""read: numbered lines, paging, confinement, and paging through persisted results."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from openprogram.agent.context import TurnContext, current_turn
from openprogram.config import get_config
from openprogram.programs.builtin.read import read
from openprogram.programs.results import (
    LOCAL_RESULTS_DIRNAME,
    cap_result_text,
    reset_context_window_chars,
    results_dir_for_user,
    set_context_window_chars,
)

_SECRET = "".join(f"alice secret row {n}\n" for n in range(5_000))


def _persist_for(user_id: str | None) -> str:
    """Persist a long result the way a tool call in ``user_id``'s turn would."""
    token = current_turn.set(TurnContext(user_id=user_id) if user_id is not None else None)
    try:
        capped = cap_result_text(_SECRET, tool=read._agent_tool, call_id="earlier")
    finally:
        current_turn.reset(token)
    assert capped.full_result_path is not None and capped.full_result_path in capped.text
    return capped.full_result_path


async def test_it_numbers_lines_like_cat_n(turn, workspace, call):
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    result = await call(read, {"path": "a.txt"})
    assert not result.is_error
    assert result.content == "     1\talpha\n     2\tbeta"


async def test_it_pages_with_offset_and_limit_and_says_where_to_continue(turn, workspace, call):
    (workspace / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    result = await call(read, {"path": "big.txt", "offset": 10, "limit": 3})
    assert result.content.splitlines()[:3] == [
        "    10\tline 10",
        "    11\tline 11",
        "    12\tline 12",
    ]
    assert "offset=13" in result.content
    assert result.details["more"] is True
    last = await call(read, {"path": "big.txt", "offset": 99})
    assert "offset=" not in last.content and last.content.endswith("line 100")


async def test_it_stops_a_page_before_the_result_cap(turn, workspace, call):
    (workspace / "wide.txt").write_text(("x" * 1000 + "\n") * 200)
    result = await call(read, {"path": "wide.txt"})
    assert not result.truncated
    assert len(result.content) < 50_000 and "call read with offset=" in result.content


async def test_it_refuses_a_path_outside_the_workspace(turn, workspace, call, tmp_path):
    (tmp_path / "secret.txt").write_text("sentinel")
    result = await call(read, {"path": "../secret.txt"})
    assert result.is_error and "'..' is not accepted" in result.content
    assert "sentinel" not in result.content


async def test_it_reports_missing_files_directories_and_binaries(turn, workspace, call):
    (workspace / "bin.dat").write_bytes(b"\x00\x01\x02")
    (workspace / "d").mkdir()
    missing = await call(read, {"path": "nope.txt"})
    assert missing.is_error and "'nope.txt'" in missing.content
    directory = await call(read, {"path": "d"})
    assert directory.is_error and "list_dir" in directory.content
    binary = await call(read, {"path": "bin.dat"})
    assert binary.is_error and "binary" in binary.content


async def test_it_rejects_bad_arguments_before_running(turn, call):
    result = await call(read, {"path": "a.txt", "offset": 0})
    assert result.is_error and "'offset'" in result.content
    result = await call(read, {})
    assert result.is_error and "missing required field 'path'" in result.content


async def test_paging_a_persisted_result_never_persists_it_again(turn, call):
    source = read._agent_tool
    huge = "".join(f"row {n} " + "y" * 80 + "\n" for n in range(3000))
    capped = cap_result_text(huge, tool=source, call_id="earlier")
    assert capped.full_result_path is not None
    own = results_dir_for_user("alice")
    assert Path(capped.full_result_path).parent == own
    before = set(own.iterdir())

    page = await call(read, {"path": capped.full_result_path, "offset": 2000, "limit": 5})
    assert not page.is_error and page.content.startswith("  2000\trow 1999 ")

    token = set_context_window_chars(10_000)  # a small model: the page itself gets capped
    try:
        result = await call(read, {"path": capped.full_result_path})
    finally:
        reset_context_window_chars(token)
    assert result.truncated and result.full_result_path is None
    assert set(own.iterdir()) == before


async def test_a_capped_read_of_a_workspace_file_is_persisted(turn, workspace, call):
    (workspace / "long.txt").write_text("z" * 30 + "\n" * 1 + ("w" * 90 + "\n") * 400)
    token = set_context_window_chars(10_000)
    try:
        result = await call(read, {"path": "long.txt"})
    finally:
        reset_context_window_chars(token)
    assert result.truncated and result.full_result_path is not None


async def test_a_relative_path_never_reaches_the_results_directory(turn, call):
    results = get_config().results_dir
    results.mkdir(parents=True)
    (results / "other.txt").write_text("not yours")
    result = await call(read, {"path": "other.txt"})
    assert result.is_error and "not yours" not in result.content


async def test_a_fifo_is_refused_instead_of_blocking_forever(turn, workspace, call):
    os.mkfifo(workspace / "pipe")
    result = await call(read, {"path": "pipe"})
    assert result.is_error and "not a regular file" in result.content


async def test_alices_turn_reads_her_own_persisted_result(turn, call):
    path = _persist_for("alice")
    result = await call(read, {"path": path, "limit": 3})
    assert not result.is_error
    assert result.content.startswith("     1\talice secret row 0\n     2\talice secret row 1")


async def test_bobs_turn_cannot_read_alices_persisted_result(turn, call):
    path = _persist_for("alice")
    bobs_turn = current_turn.set(dataclasses.replace(turn, user_id="bob"))
    try:
        result = await call(read, {"path": path})
    finally:
        current_turn.reset(bobs_turn)
    assert result.is_error
    assert "not one of this user's saved results" in result.content
    # The refused path is named, with the server's results directory hidden.
    assert f"'<results>/alice/{Path(path).name}'" in result.content and path not in result.content
    assert "alice secret" not in result.content


async def test_bob_cannot_reach_alices_result_through_his_own_directory(turn, call):
    path = Path(_persist_for("alice"))
    results_dir_for_user("bob").mkdir(parents=True)
    sneaky = results_dir_for_user("bob") / ".." / "alice" / path.name
    bobs_turn = current_turn.set(dataclasses.replace(turn, user_id="bob"))
    try:
        result = await call(read, {"path": str(sneaky)})
    finally:
        current_turn.reset(bobs_turn)
    assert result.is_error and "not one of this user's saved results" in result.content
    assert "alice secret" not in result.content


async def test_a_symlink_in_bobs_directory_to_alices_result_is_refused(turn, call):
    path = Path(_persist_for("alice"))
    bobs = results_dir_for_user("bob")
    bobs.mkdir(parents=True)
    (bobs / "link.txt").symlink_to(path)
    bobs_turn = current_turn.set(dataclasses.replace(turn, user_id="bob"))
    try:
        result = await call(read, {"path": str(bobs / "link.txt")})
    finally:
        current_turn.reset(bobs_turn)
    assert result.is_error and "alice secret" not in result.content


async def test_a_users_missing_result_is_reported_as_not_found(turn, call):
    _persist_for("alice")
    missing = results_dir_for_user("alice") / "gone.txt"
    result = await call(read, {"path": str(missing)})
    assert result.is_error and "FileNotFoundError" in result.content
    assert "'<results>/alice/gone.txt'" in result.content and str(missing) not in result.content


async def test_outside_a_turn_only_results_saved_outside_a_turn_are_readable(call):
    local = _persist_for(None)
    assert Path(local).parent == get_config().results_dir / LOCAL_RESULTS_DIRNAME
    page = await call(read, {"path": local, "limit": 1})
    assert not page.is_error and page.content.startswith("     1\talice secret row 0\n[")
    alices = _persist_for("alice")
    refused = await call(read, {"path": alices})
    assert refused.is_error and "not one of this user's saved results" in refused.content


async def test_it_follows_no_symlink_and_names_the_one_it_met(turn, workspace, call, tmp_path):
    (tmp_path / "secret.txt").write_text("sentinel")
    (workspace / "inside.txt").write_text("inside")
    (workspace / "to-inside").symlink_to("inside.txt")
    (workspace / "out").symlink_to(tmp_path)
    for path, component in [("to-inside", "to-inside"), ("out/secret.txt", "out")]:
        result = await call(read, {"path": path})
        assert result.is_error and f"'{component}' is a symbolic link" in result.content
        assert "sentinel" not in result.content and "inside\n" not in result.content


async def test_an_absolute_path_is_refused_even_inside_the_workspace(turn, workspace, call):
    (workspace / "a.txt").write_text("alpha\n")
    result = await call(read, {"path": str(workspace / "a.txt")})
    assert result.is_error and "absolute paths are not accepted" in result.content
