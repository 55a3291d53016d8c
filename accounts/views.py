from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from accounts.login_forms import THROTTLED, ThrottledAuthenticationForm
from accounts.services import InvalidLoginToken, login_token_redeem


@login_not_required
@never_cache
def token_login(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user = login_token_redeem(token=token)
    except InvalidLoginToken as exc:
        return render(request, "accounts/token_invalid.html", {"message": str(exc)}, status=403)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    if not user.has_usable_password():
        # `make run`'s admin has only this link: without a password, logging out locks them out.
        messages.info(
            request,
            "Set a password so you can sign in again after logging out.",
            extra_tags="set-password",  # shown as a link to the form (base.html)
        )
        return redirect("account")
    return redirect("/")


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


class SignInView(LoginView):
    """Django's login view with the throttled form; a locked-out attempt answers 429.

    With single sign-on configured, the page also offers it (``accounts.sso_views``).
    """

    authentication_form = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if settings.SSO_ENABLED:
            context["sso"] = {
                "provider": settings.OIDC_PROVIDER_NAME,
                "only": settings.OIDC_SSO_ONLY,
            }
        return context

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.has_error("__all__", THROTTLED):
            response.status_code = 429
        return response
