"""The JSON API at /api/ (OpenAPI docs at /api/docs), assembled from each app's router."""

from __future__ import annotations

from ninja import NinjaAPI

from accounts.api_auth import api_auth
from chat_app.api import router as chat_router
from core.api_errors import install_error_handlers
from tools_app.api import router as tools_router
from tools_app.mcp.catalog_api import router as mcp_catalog_router
from tools_app.policy.api import router as policy_router
from usage_app.api import router as usage_router

api = NinjaAPI(
    title="OpenProgram API",
    version="1",
    auth=api_auth,
    docs_url="/docs",
    urls_namespace="api",
)
install_error_handlers(api)


@api.get("/me", tags=["account"], summary="The authenticated user")
def me(request):
    user = request.user
    return {"username": user.get_username(), "is_staff": user.is_staff}


api.add_router("/", tools_router)
api.add_router("/", mcp_catalog_router)
api.add_router("/", policy_router)
api.add_router("/", chat_router)
api.add_router("/", usage_router)
