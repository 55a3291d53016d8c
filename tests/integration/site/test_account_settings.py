"""Settings on the account page: theme, defaults for new chats, the staff model list."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.sites import site as admin_site
from django.test import Client

from accounts.preferences import preferences_get
from accounts.services import admin_ensure, login_token_create
from chat_app.services import conversation_create
from tools_app import services as tool_services
from tools_app.models import Tool
from tools_app.selectors import active_profile_name

pytestmark = pytest.mark.django_db
REAL_MODEL = "openai/gpt-4o-mini"


@pytest.fixture
def two_models(settings):
    settings.OPENPROGRAM_MODELS = ["offline", REAL_MODEL]
    settings.OPENPROGRAM_DEFAULT_MODEL = "offline"


def _save(client: Client, **fields: str):
    return client.post("/account/", {"action": "preferences", "theme": "system", **fields})


def test_the_theme_is_stored_per_user_and_set_on_every_page(alice_client, bob):
    assert 'data-theme="system"' in alice_client.get("/programs/").content.decode()
    assert _save(alice_client, theme="dark").status_code == 302
    for url in ("/programs/", "/account/", "/usage/"):
        assert '<html lang="en" data-theme="dark">' in alice_client.get(url).content.decode()
    bob_client = Client()
    bob_client.force_login(bob)
    assert 'data-theme="system"' in bob_client.get("/programs/").content.decode()


def test_an_unknown_theme_is_refused_and_nothing_changes(alice_client, alice):
    response = _save(alice_client, theme="neon")
    assert response.status_code == 422
    assert "Theme &#x27;neon&#x27; is not one of: system, light, dark." in response.content.decode()
    assert preferences_get(user=alice).theme == "system"


def test_a_new_chat_starts_with_the_chosen_model_and_profile(alice_client, alice, two_models):
    tool_services.profile_create(owner=alice, name="lean", tools=[])
    response = _save(alice_client, default_model=REAL_MODEL, default_profile="lean")
    assert response.status_code == 302
    assert active_profile_name(owner=alice) == "lean"
    conversation = conversation_create(owner=alice)
    assert (conversation.model, conversation.profile_name) == (REAL_MODEL, "lean")


def test_the_new_chat_page_preselects_the_chosen_model_and_profile(alice_client, alice, two_models):
    tool_services.profile_create(owner=alice, name="lean", tools=[])
    _save(alice_client, default_model=REAL_MODEL, default_profile="lean")
    page = alice_client.get("/").content.decode()
    assert re.search(rf'<option value="{re.escape(REAL_MODEL)}"[^>]*\bselected\b', page)
    assert re.search(r'<option value="lean"[^>]*\bselected\b', page)


def test_a_default_model_no_longer_offered_falls_back_to_the_servers(alice, settings, two_models):
    alice_client = Client()
    alice_client.force_login(alice)
    _save(alice_client, default_model=REAL_MODEL)
    settings.OPENPROGRAM_MODELS = ["offline"]
    assert conversation_create(owner=alice).model == "offline"


def test_a_model_the_server_does_not_offer_is_refused_whole(alice_client, alice, two_models):
    tool_services.profile_create(owner=alice, name="lean", tools=[])
    response = _save(alice_client, theme="dark", default_model="evil/model", default_profile="lean")
    assert response.status_code == 422
    assert "is not offered by this server" in response.content.decode()
    assert preferences_get(user=alice).theme == "system"
    assert active_profile_name(owner=alice) == "default"


def test_bob_cannot_pick_alices_profile_as_his_default(alice, bob, two_models):
    tool_services.profile_create(owner=alice, name="alices", tools=[])
    bob_client = Client()
    bob_client.force_login(bob)
    response = _save(bob_client, default_profile="alices")
    assert response.status_code == 422
    assert active_profile_name(owner=bob) == "default"
    assert "alices" not in bob_client.get("/account/").content.decode()


def test_staff_see_each_models_key_state_but_never_the_key(
    client, admin_user, two_models, monkeypatch
):
    client.force_login(admin_user)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    page = client.get("/account/").content.decode()
    assert 'data-testid="model-status"' in page
    assert "missing</span> — model &#x27;openai/gpt-4o-mini&#x27; needs OPENAI_API_KEY" in page
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value-123")
    page = client.get("/account/").content.decode()
    assert '<tr data-model="openai/gpt-4o-mini">' in page
    assert '<span class="ok">set</span>' in page
    assert "sk-very-secret" not in page


def test_other_users_do_not_see_the_model_list(alice_client, two_models):
    assert 'data-testid="model-status"' not in alice_client.get("/account/").content.decode()


def test_the_make_run_admin_lands_on_the_account_page_to_set_a_password(client):
    admin = admin_ensure()
    response = client.get(f"/login/token/{login_token_create(user=admin)}/")
    assert response["Location"] == "/account/"
    page = client.get("/account/").content.decode()
    assert "Set a password so you can sign in again after logging out." in page


def test_the_admin_tools_list_puts_the_disable_switch_beside_the_name():
    tool_admin = admin_site._registry[Tool]
    assert tool_admin.list_display[:3] == ("name", "disabled", "disabled_reason")
    assert tool_admin.list_editable == ("disabled", "disabled_reason")


def test_re_enabling_in_the_admin_list_clears_the_reason(client, admin_user):
    from tools_app.catalog_sync import tool_catalog_mark_stale
    from tools_app.selectors import tool_list

    tool_catalog_mark_stale()  # another test's rolled-back rows must not look synced
    row = tool_list()[0]
    tool_services.tool_disable(name=row.name, by=admin_user, reason="flaky")
    client.force_login(admin_user)
    rows = list(Tool.objects.order_by("name"))
    data = {
        "form-TOTAL_FORMS": str(len(rows)),
        "form-INITIAL_FORMS": str(len(rows)),
        "_save": "Save",
    }
    for i, tool in enumerate(rows):
        data[f"form-{i}-id"] = str(tool.pk)
        data[f"form-{i}-disabled_reason"] = tool.disabled_reason
        if tool.disabled and tool.pk != row.pk:
            data[f"form-{i}-disabled"] = "on"
    response = client.post("/admin/tools_app/tool/", data)
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.disabled, row.disabled_reason, row.disabled_by) == (False, "", None)
