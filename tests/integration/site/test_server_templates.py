"""The daphne servers tests start (tests/servers.py) get copies of the session's template
databases instead of running migrate and create_users each: a copy must hold exactly what
those would have written, and must never replace a home's own database. Rows written with
``DaphneServer.insert`` (no Django start-up) read back in Django as given."""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
import stat
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password

from chat_app.models import Conversation, Run
from tests.servers import PASSWORD, TEMPLATES_ENV, make_server

# Rows that differ from one run of the same code to the next: when a migration was
# applied, and a password's salt and hash and when its user joined.
_PER_RUN = {"django_migrations", "auth_user"}


def _contents(database: Path) -> dict[str, object]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        schema = sorted(connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        tables = [row[1] for row in schema if row[0] == "table"]
        rows = {
            table: sorted(map(repr, connection.execute(f'SELECT * FROM "{table}"')))
            for table in tables
            if table not in _PER_RUN
        }
        migrations = sorted(connection.execute("SELECT app, name FROM django_migrations"))
        users = sorted(
            connection.execute(
                "SELECT username, is_staff, is_superuser, is_active, password FROM auth_user"
            )
        )
        journal = connection.execute("PRAGMA journal_mode").fetchone()
    return {
        "schema": schema,
        "rows": rows,
        "migrations": migrations,
        "users": [(*user[:4], check_password(PASSWORD, user[4])) for user in users],
        "journal": journal,
    }


def test_a_copied_database_holds_what_migrate_and_create_users_write(tmp_path, monkeypatch):
    copied = make_server(tmp_path / "copied" / "home")
    assert copied.from_template
    home = copied.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "db.sqlite3").stat().st_mode) == 0o600
    assert sorted(p.name for p in home.iterdir()) == ["db.sqlite3"]
    copied_migrated = _contents(home / "db.sqlite3")
    copied.create_users()
    copied_users = _contents(home / "db.sqlite3")

    monkeypatch.delenv(TEMPLATES_ENV)
    migrated = make_server(tmp_path / "migrated" / "home")
    assert not migrated.from_template
    assert stat.S_IMODE(migrated.home.stat().st_mode) == 0o700
    assert stat.S_IMODE((migrated.home / "db.sqlite3").stat().st_mode) == 0o600
    direct_migrated = _contents(migrated.home / "db.sqlite3")
    migrated.create_users()
    direct_users = _contents(migrated.home / "db.sqlite3")

    assert direct_migrated["migrations"] and direct_migrated["users"] == []
    assert copied_migrated == direct_migrated
    assert direct_users["users"] == [
        ("alice", 0, 0, 1, True),
        ("bob", 0, 0, 1, True),
        ("root", 1, 1, 1, True),
    ]
    assert copied_users == direct_users


def test_a_second_server_on_a_home_keeps_its_database(tmp_path):
    first = make_server(tmp_path / "home")
    first.create_users()
    first.insert(get_user_model(), username="carol")
    second = make_server(tmp_path / "home")
    assert not second.from_template
    usernames = second.sql("SELECT username FROM auth_user ORDER BY username")
    assert usernames == [("alice",), ("bob",), ("carol",), ("root",)]


_READ_BACK = """
import importlib, json
for module, name, key in {rows!r}:
    model = getattr(importlib.import_module(module), name)
    row = model.objects.get(pk=key)
    print("ROW=" + json.dumps({{f.attname: repr(getattr(row, f.attname)) for f in model._meta.concrete_fields}}))
"""


def test_an_inserted_row_reads_back_in_django_as_it_was_given(tmp_path):
    """``insert`` writes rows as the ORM does: Django, in the server's own code, reads every
    field back as given, or as the default insert computed (callables, ``auto_now_add``,
    the UUID); JSON, booleans, text and a past date given to an ``auto_now`` field too."""
    server = make_server(tmp_path / "home")
    server.create_users()
    ((alice,),) = server.sql("SELECT id FROM auth_user WHERE username = 'alice'")
    conversation = server.insert(
        Conversation,
        owner_id=alice,
        title="Ünïcode 'title'",
        profile_name="research",
        model="gpt-x",
        tools_on=False,
        web_search_on=False,
        plan_mode=True,
        attended=False,
        todos=[{"text": "a", "done": True}],
        allowed_tools=["read"],
        updated=datetime.datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC),
    )
    run = server.insert(
        Run, conversation_id=conversation.pk, model="m", status="completed", usage={"in": 3}
    )
    rows = (conversation, run)
    output = server.shell(
        _READ_BACK.format(rows=[(type(r).__module__, type(r).__name__, r.pk) for r in rows])
    )
    read_back = [json.loads(r[4:]) for r in output.splitlines() if r.startswith("ROW=")]
    assert read_back == [
        {f.attname: repr(getattr(r, f.attname)) for f in type(r)._meta.concrete_fields}
        for r in rows
    ]
