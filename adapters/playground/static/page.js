"use strict";
// The playground page: every chat text is shown with textContent, never parsed as HTML.
const PRESETS = [["g1", "group"], ["g2", "group"], ["dm", "private"]];
const POLL_MS = 1500;
const QUOTE_GRAPHEMES = 60;
const DROPPED = "… older messages were dropped here (memory keeps them)";
const graphemes = typeof Intl === "object" && Intl.Segmenter
  ? (text) => Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text), (s) => s.segment)
  : (text) => Array.from(text);  // code points: never half a surrogate pair, though a ZWJ sequence may split

// The start of `text` for a quote, cut between whole graphemes (an emoji, a ZWJ family), "…" marking a cut.
function clip(text, limit = QUOTE_GRAPHEMES) {
  const parts = graphemes(text);
  return parts.length <= limit ? text : parts.slice(0, limit).join("") + "…";
}
const $ = (id) => document.getElementById(id);

const TOKEN_IN_HASH = /(?:^#|&)token=([^&]+)/;

function takeToken() {
  const match = TOKEN_IN_HASH.exec(location.hash);
  if (match) {
    sessionStorage.setItem("qunyi-playground-token", decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("qunyi-playground-token") || "";
}

const NO_TOKEN = "no access token: open the address the bot logged at start (…/#token=…)";

// view: counts the chats shown, so that a poll answered after its chat was left (even if shown again) is dropped
const state = { token: takeToken(), chat: "g1", kind: "group", cursor: 0, run: null, replyTo: null, view: 0 };
// Why the page does not call the API now (null: it does). The server counts wrong tokens per address and
// refuses one that sent too many (429): a tab whose token is wrong or missing (an earlier run's, say)
// stops asking at the first 401 until it is opened again, so that polling never locks the address out;
// a 429 stops it for the Retry-After seconds.
const hold = { why: state.token ? null : NO_TOKEN, until: null };

function holdOn(why, seconds) {
  hold.why = why;
  clearTimeout(hold.until);
  hold.until = seconds > 0 ? setTimeout(() => { hold.why = null; say(""); poll(); }, seconds * 1000) : null;
}

async function api(path, body, method = "POST") {
  if (hold.why) throw new Error(hold.why);
  const init = { headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    init.method = method;
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init).catch(() => {
    throw new Error("no answer from the bot: stopped or restarting? (the page keeps trying)");
  });
  const data = await response.json().catch(() => ({ error: "HTTP " + response.status }));
  const error = data.error || "HTTP " + response.status;
  if (response.status === 401 || response.status === 429) holdOn(error, Number(response.headers.get("Retry-After")));
  if (!response.ok) throw Object.assign(new Error(error), { data });
  return data;
}

function say(text) { $("status").textContent = text; }

function addOption(chat, kind) {
  const value = chat + "\n" + kind;
  const select = $("chat");
  if ([...select.options].some((o) => o.value === value)) return;
  const option = document.createElement("option");
  option.value = value;
  option.textContent = chat + " · " + kind;
  select.append(option);
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

const shown = new Map();  // message id -> its text as quoted
const boxes = new Map();  // message id -> its element in the transcript

// The replies shown quote message `id` as it now reads (edited, or "deleted"), as Telegram and QQ do.
function requote(id, text) {
  $("transcript").querySelectorAll(".quote").forEach((quote) => {
    if (quote.dataset.of === id) quote.textContent = "↪ " + text;
  });
}

function tool(label, title, action) {
  const button = element("button", "", label);
  button.type = "button";
  button.title = title;
  button.addEventListener("click", (event) => { event.stopPropagation(); action(); });
  return button;
}

async function change(message, body, method) {
  say("");
  try {
    await api("/api/chats/" + encodeURIComponent(state.chat) + "/messages/" + encodeURIComponent(message.id),
      body, method);
  } catch (error) {
    say(error.message);
  }
  poll();
}

function editMessage(message) {
  const text = prompt("Edit your message", message.text);
  if (text !== null && text.trim() && text !== message.text) {
    change(message, { user: $("user").value, text }, "PATCH");
  }
}

function deleteMessage(message) {
  if (confirm("Delete this message? Memory forgets it too.")) change(message, { user: $("user").value }, "DELETE");
}

// The member typing, named as the server reads the name: no blanks around it, one encoding (NFC).
const me = () => $("user").value.trim().normalize("NFC");

function markOwn() {  // edit and delete show on the messages of the member typing
  boxes.forEach((box) => box.classList.toggle("own", box.dataset.sender === me()));
}

function show(message) {
  const box = element("div", message.is_bot ? "msg bot" : "msg", "");
  if (message.reply_to) {
    const quote = element("span", "quote", "↪ " + (shown.get(message.reply_to) || message.reply_to));
    quote.dataset.of = message.reply_to;
    box.append(quote);
  }
  box.append(element("span", "who", message.is_bot ? message.sender + " (bot)" : message.sender));
  box.append(element("span", "text", message.text));
  const meta = new Date(message.time).toLocaleTimeString() + " · " + message.id;
  box.append(element("span", "meta", message.edited ? meta + " · edited" : meta));
  if (!message.is_bot) {
    const tools = element("span", "tools", "");
    tools.append(tool("✎", "edit", () => editMessage(message)), tool("🗑", "delete", () => deleteMessage(message)));
    box.append(tools);
    box.dataset.sender = message.sender;
  }
  box.title = "click to reply";
  box.addEventListener("click", () => replyTo(message));
  if (state.replyTo === message.id) replyTo(message);  // edited while being replied to
  shown.set(message.id, clip(message.text));
  requote(message.id, clip(message.text));
  const old = boxes.get(message.id);
  boxes.set(message.id, box);
  markOwn();
  if (old) { old.replaceWith(box); return; }  // an edit: in its place
  const transcript = $("transcript");
  const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  transcript.append(box);
  if (atBottom) transcript.scrollTop = transcript.scrollHeight;
}

function drop(id) {
  const box = boxes.get(id);
  if (box) box.remove();
  boxes.delete(id);
  shown.delete(id);
  requote(id, "(deleted)");
  if (state.replyTo === id) cancelReply();
}

function replyTo(message) {
  state.replyTo = message.id;
  $("replying-text").textContent = "replying to " + message.sender + ": " + clip(message.text);
  $("replying").hidden = false;
}

function cancelReply() { state.replyTo = null; $("replying").hidden = true; }

async function poll() {
  const { chat, view } = state;
  try {
    const page = await api("/api/chats/" + encodeURIComponent(chat) + "/messages?after=" + state.cursor);
    if (view !== state.view) return;
    if (state.run !== null && page.run !== state.run) { switchChat(chat, state.kind); return; }
    if (page.chat_kind && page.chat_kind !== state.kind) {
      rekind(page.chat_kind, "chat '" + chat + "' is a " + page.chat_kind + " chat in this run");
      return;
    }
    state.run = page.run;
    if (page.missed) $("transcript").append(element("p", "gap", DROPPED));  // marks the gap, in this view only
    page.messages.filter((m) => m.seq > state.cursor).forEach(show);  // two polls may overlap
    (page.deleted || []).forEach(drop);
    state.cursor = Math.max(state.cursor, page.cursor);
  } catch (error) {
    if (view === state.view) say(error.message);
  }
}

function switchChat(chat, kind) {
  Object.assign(state, { chat, kind, cursor: 0, run: null, view: state.view + 1 });
  say("");
  cancelReply();
  shown.clear();
  boxes.clear();
  $("transcript").replaceChildren();
  addOption(chat, kind);
  $("chat").value = chat + "\n" + kind;
  localStorage.setItem("qunyi-playground-chat", chat + "\n" + kind);
  poll();
}

// The chat is of the other kind (`kind`): its wrong entry leaves the list, and the chat is shown as it is.
function rekind(kind, why) {
  const wrong = [...$("chat").options].find((o) => o.value === state.chat + "\n" + state.kind);
  if (wrong) wrong.remove();
  switchChat(state.chat, kind);
  say(why);
}

async function send(event) {
  event.preventDefault();
  const text = $("text").value;
  if (!text.trim()) return;
  const body = { chat_id: state.chat, chat_kind: state.kind, user: $("user").value, text };
  if (state.replyTo) body.reply_to = state.replyTo;
  $("text").value = "";
  cancelReply();
  say("");
  const { chat, view } = state;
  const waiting = setInterval(poll, 500);  // the member's message shows before the bot has answered
  try {
    await api("/api/messages", body);
  } catch (error) {
    const kind = error.data && error.data.chat_kind;  // a 409: the chat is of that kind
    if (kind && view === state.view) rekind(kind, error.message); else say(error.message);
    const delivered = error.data && error.data.message;  // a 500 after it joined the transcript: never twice
    if (!delivered && chat === state.chat && !$("text").value) $("text").value = text;
  } finally {
    clearInterval(waiting);
    poll();
  }
}

async function start() {
  // The address pasted into a tab already open on the page only changes its hash: start again with its token.
  window.addEventListener("hashchange", () => { if (TOKEN_IN_HASH.test(location.hash)) location.reload(); });
  if (hold.why) say(hold.why);
  PRESETS.forEach(([chat, kind]) => addOption(chat, kind));
  $("user").value = localStorage.getItem("qunyi-playground-user") || $("user").value;
  $("user").addEventListener("input", () => {  // saved as typed: a reload keeps it
    localStorage.setItem("qunyi-playground-user", $("user").value);
    markOwn();
  });
  $("chat").addEventListener("change", () => switchChat(...$("chat").value.split("\n")));
  $("new-chat").addEventListener("submit", (event) => {
    event.preventDefault();
    const chat = $("new-chat-id").value.trim();
    if (chat === "." || chat === "..") { say("a chat id cannot be '.' or '..': no address could read it"); return; }
    if (chat) switchChat(chat, $("new-chat-kind").value);
    $("new-chat-id").value = "";
  });
  $("compose").addEventListener("submit", send);
  $("text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) send(event);
  });
  $("cancel-reply").addEventListener("click", cancelReply);
  try {
    const info = await api("/api/chats");
    info.chats.forEach((c) => addOption(c.chat_id, c.chat_kind));
    $("text").placeholder = "Message (@" + info.bot.name + " addresses the bot; Enter sends, Shift+Enter: new line)";
  } catch (error) {
    say(error.message);
  }
  const saved = (localStorage.getItem("qunyi-playground-chat") || "g1\ngroup").split("\n");
  switchChat(saved[0], saved[1] || "group");
  setInterval(poll, POLL_MS);
}

start();
