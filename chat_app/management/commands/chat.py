"""``python manage.py chat``: a terminal chat through the same dispatcher as the web app.

Attended mode: approvals and questions are asked on the terminal. Ctrl-C during
a turn stops it (like the Stop button); ``exit``, ``quit`` or end of input leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import Any, TextIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat_app.selectors import workspace_for
from core.api_errors import NotFoundError
from openprogram.agent.context import QuestionRequest
from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import (
    ApprovalRequested,
    Event,
    HistoryMessage,
    QuestionAsked,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
    ToolsResolved,
    ToolUpdate,
    TurnError,
    TurnFinished,
    TurnRequest,
)
from openprogram.agent.types import ApprovalDecision, ApprovalRequest
from openprogram.programs import TOOLSETS  # importing the package registers the shipped tools
from tools_app.selectors import globally_disabled_names, profile_tool_names

_EXIT_WORDS = {"exit", "quit"}


class Command(BaseCommand):
    help = "Chat with a model in the terminal, using a tool profile (attended mode)."
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profile", default="default", help="tool profile or preset name")
        parser.add_argument("--model", default=None, help="model name (default: the site default)")
        parser.add_argument(
            "--user", default=None, help="username owning the profile (default: an admin)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.input: TextIO = options.get("stdin") or sys.stdin
        user = _owner(options["user"])
        model = options["model"] or getattr(settings, "OPENPROGRAM_DEFAULT_MODEL", "offline")
        base = _profile_request_fields(user, options["profile"])
        base["workspace"] = _workspace(user)
        self.stdout.write(
            f"Chatting with {model!r} as {user.get_username()!r}, profile {options['profile']!r}. "
            "Ctrl-C stops a turn; 'exit' leaves.\n"
        )
        asyncio.run(self._chat(model=model, user=user, base=base))

    def _read(self, prompt: str) -> str | None:
        self.stdout.write(prompt, ending="")
        self.stdout.flush()
        line = self.input.readline()
        return None if line == "" else line.rstrip("\n")

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        arguments = json.dumps(request.arguments, ensure_ascii=False)[:300]
        answer = await asyncio.to_thread(
            self._read, f"\nAllow {request.tool_name}({arguments})? [y/N] "
        )
        if (answer or "").strip().lower() in {"y", "yes"}:
            return ApprovalDecision(approved=True)
        reason = await asyncio.to_thread(self._read, "Reason (optional): ")
        return ApprovalDecision(
            approved=False, reason=(reason or "").strip() or "denied on the terminal"
        )

    async def _answer(self, question: QuestionRequest) -> str:
        choices = f" [{' / '.join(question.choices)}]" if question.choices else ""
        return (await asyncio.to_thread(self._read, f"\n{question.question}{choices}\n> ")) or ""

    async def _chat(self, *, model: str, user: Any, base: dict[str, Any]) -> None:
        history: list[HistoryMessage] = []
        while True:
            text = await asyncio.to_thread(self._read, "\nyou> ")
            if text is None or text.strip().lower() in _EXIT_WORDS:
                return
            if not text.strip():
                continue
            request = TurnRequest(
                text=text,
                history=list(history),
                model=model,
                user_id=user.pk,
                source="cli",
                attended=True,
                approval_hook=self._approve,
                question_hook=self._answer,
                **base,
            )
            answer = await self._run_turn(request)
            history += [HistoryMessage(role="user", content=text)]
            if answer:
                history.append(HistoryMessage(role="assistant", content=answer))

    async def _run_turn(self, request: TurnRequest) -> str:
        loop = asyncio.get_running_loop()
        # Ctrl-C is Stop; not available off the main thread (tests) or on some platforms.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, request.cancel.set)
        answer = ""
        try:
            self.stdout.write("bot> ", ending="")
            async for event in process_user_turn(request):
                self._show(event)
                if isinstance(event, TurnFinished):
                    answer = event.text
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
        return answer

    def _show(self, event: Event) -> None:
        write = self.stdout.write
        if isinstance(event, ToolsResolved):
            deferred = f" (+{len(event.deferred)} deferred)" if event.deferred else ""
            for warning in event.warnings:
                write(f"[warning] {warning}\n", style_func=self.style.WARNING)
            write(f"[{len(event.tools)} tools{deferred}] ", ending="")
        elif isinstance(event, TextDelta):
            write(event.text, ending="")
        elif isinstance(event, ToolCallStarted):
            arguments = (
                event.arguments if isinstance(event.arguments, str) else json.dumps(event.arguments)
            )
            write(f"\n→ {event.name}({arguments[:200]})")
        elif isinstance(event, ToolUpdate):
            for line in event.text.splitlines():
                write(f"  │ {line}")
        elif isinstance(event, ToolFinished):
            mark = "✗" if event.is_error else "✓"
            first = (event.preview.strip().splitlines() or [""])[0][:200]
            write(f"  {mark} {event.name} ({event.duration_ms:.0f} ms): {first}")
        elif isinstance(event, ApprovalRequested | QuestionAsked):
            pass  # the terminal prompt itself shows it
        elif isinstance(event, TurnError):
            write(f"\n[{event.kind}] {event.message}", style_func=self.style.ERROR)
        elif isinstance(event, TurnFinished):
            tokens = event.usage.get("total_tokens", 0)
            steps = f"{event.steps} step{'s' if event.steps != 1 else ''}"
            write(f"\n[{event.stop_reason} · {steps} · {tokens} tokens]")


def _owner(username: str | None) -> Any:
    users = get_user_model().objects
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        return user
    user = users.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise CommandError("no admin user exists; pass --user NAME or run createsuperuser")
    return user


def _profile_request_fields(user: Any, profile: str) -> dict[str, Any]:
    """TurnRequest fields for ``--profile``: the user's tool profile, else a preset name."""
    disabled = globally_disabled_names()
    try:
        return {"profile_tools": profile_tool_names(owner=user, name=profile), "disabled": disabled}
    except NotFoundError as missing:
        if profile not in TOOLSETS:
            known = ", ".join(sorted(TOOLSETS))
            raise CommandError(
                f"no tool profile named {profile!r} for {user.get_username()!r} "
                f"and no preset of that name; presets: {known}"
            ) from missing
    return {"toolset": profile, "disabled": disabled}


def _workspace(user: Any) -> Any:
    return workspace_for(user=user)
