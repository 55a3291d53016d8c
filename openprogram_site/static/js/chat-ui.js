// The chat page around the transcript: the sidebar (drawer on narrow screens, search,
// rename/delete dialogs), copy buttons, code highlighting, and edit/regenerate buttons.
// Edits and regenerations are handed to chat.js as a "chat:resend" event.
(() => {
  "use strict";

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

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // --- copy ---------------------------------------------------------------------------------
  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      // No clipboard API (plain http on another host): the old way still works.
      const area = el("textarea");
      area.value = text;
      area.className = "visually-hidden";
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    if (button) {
      const before = button.textContent;
      button.textContent = "Copied";
      button.dataset.copied = "true";
      window.setTimeout(() => { button.textContent = before; delete button.dataset.copied; }, 1500);
    }
  }

  // --- code blocks: highlighting and a copy button each --------------------------------------
  function decorate(root) {
    root.querySelectorAll(".reply.markdown pre > code").forEach((code) => {
      const pre = code.parentElement;
      if (pre.parentElement.classList.contains("code-block")) return;
      const language = [...code.classList].find((c) => c.startsWith("language-"));
      if (language && window.Prism && window.Prism.languages[language.slice(9)]) {
        window.Prism.highlightElement(code);
      }
      const block = el("div", "code-block");
      const bar = el("div", "code-bar");
      bar.append(el("span", "code-language", language ? language.slice(9) : "text"));
      const copy = el("button", "icon copy-code", "Copy");
      copy.type = "button";
      copy.setAttribute("aria-label", "Copy code");
      copy.addEventListener("click", () => copyText(code.textContent, copy));
      bar.append(copy);
      pre.replaceWith(block);
      block.append(bar, pre);
    });
  }

  // --- message actions: copy, edit and resend, regenerate ------------------------------------
  const messageText = (bubble) => window.createChatTranscript.messageText(bubble);
  function resend(text, runId, edited = false) {
    document.dispatchEvent(new CustomEvent("chat:resend", { detail: { text, replaces: Number(runId), edited } }));
  }

  function startEdit(run) {
    const user = run.querySelector(".msg.user");
    if (!user || user.querySelector(".edit-box")) return;
    const bubble = user.querySelector(".bubble");
    const box = el("div", "edit-box");
    const area = el("textarea", "edit-text");
    area.value = messageText(bubble);
    area.setAttribute("aria-label", "Edit your message");
    const save = el("button", "primary", "Send edited");
    const cancel = el("button", "", "Cancel");
    save.type = cancel.type = "button";
    // The message the box sits in now: the server's rendering may have replaced the first one.
    const close = () => {
      const owner = box.closest(".msg.user") || user;
      box.remove();
      owner.querySelector(":scope > .bubble").hidden = false;
      owner.querySelector("[data-action=edit]")?.focus();
    };
    save.addEventListener("click", () => {
      if (!area.value.trim()) return;
      resend(area.value, run.dataset.runId, true);
      close();
    });
    cancel.addEventListener("click", close);
    area.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { e.preventDefault(); close(); }
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
    });
    box.append(area, el("div", "edit-buttons"));
    box.lastChild.append(cancel, save);
    bubble.hidden = true;
    user.prepend(box);
    // The whole message in view from its first line (a 3-row box showed only its end).
    const fit = () => { area.style.height = "auto"; area.style.height = `${area.scrollHeight + 2}px`; };
    area.addEventListener("input", fit);
    fit();
    area.focus({ preventScroll: true });
    area.setSelectionRange(area.value.length, area.value.length);
    box.scrollIntoView({ block: "nearest" });
  }

  const transcript = document.getElementById("transcript");
  if (transcript) {
    transcript.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-action]");
      const run = button?.closest(".run");
      if (!run) return;
      const action = button.dataset.action;
      if (action === "copy") {
        const inUser = button.closest(".msg.user");
        const text = inUser
          ? messageText(inUser.querySelector(".bubble"))
          : run.querySelector(".reply").innerText;
        copyText(text, button);
      } else if (action === "edit") {
        startEdit(run);
      } else if (action === "regenerate") {
        resend(messageText(run.querySelector(".msg.user .bubble")), run.dataset.runId);
      }
    });
  }

  // --- the sidebar as a drawer (narrow screens) -------------------------------------------------
  const sidebar = document.getElementById("chat-sidebar");
  const toggle = document.getElementById("drawer-toggle");
  const backdrop = document.getElementById("drawer-backdrop");
  const main = document.getElementById("main");

  function setDrawer(open) {
    main.classList.toggle("drawer-open", open);
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", open ? "Hide conversations" : "Show conversations");
    backdrop.hidden = !open;
    if (open) sidebar.querySelector(".new-chat")?.focus();
  }
  if (sidebar && toggle) {
    toggle.addEventListener("click", () => setDrawer(!main.classList.contains("drawer-open")));
    backdrop.addEventListener("click", () => setDrawer(false));
    sidebar.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && main.classList.contains("drawer-open")) {
        setDrawer(false);
        toggle.focus();
      }
    });
  }

  // --- search ----------------------------------------------------------------------------------
  const search = document.getElementById("conversation-search");
  const results = document.getElementById("search-results");
  const groups = document.getElementById("conversation-list");
  let searchTimer = 0;
  let searchSeq = 0;
  async function runSearch() {
    const query = search.value.trim();
    const mine = ++searchSeq;
    if (!query) { results.hidden = true; groups.hidden = false; return; }
    let found = [];
    try { found = await api("GET", `/api/conversations?q=${encodeURIComponent(query)}`); }
    catch (err) { found = null; results.replaceChildren(el("li", "error", err.message)); }
    if (mine !== searchSeq) return; // a newer query answered first
    if (found) {
      results.replaceChildren(...found.map((c) => {
        const li = el("li", "conversation-item");
        const a = el("a", "", c.title || "New chat");
        a.href = `/c/${c.id}/`;
        li.append(a);
        return li;
      }));
      if (!found.length) results.append(el("li", "muted", "No chats match."));
    }
    results.hidden = false;
    groups.hidden = true;
  }
  search?.addEventListener("input", () => {
    window.clearTimeout(searchTimer);
    searchTimer = window.setTimeout(runSearch, 200);
  });
  search?.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && search.value) { e.preventDefault(); search.value = ""; runSearch(); }
  });

  // --- rename / delete in dialogs (not the browser's prompt/confirm) -----------------------------
  const renameDialog = document.getElementById("rename-dialog");
  const deleteDialog = document.getElementById("delete-dialog");
  let target = null; // { item, id, link, opener }
  const chat = document.getElementById("chat");

  function openDialog(dialog, item, opener) {
    target = { item, id: item.dataset.conversationId, link: item.querySelector("a"), opener };
    dialog.querySelector(".error").textContent = "";
    dialog.showModal();
  }
  [renameDialog, deleteDialog].forEach((dialog) => {
    dialog?.querySelector("[data-close]").addEventListener("click", () => dialog.close());
    dialog?.addEventListener("close", () => { target?.opener?.isConnected && target.opener.focus(); });
  });
  // --- each chat's "…" menu (the menu-button pattern): one menu, moved under its button ----------
  const menu = document.getElementById("conversation-menu");
  let menuButton = null;
  const menuItems = () => [...menu.querySelectorAll("[role=menuitem]")];

  const menuHome = menu?.parentElement;
  function closeMenu(focusButton) {
    if (!menuButton) return;
    menu.hidden = true;
    menuHome.append(menu); // not left inside an item that may be deleted
    menuButton.setAttribute("aria-expanded", "false");
    if (focusButton) menuButton.focus();
    menuButton = null;
  }
  function openMenu(button, focusLast = false) {
    closeMenu(false);
    menuButton = button;
    const item = button.closest("[data-conversation-id]");
    menu.querySelectorAll("[data-export]").forEach((link) => {
      link.href = `/c/${item.dataset.conversationId}/export.${link.dataset.export}`;
    });
    item.append(menu);
    menu.hidden = false;
    button.setAttribute("aria-expanded", "true");
    menuItems().at(focusLast ? -1 : 0).focus();
  }
  function chooseFromMenu(action) {
    const button = menuButton;
    const item = button.closest("[data-conversation-id]");
    closeMenu(false);
    const title = item.querySelector("a").textContent.trim();
    if (action === "rename") {
      document.getElementById("rename-input").value = title;
      openDialog(renameDialog, item, button);
      document.getElementById("rename-input").select();
    } else if (action === "delete") {
      document.getElementById("delete-name").textContent = title;
      openDialog(deleteDialog, item, button);
    }
  }
  groups?.addEventListener("click", (e) => {
    const button = e.target.closest(".menu-button");
    if (!button) return;
    if (menuButton === button) closeMenu(true); else openMenu(button);
  });
  groups?.addEventListener("keydown", (e) => {
    const button = e.target.closest(".menu-button");
    if (button && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      e.preventDefault();
      openMenu(button, e.key === "ArrowUp");
    }
  });
  menu?.addEventListener("click", (e) => {
    const choice = e.target.closest("[role=menuitem]");
    if (!choice) return;
    if (choice.dataset.action === "export") { window.setTimeout(() => closeMenu(true), 0); return; }
    chooseFromMenu(choice.dataset.action);
  });
  menu?.addEventListener("keydown", (e) => {
    const items = menuItems();
    const at = items.indexOf(document.activeElement);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1 };
    if (e.key in moves) {
      e.preventDefault();
      items.at(moves[e.key] % items.length).focus();
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation(); // the menu closes, not the drawer around it
      closeMenu(true);
    } else if (e.key === "Tab") {
      closeMenu(false);
    } else if (e.key === " " && document.activeElement.tagName === "A") {
      e.preventDefault();
      document.activeElement.click();
    }
  });
  document.addEventListener("click", (e) => {
    if (menuButton && !menu.contains(e.target) && !e.target.closest(".menu-button")) closeMenu(false);
  });

  // A conversation made on this page (the landing page's first message) joins the list.
  function addConversation(id) {
    if (!groups || groups.querySelector(`[data-conversation-id="${id}"]`)) return;
    document.getElementById("no-conversations")?.remove();
    let list = groups.querySelector("ul");
    if (!list || list.previousElementSibling?.textContent !== "Today") {
      const label = el("h2", "group-label", "Today");
      list = el("ul");
      groups.prepend(label, list);
    }
    const item = el("li", "conversation-item");
    item.dataset.conversationId = id;
    const link = el("a", "", "New chat");
    link.href = `/c/${id}/`;
    link.setAttribute("aria-current", "true");
    const button = el("button", "icon menu-button", "…");
    button.type = "button";
    button.setAttribute("aria-haspopup", "menu");
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-label", "Actions for New chat");
    button.dataset.testid = "conversation-menu-button";
    item.append(link, button);
    groups.querySelectorAll("a[aria-current]").forEach((a) => a.removeAttribute("aria-current"));
    list.prepend(item);
  }

  // A new title (renamed here, or chosen by the server) in the list, the header and the tab.
  function showTitle(id, title) {
    const item = groups?.querySelector(`[data-conversation-id="${id}"]`);
    if (item) {
      item.querySelector("a").textContent = title;
      item.querySelector(".menu-button").setAttribute("aria-label", `Actions for ${title}`);
    }
    if (chat?.dataset.conversationId === id) {
      document.getElementById("chat-title").textContent = title;
      document.title = `${title} · OpenProgram`;
    }
  }

  renameDialog?.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const updated = await api("PATCH", `/api/conversations/${target.id}`, { title: document.getElementById("rename-input").value });
      showTitle(target.id, updated.title);
      // Saved: back to the composer, where the next thing typed belongs.
      target.opener = document.getElementById("composer-text") || target.opener;
      if (main.classList.contains("drawer-open")) setDrawer(false);
      renameDialog.close();
    } catch (err) {
      document.getElementById("rename-error").textContent = err.message;
    }
  });
  deleteDialog?.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api("DELETE", `/api/conversations/${target.id}`);
      if (chat?.dataset.conversationId === target.id) { window.location.href = "/"; return; }
      const list = target.item.parentElement;
      target.opener = toggle?.offsetParent ? toggle : search; // the button is gone with its item
      target.item.remove();
      if (!list.children.length) { list.previousElementSibling?.remove(); list.remove(); }
      deleteDialog.close();
    } catch (err) {
      document.getElementById("delete-error").textContent = err.message;
    }
  });

  // --- keyboard shortcuts: none that the browser already uses -----------------------------------
  // Alt+Shift+N a new chat (Ctrl+Shift+O, ChatGPT's, opens the bookmarks in Chrome and
  // Firefox); "/" the search and "?" this list, both only outside a text field, so typing
  // a slash command or a question is never taken over.
  const shortcuts = document.getElementById("shortcuts-dialog");
  shortcuts?.querySelector("[data-close]").addEventListener("click", () => shortcuts.close());
  const editable = (node) => node instanceof HTMLElement
    && (node.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName));
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.isComposing || document.querySelector("dialog[open]")) return;
    if (e.altKey && e.shiftKey && !e.ctrlKey && !e.metaKey && e.code === "KeyN") {
      e.preventDefault();
      window.location.href = "/";
    } else if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey && !editable(e.target) && search) {
      e.preventDefault();
      if (toggle?.offsetParent && !main.classList.contains("drawer-open")) setDrawer(true);
      search.focus();
    } else if (e.key === "?" && !e.ctrlKey && !e.metaKey && !e.altKey && !editable(e.target) && shortcuts) {
      e.preventDefault();
      shortcuts.showModal();
    }
  });

  window.chatUI = { addConversation, api, copyText, decorate, el, showTitle };
  if (transcript) decorate(transcript);
})();
