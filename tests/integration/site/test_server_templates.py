"""The daphne servers tests start (tests/servers.py) get copies of the session's template
databases instead of running migrate and create_users each: a copy must hold exactly what
those would have written, and must never replace a home's own database."""

from __future__ import annotations

import contextlib
import sqlite3
import stat
from pathlib import Path

from django.contrib.auth.hashers import check_password

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
    first.shell(
        "from django.contrib.auth import get_user_model as g;"
        "g().objects.create_user('carol', password='x')"
    )
    second = make_server(tmp_path / "home")
    assert not second.from_template
    usernames = second.sql("SELECT username FROM auth_user ORDER BY username")
    assert usernames == [("alice",), ("bob",), ("carol",), ("root",)]
