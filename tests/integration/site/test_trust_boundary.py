"""The trust boundary against a real daphne: origins, throttles, frame sizes, API answers.

One server with small limits (3 wrong passwords per account, 6 per address, a 6 s
lock; 5 turns a minute, 2 at once), real sockets (``websockets``) and real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.servers import PASSWORD, ROOT, DaphneServer, make_server
from tests.signed_in import sign_in

LOCK_SECONDS = 600
"""Wide enough that any machine hashes 7 guesses inside it; the window's end is reached by
ageing the recorded failures (``_let_the_window_pass``), not by waiting for it."""
TURNS_PER_MINUTE = 5


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DaphneServer]:
    srv = make_server(
        tmp_path_factory.mktemp("trust-home"),
        LOGIN_MAX_FAILURES_PER_ACCOUNT="3",
        LOGIN_MAX_FAILURES_PER_ADDRESS="6",
        LOGIN_LOCKOUT_SECONDS=str(LOCK_SECONDS),
        OPENPROGRAM_TURNS_PER_MINUTE=str(TURNS_PER_MINUTE),
        OPENPROGRAM_MAX_CONCURRENT_TURNS="2",
    )
    srv.create_users()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def people(server) -> dict[str, dict[str, Any]]:
    """alice, bob and root: a session cookie, an API token and three conversations each
    (their public ids, and their database keys, which must open nothing)."""
    out = {}
    for name in ("alice", "bob", "root"):
        person = sign_in(server, name)
        conversations = [person.conversation() for _ in range(3)]
        out[name] = {
            "cookie": person.cookie,
            "token": person.api_token("test"),
            "conversations": conversations,
            "keys": [person.conversation_key(c) for c in conversations],
        }
    return out


def _count_runs(server: DaphneServer, public_id: str) -> int:
    """The conversation's Run rows; the conversation itself must be found (Django keeps a
    UUID in SQLite as its 32 hex digits), or a count of 0 would prove nothing."""
    ((_, count),) = server.sql(
        "SELECT c.id, count(r.id) FROM chat_app_conversation c"
        " LEFT JOIN chat_app_run r ON r.conversation_id = c.id"
        " WHERE c.public_id = ? GROUP BY c.id",
        (uuid.UUID(public_id).hex,),
    )
    return count


def _ws_url(server: DaphneServer, public_id: str | int) -> str:
    return f"ws://127.0.0.1:{server.port}/ws/chat/{public_id}/"


async def _frames_then_close(
    url: str, *, origin: str | None, cookie: str, send: list[str] = ()
) -> tuple[list[dict], int | None]:
    """Open a socket, send ``send``, and collect every frame until the server closes it."""
    frames: list[dict] = []
    kwargs: dict[str, Any] = {"additional_headers": {"Cookie": cookie}, "max_size": None}
    if origin is not None:
        kwargs["origin"] = origin
    async with connect(url, **kwargs) as ws:
        try:
            for text in send:
                await ws.send(text)
            while True:
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 15)))
        except ConnectionClosed as closed:
            return frames, closed.rcvd.code if closed.rcvd else None
    raise AssertionError("the socket was not closed")


# --- origins ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",
        "http://localhost:3000",
        "http://[::1]:8080",
        "https://127.0.0.1:{port}",
        "http://evil.example",
        None,
    ],
)
def test_a_page_on_another_origin_gets_close_4403_and_nothing_else(server, people, origin):
    alice = people["alice"]
    conversation = alice["conversations"][0]
    if origin is not None:
        origin = origin.format(port=server.port)
    message = json.dumps({"type": "user_message", "text": "start a turn", "model": "offline"})
    frames, code = asyncio.run(
        _frames_then_close(
            _ws_url(server, conversation),
            origin=origin,
            cookie=alice["cookie"],
            send=[message, json.dumps({"type": "approve", "call_id": "x"})],
        )
    )
    assert (frames, code) == ([], 4403)
    assert _count_runs(server, conversation) == 0


def test_the_servers_own_origins_are_let_in(server, people):
    alice = people["alice"]

    async def answered(host: str) -> dict:
        async with connect(
            _ws_url(server, alice["conversations"][0]),
            origin=f"http://{host}:{server.port}",
            additional_headers={"Cookie": alice["cookie"]},
        ) as ws:
            await ws.send("not json")
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    for host in ("127.0.0.1", "localhost"):
        assert asyncio.run(answered(host))["kind"] == "bad_json", host


def test_bob_gets_4404_and_an_anonymous_socket_4401_on_a_real_server(server, people):
    origin = f"http://127.0.0.1:{server.port}"
    alices = _ws_url(server, people["alice"]["conversations"][0])
    frames, code = asyncio.run(
        _frames_then_close(alices, origin=origin, cookie=people["bob"]["cookie"])
    )
    assert (frames, code) == ([], 4404)
    frames, code = asyncio.run(_frames_then_close(alices, origin=origin, cookie=""))
    assert (frames, code) == ([], 4401)


def test_a_conversation_is_named_by_a_random_id_and_its_database_key_opens_nothing(server, people):
    alice = people["alice"]
    auth = {"Authorization": f"Bearer {alice['token']}"}
    listed = requests.get(f"{server.url}/api/conversations", headers=auth, timeout=10).json()
    assert sorted(c["id"] for c in listed) == sorted(alice["conversations"])
    assert all(re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", c["id"]) for c in listed)
    key = alice["keys"][0]
    page = requests.get(f"{server.url}/c/{key}/", headers={"Cookie": alice["cookie"]}, timeout=10)
    assert page.status_code == 404
    api = requests.get(f"{server.url}/api/conversations/{key}", headers=auth, timeout=10)
    assert api.status_code == 404
    frames, code = asyncio.run(
        _frames_then_close(
            _ws_url(server, key), origin=f"http://127.0.0.1:{server.port}", cookie=alice["cookie"]
        )
    )
    assert (frames, code) == ([], 4404)


# --- turn throttle --------------------------------------------------------------------------


def test_a_burst_of_1000_frames_starts_at_most_the_allowed_turns(server, people):
    """1,000 frames over bob's three conversations at once: at most 5 turns start."""
    bob = people["bob"]
    burst_per_socket = 334

    async def fire(conversation: int) -> tuple[int, list[dict]]:
        started, refusals = 0, []
        async with connect(
            _ws_url(server, conversation),
            origin=f"http://127.0.0.1:{server.port}",
            additional_headers={"Cookie": bob["cookie"]},
            max_size=None,
        ) as ws:
            frame = json.dumps({"type": "user_message", "text": "hi", "model": "offline"})
            await asyncio.gather(*(ws.send(frame) for _ in range(burst_per_socket)))
            # Each frame is answered by a turn starting (its user_message event) or an error.
            while started + len(refusals) < burst_per_socket:
                event = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if event["type"] == "user_message":
                    started += 1
                elif event["type"] == "error" and "run_id" not in event:
                    refusals.append(event)
        return started, refusals

    async def fire_all() -> list[tuple[int, list[dict]]]:
        return await asyncio.gather(*(fire(c) for c in bob["conversations"]))

    outcomes = asyncio.run(fire_all())
    started = sum(n for n, _ in outcomes)
    refusals = [r for _, rs in outcomes for r in rs]
    assert 1 <= started <= TURNS_PER_MINUTE
    assert sum(_count_runs(server, c) for c in bob["conversations"]) == started
    assert {r["kind"] for r in refusals} <= {"throttled", "conflict"}
    throttled = [r["message"] for r in refusals if r["kind"] == "throttled"]
    assert throttled, "the burst never reached a limit"
    limits = r"2 at once is the limit|5 a minute is the limit; try again in \d+ s"
    assert all(re.search(limits, message) for message in throttled)


def test_the_api_answers_429_with_retry_after_once_the_turns_are_spent(server, people):
    alice = people["alice"]
    answers = []
    for n in range(TURNS_PER_MINUTE + 1):
        answers.append(
            requests.post(
                f"{server.url}/api/conversations/{alice['conversations'][2]}/turns",
                json={"text": f"turn {n}"},
                headers={"Authorization": f"Bearer {alice['token']}"},
                timeout=60,
            )
        )
        if answers[-1].status_code != 200:
            break
    refused = answers[-1]
    assert len(answers) <= TURNS_PER_MINUTE + 1 and refused.status_code == 429
    assert all(a.status_code == 200 for a in answers[:-1])
    assert "a minute is the limit" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1


# --- oversize frames ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "limit"), [(100_000, 65_536), (2_000_000, 1_048_576)], ids=["app", "daphne"]
)
def test_an_oversize_frame_gets_an_error_frame_and_close_4413(server, people, size, limit):
    alice = people["alice"]
    conversation = alice["conversations"][1]
    oversize = json.dumps({"type": "user_message", "text": "x" * size})
    frames, code = asyncio.run(
        _frames_then_close(
            _ws_url(server, conversation),
            origin=f"http://127.0.0.1:{server.port}",
            cookie=alice["cookie"],
            send=[oversize],
        )
    )
    assert code == 4413
    assert [(f["type"], f["kind"]) for f in frames] == [("error", "too_large")]
    assert f"{limit}-byte limit" in frames[0]["message"]
    assert _count_runs(server, conversation) == 0
    assert "Traceback" not in server.log()


def test_a_frame_nested_5000_deep_gets_an_error_frame_and_the_socket_stays(server, people):
    # json.loads raises RecursionError, not ValueError, on it: it once closed the socket (1011).
    alice = people["alice"]
    deep = '{"type": "user_message", "text": ' + "[" * 5000 + "]" * 5000 + "}"
    assert len(deep) < 65_536

    async def exchange() -> list[dict]:
        origin = f"http://127.0.0.1:{server.port}"
        url = _ws_url(server, alice["conversations"][1])
        async with connect(
            url, origin=origin, additional_headers={"Cookie": alice["cookie"]}
        ) as ws:
            await ws.send(deep)
            first = json.loads(await asyncio.wait_for(ws.recv(), 15))
            await ws.send("still there?")  # answered only by a socket that is still open
            second = json.loads(await asyncio.wait_for(ws.recv(), 15))
            return [first, second]

    frames = asyncio.run(exchange())
    assert [(f["type"], f["kind"]) for f in frames] == [
        ("error", "bad_json"),
        ("error", "bad_json"),
    ]
    assert "nested too deeply" in frames[0]["message"]
    assert _count_runs(server, alice["conversations"][1]) == 0
    assert "Traceback" not in server.log()


# --- login throttle -------------------------------------------------------------------------


def _login(server: DaphneServer, username: str, password: str) -> requests.Response:
    session = requests.Session()
    session.get(f"{server.url}/login/", timeout=10)
    return session.post(
        f"{server.url}/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        allow_redirects=False,
        timeout=10,
    )


def _let_the_window_pass(server: DaphneServer) -> None:
    """Every recorded failure becomes older than the lock window, as if it had passed."""
    server.sql(
        "UPDATE accounts_loginfailure SET at = strftime('%Y-%m-%d %H:%M:%f', at, ?)",
        (f"-{LOCK_SECONDS + 1} seconds",),
    )


@pytest.fixture
def fresh_window(server: DaphneServer) -> None:
    """No failure an earlier test left behind counts towards this test's locks."""
    _let_the_window_pass(server)


def test_wrong_passwords_lock_the_account_then_it_unlocks(server, fresh_window):
    for _ in range(3):
        assert _login(server, "alice", "wrong password").status_code == 200
    locked = _login(server, "alice", PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed sign-in attempts for this account" in locked.text
    assert "sessionid" not in locked.cookies
    # Another account from the same address is not locked by alice's failures.
    assert _login(server, "bob", PASSWORD).status_code == 302
    assert _login(server, "alice", PASSWORD).status_code == 429  # still inside the window
    _let_the_window_pass(server)
    assert _login(server, "alice", PASSWORD).status_code == 302


def test_the_admin_sign_in_shares_the_lock(server, fresh_window):
    session = requests.Session()
    session.get(f"{server.url}/admin/login/", timeout=10)
    for _ in range(4):
        answer = session.post(
            f"{server.url}/admin/login/",
            data={
                "username": "root",
                "password": "wrong password",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=10,
        )
    assert "Too many failed sign-in attempts for this account" in answer.text
    assert _login(server, "root", PASSWORD).status_code == 429
    _let_the_window_pass(server)
    assert _login(server, "root", PASSWORD).status_code == 302


def test_wrong_passwords_from_one_address_lock_the_address_then_it_unlocks(server, fresh_window):
    for n in range(6):
        assert _login(server, f"guess{n}", "wrong password").status_code == 200
    locked = _login(server, "bob", PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed sign-in attempts from your address" in locked.text
    _let_the_window_pass(server)
    assert _login(server, "bob", PASSWORD).status_code == 302


# --- API answers and headers ----------------------------------------------------------------


def test_an_anonymous_api_write_gets_401_not_a_csrf_403(server):
    for method, path in [
        ("POST", "/api/conversations"),
        ("PATCH", "/api/agent-profiles/1"),
        ("DELETE", "/api/conversations/1"),
    ]:
        response = requests.request(method, server.url + path, json={}, timeout=10)
        assert response.status_code == 401, (method, path)
        assert "Authentication required" in response.json()["detail"]


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "5", "null", "true"])
def test_patching_an_agent_profile_with_a_non_object_body_is_422(server, people, body):
    auth = {"Authorization": f"Bearer {people['alice']['token']}"}
    created = requests.post(
        f"{server.url}/api/agent-profiles",
        json={"name": f"profile-{uuid.uuid4().hex[:8]}"},
        headers=auth,
        timeout=10,
    )
    assert created.status_code == 201
    response = requests.patch(
        f"{server.url}/api/agent-profiles/{created.json()['id']}",
        data=body,
        headers={**auth, "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 422
    assert "expected a JSON object" in json.dumps(response.json()["errors"])


def test_pages_carry_the_security_headers(server):
    response = requests.get(f"{server.url}/login/", timeout=10)
    csp = dict(
        part.strip().split(" ", 1)
        for part in response.headers["Content-Security-Policy"].split(";")
    )
    assert csp["script-src"] == "'self'" and csp["style-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'" and csp["object-src"] == "'none'"
    assert f"ws://127.0.0.1:{server.port}" in csp["connect-src"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "<script>" not in response.text and "style=" not in response.text


def test_tool_errors_name_no_absolute_server_path(server, people):
    root = people["root"]
    script = "\n".join(
        [
            "/read path=/etc/passwd",
            f"/read path={server.home}/secret_key",
            "/read path=../../secret_key",
            "/read path=missing.txt",
            "/list_dir path=/",
            "/grep pattern=x path=nowhere",
        ]
    )
    auth = {"Authorization": f"Bearer {root['token']}"}
    turn = requests.post(
        f"{server.url}/api/conversations/{root['conversations'][0]}/turns",
        json={"text": script},
        headers=auth,
        timeout=60,
    ).json()
    run = requests.get(f"{server.url}/api/runs/{turn['run_id']}", headers=auth, timeout=10)
    calls = run.json()["tool_calls"]
    assert len(calls) == 6 and all(call["is_error"] for call in calls)
    previews = "\n".join(call["result_preview"] for call in calls)
    assert "absolute paths are not accepted" in previews and "'..' is not accepted" in previews
    assert "no such file or directory in the workspace: 'missing.txt'" in previews
    # The path the model itself sent may come back; the server's own layout never does.
    without_arguments = previews.replace(f"{server.home}/secret_key", "<sent>")
    for secret in (str(server.home), str(ROOT)):
        assert secret not in without_arguments
        assert secret not in turn["text"].replace(f"{server.home}/secret_key", "<sent>")
