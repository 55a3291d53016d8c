"""Single sign-on in Chromium against a real OpenID provider (oidc-provider, from npm).

One provider (tests/sso/provider.mjs) and one site for the module; every test signs in
through the provider's own pages and reads what the site stored from its SQLite file
(``DaphneServer.sql``).
Refusals must each end on the site's refusal page (403, a sentence naming the reason),
never a stack trace or a bare 400.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.sso_provider import OidcProvider
from tests.servers import PASSWORD, free_port, make_server

pytestmark = pytest.mark.e2e

PROVIDER_NAME = "Test provider"
AXE_JS = Path(__file__).resolve().parents[2] / ".tools/axe/node_modules/axe-core/axe.min.js"


@pytest.fixture(scope="module")
def sso(tmp_path_factory):
    directory = tmp_path_factory.mktemp("oidc")
    provider = OidcProvider(
        directory, port=free_port(), client_id="openprogram", client_secret=secrets.token_hex(16)
    )
    server = make_server(
        tmp_path_factory.mktemp("sso-home"),
        OIDC_ISSUER=provider.issuer,
        OIDC_CLIENT_ID=provider.client_id,
        OIDC_CLIENT_SECRET=provider.client_secret,
        OIDC_SCOPES="openid email profile groups",
        OIDC_GROUP_MAP="eng=Engineers,ops=Operators",
        OIDC_PROVIDER_NAME=PROVIDER_NAME,
        OIDC_LINK_VERIFIED_EMAIL="1",
    )
    # alice, bob and root from the session's template; alice's and root's e-mail addresses,
    # and hana, a plain user with bob's password hash (PASSWORD) and a mixed-case address,
    # written into its SQLite file (a manage.py shell costs seconds of start-up).
    server.create_users()
    server.sql(
        "UPDATE auth_user SET email = username || '@example.com'"
        " WHERE username IN ('alice', 'root')"
    )
    server.sql(
        "INSERT INTO auth_user (password, last_login, is_superuser, username, first_name,"
        " last_name, email, is_staff, is_active, date_joined)"
        " SELECT password, NULL, 0, 'hana', '', '', 'Hana@Example.com', 0, 1, date_joined"
        " FROM auth_user WHERE username = 'bob'"
    )
    try:
        provider.start(
            redirect_uri=f"{server.url}/login/sso/callback/",
            post_logout_redirect_uri=f"{server.url}/login/",
        )
        server.start()
        yield server, provider
    finally:
        server.stop()
        provider.stop()


def _account(login: str, *, groups=(), email=None, verified=True, **extra):
    return {
        "login": login,
        "claims": {
            "preferred_username": login,
            "email": email or f"{login}@example.com",
            "email_verified": verified,
            "groups": list(groups),
        },
        **extra,
    }


def _groups(server, username: str) -> list[str]:
    rows = server.sql(
        "SELECT g.name FROM auth_group g JOIN auth_user_groups ug ON ug.group_id = g.id"
        " JOIN auth_user u ON u.id = ug.user_id WHERE u.username = ? ORDER BY g.name",
        (username,),
    )
    return [name for (name,) in rows]


def _identities(server, username: str) -> list[tuple]:
    return server.sql(
        "SELECT i.issuer, i.subject FROM accounts_ssoidentity i"
        " JOIN auth_user u ON u.id = i.user_id WHERE u.username = ?",
        (username,),
    )


def _user_count(server, username: str) -> int:
    return server.sql("SELECT count(*) FROM auth_user WHERE username = ?", (username,))[0][0]


def _start(page: Page, server) -> None:
    page.goto(server.url + "/login/")
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()


def _provider_sign_in(page: Page, login: str) -> None:
    page.fill("#login", login)
    page.get_by_role("button", name="Sign in").click()


def _sign_on(page: Page, server, login: str) -> None:
    _start(page, server)
    _provider_sign_in(page, login)


def _expect_signed_in_as(page: Page, username: str) -> None:
    expect(page.get_by_test_id("username")).to_have_text(username)


def _expect_refused(page: Page, reason: str | re.Pattern) -> None:
    expect(page.get_by_role("heading")).to_have_text(f"Sign-in with {PROVIDER_NAME} refused")
    expect(page.get_by_test_id("sso-reason")).to_contain_text(reason)
    expect(page.get_by_test_id("username")).to_have_count(0)
    assert "Traceback" not in page.content()


def _held_callback(page: Page, server, login: str) -> str:
    """Sign on, but keep the provider's answer from the site: its callback URL.

    The provider's sign-in form is sent, and its redirects followed, by the page's own
    request context: same cookies as the browser, but nothing reaches the site.
    """
    _start(page, server)
    action = urljoin(page.url, page.locator("form").get_attribute("action"))
    response = page.request.post(action, form={"login": login}, max_redirects=0)
    for _ in range(10):
        location = urljoin(response.url, response.headers["location"])
        if location.startswith(server.url + "/login/sso/callback/"):
            assert "code=" in location, location
            return location
        response = page.request.get(location, max_redirects=0)
    raise AssertionError(f"the provider never answered the site: {response.url}")


def test_first_sign_on_makes_the_account_in_its_mapped_groups(sso, page):
    server, provider = sso
    provider.account_set("sub-carol", **_account("carol", groups=["eng", "unmapped"]))
    _sign_on(page, server, "carol")
    _expect_signed_in_as(page, "carol")
    assert page.url == server.url + "/"
    assert _groups(server, "carol") == ["Engineers"]
    assert _identities(server, "carol") == [(provider.issuer, "sub-carol")]
    # No password: the account signs in through the provider only.
    assert server.sql("SELECT password FROM auth_user WHERE username = 'carol'")[0][0][0] == "!"


def test_a_changed_group_claim_changes_the_groups_at_the_next_sign_on(sso, browser):
    server, provider = sso

    def sign_on_afresh() -> None:
        context = browser.new_context()
        page = context.new_page()
        _sign_on(page, server, "dora")
        _expect_signed_in_as(page, "dora")
        context.close()

    provider.account_set("sub-dora", **_account("dora", groups=["eng"]))
    sign_on_afresh()
    assert _groups(server, "dora") == ["Engineers"]
    # A group given here by hand is not the provider's to take away.
    server.sql("INSERT INTO auth_group (name) VALUES ('Reviewers')")
    server.sql(
        "INSERT INTO auth_user_groups (user_id, group_id) SELECT u.id, g.id FROM auth_user u,"
        " auth_group g WHERE u.username = 'dora' AND g.name = 'Reviewers'"
    )

    provider.account_set("sub-dora", **_account("dora", groups=["ops"]))
    sign_on_afresh()
    assert _groups(server, "dora") == ["Operators", "Reviewers"]

    provider.account_set("sub-dora", **_account("dora", groups=[]))
    sign_on_afresh()
    assert _groups(server, "dora") == ["Reviewers"]


@pytest.mark.parametrize("how", ["removed", "disabled"])
def test_a_user_removed_or_disabled_at_the_provider_is_refused(sso, page, how):
    server, provider = sso
    sub, login = f"sub-erin-{how}", f"erin-{how}"
    provider.account_set(sub, **_account(login))
    _sign_on(page, server, login)
    _expect_signed_in_as(page, login)

    if how == "removed":
        provider.account_remove(sub)
    else:
        provider.account_set(sub, **_account(login), enabled=False)
    # Out of the site only: the browser still has its session at the provider.
    page.context.clear_cookies(domain="127.0.0.1", name="sessionid")
    _start(page, server)
    _provider_sign_in(page, login)
    _expect_refused(page, "The provider refused the sign-in (access_denied).")
    assert page.url.startswith(server.url + "/login/sso/callback/")


def test_a_user_deactivated_here_is_logged_out_and_refused_though_the_provider_agrees(sso, page):
    server, provider = sso
    provider.account_set("sub-fay", **_account("fay"))
    _sign_on(page, server, "fay")
    _expect_signed_in_as(page, "fay")

    server.sql("UPDATE auth_user SET is_active = 0 WHERE username = 'fay'")
    page.goto(server.url + "/")
    assert page.url.startswith(server.url + "/login/")
    # The provider still knows the browser: it answers at once, and the site refuses.
    _start(page, server)
    _expect_refused(page, "This account is deactivated here.")


def test_logout_also_logs_out_at_the_provider(sso, page):
    server, provider = sso
    provider.account_set("sub-gus", **_account("gus"))
    _sign_on(page, server, "gus")
    _expect_signed_in_as(page, "gus")

    # The top bar's (a phone's drawer holds the other, shown until the styles apply).
    page.get_by_role("banner").get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(server.url + "/login/")
    expect(page.get_by_test_id("username")).to_have_count(0)
    # The provider asks who is signing in again: its session ended too.
    _start(page, server)
    expect(page.locator("#login")).to_be_visible()


def test_an_unverified_email_never_takes_over_an_existing_account(sso, page):
    server, provider = sso
    provider.account_set(
        "sub-mallory", **_account("alice", email="ALICE@example.com", verified=False)
    )
    _sign_on(page, server, "alice")
    _expect_refused(page, "An account with this e-mail address already exists here.")
    assert _identities(server, "alice") == []
    page.goto(server.url + "/")
    assert page.url.startswith(server.url + "/login/")


def test_a_bare_username_never_links_to_the_account_of_that_name(sso, page):
    server, provider = sso
    provider.account_set("sub-not-bob", **_account("bob", email="someone.else@example.com"))
    _sign_on(page, server, "bob")
    _expect_signed_in_as(page, "bob-2")
    assert _identities(server, "bob") == []
    assert _identities(server, "bob-2") == [(provider.issuer, "sub-not-bob")]


def test_a_verified_email_links_an_existing_account_but_never_a_staff_one(sso, browser):
    server, provider = sso
    provider.account_set("sub-hana", **_account("hana.sso", email="hana@example.com"))
    provider.account_set("sub-root", **_account("root.sso", email="root@example.com"))
    context = browser.new_context()
    page = context.new_page()
    _sign_on(page, server, "hana.sso")
    _expect_signed_in_as(page, "hana")
    context.close()
    assert _identities(server, "hana") == [(provider.issuer, "sub-hana")]

    context = browser.new_context()
    page = context.new_page()
    _sign_on(page, server, "root.sso")
    _expect_refused(page, "An account with this e-mail address already exists here.")
    context.close()
    assert _identities(server, "root") == []
    assert _user_count(server, "root.sso") == 0


def test_an_expired_code_is_refused(sso, page):
    server, provider = sso
    provider.account_set("sub-ida", **_account("ida", code_ttl=1))
    callback = _held_callback(page, server, "ida")
    # The provider's clock decides: wait out the code's one-second life.
    time.sleep(2.5)
    response = page.goto(callback)
    assert response is not None and response.status == 403
    _expect_refused(page, "it expired or was already used (invalid_grant)")
    assert _user_count(server, "ida") == 0


def test_a_bad_state_is_refused(sso, page):
    server, provider = sso
    provider.account_set("sub-jon", **_account("jon"))
    callback = _held_callback(page, server, "jon")
    forged = re.sub(r"state=[^&]+", "state=" + secrets.token_urlsafe(24), callback)
    response = page.goto(forged)
    assert response is not None and response.status == 403
    _expect_refused(page, "its state does not match")
    # Neither is a provider's error believed without this browser's state.
    response = page.goto(server.url + "/login/sso/callback/?error=access_denied&state=nope")
    assert response is not None and response.status == 403
    _expect_refused(page, "its state does not match")
    assert _user_count(server, "jon") == 0
    # The untouched answer still signs in: only the state was wrong.
    page.goto(callback)
    _expect_signed_in_as(page, "jon")


def test_a_bad_nonce_is_refused(sso, page):
    server, provider = sso
    provider.account_set("sub-kim", **_account("kim", rewrite_id_token={"nonce": "replayed"}))
    _sign_on(page, server, "kim")
    _expect_refused(page, "(nonce mismatch)")
    assert _user_count(server, "kim") == 0


def test_a_wrong_issuer_is_refused(sso, page):
    server, provider = sso
    other = f"http://127.0.0.1:{free_port()}"
    provider.account_set("sub-lea", **_account("lea", rewrite_id_token={"iss": other}))
    _sign_on(page, server, "lea")
    _expect_refused(page, "(wrong issuer)")
    assert _user_count(server, "lea") == 0


def test_password_sign_in_stays(sso, page):
    server, _ = sso
    page.goto(server.url + "/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    _expect_signed_in_as(page, "alice")


def _serious_violations(page: Page) -> list[dict]:
    """axe-core's serious and critical findings on the page (as tests/e2e/test_accessibility)."""
    if not AXE_JS.is_file():
        pytest.fail(f"axe-core is not installed at {AXE_JS}: run `make axe-deps`")
    page.evaluate(AXE_JS.read_text())
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_the_sign_in_and_refusal_pages_have_no_serious_accessibility_violations(sso, page):
    server, provider = sso
    page.goto(server.url + "/login/")
    assert _serious_violations(page) == []
    provider.account_set("sub-max", **_account("max", rewrite_id_token={"nonce": "x"}))
    _sign_on(page, server, "max")
    _expect_refused(page, "(nonce mismatch)")
    assert _serious_violations(page) == []
