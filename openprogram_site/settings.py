"""Django settings, every value read from the environment (see README: Configuration)."""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from openprogram.config import default_home
from openprogram_site.data_dir import (
    data_dir_create,
    private_file_create,
    private_file_write_once,
)
from openprogram_site.env import (
    env_allow_hosts,
    env_bool,
    env_database,
    env_float,
    env_int,
    env_list,
    env_model_prices,
    env_path,
    env_str,
)

# The site's own templates and static files ship inside this package (so a wheel has them).
SITE_DIR = Path(__file__).resolve().parent

# --- data directory -----------------------------------------------------------------
# A checkout's var/, or $XDG_DATA_HOME/openprogram for an installed wheel (never inside
# site-packages); OPENPROGRAM_HOME overrides both.
OPENPROGRAM_HOME = env_path("OPENPROGRAM_HOME", default_home())
data_dir_create(OPENPROGRAM_HOME)  # 0700; start-up warns when it is wider (data_dir.py)
RESULTS_DIR = OPENPROGRAM_HOME / "results"
WORKSPACES_DIR = env_path("OPENPROGRAM_WORKSPACES", OPENPROGRAM_HOME / "workspaces")
# A single-user desktop install can point every user's workspace at a real project.
OPENPROGRAM_WORKSPACE = env_str("OPENPROGRAM_WORKSPACE")


def _secret_key() -> str:
    explicit = env_str("SECRET_KEY")
    if explicit:
        if len(explicit) < 32:
            raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters long")
        return explicit
    key_file = OPENPROGRAM_HOME / "secret_key"
    if not key_file.exists():
        private_file_write_once(key_file, secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)

# --- network --------------------------------------------------------------------------
HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000, minimum=1, maximum=65535)
_hosts = {"127.0.0.1", "localhost", "[::1]", HOST}
_hosts.discard("0.0.0.0")
_hosts.discard("::")
ALLOWED_HOSTS = sorted(_hosts | set(env_list("ALLOWED_HOSTS")))
CSRF_TRUSTED_ORIGINS = sorted(
    {f"http://{h}:{PORT}" for h in _hosts} | set(env_list("CSRF_TRUSTED_ORIGINS"))
)
# Only behind a proxy that overwrites X-Forwarded-For may daphne believe it (`serve`
# passes --proxy-headers); otherwise any client could claim any address to the throttles.
TRUST_PROXY_HEADERS = env_bool("TRUST_PROXY_HEADERS", False)
# Serving beyond loopback is something an operator asks for explicitly.
BINDS_BEYOND_LOOPBACK = HOST not in {"127.0.0.1", "localhost", "::1"}

# --- apps -------------------------------------------------------------------------------
INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    # The API docs page then loads Swagger UI from our static files, not a CDN, and
    # starts it from a script file: it passes the Content-Security-Policy.
    "ninja",
    "channels",
    "accounts",
    "tools_app",
    "chat_app",
    "usage_app",
    "audit_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "openprogram_site.headers.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "openprogram_site.urls"
ASGI_APPLICATION = "openprogram_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env_database("DATABASE_URL", OPENPROGRAM_HOME / "db.sqlite3")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Owner-only before SQLite first opens it; its -wal and -shm files copy the mode.
    private_file_create(Path(DATABASES["default"]["NAME"]))
    # WAL + a busy timeout let the server and background tasks write side by side.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
# Keep connections between database calls (Channels closes obsolete ones around each):
# opening one per call was a tenth of a busy server's CPU. 0 = a new one every time.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
# A health check is a round trip (SELECT 1) before every database call's first query;
# on PostgreSQL that was about a fifth of a busy server's CPU per turn. Off (Django's
# default): a connection found broken is closed after the call that failed, and the next
# call reconnects. Turn on where idle connections get cut (a firewall, a pooler).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("DATABASE_HEALTH_CHECKS", False)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 times out reads by default; channels-redis blocks 5 s in BRPOP
            # (django/channels_redis#422), so the socket must wait longer than that.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
                "capacity": 1500,
                "expiry": 60,
            },
        }
    }
else:
    # The in-memory layer silently drops messages beyond `capacity` per channel (100 by
    # default); a tool streaming fast could lose frames on open tabs. Match Redis's.
    # core.channel_layer: Channels' in-memory semantics without its per-message costs.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "core.channel_layer.LocalChannelLayer",
            "CONFIG": {"capacity": 1500, "expiry": 60},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Failed password logins (accounts/login_throttle.py), counted in the database; 0 = off.
LOGIN_MAX_FAILURES_PER_ACCOUNT = env_int("LOGIN_MAX_FAILURES_PER_ACCOUNT", 5, minimum=0)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=0)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900, minimum=1, maximum=86400)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# --- single sign-on (OpenID Connect, mozilla-django-oidc; docs/sso.md) ---------------------
# On when OIDC_ISSUER is set; its endpoints come from its discovery document, when first used.
OIDC_ISSUER = env_str("OIDC_ISSUER")
SSO_ENABLED = bool(OIDC_ISSUER)
OIDC_RP_CLIENT_ID = env_str("OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET")
OIDC_RP_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = env_str("OIDC_SIGN_ALGO", "RS256")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
# The claim listing the user's groups at the provider, and which Django group each of its
# values means ("engineering=Engineers,admins=Operators"). Only the mapped Django groups
# are managed: set at each sign-on, the user's other groups left alone.
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_GROUP_MAP: dict[str, str] = {}
for _entry in env_list("OIDC_GROUP_MAP"):
    _claim_value, _sep, _group = (part.strip() for part in _entry.partition("="))
    if not (_sep and _claim_value and _group):
        raise ImproperlyConfigured(f"OIDC_GROUP_MAP entry {_entry!r} is not claim_value=Group")
    OIDC_GROUP_MAP[_claim_value] = _group
# What links a sign-on to an account here: this claim's value, stored per user. It must be
# one the provider never lets a user choose; a name or an e-mail address is not.
OIDC_LINK_CLAIM = env_str("OIDC_LINK_CLAIM", "sub")
if OIDC_LINK_CLAIM in {"email", "preferred_username", "name", "nickname", "username", "upn"}:
    raise ImproperlyConfigured(
        f"OIDC_LINK_CLAIM={OIDC_LINK_CLAIM!r} can be chosen by the user at the provider; "
        "use 'sub' (or another immutable identifier), and OIDC_LINK_VERIFIED_EMAIL for e-mail"
    )
# A first sign-on may link an existing account with the same e-mail address, only when the
# provider says the address is verified (email_verified true); never a staff account.
OIDC_LINK_VERIFIED_EMAIL = env_bool("OIDC_LINK_VERIFIED_EMAIL", False)
# Password sign-in only for staff; everyone else uses single sign-on.
OIDC_SSO_ONLY = env_bool("OIDC_SSO_ONLY", False)
# Logging out also ends the provider's session where it offers RP-initiated logout.
OIDC_LOGOUT_AT_PROVIDER = env_bool("OIDC_LOGOUT_AT_PROVIDER", True)
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10, minimum=1, maximum=120)
if SSO_ENABLED:
    _issuer = urlsplit(OIDC_ISSUER)
    if not (
        _issuer.scheme == "https"
        or (_issuer.scheme == "http" and _issuer.hostname in {"127.0.0.1", "localhost", "::1"})
    ):
        raise ImproperlyConfigured(f"OIDC_ISSUER={OIDC_ISSUER!r} must be an https:// URL")
    if not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
        raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too")
    if "openid" not in OIDC_RP_SCOPES.split():
        raise ImproperlyConfigured(f"OIDC_SCOPES={OIDC_RP_SCOPES!r} must include 'openid'")
    if OIDC_RP_SIGN_ALGO not in {"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}:
        raise ImproperlyConfigured(f"OIDC_SIGN_ALGO={OIDC_RP_SIGN_ALGO!r}: use RS256 or ES256")
elif OIDC_SSO_ONLY:
    raise ImproperlyConfigured("OIDC_SSO_ONLY needs single sign-on: set OIDC_ISSUER")
# mozilla-django-oidc's own settings: PKCE, the ID token kept for RP-initiated logout, the
# client authenticating with HTTP Basic (the OpenID default), our callback's URL name.
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True
OIDC_TOKEN_USE_BASIC_AUTH = True
OIDC_AUTHENTICATION_CALLBACK_URL = "sso-callback"
# Sessions made by single sign-on name its backend: switching it off ends them.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    *(["accounts.sso_backend.SsoBackend"] if SSO_ENABLED else []),
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [SITE_DIR / "static"]
STATIC_ROOT = OPENPROGRAM_HOME / "static"
# daphne does not serve static files; the ASGI app does unless a proxy takes over.
SERVE_STATIC = env_bool("SERVE_STATIC", True)

# --- security ---------------------------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
_https = env_bool("HTTPS", False)
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = _https and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if _https else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
SECURE_HSTS_PRELOAD = _https
if _https:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    CSRF_TRUSTED_ORIGINS += [o.replace("http://", "https://") for o in CSRF_TRUSTED_ORIGINS]
# Sockets accept exactly these origins (scheme, host and port; no wildcards, which the
# CSRF setting allows): cookies ignore ports, origins do not (openprogram_site/origins.py).
WEBSOCKET_ALLOWED_ORIGINS = [o for o in CSRF_TRUSTED_ORIGINS if "*" not in o]

# --- OpenProgram --------------------------------------------------------------------------
# Models offered in the composer. The offline model is always first and always present.
OPENPROGRAM_MODELS = ["offline", *[m for m in env_list("OPENPROGRAM_MODELS") if m != "offline"]]
OPENPROGRAM_DEFAULT_MODEL = env_str("OPENPROGRAM_DEFAULT_MODEL", "offline")
# USD per million tokens for models litellm's cost map does not know (or to override it).
OPENPROGRAM_MODEL_PRICES = env_model_prices("OPENPROGRAM_MODEL_PRICES")
# How long the audit trail keeps a tool call; only `manage.py audit_prune` deletes (0: keep all).
OPENPROGRAM_AUDIT_RETENTION_DAYS = env_int("OPENPROGRAM_AUDIT_RETENTION_DAYS", 365, minimum=0)
if OPENPROGRAM_DEFAULT_MODEL not in OPENPROGRAM_MODELS:
    OPENPROGRAM_MODELS.append(OPENPROGRAM_DEFAULT_MODEL)
# Program packages whose PROGRAM_ENTRIES are loaded at start-up (plus entry points).
OPENPROGRAM_PACKAGES = env_list("OPENPROGRAM_PACKAGES")
# Shell access. bash always needs approval; beyond loopback it is off unless allowed.
OPENPROGRAM_ALLOW_SHELL = env_bool("OPENPROGRAM_ALLOW_SHELL", not BINDS_BEYOND_LOOPBACK)
# Every process a tool starts runs under bubblewrap; no network unless opted in.
OPENPROGRAM_SANDBOX_NETWORK = env_bool("OPENPROGRAM_SANDBOX_NETWORK", False)
OPENPROGRAM_SHELL_STAFF_ONLY = env_bool("OPENPROGRAM_SHELL_STAFF_ONLY", False)
OPENPROGRAM_BWRAP = env_str("OPENPROGRAM_BWRAP", "bwrap")
# Per sandboxed call (docs/security.md#limits): memory and processes of the whole tree
# (a cgroup where the host has one), CPU seconds and largest file per process, /tmp size.
OPENPROGRAM_SANDBOX_MEMORY_MB = env_int("OPENPROGRAM_SANDBOX_MEMORY_MB", 1024, minimum=16)
OPENPROGRAM_SANDBOX_CPU_SECONDS = env_int("OPENPROGRAM_SANDBOX_CPU_SECONDS", 60, minimum=1)
OPENPROGRAM_SANDBOX_PROCESSES = env_int("OPENPROGRAM_SANDBOX_PROCESSES", 256, minimum=8)
OPENPROGRAM_SANDBOX_FILE_MB = env_int("OPENPROGRAM_SANDBOX_FILE_MB", 1024, minimum=1)
OPENPROGRAM_SANDBOX_TMP_MB = env_int("OPENPROGRAM_SANDBOX_TMP_MB", 256, minimum=1)
# Disk space one workspace may take (file tools and uploads exact, bash measured after
# each call); 0 turns the quota off.
OPENPROGRAM_WORKSPACE_QUOTA_BYTES = env_int(
    "OPENPROGRAM_WORKSPACE_QUOTA_BYTES", 2 * 1024**3, minimum=0
)
# Who a root server's sandboxed processes become (never root; docs/security.md#not-root).
OPENPROGRAM_SANDBOX_UID = env_int("OPENPROGRAM_SANDBOX_UID", 65534, minimum=1)
OPENPROGRAM_SANDBOX_GID = env_int("OPENPROGRAM_SANDBOX_GID", 65534, minimum=1)
# Shell launchers each server process keeps parked in a fresh cgroup, so a call does not
# wait for the kernel's cgroup join (openprogram/security/sandbox_pool.py); 0: none.
OPENPROGRAM_SANDBOX_POOL = env_int("OPENPROGRAM_SANDBOX_POOL", 1, minimum=0, maximum=8)
APPROVAL_TIMEOUT_SECONDS = env_int("OPENPROGRAM_APPROVAL_TIMEOUT", 300, minimum=1)
# Tools "allow for this conversation" never covers (MCP tools and argument-dependent rules
# always ask too; chat_app/approvals.py).
CHAT_ALWAYS_ASK_TOOLS = frozenset(env_list("OPENPROGRAM_ALWAYS_ASK_TOOLS"))
# Files attached in the chat land in <workspace>/uploads/; per file, per user in total.
CHAT_ATTACHMENT_MAX_BYTES = env_int("OPENPROGRAM_ATTACHMENT_MAX_BYTES", 10_000_000, minimum=1)
CHAT_UPLOADS_MAX_BYTES = env_int("OPENPROGRAM_UPLOADS_MAX_BYTES", 200_000_000, minimum=1)
# Any HTTP request body, refused (413) while it arrives, before it reaches the disk
# (openprogram_site/daphne_patches.py). Room for one attachment plus its multipart framing.
MAX_REQUEST_BYTES = env_int(
    "OPENPROGRAM_MAX_REQUEST_BYTES", CHAT_ATTACHMENT_MAX_BYTES + 1_000_000, minimum=1024
)
# Turn starts per user (chat_app/turn_limits.py): per minute, and running at once; 0 = off.
OPENPROGRAM_TURNS_PER_MINUTE = env_int("OPENPROGRAM_TURNS_PER_MINUTE", 30, minimum=0)
OPENPROGRAM_MAX_CONCURRENT_TURNS = env_int("OPENPROGRAM_MAX_CONCURRENT_TURNS", 4, minimum=0)
# A running turn renews its run's lease; a run whose lease ran out lost its server.
CHAT_RUN_LEASE_SECONDS = env_int("OPENPROGRAM_RUN_LEASE_SECONDS", 30, minimum=1, maximum=3600)
SEARXNG_URL = env_str("SEARXNG_URL")
# web_search's hosted backend (Brave Search API); SearXNG wins when both are set.
SEARCH_API_KEY = env_str("BRAVE_API_KEY")
# host or host:port entries web_fetch may reach even on private addresses (docs/security.md).
WEB_FETCH_ALLOW_HOSTS = env_allow_hosts("WEB_FETCH_ALLOW_HOSTS")
WEB_FETCH_MAX_BYTES = env_int("WEB_FETCH_MAX_BYTES", 2_000_000, minimum=1_000, maximum=100_000_000)
WEB_FETCH_TIMEOUT_SECONDS = env_int("WEB_FETCH_TIMEOUT", 20, minimum=1, maximum=300)

# Read by the framework's provider layer from the environment at call time; parsed
# here too so a malformed value stops start-up instead of failing a turn.
PROVIDER_RETRIES = env_int("OPENPROGRAM_PROVIDER_RETRIES", 3, minimum=1, maximum=20)
PROVIDER_RETRY_DELAY = env_float("OPENPROGRAM_PROVIDER_RETRY_DELAY", 0.5, minimum=0)
PROVIDER_TIMEOUT = env_float("OPENPROGRAM_PROVIDER_TIMEOUT", 120.0, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}
