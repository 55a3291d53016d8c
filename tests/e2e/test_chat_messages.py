"""Messages in Chromium against a real daphne whose model is the fake OpenAI-compatible
server: the thinking indicator, messages queued during a turn, edit and resend,
regenerate, copy buttons and code highlighting, at 1280x800 and 390x844."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, open_new_conversation
from tests.fakes.openai_server import FakeOpenAIServer, text_reply
from tests.servers import make_server

pytestmark = pytest.mark.e2e

MODEL = "openai/fake-model"
CODE_REPLY = "Here it is:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"


@pytest.fixture(scope="module")
def fake_model():
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def model_server(tmp_path_factory, fake_model):
    srv = make_server(
        tmp_path_factory.mktemp("e2e-fake-model"),
        OPENPROGRAM_MODELS=MODEL,
        OPENPROGRAM_DEFAULT_MODEL=MODEL,
        OPENPROGRAM_API_BASE=fake_model.base_url,
        OPENPROGRAM_API_KEY="test",
        OPENAI_API_KEY="test",
    )
    srv.create_users()
    srv.start()
    yield srv
    srv.stop()


class Gate:
    """Replies wait until opened: a turn that is visibly "thinking" for as long as we like."""

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.open_event = threading.Event()
        self.replies: list[str] = []
        fake.respond_with(self._respond)

    def _respond(self, body: dict) -> object:
        self.open_event.wait(20)
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else str(last)
        return text_reply(CODE_REPLY if "code" in text else f"echo: {text}")

    def open(self) -> None:
        self.open_event.set()


@pytest.fixture
def gate(fake_model):
    fake_model.reset()
    gate = Gate(fake_model)
    yield gate
    gate.open()
    fake_model.reset()


def _start(page, server) -> None:
    login(page, server, "alice")
    open_new_conversation(page, server)


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _wait_completed_runs(page, count: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('.run[data-status=completed]').length >= n",
        arg=count,
        timeout=40_000,
    )


def _prompt_texts(fake: FakeOpenAIServer) -> list[str]:
    """The user/assistant texts of the latest model request (the system prompt left out)."""
    return [
        m["content"] for m in fake.requests[-1]["messages"] if m["role"] in ("user", "assistant")
    ]


def test_the_first_reply_shows_a_thinking_indicator(model_server, sized_page, gate):
    page = sized_page
    _start(page, model_server)
    _send(page, "hello there")
    thinking = page.locator(".run .thinking")
    thinking.wait_for(timeout=40_000)
    assert thinking.inner_text() == "Thinking…"
    gate.open()
    _wait_completed_runs(page, 1)
    assert thinking.count() == 0
    assert page.locator(".run .reply").inner_text() == "echo: hello there"


def test_stop_holds_the_queue_until_it_is_sent_or_cleared_across_a_reload(
    model_server, sized_page, gate, fake_model
):
    page = sized_page
    _start(page, model_server)
    _send(page, "slow one")
    page.wait_for_selector(".run .thinking", timeout=40_000)
    _send(page, "held one")
    page.click("#stop")
    page.wait_for_selector(".run[data-status=stopped]", timeout=40_000)
    held = page.locator("[data-testid=queue-held]")
    send_queued = held.get_by_role("button", name="Send queued")
    asked = len(fake_model.requests)
    gate.open()  # had the queue gone out, its turn would now finish at once
    page.reload()  # the hold is kept like the queue
    page.wait_for_selector("#connection[data-state=open]")
    expect(send_queued).to_be_enabled()  # the socket said nothing runs: drain ran, held
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
    assert page.locator(".run").count() == 1
    assert len(fake_model.requests) == asked
    assert page.locator("[data-testid=queued] .queued-text").all_inner_texts() == ["held one"]
    send_queued.click()
    _wait_completed_runs(page, 1)
    assert page.locator(".run .msg.user .bubble").all_inner_texts() == ["slow one", "held one"]
    assert page.locator("#queue").is_hidden()
    # Held again, then cleared: nothing is sent, and the hold is gone with the queue.
    gate.open_event.clear()
    _send(page, "slow two")
    page.wait_for_selector(".run:last-child .thinking", timeout=40_000)
    _send(page, "never sent")
    page.click("#stop")
    page.wait_for_selector(".run:last-child[data-status=stopped]", timeout=40_000)
    held.get_by_role("button", name="Clear queue").click()
    assert page.locator("#queue").is_hidden()
    assert (
        page.evaluate("() => Object.keys(sessionStorage).filter((k) => k.includes('held'))") == []
    )
    assert page.locator(".run .msg.user .bubble").all_inner_texts() == [
        "slow one",
        "held one",
        "slow two",
    ]


def test_messages_typed_during_a_turn_are_queued_editable_cancellable(
    model_server, sized_page, gate, fake_model
):
    page = sized_page
    _start(page, model_server)
    _send(page, "slow one")
    page.wait_for_selector(".run .thinking", timeout=40_000)
    _send(page, "queued one")
    _send(page, "queued two")
    queued = page.locator("[data-testid=queued]")
    # Waited for, not read at once: a loaded machine may run the Enter handler late.
    expect(queued).to_have_count(2)
    expect(page.locator("#composer-text")).to_have_value("")
    expect(queued.nth(0).locator(".badge")).to_have_text("queued")
    expect(page.locator("#send")).to_have_text("Queue")
    # A reload loses nothing.
    page.reload()
    page.wait_for_selector("#connection[data-state=open]")
    expect(queued).to_have_count(2)
    queued.nth(0).get_by_role("button", name="Edit queued message 1").click()
    page.fill(".queued-edit", "queued one, edited")
    page.keyboard.press("Enter")
    queued.nth(1).get_by_role("button", name="Cancel queued message 2").click()
    expect(page.locator(".queued-text")).to_have_text(["queued one, edited"])
    gate.open()
    _wait_completed_runs(page, 2)
    assert page.locator(".run .msg.user .bubble").all_inner_texts() == [
        "slow one",
        "queued one, edited",
    ]
    assert page.locator("#queue").is_hidden()
    assert _prompt_texts(fake_model)[-1] == "queued one, edited"


def test_regenerate_is_a_new_run_and_keeps_the_old_one(model_server, sized_page, gate, fake_model):
    page = sized_page
    gate.open()
    _start(page, model_server)
    _send(page, "first question")
    _wait_completed_runs(page, 1)
    page.locator(".run").first.locator("button[data-action=regenerate]").click()
    _wait_completed_runs(page, 2)
    runs = page.locator(".run")
    assert runs.count() == 2
    assert runs.nth(0).get_attribute("data-superseded") == "true"
    assert runs.nth(1).locator(".msg.user .bubble").inner_text() == "first question"
    # The new run's prompt has the question once and not the replaced answer.
    assert _prompt_texts(fake_model) == ["first question"]
    page.reload()
    assert page.locator(".run[data-superseded]").count() == 1


def test_edit_and_resend_replaces_that_message_and_what_followed(
    model_server, sized_page, gate, fake_model
):
    page = sized_page
    gate.open()
    _start(page, model_server)
    _send(page, "my name is Al")
    _wait_completed_runs(page, 1)
    _send(page, "what is my name?")
    _wait_completed_runs(page, 2)
    first = page.locator(".run").first
    first.hover()
    first.locator("button[data-action=edit]").click()
    page.fill(".edit-box textarea", "my name is Bo")
    page.click(".edit-box button.primary")
    _wait_completed_runs(page, 3)
    assert page.locator(".run[data-superseded]").count() == 2
    assert _prompt_texts(fake_model) == ["my name is Bo"]
    assert page.locator(".run").last.locator(".reply").inner_text() == "echo: my name is Bo"


def test_an_edit_the_server_refuses_goes_back_into_the_box(model_server, sized_page, gate):
    page = sized_page
    gate.open()
    _start(page, model_server)
    _send(page, "my name is Al")
    _wait_completed_runs(page, 1)
    first = page.locator(".run").first
    # As in a stale tab: the run shown is no longer a current run of the chat.
    first.evaluate("run => { run.dataset.runId = '999999'; }")
    first.hover()
    first.locator("button[data-action=edit]").click()
    page.fill(".edit-box textarea", "a long, carefully edited message")
    page.click(".edit-box button.primary")
    page.wait_for_function(
        "() => document.getElementById('composer-error').textContent.includes('999999')"
    )
    assert page.input_value("#composer-text") == "a long, carefully edited message"
    assert page.locator(".run").count() == 1


def test_the_edit_box_shows_a_long_message_whole_and_in_view(model_server, sized_page, gate):
    page = sized_page
    gate.open()
    _start(page, model_server)
    long_message = "Please plan my trip: " + "a day in the hills, then " * 14 + "home."
    _send(page, long_message)
    _wait_completed_runs(page, 1)
    first = page.locator(".run").first
    first.hover()
    first.locator("button[data-action=edit]").click()
    area = page.locator(".edit-box textarea")
    assert area.input_value() == long_message
    assert area.evaluate("a => a.scrollHeight <= a.clientHeight + 1 && a.scrollTop === 0")
    box, pane = page.locator(".edit-box").bounding_box(), page.locator("#transcript").bounding_box()
    assert pane["y"] - 1 <= box["y"] and box["y"] + box["height"] <= pane["y"] + pane["height"] + 1


def test_an_edit_opened_before_the_servers_rendering_arrives_stays_open(
    model_server, sized_page, gate
):
    """The live message is replaced by the server's rendering when that arrives; an edit box
    opened on it meanwhile moves over with its text and focus (it used to vanish)."""
    page = sized_page
    held = []
    page.route("**/runs/*/message/", lambda route: held.append(route))  # held until released
    gate.open()
    _start(page, model_server)
    with page.expect_request(lambda request: request.url.endswith("/message/")):
        _send(page, "plan a *short* trip")
    _wait_completed_runs(page, 1)
    run = page.locator(".run").first
    assert run.locator(".msg.user[data-pending]").count() == 1
    run.hover()
    run.locator("button[data-action=edit]").click()
    area = run.locator(".edit-box textarea")
    area.fill("plan a long trip")
    assert held, "the message's rendering was requested and is held"
    for route in held:
        route.continue_()
    expect(run.locator(".msg.user:not([data-pending]) .bubble em")).to_have_count(1)
    expect(area).to_have_value("plan a long trip")
    expect(area).to_be_focused()
    assert run.locator(".msg.user .bubble").is_hidden()
    area.press("Escape")
    expect(run.locator(".edit-box")).to_have_count(0)
    expect(run.locator(".msg.user .bubble em")).to_have_text("short")
    expect(run.locator(".msg.user button[data-action=edit]")).to_be_focused()


def test_code_is_highlighted_and_copy_buttons_copy(model_server, sized_page, gate):
    page = sized_page
    gate.open()
    _start(page, model_server)
    _send(page, "show me code")
    _wait_completed_runs(page, 1)
    block = page.locator(".run .code-block")
    assert block.locator(".code-language").inner_text() == "python"
    assert block.locator("code .token.keyword").first.inner_text() == "def"
    block.get_by_role("button", name="Copy code").click()
    clipboard = "() => navigator.clipboard.readText()"
    assert page.evaluate(clipboard) == "def add(a, b):\n    return a + b\n"
    page.locator(".run .run-meta button[data-action=copy]").click()
    assert page.evaluate(clipboard).startswith("Here it is:")
    page.locator(".run .msg.user button[data-action=copy]").click(force=True)
    assert page.evaluate(clipboard) == "show me code"
    page.reload()  # server-rendered replies get the same treatment
    page.wait_for_selector(".run .code-block code .token.keyword")
