// The chat page: sidebar actions, the composer, and one WebSocket per open conversation
// whose events chat-transcript.js renders.
(() => {
  "use strict";

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

  const el = window.createChatTranscript.el;

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
  const view = window.createChatTranscript({
    root: transcript,
    send: (frame) => send(frame),
    onRunning: (running) => {
      stopButton.hidden = !running;
      sendButton.disabled = running;
    },
    onTitle: (title) => {
      document.getElementById("chat-title").textContent = title;
      const link = sidebar?.querySelector(`[data-conversation-id="${conversationId}"] a`);
      if (link) link.textContent = title;
    },
  });

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
      if (message.type === "catch_up") view.catchUp(message);
      else if (message.type === "error" && message.run_id === undefined) composerError.textContent = message.message;
      else view.apply(message);
    });
    socket.addEventListener("close", (e) => {
      // Refusals documented in docs/chat.md: retrying cannot help (4413 can: reconnect).
      const refused = { 4401: "log in again", 4403: "origin not allowed", 4404: "not found" };
      if (refused[e.code]) {
        setConnection("closed", refused[e.code]);
        return;
      }
      setConnection("reconnecting", "reconnecting…");
      window.setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 10000);
    });
  }

  view.nestServerRendered();
  renderChips();
  showModelProblem();
  connect();
})();
