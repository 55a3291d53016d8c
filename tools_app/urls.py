from django.urls import path

from tools_app import views

app_name = "tools"

urlpatterns = [
    path("", views.programs_page, name="programs"),
]
