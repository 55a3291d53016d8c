"""On PostgreSQL the trail refuses UPDATE in the database itself, whoever connects.

Run with ``DATABASE_URL`` pointing at PostgreSQL (``make test`` runs the integration
tests again that way); skipped on SQLite, where no trigger is installed.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit_app.models import AuditEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the trigger is PostgreSQL's"),
]


def _row(user) -> AuditEvent:
    return AuditEvent.objects.create(
        created=timezone.now(),
        user=user,
        username=user.username,
        tool="bash",
        verdict="approved",
        decided_by=user.username,
        outcome="ok",
        channel="chat",
    )


def test_an_update_through_the_orm_is_refused(alice):
    row = _row(alice)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=row.pk).update(verdict="denied")
    assert AuditEvent.objects.get().verdict == "approved"


def test_an_update_in_plain_sql_is_refused(alice):
    row = _row(alice)
    sql = "UPDATE audit_app_auditevent SET user_id = NULL, decided_by = '' WHERE id = %s"
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [row.pk])
    assert AuditEvent.objects.get().decided_by == "alice"


def test_deleting_the_user_is_the_one_update_let_through(alice):
    _row(alice)
    alice.delete()
    row = AuditEvent.objects.get()
    assert (row.user_id, row.username, row.decided_by) == (None, "alice", "alice")
