"""One-time login links, per-user API tokens (only hashes are stored), failed logins,
single sign-on identities."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class LoginToken(models.Model):
    """A single-use login link, as printed by ``make run``."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"login link for {self.user} ({'used' if self.used_at else 'unused'})"


class ApiToken(models.Model):
    """A bearer token for scripts calling ``/api/``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class LoginFailure(models.Model):
    """One wrong password, by account name and client address (``accounts.login_throttle``).

    Rows, not a cache: every process sees the same count, and a restart forgets nothing.
    """

    username = models.CharField(max_length=150)
    address = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["username", "at"]),
            models.Index(fields=["address", "at"]),
        ]

    def __str__(self) -> str:
        return f"failed login for {self.username!r} from {self.address} at {self.at}"


class UserPreferences(models.Model):
    """What a user chose on the account page: the theme and the model new chats start with.

    The profile new chats start with is the active tool profile (``tools_app``), not
    repeated here. No row means the defaults.
    """

    class Theme(models.TextChoices):
        SYSTEM = "system", "Same as the system"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preferences"
    )
    theme = models.CharField(max_length=8, choices=Theme.choices, default=Theme.SYSTEM)
    default_model = models.CharField(max_length=200, blank=True)
    """Empty: the server's ``OPENPROGRAM_DEFAULT_MODEL``."""

    def __str__(self) -> str:
        return f"preferences of {self.user}"


class SsoIdentity(models.Model):
    """Who a user is at an OpenID provider: the issuer and the value of its link claim.

    The only thing single sign-on links on (``accounts.sso_accounts``). A row is made at a
    user's first single sign-on, or by an administrator to link an existing account.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255, help_text="The link claim's value (sub).")
    linked_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique"),
            models.UniqueConstraint(fields=["issuer", "user"], name="sso_identity_one_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} at {self.issuer} ({self.subject})"
