from django.urls import path

from tools_app import agent_profile_views, views
from tools_app.mcp import account_views as mcp_account_views
from tools_app.policy import views as policy_views

app_name = "tools"

urlpatterns = [
    path("", views.programs_page, name="programs"),
    path("catalog/", views.catalog, name="catalog"),
    path("tools/<str:name>/", views.tool_detail, name="tool"),
    path("tools/<str:name>/disable/", views.tool_toggle_disabled, name="tool-disable"),
    path("new-profile/", views.profile_create, name="profile-create"),
    path("import-profiles/", views.profiles_import, name="profiles-import"),
    path("profiles/<str:name>/", views.profile_panel, name="profile"),
    path("profiles/<str:name>/rename/", views.profile_rename, name="profile-rename"),
    path("profiles/<str:name>/duplicate/", views.profile_duplicate, name="profile-duplicate"),
    path("profiles/<str:name>/delete/", views.profile_delete, name="profile-delete"),
    path("profiles/<str:name>/activate/", views.profile_activate, name="profile-activate"),
    path("profiles/<str:name>/tools/add/", views.profile_add_tool, name="profile-add-tool"),
    path(
        "profiles/<str:name>/tools/<str:tool>/remove/",
        views.profile_remove_tool,
        name="profile-remove-tool",
    ),
    path("policy/", policy_views.policy_page, name="policy"),
    path(
        "policy/rules/<int:rule_id>/revoke/",
        policy_views.saved_rule_revoke,
        name="policy-rule-revoke",
    ),
    path("agents/", agent_profile_views.agent_profiles_page, name="agents"),
    path(
        "mcp/<str:name>/connect/",
        mcp_account_views.mcp_account_connect,
        name="mcp-account-connect",
    ),
    path(
        "mcp/<str:name>/disconnect/",
        mcp_account_views.mcp_account_disconnect_view,
        name="mcp-account-disconnect",
    ),
    path("mcp/oauth/callback/", mcp_account_views.mcp_oauth_callback, name="mcp-oauth-callback"),
    path("agents/new/", agent_profile_views.agent_profile_save, name="agent-create"),
    path("agents/<int:pk>/", agent_profile_views.agent_profile_save, name="agent-save"),
    path("agents/<int:pk>/delete/", agent_profile_views.agent_profile_delete, name="agent-delete"),
]
