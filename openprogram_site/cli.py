"""The ``openprogram`` command (``[project.scripts]``) and ``manage.py``: Django's manage.

``openprogram serve`` migrates, prints a one-time login link and serves; every other
Django command (``migrate``, ``createsuperuser``, ``chat`` ...) works the same way.
"""

from __future__ import annotations

import os
import sys

from django.core.management import execute_from_command_line


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openprogram_site.settings")
    execute_from_command_line(sys.argv)
