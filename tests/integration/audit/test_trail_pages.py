"""The staff page and its exports: staff only, filtered, paginated, streamed in chunks;
the admin is read-only for everyone; retention deletes only through ``audit_prune``."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import tracemalloc

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.http import StreamingHttpResponse
from django.test import Client, RequestFactory
from django.utils import timezone

from audit_app.models import AuditEvent

pytestmark = pytest.mark.django_db

URLS = ("/audit/", "/audit/export.csv", "/audit/export.jsonl")


def _row(**fields) -> AuditEvent:
    values = {
        "created": timezone.now(),
        "username": "alice",
        "tool": "read",
        "verdict": "allow",
        "outcome": "ok",
        "channel": "chat",
        **fields,
    }
    return AuditEvent(**values)


@pytest.fixture
def staff_client(django_user_model):
    staff = django_user_model.objects.create_user("staffer", password="x", is_staff=True)
    client = Client()
    client.force_login(staff)
    return client


@pytest.mark.parametrize("url", URLS)
def test_a_signed_in_non_staff_user_cannot_read_the_trail(alice_client, url):
    AuditEvent.objects.bulk_create([_row()])
    response = alice_client.get(url)
    assert response.status_code == 404
    assert b"read" not in b"".join(getattr(response, "streaming_content", [response.content]))


@pytest.mark.parametrize("url", URLS)
def test_a_signed_out_visitor_is_sent_to_sign_in(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_api_offers_no_way_to_the_trail(alice, client):
    from accounts.services import api_token_create

    token = api_token_create(user=alice, name="script")
    response = client.get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert "audit" not in response.content.decode().lower()


def test_staff_filter_by_user_group_tool_verdict_and_dates(staff_client, alice, bob):
    auditors = Group.objects.create(name="auditors")
    bob.groups.add(auditors)
    old = timezone.now() - dt.timedelta(days=10)
    AuditEvent.objects.bulk_create(
        [
            _row(user=alice, tool="read"),
            _row(user=bob, username="bob", tool="bash", verdict="approved", decided_by="bob"),
            _row(user=alice, tool="bash", verdict="deny", rule="deny bash", created=old),
        ]
    )

    def tools(**query) -> list[str]:
        page = staff_client.get("/audit/", query)
        assert page.status_code == 200
        return [e.tool + "/" + e.username for e in page.context["page"]]

    assert len(tools()) == 3
    assert tools(user="bob") == ["bash/bob"]
    assert tools(group="auditors") == ["bash/bob"]
    assert sorted(tools(tool="bash")) == ["bash/alice", "bash/bob"]
    assert tools(verdict="deny") == ["bash/alice"]
    day = (old + dt.timedelta(days=1)).date().isoformat()
    assert tools(until=day) == ["bash/alice"]
    assert sorted(tools(since=day)) == ["bash/bob", "read/alice"]
    # A malformed filter is ignored, not an error.
    assert len(tools(verdict="'; drop", since="yesterday")) == 3


def test_the_page_is_paginated(staff_client):
    AuditEvent.objects.bulk_create([_row(call_id=f"c{i}") for i in range(120)])
    first = staff_client.get("/audit/")
    assert len(first.context["page"]) == 50 and first.context["page"].paginator.num_pages == 3
    last = staff_client.get("/audit/", {"page": 3})
    assert len(last.context["page"]) == 20


def test_exports_carry_every_filtered_row(staff_client):
    AuditEvent.objects.bulk_create(
        [_row(tool="bash", rule="=HYPERLINK(1)", arguments={"command": "ls"}), _row(tool="read")]
    )
    response = staff_client.get("/audit/export.csv", {"tool": "bash"})
    assert isinstance(response, StreamingHttpResponse)
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["tool"], r["arguments"]) for r in rows] == [("bash", '{"command": "ls"}')]
    assert rows[0]["rule"] == "'=HYPERLINK(1)"  # a spreadsheet will not run it
    response = staff_client.get("/audit/export.jsonl")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert sorted(line["tool"] for line in lines) == ["bash", "read"]


def test_a_large_export_streams_in_chunks_with_bounded_memory(staff_client, monkeypatch):
    """5,000 rows of ~4 KB each (about 20 MB as text), read 50 rows (~200 KB) at a time:
    the export is an iterator over 100 chunked reads, and its peak memory stays a small
    fraction of the whole. (Bytes, not rows, are what memory holds; fewer, larger rows
    cost a quarter of the inserts and encodings of 20,000 rows of 1 KB.)"""
    import audit_app.selectors as selectors

    monkeypatch.setattr(selectors, "EXPORT_CHUNK", 50)
    filler = "x" * 4000
    AuditEvent.objects.bulk_create(
        [_row(call_id=f"c{i}", arguments={"text": filler}) for i in range(5_000)], batch_size=500
    )
    response = staff_client.get("/audit/export.jsonl")
    assert isinstance(response, StreamingHttpResponse)
    tracemalloc.start()
    try:
        total = lines = 0
        for chunk in response.streaming_content:
            total += len(chunk)
            lines += chunk.count(b"\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == 5_000 and total > 20_000_000
    assert peak < 4_000_000, f"peak {peak} bytes while streaming {total} bytes"


def test_the_admin_lets_nobody_add_change_or_delete(admin_user, admin_client):
    row = _row()
    row.save()
    model_admin = site._registry[AuditEvent]
    request = RequestFactory().get("/")
    request.user = admin_user
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, row)
    assert not model_admin.has_delete_permission(request, row)
    assert admin_client.get("/admin/audit_app/auditevent/").status_code == 200
    delete = admin_client.post(f"/admin/audit_app/auditevent/{row.pk}/delete/", {"post": "yes"})
    assert delete.status_code == 403
    change = admin_client.post(f"/admin/audit_app/auditevent/{row.pk}/change/", {"tool": "x"})
    assert change.status_code == 403
    assert AuditEvent.objects.get().tool == "read"


def test_prune_deletes_only_rows_older_than_the_retention(settings):
    settings.OPENPROGRAM_AUDIT_RETENTION_DAYS = 30
    now = timezone.now()
    AuditEvent.objects.bulk_create(
        [
            _row(call_id="old", created=now - dt.timedelta(days=31)),
            _row(call_id="recent", created=now - dt.timedelta(days=29)),
        ]
    )
    out = io.StringIO()
    call_command("audit_prune", stdout=out)
    assert list(AuditEvent.objects.values_list("call_id", flat=True)) == ["recent"]
    assert "deleted 1 " in out.getvalue()


def test_a_retention_of_zero_keeps_everything(settings):
    settings.OPENPROGRAM_AUDIT_RETENTION_DAYS = 0
    AuditEvent.objects.bulk_create([_row(created=timezone.now() - dt.timedelta(days=3000))])
    call_command("audit_prune", stdout=io.StringIO())
    assert AuditEvent.objects.count() == 1
