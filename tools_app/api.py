"""The tools API: catalog, tool profiles, resolution, import/export, agent profiles, tokens.

Each endpoint validates, calls one selector or service and returns a schema.
Domain errors (404/409/422) come from services and are mapped in
``core.api_errors``; authentication (session + CSRF or bearer token)
is the NinjaAPI's default.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Query, Router, Schema, Status

from core.api_errors import ForbiddenError
from tools_app import agent_profile_services, selectors, services
from tools_app.api_schemas import (
    AgentProfileIn,
    AgentProfileOut,
    AgentProfilePatch,
    DuplicateIn,
    ImportIn,
    ImportOut,
    ProfileAddToolIn,
    ProfileDetailOut,
    ProfileIn,
    ProfileOut,
    ProfilePatch,
    ResolveIn,
    ResolveOut,
    TokenCreatedOut,
    TokenIn,
    TokenOut,
    ToolDetailOut,
    ToolDisableIn,
    ToolOut,
)
from tools_app.presenters import (
    CatalogState,
    catalog_payload,
    profile_detail,
    resolve_payload,
    tool_detail,
)

__all__ = ["router"]

router = Router(tags=["tools"])


class ToolFilters(Schema):
    search: str = ""
    source: str | None = None
    toolset: str | None = None
    state: CatalogState | None = None


# --- catalog -----------------------------------------------------------------------------


@router.get("/tools", response=list[ToolOut], summary="The tool catalog (registered, exposed)")
def tools_list(request: HttpRequest, filters: Query[ToolFilters]):
    return catalog_payload(
        owner=request.user,
        search=filters.search,
        source=filters.source,
        toolset=filters.toolset,
        state=filters.state,
    )


@router.get(
    "/tools/{name}",
    response=ToolDetailOut,
    summary="One tool: its JSON schema and why it is (not) offered with your active profile",
)
def tools_get(request: HttpRequest, name: str):
    return tool_detail(owner=request.user, name=name)


@router.put(
    "/tools/{name}/disable",
    response=ToolOut,
    summary="Staff: globally disable (or re-enable) a tool — layer 5",
)
def tools_disable(request: HttpRequest, name: str, payload: ToolDisableIn):
    if not request.user.is_staff:
        raise ForbiddenError("Only staff can disable tools globally.")
    if payload.disabled:
        return services.tool_disable(name=name, by=request.user, reason=payload.reason)
    return services.tool_enable(name=name)


# --- tool profiles -------------------------------------------------------------------------


@router.get("/profiles", response=list[ProfileOut], summary="Your tool profiles, default first")
def profiles_list(request: HttpRequest):
    return selectors.profile_list(owner=request.user)


@router.post("/profiles", response={201: ProfileDetailOut}, summary="Create a tool profile")
def profiles_create(request: HttpRequest, payload: ProfileIn):
    row = services.profile_create(owner=request.user, name=payload.name, tools=payload.tools)
    return Status(201, profile_detail(owner=request.user, name=row.name))


@router.get("/profiles/export", summary="Export your profiles as functions_meta.json")
def profiles_export(request: HttpRequest) -> dict[str, Any]:
    return selectors.profiles_export(owner=request.user)


@router.post("/profiles/import", response=ImportOut, summary="Import functions_meta.json")
def profiles_import(request: HttpRequest, payload: ImportIn):
    return services.profiles_import(
        owner=request.user,
        data={"profiles": payload.profiles, "active": payload.active},
        replace=payload.replace,
    )


@router.get("/profiles/{name}", response=ProfileDetailOut, summary="One profile and its cost")
def profiles_get(request: HttpRequest, name: str):
    return profile_detail(owner=request.user, name=name)


@router.patch(
    "/profiles/{name}",
    response=ProfileDetailOut,
    summary="Rename a profile, set its tools, or make it active",
)
def profiles_update(request: HttpRequest, name: str, payload: ProfilePatch):
    # All or nothing: a rename that conflicts must not leave the new tool list applied.
    with transaction.atomic():
        if payload.tools is not None:
            services.profile_set_tools(owner=request.user, name=name, tools=payload.tools)
        if payload.name is not None:
            name = services.profile_rename(
                owner=request.user, name=name, new_name=payload.name
            ).name
        if payload.active:
            services.profile_activate(owner=request.user, name=name)
    return profile_detail(owner=request.user, name=name)


@router.delete("/profiles/{name}", response={204: None}, summary="Delete a profile")
def profiles_delete(request: HttpRequest, name: str):
    services.profile_delete(owner=request.user, name=name)
    return Status(204, None)


@router.post("/profiles/{name}/tools", response=ProfileDetailOut, summary="Add a tool")
def profiles_add_tool(request: HttpRequest, name: str, payload: ProfileAddToolIn):
    services.profile_add_tool(owner=request.user, name=name, tool=payload.tool)
    return profile_detail(owner=request.user, name=name)


@router.delete("/profiles/{name}/tools/{tool}", response=ProfileDetailOut, summary="Remove a tool")
def profiles_remove_tool(request: HttpRequest, name: str, tool: str):
    services.profile_remove_tool(owner=request.user, name=name, tool=tool)
    return profile_detail(owner=request.user, name=name)


@router.post(
    "/profiles/{name}/duplicate",
    response={201: ProfileDetailOut},
    summary="Copy a profile (default included) under a new name",
)
def profiles_duplicate(request: HttpRequest, name: str, payload: DuplicateIn):
    row = services.profile_duplicate(owner=request.user, name=name, new_name=payload.name)
    return Status(201, profile_detail(owner=request.user, name=row.name))


# --- resolution ----------------------------------------------------------------------------


@router.post(
    "/resolve",
    response=ResolveOut,
    summary="What a turn would offer: tools, deferred tools, explain trace, token cost",
)
def resolve(request: HttpRequest, payload: ResolveIn):
    return resolve_payload(
        owner=request.user,
        profile_name=payload.profile,
        source=payload.source,
        tools_on=payload.tools_on,
        web_search_on=payload.web_search_on,
        plan_mode=payload.plan_mode,
        attended=payload.attended,
        agent_profile_id=payload.agent_profile,
    )


# --- agent profiles ------------------------------------------------------------------------


@router.get("/agent-profiles", response=list[AgentProfileOut], summary="Your agent profiles")
def agent_profiles_list(request: HttpRequest):
    return selectors.agent_profile_list(owner=request.user)


@router.post("/agent-profiles", response={201: AgentProfileOut}, summary="Create an agent profile")
def agent_profiles_create(request: HttpRequest, payload: AgentProfileIn):
    created = agent_profile_services.agent_profile_create(
        owner=request.user,
        name=payload.name,
        model=payload.model,
        system_prompt=payload.system_prompt,
        tools=payload.tools.model_dump(),
    )
    return Status(201, created)


@router.get("/agent-profiles/{pk}", response=AgentProfileOut, summary="One agent profile")
def agent_profiles_get(request: HttpRequest, pk: int):
    return selectors.agent_profile_get(owner=request.user, pk=pk)


@router.patch("/agent-profiles/{pk}", response=AgentProfileOut, summary="Change an agent profile")
def agent_profiles_update(request: HttpRequest, pk: int, payload: AgentProfilePatch):
    changes = payload.model_dump(exclude_unset=True)
    return agent_profile_services.agent_profile_update(owner=request.user, pk=pk, **changes)


@router.delete("/agent-profiles/{pk}", response={204: None}, summary="Delete an agent profile")
def agent_profiles_delete(request: HttpRequest, pk: int):
    agent_profile_services.agent_profile_delete(owner=request.user, pk=pk)
    return Status(204, None)


# --- API tokens ----------------------------------------------------------------------------


@router.get("/tokens", response=list[TokenOut], tags=["account"], summary="Your API tokens")
def tokens_list(request: HttpRequest):
    return selectors.api_token_list(owner=request.user)


@router.post(
    "/tokens",
    response={201: TokenCreatedOut},
    tags=["account"],
    summary="Create an API token (the clear token is returned once)",
)
def tokens_create(request: HttpRequest, payload: TokenIn):
    row, clear = services.api_token_issue(owner=request.user, name=payload.name)
    return Status(
        201,
        {
            "id": row.pk,
            "name": row.name,
            "prefix": row.prefix,
            "created_at": row.created_at,
            "last_used_at": row.last_used_at,
            "token": clear,
        },
    )


@router.delete(
    "/tokens/{pk}", response={204: None}, tags=["account"], summary="Revoke an API token"
)
def tokens_revoke(request: HttpRequest, pk: int):
    services.api_token_revoke(owner=request.user, pk=pk)
    return Status(204, None)
