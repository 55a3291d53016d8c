"""Layer-4 reasons: a gate that raises ToolUnavailable states the reason a person reads."""

from __future__ import annotations

import pytest

from openprogram.programs import ToolUnavailable
from openprogram.programs._availability import clear_availability_cache
from openprogram.programs.decorator import function
from openprogram.programs.policy import resolve_tools


@pytest.fixture(autouse=True)
def _fresh_gate_cache():
    clear_availability_cache()
    yield
    clear_availability_cache()


def _needs_docker() -> bool:
    raise ToolUnavailable("Docker is not running: start it with `systemctl start docker`")


def test_a_check_fn_raising_tool_unavailable_gives_its_message_as_the_reason():
    @function(check_fn=_needs_docker)
    def containers() -> str:
        """List containers."""
        return ""

    decision = resolve_tools(only_available=True).decision("containers")
    assert not decision.offered and decision.layer == "L4"
    assert decision.reason == "Docker is not running: start it with `systemctl start docker`"


def test_a_can_use_raising_tool_unavailable_gives_its_message_as_the_reason():
    def admins_only(**context: object) -> bool:
        if context.get("role") != "admin":
            raise ToolUnavailable(f"only admins may shut down; you are {context.get('role')!r}")
        return True

    @function(can_use=admins_only)
    def shutdown() -> str:
        """Shut down."""
        return ""

    as_user = resolve_tools(only_available=True, can_use_context={"role": "user"})
    as_admin = resolve_tools(only_available=True, can_use_context={"role": "admin"})
    assert as_user.decision("shutdown").reason == "only admins may shut down; you are 'user'"
    assert as_admin.decision("shutdown").offered


def test_a_plain_false_still_names_the_gate_and_a_bug_still_names_the_exception():
    @function(check_fn=lambda: False)
    def quiet() -> str:
        """Quiet gate."""
        return ""

    @function(check_fn=lambda: 1 / 0)
    def buggy() -> str:
        """Buggy gate."""
        return ""

    resolution = resolve_tools(only_available=True)
    assert resolution.decision("quiet").reason == "check_fn returned False"
    assert resolution.decision("buggy").reason.startswith("check_fn raised ZeroDivisionError")


def test_the_reason_is_cached_like_any_check_fn_result():
    calls: list[int] = []

    def counted() -> bool:
        calls.append(1)
        raise ToolUnavailable("not yet")

    @function(check_fn=counted)
    def later() -> str:
        """Later."""
        return ""

    reasons = {resolve_tools(only_available=True).decision("later").reason for _ in range(3)}
    assert reasons == {"not yet"} and len(calls) == 1


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_tool_unavailable_needs_a_reason(reason):
    with pytest.raises(ValueError, match="needs a reason"):
        ToolUnavailable(reason)
