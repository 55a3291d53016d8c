"""The policy API: a user's own saved rules, and the simulator."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from tools_app.api_schemas import BodySchema
from tools_app.policy import selectors, services

__all__ = ["router"]

router = Router(tags=["policy"])


class SavedRuleOut(Schema):
    id: int
    tool: str
    pattern: str
    words: str
    created_at: datetime


class SavedRuleIn(BodySchema):
    rule: str = Field(max_length=500, description="`tool: pattern`, e.g. `bash: git status`")


class SimulateIn(BodySchema):
    user: int | None = Field(default=None, description="User id; default: yourself")
    tool: str = Field(max_length=255)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ConsideredOut(Schema):
    rule: str
    id: int | str | None
    matched: bool
    outcome: str


class SimulateOut(Schema):
    user: str
    tool: str
    verdict: str
    rule: int | str | None
    words: str
    considered: list[ConsideredOut]
    user_may_allow: bool
    source: str
    offered: bool
    removed_because: str


@router.get("/policy/rules", response=list[SavedRuleOut], summary="Your saved allow rules")
def saved_rules(request: HttpRequest):
    return selectors.policy_user_rules(user=request.user)


@router.post("/policy/rules", response={201: SavedRuleOut}, summary='Save an "always allow" rule')
def saved_rule_create(request: HttpRequest, payload: SavedRuleIn):
    row = services.policy_user_rule_create(user=request.user, text=payload.rule)
    (saved,) = [r for r in selectors.policy_user_rules(user=request.user) if r["id"] == row.pk]
    return Status(201, saved)


@router.delete("/policy/rules/{rule_id}", response={204: None}, summary="Revoke a saved rule")
def saved_rule_delete(request: HttpRequest, rule_id: int):
    services.policy_user_rule_delete(user=request.user, rule_id=rule_id)
    return Status(204, None)


@router.post(
    "/policy/simulate",
    response=SimulateOut,
    summary="The verdict on one call: staff for anyone, a user for themselves",
)
def simulate(request: HttpRequest, payload: SimulateIn):
    return services.policy_simulate(
        actor=request.user, user_id=payload.user, tool=payload.tool, arguments=payload.arguments
    )
