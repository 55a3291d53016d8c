// A tool's question as a form or a link (an MCP server's elicitation), on that call's card.
// Everything the server sent is untrusted: it goes in as textContent, field names become
// ids only through a prefix, and a link opens only after the person chose to open it
// (http(s) only, checked by the server side too) with no opener.
(() => {
  "use strict";

  const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };
  const OUTCOMES = { accept: "You answered", decline: "You declined", cancel: "Cancelled" };

  function input(el, field, id) {
    if (field.kind === "boolean") {
      const box = el("input");
      box.type = "checkbox";
      box.checked = field.default === true;
      box.id = id;
      return box;
    }
    if (field.kind === "choice") {
      const select = el("select");
      select.id = id;
      if (!field.required || field.default == null) select.append(el("option", "", ""));
      field.options.forEach(([value, label]) => {
        const option = el("option", "", label);
        option.value = value;
        option.selected = value === field.default;
        select.append(option);
      });
      select.required = field.required;
      return select;
    }
    if (field.kind === "choices") {
      const set = el("fieldset", "choices");
      set.id = id;
      const chosen = new Set(field.default || []);
      field.options.forEach(([value, label]) => {
        const item = el("label");
        const box = el("input");
        box.type = "checkbox";
        box.value = value;
        box.checked = chosen.has(value);
        item.append(box, ` ${label}`);
        set.append(item);
      });
      return set;
    }
    const text = el("input");
    text.id = id;
    text.required = field.required;
    if (field.kind === "number" || field.kind === "integer") {
      text.type = "number";
      text.step = field.kind === "integer" ? "1" : "any";
      if (field.minimum != null) text.min = String(field.minimum);
      if (field.maximum != null) text.max = String(field.maximum);
    } else {
      text.type = INPUT_TYPES[field.format] || "text";
      if (field.min_length != null) text.minLength = field.min_length;
      if (field.max_length != null) text.maxLength = field.max_length;
    }
    if (field.default != null) text.value = String(field.default);
    return text;
  }

  function value(field, node) {
    if (field.kind === "boolean") return node.checked;
    if (field.kind === "choices") {
      return [...node.querySelectorAll("input:checked")].map((box) => box.value);
    }
    if (node.value === "") return undefined; // left empty: the server's default applies
    if (field.kind === "integer") return parseInt(node.value, 10);
    if (field.kind === "number") return Number(node.value);
    if (field.format === "date-time") return new Date(node.value).toISOString();
    return node.value;
  }

  function formBox(el, event, answer) {
    const form = el("form", "elicitation-form");
    form.noValidate = false;
    const nodes = event.fields.map((field, index) => {
      const id = `elicit-${event.call_id}-${index}`;
      const row = el("div", "elicitation-field");
      const label = el("label", "", field.title + (field.required ? " *" : ""));
      label.htmlFor = id;
      const node = input(el, field, id);
      row.append(label, node);
      if (field.description) row.append(el("small", "muted", field.description));
      form.append(row);
      return [field, node];
    });
    const submit = el("button", "primary", "Submit");
    submit.type = "submit";
    const decline = el("button", "danger", "Decline");
    const cancel = el("button", "", "Cancel");
    decline.type = cancel.type = "button";
    form.append(submit, decline, cancel);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const content = {};
      nodes.forEach(([field, node]) => {
        const v = value(field, node);
        if (v !== undefined) content[field.name] = v;
      });
      answer("accept", content);
    });
    decline.addEventListener("click", () => answer("decline"));
    cancel.addEventListener("click", () => answer("cancel"));
    return form;
  }

  function linkBox(el, event, answer) {
    const box = el("div", "elicitation-link");
    let host = "";
    try { host = new URL(event.url).host; } catch (e) { host = ""; }
    box.append(el("p", "", "The server asks you to open this link"), el("code", "elicitation-url", event.url));
    const open = el("button", "primary", host ? `Open ${host}` : "Open link");
    const decline = el("button", "danger", "Decline");
    const cancel = el("button", "", "Cancel");
    open.type = decline.type = cancel.type = "button";
    open.addEventListener("click", () => {
      if (/^https?:\/\//i.test(event.url)) window.open(event.url, "_blank", "noopener,noreferrer");
      answer("accept");
    });
    decline.addEventListener("click", () => answer("decline"));
    cancel.addEventListener("click", () => answer("cancel"));
    box.append(open, decline, cancel);
    return box;
  }

  // tools: { findCard, toolCard, setCardStatus, send, el, bringToAttention } from the transcript.
  function apply(block, event, tools) {
    const { el } = tools;
    const card = tools.findCard(block, event.tool_call_id)
      || tools.toolCard(block, { call_id: event.tool_call_id, name: event.source, arguments: "" });
    let box = [...card.querySelectorAll(".elicitation")].find((b) => b.dataset.elicitId === event.call_id);
    if (event.type === "elicitation_resolved") {
      if (!box) return;
      const reason = event.reason ? `: ${event.reason}` : "";
      box.replaceChildren(el("p", "answered", `${OUTCOMES[event.action] || event.action}${reason}`));
      tools.setCardStatus(card, "running", "running…");
      return;
    }
    if (box) return;
    box = el("div", "question elicitation");
    box.dataset.elicitId = event.call_id;
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", `${event.source} asks`);
    box.append(el("p", "question-text", event.message), el("p", "muted", `Asked by ${event.source}`));
    const answer = (action, content) => {
      const frame = { type: "elicit", call_id: event.call_id, action };
      if (content) frame.content = content;
      if (!tools.send(frame)) return;
      box.querySelectorAll("button, input, select").forEach((node) => { node.disabled = true; });
    };
    box.append(event.mode === "url" ? linkBox(el, event, answer) : formBox(el, event, answer));
    card.open = true;
    tools.setCardStatus(card, "awaiting_answer", "waiting for your answer");
    card.querySelector(".tool-body").prepend(box);
    tools.bringToAttention(box, box.querySelector("input, select, button"));
  }

  window.chatElicitation = { apply };
})();
