"""A web process with no MCP server configured never imports the MCP SDK, nor httpx.

Importing the SDK costs ~1.2 s of CPU (``mcp``'s ``__init__`` loads the SDK's client
and server, ``mcp_types`` its models, ``httpx2`` the HTTP client); every ``manage.py``
command and every daphne start paid it before. It loads with the first server a
manager or the per-user accounts are given, or the first OAuth Connect, callback or
Disconnect. ``httpx`` (~0.15 s) loads with the first ``web_fetch`` or ``web_search``.
A fresh interpreter records the stack of the first import of each of them, so a
failure names the module that brought one back.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.servers import ROOT, make_server

DEFERRED = ("mcp", "mcp_types", "httpx2", "httpx")

# Runs in the fresh interpreter: what daphne does at start-up (the ASGI module:
# Django's set-up, every app's ready(), the admin, the start-up signal that starts the
# MCP manager and the accounts follower), then signed-in pages that show MCP state,
# and one round of the accounts follower; then the first server given to a manager.
_PROCESS = r"""
import importlib.abc, json, sys, traceback

WATCHED = {"mcp", "mcp_types", "httpx2", "httpx"}
first = {}

class Recorder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in WATCHED and name not in first:
            stack = traceback.extract_stack()[:-1]
            first[name] = [
                f"{f.filename}:{f.lineno} {f.line}" for f in stack if "importlib" not in f.filename
            ]
        return None

sys.meta_path.insert(0, Recorder())

import openprogram_site.asgi  # noqa: E402, F401
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from tools_app.mcp.account_sync import mcp_accounts_reconcile  # noqa: E402

User = get_user_model()
statuses = {}
for username, paths in {
    None: ["/healthz", "/login/"],
    "alice": ["/", "/programs/", "/account/", "/api/mcp/prompts", "/api/mcp/resources"],
    "root": ["/admin/tools_app/mcpserver/"],
}.items():
    client = Client(SERVER_NAME="127.0.0.1")
    if username:
        client.force_login(User.objects.get(username=username))
    for path in paths:
        statuses[path] = client.get(path).status_code
mcp_accounts_reconcile()
at_start = {name: first.get(name) for name in sorted(WATCHED)}

# The first server given to a manager loads the SDK (a disabled one: nothing connects).
from openprogram.mcp import MCPManager, MCPServerConfig  # noqa: E402

manager = MCPManager()
manager.add(MCPServerConfig(name="off", transport="stdio", command="true", enabled=False)).result(10)
manager.shutdown()
print(json.dumps({"statuses": statuses, "at_start": at_start, "after_add": first.get("mcp")}))
"""


def test_a_web_process_with_no_mcp_server_imports_neither_the_sdk_nor_httpx(tmp_path):
    server = make_server(tmp_path)
    server.create_users()
    out = subprocess.run(
        [sys.executable, "-c", _PROCESS],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result["statuses"].values()) == {200}, result["statuses"]
    for name in DEFERRED:
        stack = result["at_start"][name]
        assert stack is None, f"{name} imported at start-up by:\n" + "\n".join(stack)
    # The recorder sees the SDK once a server is configured: the check above can fail.
    assert any("openprogram/mcp/manager.py" in frame for frame in result["after_add"])


def test_every_public_name_of_the_mcp_package_resolves():
    import openprogram.mcp as package

    assert set(package._MODULE_OF) == set(package.__all__)
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    assert set(package.__all__) <= set(dir(package))
