// MCP prompts as slash commands and MCP resources attached as text, in the composer.
// Typing "/" at the start of the message lists the connected servers' prompts (fetched
// fresh each time, so a server's list_changed shows up); picking one asks for its
// arguments and puts the filled-in text in the composer. "Resources" lists the servers'
// resources; picking one appends its text to the message. Nothing is sent until the
// person sends the message. Server data is untrusted: it only ever goes in as text.
(() => {
  "use strict";

  const text = document.getElementById("composer-text");
  const suggestions = document.getElementById("slash-suggestions");
  const argsBox = document.getElementById("prompt-args");
  const resourceButton = document.getElementById("resource-button");
  const resourcePanel = document.getElementById("resource-panel");
  const errorBox = document.getElementById("composer-error");
  if (!text || !suggestions || !argsBox || !resourceButton || !resourcePanel) return;

  function el(tag, className, content) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function csrf() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function api(path, body) {
    const options = body === undefined ? {} : {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
    };
    const response = await fetch(`/api/mcp/${path}`, { credentials: "same-origin", ...options });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.detail || `${response.status} ${response.statusText}`);
    return data;
  }

  function showError(message) {
    if (errorBox) errorBox.textContent = message;
  }

  function insert(content) {
    text.value = content;
    text.focus();
    text.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // --- prompts -------------------------------------------------------------------------
  let prompts = [];
  let fetched = 0;

  async function loadPrompts() {
    if (Date.now() - fetched < 2000) return prompts;
    fetched = Date.now();
    try { prompts = await api("prompts"); } catch (e) { prompts = []; }
    return prompts;
  }

  function hideSuggestions() {
    suggestions.hidden = true;
    suggestions.replaceChildren();
  }

  async function render(prompt, values) {
    try {
      const data = await api("prompts/render", { server: prompt.server, name: prompt.name, arguments: values });
      argsBox.hidden = true;
      argsBox.replaceChildren();
      showError("");
      insert(data.text);
    } catch (e) {
      showError(`Prompt ${prompt.name}: ${e.message}`);
    }
  }

  function choose(prompt) {
    hideSuggestions();
    if (!prompt.arguments.length) { render(prompt, {}); return; }
    const form = el("form", "prompt-args-form");
    form.setAttribute("aria-label", `Arguments of ${prompt.name}`);
    form.append(el("p", "prompt-args-title", `/${prompt.name} (${prompt.server})`));
    const inputs = prompt.arguments.map((argument, index) => {
      const id = `prompt-arg-${index}`;
      const label = el("label", "", argument.name + (argument.required ? " *" : ""));
      label.htmlFor = id;
      const input = el("input");
      input.id = id;
      input.required = argument.required;
      if (argument.description) input.placeholder = argument.description;
      form.append(label, input);
      return [argument.name, input];
    });
    const ok = el("button", "primary", "Insert prompt");
    const cancel = el("button", "", "Cancel");
    ok.type = "submit";
    cancel.type = "button";
    form.append(ok, cancel);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const values = {};
      inputs.forEach(([name, input]) => { if (input.value) values[name] = input.value; });
      render(prompt, values);
    });
    cancel.addEventListener("click", () => { argsBox.hidden = true; argsBox.replaceChildren(); text.focus(); });
    argsBox.replaceChildren(form);
    argsBox.hidden = false;
    inputs[0][1].focus();
  }

  async function suggest() {
    const match = /^\/([^\s]*)$/.exec(text.value);
    if (!match) { hideSuggestions(); return; }
    const typed = match[1].toLowerCase();
    const found = (await loadPrompts()).filter((p) => p.name.toLowerCase().startsWith(typed));
    if (!/^\/([^\s]*)$/.test(text.value) || !found.length) { hideSuggestions(); return; }
    suggestions.replaceChildren(...found.map((prompt) => {
      const item = el("li");
      const button = el("button", "slash-item");
      button.type = "button";
      button.append(el("span", "slash-name", `/${prompt.name}`), " ",
        el("span", "muted", `${prompt.title || prompt.description} · ${prompt.server}`));
      button.addEventListener("click", () => choose(prompt));
      item.append(button);
      return item;
    }));
    suggestions.hidden = false;
  }

  text.addEventListener("input", () => {
    if (text.value === "/") fetched = 0; // a fresh "/" lists afresh
    suggest();
  });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !suggestions.hidden) { e.preventDefault(); hideSuggestions(); }
  });

  // --- resources -----------------------------------------------------------------------
  async function attach(resource) {
    try {
      const data = await api("resources/read", { server: resource.server, uri: resource.uri });
      const header = `[Resource ${resource.name || resource.uri} <${resource.uri}> from ${resource.server}]`;
      const before = text.value.trim() ? `${text.value.replace(/\s+$/, "")}\n\n` : "";
      insert(`${before}${header}\n${data.text}\n`);
      showError("");
    } catch (e) {
      showError(`Resource ${resource.uri}: ${e.message}`);
    }
    closePanel();
  }

  function closePanel() {
    resourcePanel.hidden = true;
    resourceButton.setAttribute("aria-expanded", "false");
  }

  resourceButton.addEventListener("click", async () => {
    if (!resourcePanel.hidden) { closePanel(); return; }
    let resources = [];
    try { resources = await api("resources"); } catch (e) { showError(`Resources: ${e.message}`); }
    resourcePanel.replaceChildren(...(resources.length ? resources.map((resource) => {
      const item = el("li");
      const button = el("button", "resource-item");
      button.type = "button";
      button.append(el("span", "resource-name", resource.name || resource.uri), " ",
        el("span", "muted", `${resource.uri} · ${resource.server}`));
      button.title = resource.description || resource.uri;
      button.addEventListener("click", () => attach(resource));
      item.append(button);
      return item;
    }) : [el("li", "muted", "No MCP server offers resources.")]));
    resourcePanel.hidden = false;
    resourceButton.setAttribute("aria-expanded", "true");
  });
})();
