// The chat page: one WebSocket per open conversation, rendering a turn's events live.
// Streamed text goes in as textContent (never HTML); only the server's final, sanitised
// Markdown is inserted as HTML. Events carry a per-run `seq`, so a catch-up from history
// and the live stream can overlap without rendering anything twice.
(() => {
  "use strict";

  const OUTPUT_LIMIT = 20 * 1024; // streamed tool output kept per card (the tail)
  const chat = document.getElementById("chat");
  const sidebar = document.getElementById("conversation-list");
  const csrf = (() => {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; }
    catch (_) { return ""; }
  })();

  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
    if (!response.ok) {
      let detail = response.statusText;
      try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
      throw new Error(detail);
    }
    return response.status === 204 ? null : response.json();
  }

  // --- sidebar: rename / delete ----------------------------------------------------------
  if (sidebar) {
    sidebar.addEventListener("click", async (e) => {
      const button = e.target.closest("button[data-action]");
      if (!button) return;
      const item = button.closest("[data-conversation-id]");
      const id = item.dataset.conversationId;
      const link = item.querySelector("a");
      try {
        if (button.dataset.action === "rename") {
          const title = window.prompt("Rename conversation", link.textContent.trim());
          if (title === null) return;
          const updated = await api("PATCH", `/api/conversations/${id}`, { title });
          link.textContent = updated.title;
          if (chat && chat.dataset.conversationId === id) {
            document.getElementById("chat-title").textContent = updated.title;
          }
        } else if (button.dataset.action === "delete") {
          if (!window.confirm(`Delete "${link.textContent.trim()}"?`)) return;
          await api("DELETE", `/api/conversations/${id}`);
          if (chat && chat.dataset.conversationId === id) { window.location.href = "/"; return; }
          item.remove();
        }
      } catch (err) {
        window.alert(err.message);
      }
    });
  }

  if (!chat) return;

  // --- elements ------------------------------------------------------------------------------
  const conversationId = chat.dataset.conversationId;
  const transcript = document.getElementById("transcript");
  const form = document.getElementById("composer");
  const textarea = document.getElementById("composer-text");
  const stopButton = document.getElementById("stop");
  const sendButton = document.getElementById("send");
  const composerError = document.getElementById("composer-error");
  const connection = document.getElementById("connection");
  const profileSelect = document.getElementById("profile-select");
  const modelSelect = document.getElementById("model-select");
  const agentSelect = document.getElementById("agent-select");
  const modelProblem = document.getElementById("model-problem");
  const plusButton = document.getElementById("plus-button");
  const plusPanel = document.getElementById("plus-panel");
  const chips = document.getElementById("option-chips");
  const toggles = {
    tools_on: document.getElementById("opt-tools"),
    web_search_on: document.getElementById("opt-web"),
    plan_mode: document.getElementById("opt-plan"),
    attended: document.getElementById("opt-attended"),
  };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // --- composer ----------------------------------------------------------------------------
  function options() {
    return {
      profile: profileSelect.value,
      model: modelSelect.value,
      agent_profile: Number(agentSelect.value || 0),
      tools_on: toggles.tools_on.checked,
      web_search_on: toggles.web_search_on.checked,
      plan_mode: toggles.plan_mode.checked,
      attended: toggles.attended.checked,
    };
  }

  function renderChips() {
    chips.replaceChildren();
    const o = options();
    if (!o.tools_on) chips.append(el("span", "badge warn", "tools off"));
    if (!o.web_search_on) chips.append(el("span", "badge", "no web search"));
    if (o.plan_mode) chips.append(el("span", "badge info", "plan mode"));
    if (!o.attended) chips.append(el("span", "badge warn", "unattended"));
  }

  function showModelProblem() {
    const option = modelSelect.selectedOptions[0];
    modelProblem.textContent = option ? option.dataset.problem || "" : "";
  }

  async function remember() {
    // The conversation remembers its picks, so a reload shows what the next turn will use.
    renderChips();
    showModelProblem();
    try {
      await api("PATCH", `/api/conversations/${conversationId}`, options());
      composerError.textContent = "";
    } catch (err) {
      composerError.textContent = err.message;
    }
  }

  [profileSelect, modelSelect, ...Object.values(toggles)].forEach((input) =>
    input.addEventListener("change", remember));
  agentSelect.addEventListener("change", () => {
    const agentModel = agentSelect.selectedOptions[0]?.dataset.model;
    if (agentModel && [...modelSelect.options].some((o) => o.value === agentModel)) {
      modelSelect.value = agentModel;
    }
    remember();
  });
  plusButton.addEventListener("click", () => {
    const open = plusPanel.hidden;
    plusPanel.hidden = !open;
    plusButton.setAttribute("aria-expanded", String(open));
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !plusPanel.hidden) { plusPanel.hidden = true; plusButton.setAttribute("aria-expanded", "false"); }
  });

  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = textarea.value;
    if (!text.trim()) return;
    if (send({ type: "user_message", text, ...options() })) {
      textarea.value = "";
      composerError.textContent = "";
    }
  });
  stopButton.addEventListener("click", () => send({ type: "stop" }));

  // --- rendering a run --------------------------------------------------------------------
  function runBlock(runId) {
    let block = transcript.querySelector(`.run[data-run-id="${runId}"]`);
    if (!block) {
      document.getElementById("empty-hint")?.remove();
      block = el("section", "run");
      block.dataset.runId = runId;
      block.dataset.status = "running";
      transcript.append(block);
    }
    return block;
  }

  function assistantPart(block) {
    let part = block.querySelector(".msg.assistant");
    if (!part) {
      part = el("div", "msg assistant");
      part.append(el("div", "calls"), el("div", "reply streaming"), el("div", "run-meta muted"));
      block.append(part);
    }
    return part;
  }

  function findCard(block, callId) {
    return [...block.querySelectorAll(".tool-card")].find((c) => c.dataset.callId === callId);
  }

  function setCardStatus(card, status, label) {
    card.dataset.status = status;
    card.querySelector(".tool-status").textContent = label || status;
  }

  function toolCard(block, event) {
    const part = assistantPart(block);
    let card = findCard(block, event.call_id);
    if (card) return card;
    card = el("details", "tool-card");
    card.open = true;
    card.dataset.callId = event.call_id;
    const summary = el("summary");
    summary.append(el("span", "tool-name", event.name), " ", el("span", "tool-status"), " ",
      el("span", "tool-duration muted"));
    const body = el("div", "tool-body");
    const args = typeof event.arguments === "string" ? event.arguments : JSON.stringify(event.arguments, null, 2);
    body.append(el("div", "label", "Arguments"), el("pre", "tool-args", args));
    const output = el("pre", "tool-output");
    output.hidden = true;
    body.append(output, el("div", "children"));
    card.append(summary, body);
    setCardStatus(card, "running", "running…");
    const parent = event.parent_call_id ? findCard(block, event.parent_call_id) : null;
    (parent ? parent.querySelector(".children") : part.querySelector(".calls")).append(card);
    return card;
  }

  function approvalPrompt(block, event) {
    const card = findCard(block, event.call_id) || toolCard(block, { ...event, parent_call_id: null });
    setCardStatus(card, "awaiting_approval", "needs approval");
    card.open = true;
    if (card.querySelector(".approval")) return;
    const box = el("div", "approval");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", `Approve ${event.name}?`);
    const reason = el("input", "deny-reason");
    reason.placeholder = "Reason (optional)";
    reason.setAttribute("aria-label", "Reason");
    const approve = el("button", "primary approve", "Approve");
    const deny = el("button", "danger deny", "Deny");
    approve.type = deny.type = "button";
    approve.addEventListener("click", () => send({ type: "approve", call_id: event.call_id, reason: reason.value }));
    deny.addEventListener("click", () => send({ type: "deny", call_id: event.call_id, reason: reason.value }));
    box.append(el("span", "approval-text", event.reason || `Run ${event.name}?`), reason, approve, deny);
    card.querySelector(".tool-body").prepend(box);
  }

  function questionPrompt(block, event) {
    const card = findCard(block, event.call_id) || toolCard(block, { ...event, name: "ask_user_question" });
    card.open = true;
    if (card.querySelector(".question")) return;
    const box = el("div", "question");
    box.append(el("p", "question-text", event.question));
    const answer = (text) => send({ type: "answer", call_id: event.call_id, text });
    if (event.choices && event.choices.length) {
      event.choices.forEach((choice) => {
        const b = el("button", "choice", choice);
        b.type = "button";
        b.addEventListener("click", () => answer(choice));
        box.append(b);
      });
    } else {
      const input = el("input", "answer-text");
      input.setAttribute("aria-label", "Your answer");
      const b = el("button", "primary", "Answer");
      b.type = "button";
      b.addEventListener("click", () => input.value.trim() && answer(input.value));
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); b.click(); } });
      box.append(input, b);
    }
    setCardStatus(card, "awaiting_answer", "waiting for your answer");
    card.querySelector(".tool-body").prepend(box);
  }

  function finishCard(block, event) {
    const card = findCard(block, event.call_id) || toolCard(block, event);
    card.querySelector(".approval")?.remove();
    card.querySelector(".question")?.remove();
    const denied = card.dataset.status === "denied";
    setCardStatus(card, event.is_error ? (denied ? "denied" : "error") : "done", event.is_error ? (denied ? "denied" : "error") : "done");
    card.querySelector(".tool-duration").textContent = `${Math.round(event.duration_ms || 0)} ms`;
    const body = card.querySelector(".tool-body");
    const children = body.querySelector(".children");
    body.insertBefore(el("div", "label", event.is_error ? "Error" : "Result"), children);
    const result = el("pre", "tool-result" + (event.is_error ? " is-error" : ""), event.preview);
    body.insertBefore(result, children);
    if (event.truncated) {
      const note = el("div", "truncation", "Result truncated for the model. ");
      if (event.full_result_path) {
        const link = el("a", "", "Download the full result");
        link.href = `/runs/${block.dataset.runId}/calls/${encodeURIComponent(event.call_id)}/result/`;
        link.setAttribute("download", "");
        note.append(link);
      }
      body.insertBefore(note, children);
    }
  }

  function renderTodos(todos) {
    const panel = document.getElementById("todos");
    const list = document.getElementById("todo-list");
    list.replaceChildren(...todos.map((t) => {
      const li = el("li", "", t.content || JSON.stringify(t));
      li.dataset.status = t.status || "pending";
      return li;
    }));
    panel.hidden = todos.length === 0;
  }

  function setRunning(running) {
    stopButton.hidden = !running;
    sendButton.disabled = running;
  }

  function apply(event) {
    if (event.run_id === undefined) return;
    const block = runBlock(event.run_id);
    const last = Number(block.dataset.lastSeq || 0);
    if (event.seq <= last) return; // already rendered (catch-up and live overlap)
    block.dataset.lastSeq = String(event.seq);
    switch (event.type) {
      case "user_message":
        if (!block.querySelector(".msg.user")) {
          const msg = el("div", "msg user");
          msg.append(el("div", "bubble", event.text));
          block.prepend(msg);
        }
        if (event.title) {
          document.getElementById("chat-title").textContent = event.title;
          const link = sidebar?.querySelector(`[data-conversation-id="${conversationId}"] a`);
          if (link) link.textContent = event.title;
        }
        setRunning(true);
        break;
      case "tools_resolved": {
        const part = assistantPart(block);
        const offered = el("details", "offered");
        offered.append(el("summary", "", `${event.tools.length} tool${event.tools.length === 1 ? "" : "s"} offered${event.deferred.length ? `, ${event.deferred.length} deferred` : ""}`));
        const list = el("p", "offered-list", event.tools.join(", "));
        list.setAttribute("data-testid", "offered-tools");
        offered.append(list);
        (event.warnings || []).forEach((w) => offered.append(el("p", "warning", w)));
        part.prepend(offered);
        break;
      }
      case "text_delta":
        assistantPart(block).querySelector(".reply").append(document.createTextNode(event.text));
        break;
      case "tool_call_started":
        toolCard(block, event);
        break;
      case "tool_update": {
        const card = findCard(block, event.call_id);
        if (!card) break;
        const output = card.querySelector(".tool-output");
        output.hidden = false;
        const text = output.textContent + event.text;
        output.textContent = text.length > OUTPUT_LIMIT ? text.slice(-OUTPUT_LIMIT) : text;
        output.scrollTop = output.scrollHeight;
        break;
      }
      case "approval_requested":
        approvalPrompt(block, event);
        break;
      case "approval_resolved": {
        const card = findCard(block, event.call_id);
        if (!card) break;
        card.querySelector(".approval")?.remove();
        if (event.approved) setCardStatus(card, "running", "approved, running…");
        else setCardStatus(card, "denied", `denied${event.reason ? ": " + event.reason : ""}`);
        break;
      }
      case "question_asked":
        questionPrompt(block, event);
        break;
      case "todo_updated":
        renderTodos(event.todos || []);
        break;
      case "tool_finished":
        finishCard(block, event);
        break;
      case "error": {
        const part = assistantPart(block);
        const error = el("div", "run-error error", event.message);
        error.setAttribute("role", "alert");
        part.insertBefore(error, part.querySelector(".run-meta"));
        break;
      }
      case "turn_finished":
        block.dataset.status = event.stop_reason;
        break;
      case "assistant_message": {
        const part = assistantPart(block);
        const reply = part.querySelector(".reply");
        reply.className = "reply markdown";
        reply.innerHTML = event.html; // sanitised server-side: raw HTML off, links checked
        block.dataset.status = event.status;
        const meta = part.querySelector(".run-meta");
        meta.replaceChildren(el("span", "run-status", event.status));
        meta.querySelector(".run-status").dataset.status = event.status;
        const link = el("a", "", "run");
        link.href = `/api/runs/${event.run_id}`;
        link.target = "_blank";
        meta.append(" · ", link);
        setRunning(false);
        break;
      }
      default:
        break;
    }
    transcript.scrollTop = transcript.scrollHeight;
  }

  function catchUp(message) {
    const existing = transcript.querySelector(`.run[data-run-id="${message.run_id}"]`);
    // Server-rendered (no seq yet): a finished run is complete; a running one is rebuilt.
    if (existing && !existing.dataset.lastSeq) {
      if (existing.dataset.status !== "running") { setRunning(false); return; }
      existing.replaceChildren();
    }
    message.events.forEach(apply);
    setRunning(message.status === "running");
  }

  // --- the socket ---------------------------------------------------------------------------
  let socket = null;
  let retryDelay = 500;

  function send(frame) {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      composerError.textContent = "Not connected yet; try again in a moment.";
      return false;
    }
    socket.send(JSON.stringify(frame));
    return true;
  }

  function setConnection(state, label) {
    connection.dataset.state = state;
    connection.textContent = label;
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${window.location.host}/ws/chat/${conversationId}/`);
    socket.addEventListener("open", () => { retryDelay = 500; setConnection("open", "live"); });
    socket.addEventListener("message", (e) => {
      const message = JSON.parse(e.data);
      if (message.type === "catch_up") catchUp(message);
      else if (message.type === "error" && message.run_id === undefined) composerError.textContent = message.message;
      else apply(message);
    });
    socket.addEventListener("close", (e) => {
      if (e.code === 4401 || e.code === 4404) {
        setConnection("closed", e.code === 4401 ? "log in again" : "not found");
        return;
      }
      setConnection("reconnecting", "reconnecting…");
      window.setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 10000);
    });
  }

  // Server-rendered nested calls arrive flat; put each under its parent card.
  transcript.querySelectorAll(".tool-card[data-parent-call-id]").forEach((card) => {
    const parent = findCard(card.closest(".run"), card.dataset.parentCallId);
    if (parent) parent.querySelector(".children").append(card);
  });
  renderChips();
  showModelProblem();
  connect();
})();
