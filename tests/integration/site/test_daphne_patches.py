"""The one module that touches private parts of daphne, autobahn, Twisted and Channels
checks them at start-up, and an upgrade of any of them is re-verified before it lands."""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest
from daphne.http_protocol import WebRequest
from twisted.web.http import Request

from openprogram_site import daphne_patches
from tests.servers import ROOT


def _locked_versions() -> dict[str, str]:
    with open(ROOT / "uv.lock", "rb") as lock:
        packages = tomllib.load(lock)["package"]
    return {package["name"]: package["version"] for package in packages}


@pytest.mark.parametrize("library", sorted(daphne_patches.VERIFIED))
def test_the_locked_version_is_one_the_patches_were_verified_on(library):
    locked = _locked_versions()[library]
    assert locked in daphne_patches.VERIFIED[library], (
        f"uv.lock has {library} {locked}: re-verify openprogram_site/daphne_patches.py "
        f"against it (its tests), then add the version to VERIFIED"
    )


def test_every_library_patched_is_in_the_verified_list():
    assert set(daphne_patches.RELIED_ON) == set(daphne_patches.VERIFIED)


def test_everything_the_patches_rely_on_is_there_in_the_installed_versions():
    assert daphne_patches.missing_targets() == []


def test_start_up_refuses_naming_the_library_and_version_when_an_attribute_is_gone(
    monkeypatch,
):
    # A daphne release whose request class no longer has what the body limit wraps.
    monkeypatch.delattr(Request, "handleContentChunk")
    if "handleContentChunk" in vars(WebRequest):  # the patch already installed in this process
        monkeypatch.delattr(WebRequest, "handleContentChunk")
    assert not hasattr(WebRequest, "handleContentChunk")
    version = importlib.metadata.version("daphne")

    with pytest.raises(daphne_patches.PatchTargetMissing) as refused:
        daphne_patches.install(max_request_bytes=1000)

    message = str(refused.value)
    assert f"daphne {version}: daphne.http_protocol.WebRequest.handleContentChunk" in message
    assert "re-verify" in message


def test_an_attribute_set_per_instance_is_found_in_the_librarys_source(monkeypatch):
    # autobahn sets failByDrop in its methods, not on the class: still checked.
    monkeypatch.setitem(
        daphne_patches.RELIED_ON,
        "autobahn",
        (("autobahn.websocket.protocol", "WebSocketProtocol", ("failByDrop", "noSuchThing")),),
    )
    missing = daphne_patches.missing_targets()
    assert len(missing) == 1 and missing[0].endswith("WebSocketProtocol.noSuchThing")
