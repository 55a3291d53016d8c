import subprocess
import sys

from tests.servers import ROOT


def test_the_asgi_app_loads_without_importing_litellm(tmp_path):
    code = (
        "import sys, os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings';"
        "import openprogram_site.asgi;"
        "print('litellm' in sys.modules)"
    )
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_default_run_binds_loopback_only_and_allows_shell_there(settings):
    assert settings.HOST == "127.0.0.1"
    assert settings.BINDS_BEYOND_LOOPBACK is False
    assert settings.OPENPROGRAM_ALLOW_SHELL is True
    assert "127.0.0.1" in settings.ALLOWED_HOSTS


def test_binding_beyond_loopback_turns_shell_off_unless_allowed(tmp_path):
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings';"
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.OPENPROGRAM_ALLOW_SHELL, 'http://0.0.0.0:8000' in s.CSRF_TRUSTED_ORIGINS)"
    )
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path), "HOST": "0.0.0.0"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"]
    env["OPENPROGRAM_ALLOW_SHELL"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split()[0] == "True"
