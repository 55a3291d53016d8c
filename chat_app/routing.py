"""WebSocket routes (mounted inside the auth and origin checks in ``asgi.py``)."""

from django.urls import path

from chat_app.consumers import ChatConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [
    path("ws/chat/<str:public_id>/", ChatConsumer.as_asgi()),
]
