"""``/api/mcp/...``: MCP prompts (slash commands) and resources: shared servers' and your own accounts'."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Field, Router, Schema

from tools_app.mcp import catalog_services as services

__all__ = ["router"]

router = Router(tags=["mcp"])


class PromptArgumentOut(Schema):
    name: str
    description: str
    required: bool


class PromptOut(Schema):
    server: str
    name: str
    title: str
    description: str
    arguments: list[PromptArgumentOut]


class PromptIn(Schema):
    server: str = Field(max_length=48)
    name: str = Field(max_length=128)
    arguments: dict[str, str] = Field(default_factory=dict)


class ResourceOut(Schema):
    server: str
    uri: str
    name: str
    description: str
    mime_type: str


class ResourceIn(Schema):
    server: str = Field(max_length=48)
    uri: str = Field(max_length=2000)


class TextOut(Schema):
    text: str


@router.get("/mcp/prompts", response=list[PromptOut], summary="Prompts of connected MCP servers")
def prompts(request: HttpRequest) -> list[dict]:
    return services.mcp_prompts_list(user=request.user)


@router.post("/mcp/prompts/render", response=TextOut, summary="A prompt filled in, as text")
def prompt_render(request: HttpRequest, body: PromptIn) -> dict:
    text = services.mcp_prompt_render(
        user=request.user, server=body.server, name=body.name, arguments=body.arguments
    )
    return {"text": text}


@router.get(
    "/mcp/resources", response=list[ResourceOut], summary="Resources of connected MCP servers"
)
def resources(request: HttpRequest) -> list[dict]:
    return services.mcp_resources_list(user=request.user)


@router.post("/mcp/resources/read", response=TextOut, summary="A listed resource's text")
def resource_read(request: HttpRequest, body: ResourceIn) -> dict:
    text = services.mcp_resource_read(user=request.user, server=body.server, uri=body.uri)
    return {"text": text}
