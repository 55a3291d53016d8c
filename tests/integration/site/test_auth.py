import subprocess
import sys

import pytest

from accounts.services import admin_ensure, api_token_create, login_token_create

pytestmark = pytest.mark.django_db


def test_anonymous_page_redirects_to_login(client):
    response = client.get("/programs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_anonymous_api_call_gets_401_json(client):
    response = client.get("/api/me")
    assert response.status_code == 401
    assert "Authentication required" in response.json()["detail"]


def test_healthz_needs_no_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_login_page_is_public(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


def test_login_link_logs_in_exactly_once(client):
    admin = admin_ensure()
    token = login_token_create(user=admin)
    first = client.get(f"/login/token/{token}/")
    assert first.status_code == 302
    assert client.get("/programs/").status_code == 200
    client.logout()
    second = client.get(f"/login/token/{token}/")
    assert second.status_code == 403
    assert b"already used" in second.content
    assert client.get("/programs/").status_code == 302


def test_unknown_login_token_is_refused(client):
    assert client.get("/login/token/nope/").status_code == 403


def test_admin_ensure_is_idempotent_and_creates_a_superuser():
    first = admin_ensure()
    second = admin_ensure()
    assert first.pk == second.pk
    assert first.is_superuser and first.is_staff
    assert not first.has_usable_password()


def test_admin_site_is_staff_only(alice_client):
    response = alice_client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_bearer_token_authenticates_api_calls(client, alice):
    token = api_token_create(user=alice, name="script")
    response = client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response.json() == {"username": "alice", "is_staff": False}
    bad = client.get("/api/me", HTTP_AUTHORIZATION="Bearer op_wrong")
    assert bad.status_code == 401


def test_logout_ends_the_session(alice_client):
    assert alice_client.get("/programs/").status_code == 200
    alice_client.post("/logout/")
    assert alice_client.get("/programs/").status_code == 302


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DEBUG", "maybe"),
        ("PORT", "eighty"),
        ("DATABASE_URL", "mysql://x/y"),
        ("SECRET_KEY", "short"),
    ],
)
def test_bad_setting_stops_start_up_naming_the_variable(variable, value, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path), variable: value}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings'; django.setup()",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert variable in proc.stderr


def test_secret_key_is_generated_and_persisted(tmp_path):
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings'; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    second = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert first == second
    assert len(first.strip()) >= 50
    assert (tmp_path / "secret_key").exists()


def test_deploy_check_reports_nothing_serious(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENPROGRAM_HOME": str(tmp_path),
        "HTTPS": "1",
        "HOST": "example.com",
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
