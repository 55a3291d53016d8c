from django.urls import path

from chat_app import views

app_name = "chat"

urlpatterns = [
    path("", views.chat_home, name="home"),
    path("c/<uuid:public_id>/", views.conversation_page, name="conversation"),
    path(
        "c/<uuid:public_id>/export.md",
        views.conversation_export,
        {"extension": "md"},
        name="export",
    ),
    path(
        "c/<uuid:public_id>/export.json",
        views.conversation_export,
        {"extension": "json"},
        name="export-json",
    ),
    path("runs/<int:run_id>/message/", views.user_message_fragment, name="user-message"),
    path(
        "runs/<int:run_id>/calls/<str:call_id>/result/",
        views.tool_result_download,
        name="tool-result",
    ),
]
