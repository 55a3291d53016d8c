from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path

from accounts import account_views as account_pages
from accounts import sso_views
from accounts import views as account_views
from accounts.login_forms import ThrottledAdminAuthenticationForm
from chat_app import views as chat_views
from openprogram_site.account_page import account_page
from openprogram_site.api import api

admin.site.site_header = "OpenProgram administration"
admin.site.site_title = "OpenProgram admin"
# The admin's sign-in counts failures with the site's (accounts/login_throttle.py).
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", account_views.healthz, name="healthz"),
    path("favicon.ico", chat_views.favicon, name="favicon"),
    path("login/", account_views.SignInView.as_view(), name="login"),
    path("logout/", sso_views.SignOutView.as_view(), name="logout"),
    path("login/sso/", login_not_required(sso_views.SsoStartView.as_view()), name="sso-start"),
    path(
        "login/sso/callback/",
        login_not_required(sso_views.SsoCallbackView.as_view()),
        name="sso-callback",
    ),
    path("login/token/<str:token>/", account_views.token_login, name="token-login"),
    path("account/", account_page, name="account"),
    path("account/theme/", account_pages.theme_switch, name="theme-switch"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        account_pages.api_token_revoke,
        name="api-token-revoke",
    ),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("programs/", include("tools_app.urls")),
    path("usage/", include("usage_app.urls")),
    path("audit/", include("audit_app.urls")),
    path("", include("chat_app.urls")),
]
