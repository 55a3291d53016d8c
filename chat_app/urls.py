from django.urls import path

from chat_app import views

app_name = "chat"

urlpatterns = [
    path("", views.chat_home, name="home"),
]
