"""On PostgreSQL, a trigger refuses every UPDATE of the audit trail.

The one update let through is the one deleting a user makes (``on_delete=SET_NULL``):
``user_id`` set to NULL with every other column unchanged. Other databases have no
such trigger (SQLite is the single-machine default; the admin and the code never
update rows there either).
"""

from django.db import migrations

_CREATE = """
CREATE OR REPLACE FUNCTION audit_app_refuse_update() RETURNS trigger AS $$
BEGIN
    IF NEW.user_id IS NULL AND (to_jsonb(NEW) - 'user_id') = (to_jsonb(OLD) - 'user_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: row % cannot be updated', OLD.id
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_app_auditevent_refuse_update
    BEFORE UPDATE ON audit_app_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_app_refuse_update();
"""
_DROP = """
DROP TRIGGER IF EXISTS audit_app_auditevent_refuse_update ON audit_app_auditevent;
DROP FUNCTION IF EXISTS audit_app_refuse_update();
"""


def _create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_CREATE, params=None)


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit_app", "0001_initial")]

    operations = [migrations.RunPython(_create, _drop)]
