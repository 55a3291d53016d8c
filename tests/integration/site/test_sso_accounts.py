"""accounts.sso_accounts: what a verified set of claims signs in to, and its groups.

The browser tests (tests/e2e/test_sso.py) run the same rules through a real provider;
here each rule is pinned down on its own, edge cases included.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection

from accounts.models import SsoIdentity
from accounts.sso_accounts import sso_account_resolve, sso_groups_sync
from accounts.sso_errors import SsoRefused

pytestmark = pytest.mark.django_db

ISSUER = "https://id.example.com"


@pytest.fixture(autouse=True)
def sso_settings(settings):
    settings.OIDC_LINK_CLAIM = "sub"
    settings.OIDC_LINK_VERIFIED_EMAIL = False
    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_GROUP_MAP = {"eng": "Engineers", "ops": "Operators", "oncall": "Operators"}
    return settings


def _claims(sub="s-1", **claims):
    return {"sub": sub, **claims}


def test_the_first_sign_on_makes_an_account_without_a_password():
    user = sso_account_resolve(issuer=ISSUER, claims=_claims(preferred_username="carol"))
    assert user.username == "carol"
    assert not user.has_usable_password()
    assert SsoIdentity.objects.get(user=user).subject == "s-1"


def test_the_next_sign_on_finds_the_same_account_whatever_its_name_became():
    first = sso_account_resolve(issuer=ISSUER, claims=_claims(preferred_username="carol"))
    again = sso_account_resolve(issuer=ISSUER, claims=_claims(preferred_username="caroline"))
    assert again.pk == first.pk
    assert SsoIdentity.objects.get(user=first).last_login_at is not None


def test_the_same_subject_at_another_issuer_is_another_person():
    here = sso_account_resolve(issuer=ISSUER, claims=_claims(preferred_username="carol"))
    there = sso_account_resolve(
        issuer="https://other.example.com", claims=_claims(preferred_username="carol")
    )
    assert there.pk != here.pk and there.username == "carol-2"


def test_a_taken_username_gets_a_number_and_never_the_account(alice):
    user = sso_account_resolve(issuer=ISSUER, claims=_claims(preferred_username="ALICE"))
    assert user.pk != alice.pk and user.username == "ALICE-2"
    assert not SsoIdentity.objects.filter(user=alice).exists()


def test_an_unsafe_username_is_cleaned():
    user = sso_account_resolve(
        issuer=ISSUER, claims=_claims(preferred_username="<script>x y</script>")
    )
    assert user.username == "scriptxyscript"


def test_an_unverified_email_of_an_existing_account_is_refused(alice, sso_settings):
    sso_settings.OIDC_LINK_VERIFIED_EMAIL = True
    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    for verified in (False, "true", None):
        with pytest.raises(SsoRefused, match="already exists here"):
            sso_account_resolve(
                issuer=ISSUER,
                claims=_claims(email="Alice@Example.com", email_verified=verified),
            )
    assert not SsoIdentity.objects.exists()
    assert User.objects.count() == 1


def test_a_verified_email_links_only_when_the_admin_enables_it(alice, sso_settings):
    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    claims = _claims(email="alice@example.com", email_verified=True)
    with pytest.raises(SsoRefused, match="already exists here"):
        sso_account_resolve(issuer=ISSUER, claims=claims)
    sso_settings.OIDC_LINK_VERIFIED_EMAIL = True
    assert sso_account_resolve(issuer=ISSUER, claims=claims).pk == alice.pk


def test_a_verified_email_never_links_a_staff_account(admin_user, sso_settings):
    sso_settings.OIDC_LINK_VERIFIED_EMAIL = True
    User.objects.filter(pk=admin_user.pk).update(email="root@example.com")
    with pytest.raises(SsoRefused):
        sso_account_resolve(
            issuer=ISSUER, claims=_claims(email="root@example.com", email_verified=True)
        )


def test_a_verified_email_never_relinks_an_account_linked_to_someone_else(alice, sso_settings):
    sso_settings.OIDC_LINK_VERIFIED_EMAIL = True
    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    SsoIdentity.objects.create(user=alice, issuer=ISSUER, subject="s-alice")
    with pytest.raises(SsoRefused):
        sso_account_resolve(
            issuer=ISSUER,
            claims=_claims(sub="s-other", email="alice@example.com", email_verified=True),
        )


def test_an_account_linked_by_an_admin_signs_in_by_its_subject(alice):
    SsoIdentity.objects.create(user=alice, issuer=ISSUER, subject="s-alice")
    assert sso_account_resolve(issuer=ISSUER, claims=_claims(sub="s-alice")).pk == alice.pk


def test_a_deactivated_account_is_refused(alice):
    SsoIdentity.objects.create(user=alice, issuer=ISSUER, subject="s-alice")
    User.objects.filter(pk=alice.pk).update(is_active=False)
    with pytest.raises(SsoRefused, match="deactivated"):
        sso_account_resolve(issuer=ISSUER, claims=_claims(sub="s-alice"))


def test_a_missing_link_claim_is_refused(sso_settings):
    sso_settings.OIDC_LINK_CLAIM = "oid"
    with pytest.raises(SsoRefused, match="'oid'"):
        sso_account_resolve(issuer=ISSUER, claims=_claims())
    user = sso_account_resolve(issuer=ISSUER, claims=_claims(oid="o-1", preferred_username="d"))
    assert SsoIdentity.objects.get(user=user).subject == "o-1"


def test_groups_follow_the_claim_and_leave_unmanaged_groups_alone(alice):
    reviewers = Group.objects.create(name="Reviewers")
    alice.groups.add(reviewers)
    sso_groups_sync(user=alice, claims={"groups": ["eng", "ops", "oncall", "unknown"]})
    assert sorted(alice.groups.values_list("name", flat=True)) == [
        "Engineers",
        "Operators",
        "Reviewers",
    ]
    sso_groups_sync(user=alice, claims={"groups": "ops"})
    assert sorted(alice.groups.values_list("name", flat=True)) == ["Operators", "Reviewers"]


@pytest.mark.parametrize("claims", [{}, {"groups": None}, {"groups": {"eng": True}}, {"groups": 7}])
def test_a_missing_or_malformed_groups_claim_means_no_managed_groups(alice, claims):
    sso_groups_sync(user=alice, claims={"groups": ["eng"]})
    sso_groups_sync(user=alice, claims=claims)
    assert list(alice.groups.values_list("name", flat=True)) == []


def test_no_mapping_means_groups_are_not_managed(alice, sso_settings):
    sso_settings.OIDC_GROUP_MAP = {}
    alice.groups.add(Group.objects.create(name="Engineers"))
    sso_groups_sync(user=alice, claims={"groups": []})
    assert list(alice.groups.values_list("name", flat=True)) == ["Engineers"]


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the test database of SQLite is in memory: it locks tables instead of waiting",
)
@pytest.mark.django_db(transaction=True)
def test_two_first_sign_ons_of_one_person_at_once_make_one_account():
    barrier = threading.Barrier(4)
    users: list[int] = []
    errors: list[BaseException] = []

    def sign_on() -> None:
        try:
            barrier.wait()
            user = sso_account_resolve(
                issuer=ISSUER, claims=_claims(sub="s-race", preferred_username="racer")
            )
            users.append(user.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sign_on) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(users)) == 1 and len(users) == 4
    assert SsoIdentity.objects.filter(subject="s-race").count() == 1
    assert User.objects.filter(username__startswith="racer").count() == 1
