"""ASGI entry point: HTTP through Django (static files included), WebSockets through Channels."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openprogram_site.settings")

from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from chat_app.routing import websocket_urlpatterns  # noqa: E402
from openprogram_site import daphne_patches  # noqa: E402
from openprogram_site.gc_freeze import gc_freeze_long_lived  # noqa: E402
from openprogram_site.origins import ExactOriginValidator  # noqa: E402
from openprogram_site.startup import start_background_services  # noqa: E402

http_app = ASGIStaticFilesHandler(django_asgi_app) if settings.SERVE_STATIC else django_asgi_app

application = ProtocolTypeRouter(
    {
        "http": http_app,
        # Scheme, host and port must all match (openprogram_site/origins.py). Relayed
        # frames are written at once (daphne_patches.FrameWriterInScope).
        "websocket": ExactOriginValidator(
            daphne_patches.FrameWriterInScope(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
            settings.WEBSOCKET_ALLOWED_ORIGINS,
        ),
    }
)

# Refuses to start when a library lost what the patches rely on (named in the error).
daphne_patches.install(max_request_bytes=settings.MAX_REQUEST_BYTES)
start_background_services()
# Last: what start-up built lives as long as the process; full collections stop scanning it.
gc_freeze_long_lived()
