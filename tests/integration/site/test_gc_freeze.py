"""The served app freezes its long-lived heap for the cyclic garbage collector.

Each check runs in a fresh interpreter that imports the ASGI entry point the way daphne
does, so freezing never touches the test process's own heap.
"""

import json
import subprocess
import sys

from tests.servers import ROOT

_PRELUDE = (
    "import gc, json, os, sys\n"
    "os.environ['DJANGO_SETTINGS_MODULE'] = 'openprogram_site.settings'\n"
    "import openprogram_site.asgi\n"
    "from openprogram_site.gc_freeze import _RefreezeAfterImports, gc_freeze_long_lived\n"
)


def _served_app_reports(tmp_path, code: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _PRELUDE + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_loading_the_asgi_app_freezes_the_start_up_heap_and_watches_later_imports(tmp_path):
    report = _served_app_reports(
        tmp_path,
        "gc_freeze_long_lived();"  # a second call changes nothing
        "print(json.dumps({'frozen': gc.get_freeze_count(), 'tracked': len(gc.get_objects()),"
        " 'watchers': sum(isinstance(c, _RefreezeAfterImports) for c in gc.callbacks)}))",
    )
    assert report["watchers"] == 1
    # Django, the apps and the URL patterns are frozen; almost nothing is left to scan.
    assert report["frozen"] > 50_000
    assert report["tracked"] < report["frozen"] / 10


def test_a_heavy_lazy_import_is_frozen_after_the_next_full_collection(tmp_path):
    report = _served_app_reports(
        tmp_path,
        "before = gc.get_freeze_count();"
        "from openprogram.providers._litellm_setup import load_litellm; load_litellm();"
        "gc.collect();"
        "print(json.dumps({'before': before, 'after': gc.get_freeze_count(),"
        " 'tracked': len(gc.get_objects())}))",
    )
    # litellm's modules, classes and functions left the scanned heap with it.
    assert report["after"] > report["before"] + 50_000
    assert report["tracked"] < report["after"] / 10


def test_a_full_collection_without_new_imports_freezes_nothing_more(tmp_path):
    report = _served_app_reports(
        tmp_path,
        "before = gc.get_freeze_count();"
        "kept = [{'n': n} for n in range(10_000)];"
        "gc.collect();"
        "print(json.dumps({'before': before, 'after': gc.get_freeze_count()}))",
    )
    # A turn's objects alive at a full collection stay collectable (no growth of the
    # frozen heap, which is only ever freed when its objects' reference counts drop).
    assert report["after"] <= report["before"]


def test_cycles_made_after_start_up_are_still_collected(tmp_path):
    report = _served_app_reports(
        tmp_path,
        "gc.collect()\n"
        "class Node: pass\n"
        "for _ in range(100):\n"
        "    a, b = Node(), Node(); a.other, b.other = b, a\n"
        "del a, b\n"
        "print(json.dumps({'collected': gc.collect()}))",
    )
    assert report["collected"] >= 200
