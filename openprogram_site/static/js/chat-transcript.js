// Rendering a conversation's runs from turn events; chat.js owns the socket and composer.
// Streamed text goes in as textContent (never HTML); only the server's final, sanitised
// Markdown is inserted as HTML. Events carry a per-run `seq`, so a catch-up from history
// and the live stream can overlap without rendering anything twice.
(() => {
  "use strict";

  const OUTPUT_LIMIT = 20 * 1024; // streamed tool output kept per card (the tail)
  const FINISHED = new Set(["done", "error", "denied", "stopped"]);
  const STOPPED_TAIL = "\nOutput so far:\n"; // how the framework appends a cut-off call's tail

  // A finished call's status in words: "error: <its first line>", as in _tool_card.html.
  function errorWords(preview) {
    const line = (preview || "").split("\n").find((l) => l.trim()) || "";
    return line.length > 80 ? `${line.slice(0, 79)}…` : line;
  }

  // The composer, after a prompt was answered from the keyboard: what is typed next lands there.
  function returnFocus(box) {
    const active = document.activeElement;
    if (active && active !== document.body && !box.contains(active)) return;
    document.getElementById("composer-text")?.focus({ preventScroll: true });
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // "1,234 tokens · 0.0123 USD", expandable to prompt / cached / completion; as _run.html.
  function usageDetails(event) {
    const usage = event.usage || {};
    const prompt = usage.prompt_tokens || 0;
    const completion = usage.completion_tokens || 0;
    if (!prompt && !completion) return null;
    const cost = event.price_known === false
      ? "price unknown"
      : `${(event.cost_usd || 0).toFixed(4)} USD`;
    const details = el("details", "usage");
    details.dataset.testid = "run-usage";
    details.append(el("summary", "", `${(prompt + completion).toLocaleString("en-US")} tokens · ${cost}`));
    const cached = usage.cached_tokens ? ` (${usage.cached_tokens} cached)` : "";
    details.append(el("span", "", `prompt ${prompt}${cached} · completion ${completion} tokens`));
    return details;
  }

  function actionButton(action, label, symbol) {
    const b = el("button", "icon", symbol);
    b.type = "button";
    b.dataset.action = action;
    b.setAttribute("aria-label", label);
    b.title = label;
    return b;
  }

  // The list of attached files the composer appends to a message (chat.js), read back as
  // chat_app/message_files.py does: shown as file chips, given back whole to copy and edit.
  const ATTACHED_HEADER = "Attached files (in my workspace):";
  function splitAttached(text) {
    const at = text.lastIndexOf(ATTACHED_HEADER);
    const head = text.slice(0, Math.max(at, 0));
    if (at < 0 || (head && !head.endsWith("\n"))) return [text, []];
    const lines = text.slice(at + ATTACHED_HEADER.length).replace(/^\n+|\n+$/g, "").split("\n");
    const found = lines.map((line) => line.match(/^- (.+?) \((\d+) bytes\)$/));
    if (found.some((m) => !m)) return [text, []];
    return [head.trimEnd(), found.map((m) => ({ path: m[1], size: Number(m[2]) }))];
  }
  function attachedText(files) {
    return `${ATTACHED_HEADER}\n${files.map((f) => `- ${f.path} (${f.size} bytes)`).join("\n")}`;
  }
  // A sent message's whole text, its file list included, from its bubble.
  function messageText(bubble) {
    const own = bubble.querySelector(".user-text");
    const text = own.dataset.text ?? own.textContent;
    const files = [...bubble.querySelectorAll(".file-chip")].map((c) => ({ path: c.dataset.path, size: c.dataset.size }));
    if (!files.length) return text;
    return `${text}\n\n${attachedText(files)}`;
  }

  // A message's time, shown with its actions (on hover and focus), in the reader's clock.
  function timeOf(node, date) {
    node.dateTime = date.toISOString();
    node.textContent = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    node.title = date.toLocaleString();
  }

  // A message from its event, as plain text (inert) until the server's rendering of it
  // (Markdown, the time it was sent) replaces it: see loadUserMessage. `sentNow`: this is
  // the live event, so the message was sent just now; a caught-up one waits for its time.
  function userMessage(fullText, sentNow) {
    const msg = el("div", "msg user");
    msg.dataset.pending = "true";
    const actions = el("div", "msg-actions");
    const time = el("time", "msg-time");
    if (sentNow) timeOf(time, new Date());
    actions.append(time, actionButton("copy", "Copy message", "Copy"), actionButton("edit", "Edit and resend", "Edit"));
    const [text, files] = splitAttached(fullText);
    const bubble = el("div", "bubble");
    const own = el("div", "user-text", text);
    own.dataset.text = text;
    bubble.append(own);
    if (files.length) {
      const chips = el("ul", "file-chips");
      chips.setAttribute("aria-label", "Attached files");
      files.forEach((f) => {
        const chip = el("li", "file-chip", f.path.split("/").pop());
        chip.dataset.path = f.path;
        chip.dataset.size = String(f.size);
        chip.title = `${f.path} (${f.size} bytes)`;
        chips.append(chip);
      });
      bubble.append(chips);
    }
    msg.append(bubble, actions);
    return msg;
  }

  // The server's rendering of a run's message (chat_app/_user_message.html, the same safe
  // Markdown renderer as replies, owner only) in place of the plain text from its event.
  async function loadUserMessage(block) {
    for (const wait of [0, 300, 1000, 3000]) {
      if (wait) await new Promise((resolve) => { window.setTimeout(resolve, wait); });
      let response;
      try {
        response = await fetch(`/runs/${encodeURIComponent(block.dataset.runId)}/message/`, { credentials: "same-origin" });
      } catch { continue; }
      if (response.status === 404) continue; // not yet readable: ask again
      if (!response.ok) return;
      const template = document.createElement("template");
      template.innerHTML = (await response.text()).trim(); // sanitised server-side
      const rendered = template.content.firstElementChild;
      const current = block.querySelector(":scope > .msg.user[data-pending]");
      if (!rendered || !current) return;
      rendered.querySelectorAll("time.msg-time").forEach((t) => timeOf(t, new Date(t.dateTime)));
      // An edit opened on the live message carries over, with its text, caret and focus.
      const editing = current.querySelector(":scope > .edit-box");
      const focused = editing?.contains(document.activeElement) ? document.activeElement : null;
      const [start, end] = [focused?.selectionStart, focused?.selectionEnd];
      if (editing) {
        rendered.querySelector(":scope > .bubble").hidden = true;
        rendered.prepend(editing);
      }
      current.replaceWith(rendered);
      focused?.focus({ preventScroll: true });
      if (start != null) focused.setSelectionRange(start, end);
      return;
    }
  }

  // Keyboard on a prompt: Enter approves (or answers), Escape denies.
  function bringToAttention(box, focusTarget) {
    // After the current batch of events: a replayed prompt already answered is gone by then.
    queueMicrotask(() => {
      if (!box.isConnected) return;
      box.closest(".tool-card").scrollIntoView({ block: "center", behavior: "instant" });
      focusTarget.focus({ preventScroll: true });
    });
  }

  // root: the transcript element; send(frame) -> bool; onRunning(bool); onTitle(text);
  // onUserMessage(event): a run started (the message this tab sent, or another tab's).
  function createChatTranscript({ root, send, onRunning, onTitle, onUserMessage }) {
    // Follow the stream only while the reader is at the bottom (not while scrolled up to read).
    let stick = true;
    let catchingUp = false; // events from a catch-up, not as they happen
    root.addEventListener("scroll", () => {
      stick = root.scrollHeight - root.scrollTop - root.clientHeight < 80;
    }, { passive: true });

    function thinking(block, on) {
      const part = assistantPart(block);
      const existing = part.querySelector(".thinking");
      if (!on) { existing?.remove(); return; }
      if (existing || part.querySelector(".reply").textContent) return;
      const note = el("div", "thinking", "Thinking…");
      note.setAttribute("role", "status");
      note.dataset.testid = "thinking";
      part.insertBefore(note, part.querySelector(".reply"));
    }

    function runBlock(runId) {
      let block = root.querySelector(`.run[data-run-id="${runId}"]`);
      if (!block) {
        document.getElementById("empty-hint")?.remove();
        block = el("section", "run");
        block.dataset.runId = runId;
        block.dataset.status = "running";
        root.append(block);
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

    // The one-line summary of a card, live and after a reload alike (the template renders
    // the same data attributes; describeCard writes the line for both):
    // "Used list_dir · 12 ms", "bash · stopped · 2,010 ms", "read · error: No such file".
    function describeCard(card) {
      const status = card.dataset.status;
      const summary = card.querySelector(":scope > summary");
      const result = card.querySelector(":scope > .tool-body > .tool-result");
      const label = status === "error" ? `error: ${errorWords(result?.textContent)}`
        : FINISHED.has(status) ? status : card.dataset.label || status;
      const ms = card.dataset.durationMs;
      const finished = FINISHED.has(status);
      const name = summary.querySelector(".tool-name");
      const verb = status === "done" ? "Used " : "";
      const duration = finished && Number(ms) > 0 ? `${Math.round(Number(ms)).toLocaleString("en-US")} ms` : "";
      const line = [el("span", "tool-verb", verb), name];
      if (status !== "done") line.push(" · ", el("span", "tool-status", label));
      if (duration) line.push(" · ", el("span", "tool-duration muted", duration));
      summary.replaceChildren(...line);
    }

    function setCardStatus(card, status, label) {
      card.dataset.status = status;
      card.dataset.label = label || status;
      describeCard(card);
    }

    function toolCard(block, event) {
      const part = assistantPart(block);
      let card = findCard(block, event.call_id);
      if (card) return card;
      card = el("details", "tool-card");
      card.open = true;
      card.dataset.callId = event.call_id;
      const summary = el("summary");
      summary.append(el("span", "tool-name", event.name));
      const body = el("div", "tool-body");
      const args = typeof event.arguments === "string" ? event.arguments : JSON.stringify(event.arguments, null, 2);
      body.append(el("div", "label", "Arguments"), el("pre", "tool-args", args));
      const outputLabel = el("div", "label output-label", "Output (live)");
      const output = el("pre", "tool-output");
      outputLabel.hidden = output.hidden = true;
      body.append(outputLabel, output, el("div", "children"));
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
      const decide = (frame) => {
        if (send({ call_id: event.call_id, reason: reason.value, ...frame })) {
          returnFocus(box); // before the disabled buttons drop focus to the page
          box.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
        }
      };
      approve.addEventListener("click", () => decide({ type: "approve" }));
      deny.addEventListener("click", () => decide({ type: "deny" }));
      const hint = el("span", "keys muted", "Enter approves · Esc denies");
      box.append(el("span", "approval-text", event.reason || `Run ${event.name}?`), reason, approve, deny);
      if (event.may_remember) {
        const always = el("button", "always", `Allow ${event.name} for this chat`);
        always.type = "button";
        always.title = "Approve this call and every later call of this tool in this conversation";
        always.addEventListener("click", () => decide({ type: "approve", remember: true }));
        box.append(always);
      }
      if (event.user_may_allow && event.suggestion) {
        // A saved rule (Account lists and revokes it): the pattern is shown and editable.
        const pattern = el("input", "always-pattern");
        pattern.value = event.suggestion;
        pattern.setAttribute("aria-label", "Always allow pattern");
        const saved = el("button", "always-allow", "Always allow");
        saved.type = "button";
        saved.title = "Approve, and never ask again for calls matching this pattern";
        saved.addEventListener("click", () => decide({ type: "approve", always_allow: pattern.value }));
        box.append(pattern, saved);
      }
      if (event.rule) box.append(el("span", "approval-rule muted", `Asked by ${event.rule}`));
      box.append(hint);
      box.addEventListener("keydown", (e) => {
        if (e.key === "Escape") { e.preventDefault(); deny.click(); }
        else if (e.key === "Enter" && e.target.tagName === "INPUT") { e.preventDefault(); approve.click(); }
      });
      card.querySelector(".tool-body").prepend(box);
      bringToAttention(box, approve);
    }

    // The question's id is not its tool call's: it belongs on the running ask_user_question card.
    function questionCard(block, event) {
      return findCard(block, event.call_id)
        || [...block.querySelectorAll(".tool-card[data-status=running]")].reverse().find((c) =>
          c.querySelector(".tool-name").textContent === "ask_user_question" && !c.querySelector(".question"))
        || toolCard(block, { ...event, name: "ask_user_question" });
    }

    function questionPrompt(block, event) {
      const card = questionCard(block, event);
      card.open = true;
      if (card.querySelector(".question")) return;
      const box = el("div", "question");
      box.append(el("p", "question-text", event.question));
      const answer = (text) => {
        if (!send({ type: "answer", call_id: event.call_id, text })) return;
        returnFocus(box);
        box.replaceChildren(el("p", "question-text", event.question), el("p", "answered", `You answered: ${text}`));
        setCardStatus(card, "running", "answered, running…");
      };
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
      box.addEventListener("keydown", (e) => {
        if (e.key === "Escape") { e.preventDefault(); card.querySelector("summary").focus(); }
      });
      bringToAttention(box, box.querySelector("button, input"));
    }

    function finishCard(block, event) {
      const card = findCard(block, event.call_id) || toolCard(block, event);
      card.querySelector(".approval")?.remove();
      card.querySelector(".question")?.remove();
      const denied = card.dataset.status === "denied";
      // A denied call stays denied, even when Stop came after (as run history keeps it).
      const status = denied ? "denied" : event.stopped ? "stopped" : event.is_error ? "error" : "done";
      card.dataset.durationMs = String(event.duration_ms || 0);
      const body = card.querySelector(".tool-body");
      const children = body.querySelector(".children");
      // The result repeats what streamed live: show it once.
      body.querySelectorAll(".tool-output, .output-label").forEach((node) => node.remove());
      if (event.stopped) {
        // What it printed before Stop (the framework keeps the stream's tail), marked as stopped.
        const tail = (event.preview || "").split(STOPPED_TAIL).slice(1).join(STOPPED_TAIL);
        body.insertBefore(el("div", "label", "Stopped · output so far"), children);
        body.insertBefore(el("pre", "tool-result is-stopped", tail || "Stopped before it printed anything."), children);
      } else {
        body.insertBefore(el("div", "label", event.is_error ? "Error" : "Result"), children);
        body.insertBefore(el("pre", "tool-result" + (event.is_error ? " is-error" : ""), event.preview), children);
      }
      setCardStatus(card, status, status);
      card.open = false; // finished: one line, opened on click or Enter
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
      onRunning(running);
    }

    function apply(event) {
      if (event.run_id === undefined) return;
      const block = runBlock(event.run_id);
      const last = Number(block.dataset.lastSeq || 0);
      if (event.seq <= last) return; // already rendered (catch-up and live overlap)
      if (event.parts && event.parts[0][0] <= last) {
        // Merged pieces, the first ones already here from the catch-up: skip just those.
        const skip = event.parts.filter(([seq]) => seq <= last).reduce((n, [, len]) => n + len, 0);
        event = { ...event, text: event.text.slice(skip) };
      }
      block.dataset.lastSeq = String(event.seq);
      switch (event.type) {
        case "user_message":
          if (!block.querySelector(".msg.user")) {
            block.prepend(userMessage(event.text, !catchingUp));
            loadUserMessage(block);
          }
          if (event.replaces) markSuperseded(event.replaces, block);
          if (event.title) onTitle(event.title);
          setRunning(true);
          thinking(block, true);
          stick = true;
          if (onUserMessage) onUserMessage(event);
          break;
        case "tools_resolved": {
          const part = assistantPart(block);
          const offered = el("details", "offered");
          offered.append(el("summary", "", `${event.tools.length} tool${event.tools.length === 1 ? "" : "s"} offered${event.deferred.length ? `, ${event.deferred.length} deferred` : ""}`));
          const list = el("p", "offered-list", event.tools.join(", "));
          list.setAttribute("data-testid", "offered-tools");
          offered.append(list);
          // The compact explain trace: each reason once, with the tools it kept out.
          const groups = (event.explain && event.explain.not_offered) || [];
          if (groups.length) {
            const notOffered = el("div", "not-offered");
            notOffered.setAttribute("data-testid", "not-offered");
            groups.forEach((g) => {
              const p = el("div");
              // Words for people first; the layer code and raw reason stay one click away.
              const code = el("details", "layer-code");
              code.append(el("summary", "", "Layer"), el("code", "", g.layer || ""), ` ${g.reason}`);
              p.append(`${g.words || g.reason}: ${g.names.join(", ")} `, code);
              notOffered.append(p);
            });
            offered.append(notOffered);
          }
          (event.warnings || []).forEach((w) => offered.append(el("p", "warning", w)));
          part.prepend(offered);
          break;
        }
        case "text_delta":
          thinking(block, false);
          assistantPart(block).querySelector(".reply").append(document.createTextNode(event.text));
          break;
        case "tool_call_started":
          thinking(block, false);
          toolCard(block, event);
          break;
        case "tool_update": {
          const card = findCard(block, event.call_id);
          if (!card) break;
          const output = card.querySelector(".tool-output");
          output.hidden = card.querySelector(".output-label").hidden = false;
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
          const box = card.querySelector(".approval");
          if (box) { returnFocus(box); box.remove(); }
          if (event.approved) setCardStatus(card, "running", `${event.reason || "approved"}, running…`);
          else setCardStatus(card, "denied", `denied${event.reason ? ": " + event.reason : ""}`);
          break;
        }
        case "question_asked":
          questionPrompt(block, event);
          break;
        case "elicitation_requested":
        case "elicitation_resolved": // chat-elicitation.js draws the form or link
          window.chatElicitation?.apply(block, event, { findCard, toolCard, setCardStatus, send, el, bringToAttention });
          break;
        case "todo_updated":
          renderTodos(event.todos || []);
          break;
        case "tool_finished":
          finishCard(block, event);
          break;
        case "error": {
          thinking(block, false);
          const part = assistantPart(block);
          const error = el("div", "run-error error", event.message);
          error.setAttribute("role", "alert");
          part.insertBefore(error, part.querySelector(".run-meta"));
          break;
        }
        case "turn_finished":
          block.dataset.status = event.stop_reason;
          block.usage = usageDetails(event);
          break;
        case "assistant_message": {
          thinking(block, false);
          const part = assistantPart(block);
          const reply = part.querySelector(".reply");
          reply.className = "reply markdown";
          reply.innerHTML = event.html; // sanitised server-side: raw HTML off, links checked
          if (window.chatUI) window.chatUI.decorate(part);
          block.dataset.status = event.status;
          const meta = part.querySelector(".run-meta");
          meta.replaceChildren(el("span", "run-status", event.status));
          meta.querySelector(".run-status").dataset.status = event.status;
          const link = el("a", "", "run");
          link.href = `/api/runs/${event.run_id}`;
          link.target = "_blank";
          meta.append(" · ", link);
          if (block.usage) meta.append(" · ", block.usage);
          const actions = el("span", "msg-actions");
          actions.append(actionButton("copy", "Copy reply", "Copy"), actionButton("regenerate", "Regenerate reply", "Regenerate"));
          meta.append(actions);
          setRunning(false);
          break;
        }
        default:
          break;
      }
      if (stick) root.scrollTop = root.scrollHeight;
    }

    // An edit or a regeneration: that run and every later one are kept, marked as replaced.
    function markSuperseded(fromRunId, current) {
      root.querySelectorAll(".run").forEach((run) => {
        if (run === current || Number(run.dataset.runId) < fromRunId || run.dataset.superseded) return;
        run.dataset.superseded = "true";
        run.prepend(el("p", "superseded-note muted", "Earlier version, replaced by an edit or a regeneration"));
      });
    }

    function catchUp(message) {
      const existing = root.querySelector(`.run[data-run-id="${message.run_id}"]`);
      // Server-rendered (no seq yet): a finished run is complete; a running one is rebuilt.
      if (existing && !existing.dataset.lastSeq) {
        if (existing.dataset.status !== "running") { setRunning(false); return; }
        // The message as the server rendered it (Markdown, its time) stays; the rest is rebuilt.
        const sent = existing.querySelector(":scope > .msg.user");
        existing.replaceChildren(...(sent ? [sent] : []));
      }
      catchingUp = true;
      try { message.events.forEach(apply); } finally { catchingUp = false; }
      setRunning(message.status === "running");
    }

    // Server-rendered nested calls arrive flat; put each under its parent card.
    // and write each card's one-line summary as a live card gets it.
    function nestServerRendered() {
      root.querySelectorAll(".tool-card[data-parent-call-id]").forEach((card) => {
        const parent = findCard(card.closest(".run"), card.dataset.parentCallId);
        if (parent) parent.querySelector(".children").append(card);
      });
      root.querySelectorAll(".tool-card").forEach(describeCard);
      root.querySelectorAll("time.msg-time").forEach((t) => timeOf(t, new Date(t.dateTime)));
    }

    function scrollToLatest() {
      root.scrollTop = root.scrollHeight;
      stick = true;
    }

    return { apply, catchUp, nestServerRendered, scrollToLatest };
  }

  createChatTranscript.el = el;
  createChatTranscript.messageText = messageText;
  window.createChatTranscript = createChatTranscript;
})();
