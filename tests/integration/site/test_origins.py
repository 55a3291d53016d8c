"""The socket Origin check compares scheme, host and port exactly (openprogram_site/origins.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openprogram_site.origins import ExactOriginValidator, origin_key
from tests.servers import ROOT

ALLOWED = ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"]


@pytest.mark.parametrize(
    ("origin", "key"),
    [
        ("http://127.0.0.1:8000", ("http", "127.0.0.1", 8000)),
        ("HTTPS://Chat.Example.COM", ("https", "chat.example.com", 443)),
        ("http://[::1]:8000", ("http", "::1", 8000)),
        ("http://example.com:80/", ("http", "example.com", 80)),
        ("http://example.com/path", None),
        ("http://user@example.com", None),
        ("ftp://example.com", None),
        ("null", None),
        ("http://example.com:99999", None),
    ],
)
def test_an_origin_is_read_as_scheme_host_and_port(origin, key):
    assert origin_key(origin) == key


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8000", True),
        ("http://localhost:8000", True),
        ("http://[::1]:8000", True),
        ("http://127.0.0.1:9999", False),
        ("http://localhost:3000", False),
        ("http://[::1]:8080", False),
        ("https://127.0.0.1:8000", False),
        ("http://127.0.0.1", False),
        ("http://evil.127.0.0.1.example:8000", False),
        (None, False),
        ("", False),
    ],
)
def test_only_an_exact_origin_is_allowed(origin, allowed):
    assert ExactOriginValidator(None, ALLOWED).allows(origin) is allowed


def test_socket_origins_follow_host_port_https_and_the_csrf_setting(tmp_path):
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings';"
        "import django; django.setup(); from django.conf import settings as s;"
        "print(' '.join(sorted(s.WEBSOCKET_ALLOWED_ORIGINS)))"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENPROGRAM_HOME": str(tmp_path),
        "HOST": "chat.local",
        "PORT": "9000",
        "HTTPS": "1",
        "CSRF_TRUSTED_ORIGINS": "https://chat.example.com,https://*.example.com",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    origins = out.stdout.split()
    assert "https://chat.example.com" in origins
    assert {"http://chat.local:9000", "https://chat.local:9000"} <= set(origins)
    assert "http://127.0.0.1:9000" in origins and "http://127.0.0.1:8000" not in origins
    assert not any("*" in o for o in origins)
