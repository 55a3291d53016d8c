"""``manage.py chat``: the terminal chat drives real offline turns and asks approvals."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from openprogram.programs.decorator import function
from tests.component.agent import tools_for_tests as tools

pytestmark = pytest.mark.django_db


def _chat(stdin: str, *args: str) -> str:
    out = io.StringIO()
    call_command("chat", *args, stdin=io.StringIO(stdin), stdout=out)
    return out.getvalue()


def test_it_chats_runs_tools_and_asks_approval_on_the_terminal(admin_user, empty_registry):
    deleted: list[str] = []
    tools.register_echo()
    tools.register_guarded_delete(deleted)

    output = _chat(
        "hello\n/delete_note title=plans\ny\n/delete_note title=diary\nn\nkeep it\nexit\n",
        "--model",
        "offline",
    )

    assert "Tools offered this turn: echo, delete_note." in output
    assert "Allow delete_note" in output
    assert "✓ delete_note" in output
    assert "✗ delete_note" in output
    assert "keep it" in output
    assert deleted == ["plans"]
    assert output.count("[completed") == 3


def test_a_preset_name_works_as_a_profile_and_an_unknown_one_is_refused(admin_user, empty_registry):
    tools.register_echo()

    @function
    def read(path: str) -> str:
        """Read a file."""
        return path

    output = _chat("hello\nexit\n", "--profile", "fs_read")

    assert "Tools offered this turn: read." in output
    with pytest.raises(CommandError, match="no tool profile named 'nope'"):
        _chat("exit\n", "--profile", "nope")


def test_an_unknown_user_is_refused(empty_registry):
    with pytest.raises(CommandError, match="no user named 'carol'"):
        _chat("exit\n", "--user", "carol")
