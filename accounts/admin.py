from __future__ import annotations

from django.conf import settings
from django.contrib import admin

from accounts.models import SsoIdentity


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Link an existing account to single sign-on: its issuer and its ``sub`` there."""

    list_display = ("user", "issuer", "subject", "linked_at", "last_login_at")
    list_filter = ("issuer",)
    search_fields = ("user__username", "subject")
    raw_id_fields = ("user",)
    readonly_fields = ("linked_at", "last_login_at")

    def get_changeform_initial_data(self, request):
        return {"issuer": settings.OIDC_ISSUER, **super().get_changeform_initial_data(request)}
