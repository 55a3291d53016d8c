// The composer, the queue of messages typed during a turn, attachments, and one WebSocket
// per open conversation whose events chat-transcript.js renders. On the landing page (no
// conversation yet) the first message creates the conversation and the page becomes its page
// in place (history.pushState): the composer, and what is typed meanwhile, stay.
(() => {
  "use strict";

  const chat = document.getElementById("chat");
  if (!chat) return;
  const { api, el } = window.chatUI;

  // --- elements ------------------------------------------------------------------------------
  let conversationId = chat.dataset.conversationId || "";
  let landing = chat.dataset.landing === "true";
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
  const queueList = document.getElementById("queue");
  const attachButton = document.getElementById("attach-button");
  const attachInput = document.getElementById("attach-input");
  const attachmentList = document.getElementById("attachments");
  const toggles = {
    tools_on: document.getElementById("opt-tools"),
    web_search_on: document.getElementById("opt-web"),
    plan_mode: document.getElementById("opt-plan"),
    attended: document.getElementById("opt-attended"),
  };

  // --- composer ----------------------------------------------------------------------------
  function options() {
    return {
      profile: profileSelect.value,
      model: modelSelect.value,
      agent_profile: Number(agentSelect.value || 0),
      tools_on: toggles.tools_on.checked,
      // No search backend: the box is disabled and says why; the conversation's choice stays.
      ...(toggles.web_search_on.disabled ? {} : { web_search_on: toggles.web_search_on.checked }),
      plan_mode: toggles.plan_mode.checked,
      attended: toggles.attended.checked,
    };
  }

  function renderChips() {
    chips.replaceChildren();
    const o = options();
    if (!o.tools_on) chips.append(el("span", "badge warn", "tools off"));
    if (o.web_search_on === false) chips.append(el("span", "badge", "no web search"));
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
    if (landing) return; // nothing to remember them on yet: the first message carries them
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
  function setPlus(open) {
    plusPanel.hidden = !open;
    plusButton.setAttribute("aria-expanded", String(open));
    form.classList.toggle("plus-open", open); // on a phone, also shows the folded controls
  }
  plusButton.addEventListener("click", () => setPlus(plusPanel.hidden));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !plusPanel.hidden) {
      setPlus(false);
      plusButton.focus(); // not dropped to the page
    }
  });

  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  // --- attachments: uploaded at once into the workspace; the message names their paths ---------
  const attached = [];
  function renderAttachments() {
    attachmentList.replaceChildren(...attached.map((file, i) => {
      const li = el("li", "attachment", `${file.path} (${file.size.toLocaleString("en-US")} bytes) `);
      const remove = el("button", "icon", "✕");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${file.name}`);
      remove.addEventListener("click", () => { attached.splice(i, 1); renderAttachments(); textarea.focus(); });
      li.append(remove);
      return li;
    }));
    attachmentList.hidden = attached.length === 0;
  }
  attachButton.addEventListener("click", () => attachInput.click());
  async function upload(files) {
    const limit = Number(chat.dataset.attachmentMax || 0);
    for (const file of files) {
      if (limit && file.size > limit) {
        composerError.textContent = `${file.name} is ${file.size.toLocaleString("en-US")} bytes; attachments may be ${limit.toLocaleString("en-US")} at most.`;
        continue;
      }
      const body = new FormData();
      body.append("file", file);
      try {
        const response = await fetch("/api/attachments", {
          method: "POST", body, credentials: "same-origin",
          headers: { "X-CSRFToken": document.cookie.match(/csrftoken=([^;]+)/)?.[1] || "" },
        });
        const data = await response.json().catch(() => ({}));
        if (!response.ok) throw new Error(data.detail || response.statusText);
        attached.push(data);
        composerError.textContent = "";
      } catch (err) {
        composerError.textContent = `${file.name}: ${err.message}`;
      }
    }
    renderAttachments();
  }
  attachInput.addEventListener("change", async () => {
    const files = [...attachInput.files];
    attachInput.value = "";
    await upload(files);
  });
  // Pasted files (a screenshot, files copied in a file manager) and files dropped on the chat.
  textarea.addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (!files.length) return; // plain text pastes as usual
    e.preventDefault();
    upload(files);
  });
  const carriesFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
  chat.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
    form.classList.add("drop-target");
  });
  chat.addEventListener("dragleave", (e) => {
    if (!chat.contains(e.relatedTarget)) form.classList.remove("drop-target");
  });
  chat.addEventListener("drop", (e) => {
    form.classList.remove("drop-target");
    if (!carriesFiles(e)) return;
    e.preventDefault();
    upload([...e.dataTransfer.files]);
    textarea.focus();
  });
  function withAttachments(text) {
    if (!attached.length) return text;
    const names = attached.map((f) => `- ${f.path} (${f.size} bytes)`).join("\n");
    attached.length = 0;
    renderAttachments();
    return `${text}\n\nAttached files (in my workspace):\n${names}`;
  }

  // --- the queue: messages typed during a turn wait here, shown, editable, cancellable -----------
  // Kept in sessionStorage, so a reload (or the landing page's hand-over) loses nothing.
  // Stop holds the queue (held), until the person sends or clears it; kept like the queue.
  const queueKey = (id) => `openprogram.queue.${id}`;
  const heldKey = (id) => `openprogram.queue-held.${id}`;
  let queue = [];
  let held = false;
  try {
    queue = JSON.parse(window.sessionStorage.getItem(queueKey(conversationId)) || "[]");
    held = window.sessionStorage.getItem(heldKey(conversationId)) === "true";
  } catch (_) { queue = []; }
  let socket = null;
  let retryDelay = 500;
  let inFlight = null;
  let running = false;
  let known = false; // whether a turn is running is not known until the socket says so

  function saveQueue() {
    if (!queue.length) held = false;
    try {
      window.sessionStorage.setItem(queueKey(conversationId), JSON.stringify(queue));
      if (held) window.sessionStorage.setItem(heldKey(conversationId), "true");
      else window.sessionStorage.removeItem(heldKey(conversationId));
    } catch (_) { /* private mode */ }
  }

  function holdBar() {
    const li = el("li", "queue-held");
    li.dataset.testid = "queue-held";
    const send = el("button", "primary", "Send queued");
    const clear = el("button", "", "Clear queue");
    send.type = clear.type = "button";
    send.disabled = !known; // until the socket says whether a turn still runs
    send.addEventListener("click", () => { release(); textarea.focus(); });
    clear.addEventListener("click", () => { queue = []; saveQueue(); renderQueue(); textarea.focus(); });
    li.append(el("span", "badge warn", "held"), el("span", "queued-text", "Stopped: the queue waits for you."), send, clear);
    return li;
  }

  function release() {
    held = false;
    saveQueue();
    renderQueue();
    drain();
  }

  function renderQueue() {
    queueList.replaceChildren(...queue.map((item, i) => {
      const li = el("li", "queued");
      li.dataset.testid = "queued";
      const text = el("span", "queued-text", item.text);
      const edit = el("button", "icon", "Edit");
      const cancel = el("button", "icon", "Cancel");
      edit.type = cancel.type = "button";
      edit.setAttribute("aria-label", `Edit queued message ${i + 1}`);
      cancel.setAttribute("aria-label", `Cancel queued message ${i + 1}`);
      cancel.addEventListener("click", () => { queue.splice(i, 1); saveQueue(); renderQueue(); textarea.focus(); });
      edit.addEventListener("click", () => {
        const area = el("textarea", "queued-edit");
        area.value = item.text;
        area.setAttribute("aria-label", `Queued message ${i + 1}`);
        const save = el("button", "primary", "Save");
        save.type = "button";
        const commit = () => {
          if (area.value.trim()) { item.text = area.value; } else { queue.splice(i, 1); }
          saveQueue();
          renderQueue();
        };
        save.addEventListener("click", commit);
        area.addEventListener("keydown", (e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); commit(); }
          if (e.key === "Escape") { e.preventDefault(); renderQueue(); }
        });
        li.replaceChildren(area, save);
        area.focus();
      });
      li.append(el("span", "badge info", "queued"), text, edit, cancel);
      return li;
    }));
    if (held && queue.length) queueList.prepend(holdBar());
    queueList.hidden = queue.length === 0;
  }

  function drain() {
    if (landing || held || running || !known || inFlight || !queue.length) return;
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    const item = queue.shift();
    saveQueue();
    renderQueue();
    dispatch(item);
  }

  function dispatch(item) {
    const frame = { type: "user_message", text: item.text, ...(item.options || options()) };
    if (item.replaces) frame.replaces = item.replaces;
    inFlight = item;
    if (!send(frame)) { queue.unshift(item); inFlight = null; saveQueue(); renderQueue(); }
  }

  // A message the server refused is not lost: back in the box, or first in the queue.
  function restore(item) {
    inFlight = null;
    if (item.replaces) {
      // Refused (the error says why): a regeneration loses nothing, an edit's text goes
      // back into the box rather than vanish with the closed edit box.
      if (item.edited) textarea.value = textarea.value.trim() ? `${textarea.value}\n\n${item.text}` : item.text;
      return;
    }
    if (!textarea.value.trim()) { textarea.value = item.text; return; }
    queue.unshift(item);
    saveQueue();
    renderQueue();
  }

  function submit(item) {
    composerError.textContent = "";
    if (landing) {
      // A second message while the first is creating the conversation: sent after it.
      if (creating) creating.then(() => submit(item)); else creating = startConversation(item);
      return;
    }
    if (running || !known || inFlight || queue.length) {
      held = false; // sending again sends what waits too, in order
      queue.push(item);
      saveQueue();
      renderQueue();
      drain();
    } else {
      dispatch(item);
    }
  }

  let creating = null;
  async function startConversation(item) {
    const o = options();
    sendButton.disabled = true;
    try {
      const created = await api("POST", "/api/conversations", {
        profile: o.profile, model: o.model, agent_profile: o.agent_profile || null,
      });
      becomeConversation(created.id);
      queue = [{ ...item, options: o }];
      saveQueue();
      renderQueue();
      goLive();
    } catch (err) {
      composerError.textContent = err.message;
      if (!textarea.value.trim()) textarea.value = item.text; // not created: keep the message
    }
    sendButton.disabled = false;
    creating = null;
  }

  // The landing page turns into the new conversation's page without a navigation, so
  // nothing typed in the meantime is lost; Back (to /) reloads the landing page.
  function becomeConversation(id) {
    conversationId = id;
    landing = false;
    chat.dataset.conversationId = id;
    delete chat.dataset.landing;
    window.history.pushState({ conversation: id }, "", `/c/${id}/`);
    window.addEventListener("popstate", () => window.location.reload());
    chat.querySelectorAll(".chat-head [data-conversation-link]").forEach((link) => {
      link.href = link.dataset.conversationLink.replace("ID", id);
      link.hidden = false;
    });
    connection.hidden = false;
    window.chatUI.addConversation?.(id);
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!textarea.value.trim() && !attached.length) return;
    submit({ text: withAttachments(textarea.value) });
    textarea.value = "";
    textarea.focus();
  });
  document.addEventListener("chat:resend", (e) => submit({ text: e.detail.text, replaces: e.detail.replaces, edited: e.detail.edited }));
  stopButton.addEventListener("click", () => {
    if (!send({ type: "stop" })) return;
    if (queue.length) { held = true; saveQueue(); renderQueue(); }
  });

  renderChips();
  showModelProblem();
  renderQueue();
  textarea.focus();

  // --- rendering a run --------------------------------------------------------------------
  let view = null;
  function createView() {
    return window.createChatTranscript({
    root: transcript,
    send: (frame) => send(frame),
    onRunning: (isRunning) => {
      running = isRunning;
      known = true;
      stopButton.hidden = !isRunning;
      sendButton.textContent = isRunning ? "Queue" : "Send";
      if (held) renderQueue();
      if (!isRunning) window.setTimeout(drain, 0); // after the event that ended the turn
    },
    onTitle: (title) => window.chatUI.showTitle(conversationId, title),
    onUserMessage: () => { inFlight = null; },
    });
  }

  // --- the socket ---------------------------------------------------------------------------
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

  // A message sent just before the socket dropped: the latest run tells whether it arrived.
  function settleUnconfirmed(message) {
    const first = queue[0];
    if (!first || !first.unconfirmed) return;
    const arrived = message.events.some((e) => e.type === "user_message" && e.text === first.text);
    if (arrived) queue.shift(); else delete first.unconfirmed;
    saveQueue();
    renderQueue();
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${window.location.host}/ws/chat/${conversationId}/`);
    socket.addEventListener("open", () => {
      retryDelay = 500;
      setConnection("open", "live");
      // No run yet: no catch-up will come, and nothing is running.
      if (!transcript.querySelector(".run")) { known = true; drain(); }
    });
    socket.addEventListener("message", (e) => {
      const message = JSON.parse(e.data);
      if (message.type === "catch_up") { settleUnconfirmed(message); view.catchUp(message); }
      else if (message.type === "conversation_title") window.chatUI.showTitle(conversationId, message.title);
      else if (message.type === "error" && message.run_id === undefined) {
        composerError.textContent = message.message;
        if (inFlight) restore(inFlight);
      } else view.apply(message);
    });
    socket.addEventListener("close", (e) => {
      known = false;
      if (held) renderQueue();
      if (inFlight) {
        // Sent, but the socket went before the turn began: ask the catch-up whether it did.
        queue.unshift({ ...inFlight, unconfirmed: true });
        inFlight = null;
        saveQueue();
        renderQueue();
      }
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

  function goLive() {
    view = createView();
    view.nestServerRendered();
    view.scrollToLatest();
    connect();
  }
  if (!landing) goLive();
})();
