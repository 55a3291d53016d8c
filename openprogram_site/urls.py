from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts import views as account_views
from chat_app import views as chat_views
from openprogram_site.api import api

admin.site.site_header = "OpenProgram administration"
admin.site.site_title = "OpenProgram admin"

urlpatterns = [
    path("healthz", account_views.healthz, name="healthz"),
    path("favicon.ico", chat_views.favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login/token/<str:token>/", account_views.token_login, name="token-login"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("programs/", include("tools_app.urls")),
    path("", include("chat_app.urls")),
]
