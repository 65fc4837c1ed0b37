// Gweta's web app: plain JavaScript, no build step. It streams /api/v1/query/stream with fetch() (so the access
// token travels in the Authorization header, never in a URL), renders [n] markers as links, shows each cited
// provision with the quoted words highlighted, and opens provisions with their neighbours in a reader.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const STORE = { token: "gweta.token", session: "gweta.session", history: "gweta.history" };
const WARNING_LABELS = {
  answer_revised: "Answer revised",
  single_source: "One source",
  cached_answer: "From a verified earlier answer",
  llm_unavailable: "Direct quotes only",
  prompt_injection: "Instructions ignored",
  unverified_quote: "Check this quote",
  unsupported_statement: "Check this statement",
  uncited_answer: "No source cited",
  repealed_law: "Repealed law",
  other_version: "Not the version in force",
};

const state = {
  config: { auth_required: false, firebase: null, dev_signin: false },
  sessionId: "",
  turns: [],
  busy: false,
  controller: null,
  provisions: new Map(),
  reader: null,
};
const QUESTION_LIMIT = 2000; // the API's limit on a question's length (api/schemas/query.py)
const COUNTER_FROM = 1800; // the counter appears this close to the limit
const FIELD_NAMES = { q: "Your question", doc_type: "The document type", date_from: "The start date", date_to: "The end date", as_of: "The date of the law", session_id: "The conversation" };

// ---------- small helpers ----------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function newSessionId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fragmentOf(provisionId) {
  const at = provisionId.indexOf("#");
  return at >= 0 ? provisionId.slice(at + 1) : provisionId;
}

function documentPath(docKey) {
  return docKey.split("/").map(encodeURIComponent).join("/");
}

// ---------- sign-in ----------

function savedToken() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORE.token) || "null");
    return saved && saved.token ? saved : null;
  } catch {
    return null;
  }
}

function saveToken(token) {
  if (token) sessionStorage.setItem(STORE.token, JSON.stringify(token));
  else sessionStorage.removeItem(STORE.token);
  renderAccount();
}

async function refreshFirebase(saved) {
  const fb = state.config.firebase;
  if (!fb || !saved.refresh) return null;
  const response = await fetch(`${fb.token_url}/v1/token?key=${encodeURIComponent(fb.api_key)}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: saved.refresh }),
  });
  if (!response.ok) return null;
  const body = await response.json();
  const token = { token: body.id_token, refresh: body.refresh_token, expires: Date.now() + 1000 * Number(body.expires_in), name: saved.name, kind: "firebase" };
  saveToken(token);
  return token;
}

async function authHeaders() {
  if (!state.config.auth_required) return {};
  let saved = savedToken();
  if (saved && saved.expires && saved.expires - Date.now() < 30_000) {
    saved = saved.kind === "firebase" ? await refreshFirebase(saved).catch(() => null) : null;
    if (!saved) saveToken(null);
  }
  return saved ? { Authorization: `Bearer ${saved.token}` } : {};
}

function renderAccount() {
  const saved = savedToken();
  const needed = state.config.auth_required;
  $("#who").hidden = !(needed && saved);
  $("#who").textContent = saved ? `Signed in as ${saved.name}` : "";
  $("#sign-in").hidden = !needed || Boolean(saved);
  $("#sign-out").hidden = !needed || !saved;
}

function showSignIn(reason) {
  $("#signin-reason").textContent = reason || "This service needs you to sign in before it answers.";
  $("#signin-error").textContent = "";
  $("#firebase-form").hidden = !state.config.firebase;
  $("#dev-form").hidden = !state.config.dev_signin;
  if (!state.config.firebase && !state.config.dev_signin) {
    $("#signin-error").textContent = "No sign-in method is configured for this site; ask its administrator.";
  }
  const dialog = $("#signin");
  if (!dialog.open) dialog.showModal();
}

async function signInFirebase(event) {
  event.preventDefault();
  const fb = state.config.firebase;
  const email = $("#fb-email").value.trim();
  try {
    const response = await fetch(`${fb.auth_url}/v1/accounts:signInWithPassword?key=${encodeURIComponent(fb.api_key)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: $("#fb-password").value, returnSecureToken: true }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const code = (body.error && body.error.message) || `HTTP ${response.status}`;
      throw new Error(code.startsWith("INVALID") ? "That email and password do not match an account." : `Sign-in failed (${code}).`);
    }
    saveToken({ token: body.idToken, refresh: body.refreshToken, expires: Date.now() + 1000 * Number(body.expiresIn || 3600), name: body.email || email, kind: "firebase" });
    signedIn();
  } catch (error) {
    $("#signin-error").textContent = error.message || "Sign-in failed; check your connection.";
  }
}

async function signInDev(event) {
  event.preventDefault();
  const name = $("#dev-name").value.trim();
  try {
    const response = await fetch("/api/v1/web/dev-token", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name, passphrase: $("#dev-passphrase").value }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error((body.error && body.error.message) || `Sign-in failed (HTTP ${response.status}).`);
    saveToken({ token: body.access_token, expires: Date.now() + 1000 * body.expires_in, name, kind: "dev" });
    signedIn();
  } catch (error) {
    $("#signin-error").textContent = error.message || "Sign-in failed; check your connection.";
  }
}

function signedIn() {
  $("#fb-password").value = "";
  $("#dev-passphrase").value = "";
  $("#signin").close();
  loadFilters();
  openDeepLink();
  $("#question").focus();
}

// ---------- server-sent events over fetch ----------

function sseParser(onEvent) {
  let buffer = "";
  let name = "message";
  let data = [];
  return (text) => {
    buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(buffer);
      if (!match || (match[0] === "\r" && match.index === buffer.length - 1)) return;
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      if (line === "") {
        if (data.length) onEvent(name, data.join("\n"));
        name = "message";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") name = value;
        else if (field === "data") data.push(value);
      }
    }
  };
}

// ---------- the conversation ----------

function filters() {
  const chosen = {};
  const docType = $("#doc-type").value;
  const from = $("#date-from").value.trim();
  const to = $("#date-to").value.trim();
  const asOf = $("#as-of").value.trim();
  if (docType) chosen.doc_type = docType;
  if (asOf) chosen.as_of = asOf;
  if (from) chosen.date_from = from;
  if (to) chosen.date_to = to;
  return chosen;
}

function addTurn(question) {
  $("#empty").hidden = true;
  const node = $("#turn-template").content.firstElementChild.cloneNode(true);
  const turn = { question, route: "", text: "", citations: [], cards: new Map(), readerDefinitions: new Map(), warnings: [], final: null, error: null, node };
  $(".question", node).textContent = question;
  $(".copy", node).addEventListener("click", () => copyTurn(turn));
  $("#thread").append(node);
  state.turns.push(turn);
  return turn;
}

function renderAnswer(turn) {
  // The text with each [n] marker a link to its source, and the defined terms of each sentence links to their
  // definitions. A sentence's terms are those its own markers' documents define: the text before a marker (back to
  // the previous one) is what that marker cites, so words still waiting for their marker stay plain text.
  const box = $(".answer", turn.node);
  box.replaceChildren();
  const parts = turn.text.split(/(\[\d+\])/);
  const cited = (i) => {
    const marker = /^\[(\d+)\]$/.exec(parts[i] || "");
    return marker && turn.citations.find((c) => c.index === Number(marker[1]));
  };
  const definitions = answerDefinitions(turn);
  parts.forEach((part, i) => {
    const citation = cited(i);
    if (citation) {
      box.append(el("a", {
        class: "cite", href: `?doc=${encodeURIComponent(citation.doc_key)}&provision=${encodeURIComponent(fragmentOf(citation.provision_id || citation.section_id))}`,
        "aria-label": `Source ${citation.index}: ${citation.title}, ${citation.section}`,
        onclick: (event) => { event.preventDefault(); openReader(citation); },
      }, part));
    } else if (part) {
      const sources = [];
      for (let j = i + 1; j < parts.length && (cited(j) || !parts[j].trim()); j++) if (cited(j)) sources.push(cited(j));
      box.append(...termLinks(part, sentenceDefinitions(sources, definitions), (definition, words) => definitionLink(definition.doc_key, turn)(definition, words)));
    }
  });
}

function answerDefinitions(turn) {
  // The definitions an answer's words may link to: its own definition citations, by document, and those the reader
  // lists for each section it cites (turn.readerDefinitions, filled as the sources' cards load).
  const byDoc = new Map();
  for (const c of turn.citations) {
    const term = c.kind === "definition" ? definedTerm(c.quote) : "";
    if (!term) continue;
    const known = byDoc.get(c.doc_key) || [];
    known.push({ term, provision_id: c.provision_id || c.section_id, text: c.quote, doc_key: c.doc_key });
    byDoc.set(c.doc_key, known);
  }
  return { byDoc, bySection: turn.readerDefinitions };
}

function sentenceDefinitions(sources, { byDoc, bySection }) {
  // A sentence's terms: the definitions the answer cites from the documents the sentence cites, then those the
  // reader lists for the sections it cites (a definition limited to one section counts only there). A sentence that
  // quotes a definition does not link the term it defines to itself.
  const own = new Set(sources.filter((c) => c.kind === "definition").map((c) => definedTerm(c.quote).toLowerCase()));
  const found = [
    ...[...new Set(sources.map((c) => c.doc_key))].flatMap((docKey) => byDoc.get(docKey) || []),
    ...sources.flatMap((c) => bySection.get(c.section_id || c.provision_id) || []),
  ];
  const seen = new Set(own);
  return found.filter((d) => {
    const term = d.term.toLowerCase();
    if (seen.has(term)) return false;
    seen.add(term);
    return true;
  });
}

function setStatus(turn, text, busy) {
  const status = $(".status", turn.node);
  $(".status-text", status).textContent = text;
  status.classList.toggle("busy", busy);
  status.hidden = !text;
}

function addWarning(turn, code, message) {
  turn.warnings.push({ code, message });
  const label = WARNING_LABELS[code] || "Note";
  $(".warnings", turn.node).append(el("li", { class: `warning warning-${code}`, role: "note" }, el("strong", {}, `${label}: `), message));
}

function highlighted(text, quotes, around = Infinity) {
  // The provision's text with each quoted passage in a <mark>; a long provision is cut to the words around the quotes.
  const spans = [];
  for (const quote of [].concat(quotes || [])) {
    const at = quote ? text.indexOf(quote) : -1;
    if (at >= 0) spans.push([at, at + quote.length]);
  }
  const marks = mergedSpans(spans);
  const frag = document.createDocumentFragment();
  if (!marks.length) {
    frag.append(text.length > around ? text.slice(0, around * 2) + "…" : text);
    return { frag, found: false };
  }
  const windows = mergedSpans(marks.map(([s, e]) => [Math.max(0, s - around), Math.min(text.length, e + around)]));
  for (const [from, to] of windows) {
    if (from > 0) frag.append("…");
    let at = from;
    for (const [s, e] of marks) {
      if (s < from || e > to) continue;
      frag.append(text.slice(at, s), el("mark", {}, text.slice(s, e)));
      at = e;
    }
    frag.append(text.slice(at, to));
  }
  if (windows[windows.length - 1][1] < text.length) frag.append("…");
  return { frag, found: spans.length === [].concat(quotes || []).filter(Boolean).length };
}

function mergedSpans(spans) {
  const merged = [];
  for (const [s, e] of [...spans].sort((a, b) => a[0] - b[0])) {
    const last = merged[merged.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  return merged;
}

async function fetchProvision(docKey, fragment) {
  const key = `${docKey}#${fragment}`;
  if (!state.provisions.has(key)) {
    const pending = (async () => {
      const response = await fetch(`/api/v1/documents/${documentPath(docKey)}/provisions/${encodeURIComponent(fragment)}`, { headers: await authHeaders() });
      if (!response.ok) throw new Error(response.status === 404 ? "This provision is not available to you." : `Could not load the provision (HTTP ${response.status}).`);
      return response.json();
    })();
    state.provisions.set(key, pending);
    pending.catch(() => state.provisions.delete(key));
  }
  return state.provisions.get(key);
}

// Which consolidation of the law the quote comes from, where the corpus knows it.
function consolidated(citation) {
  return citation.consolidated ? `as consolidated on ${citation.consolidated}` : "";
}

function addSource(turn, citation) {
  // One card per cited section: it lists every [n] marker that cites it and highlights each quoted passage, so two
  // quotes from one section never repeat its text.
  $(".sources", turn.node).hidden = false;
  const key = citation.section_id || citation.provision_id;
  let card = turn.cards.get(key);
  if (!card) {
    const item = el("li", { class: "source", id: `source-${state.turns.indexOf(turn)}-${citation.index}` },
      el("p", { class: "source-title" }, el("span", { class: "source-index" }), ` ${citation.title}`),
      el("p", { class: "source-section muted" }, [citation.section, citation.heading, consolidated(citation)].filter(Boolean).join(" — ")),
      el("blockquote", { class: "provision-text" }, el("span", { class: "muted" }, "Loading the provision…")),
      el("button", { type: "button", class: "ghost open-reader", onclick: () => openReader(citation) }, "Open in reader"));
    card = { node: item, citations: [] };
    turn.cards.set(key, card);
    $(".source-list", turn.node).append(item);
  }
  card.citations.push(citation);
  card.node.dataset.index = card.citations.map((c) => c.index).join(" ");
  $(".source-index", card.node).textContent = card.citations.map((c) => `[${c.index}]`).join(" ");
  const defines = card.citations.filter((c) => c.kind === "definition").map((c) => `“${definedTerm(c.quote)}”`);
  if (defines.length) {
    const line = $(".source-defines", card.node) || el("p", { class: "source-defines muted" });
    line.textContent = `Defines ${defines.join(", ")}`;
    $(".source-section", card.node).after(line);
  }
  labelCard(card, turn);
  renderSourceText(card, turn);
}

function inAnswer(turn, citation) {
  return turn.text.includes(`[${citation.index}]`);
}

function labelCard(card, turn) {
  // The markers that cite the card's section, and, for a provision the cited ones refer to ("subject to section
  // 12"), which of them do: a reference citation supports no sentence, so it has no marker of its own in the answer.
  const shown = card.citations.filter((c) => c.kind !== "reference" || inAnswer(turn, c));
  $(".source-index", card.node).textContent = shown.map((c) => `[${c.index}]`).join(" ");
  const references = card.citations.filter((c) => c.kind === "reference");
  card.node.classList.toggle("source-reference", references.length > 0 && references.length === card.citations.length);
  if (!references.length) return;
  let line = $(".source-referred", card.node);
  if (!line) {
    line = el("p", { class: "source-referred muted" });
    ($(".source-defines", card.node) || $(".source-section", card.node)).after(line);
  }
  // A reference is referred to by a cited provision ("subject to section 12"), or itself refers to one (it is
  // "subject to" the cited section): which, is known once the provisions' links are loaded.
  const said = (c, found) => `${linkText(found)}: ${c.cite_as || `${c.title}, ${c.section}`}`;
  line.textContent = references.map((c) => said(c, { by: [], to: [] })).join("; ");
  Promise.all(references.map(async (c) => ({ by: await referrers(turn, c), to: await referred(turn, c) }))).then((found) => {
    line.textContent = references.map((c, i) => said(c, found[i])).join("; ");
    // Kept for copying, which must write to the clipboard within the click, with no wait for the links.
    turn.linkLines = Object.fromEntries(references.map((c, i) => [c.index, linkText(found[i])]));
  });
}

function linkText(found) {
  const marks = (cited) => cited.map((b) => `[${b.index}]`).join(" ");
  return found.by.length ? `Referred to by ${marks(found.by)}` : found.to.length ? `Refers to ${marks(found.to)}` : "Read with a cited provision";
}

async function referred(turn, reference) {
  // The answer's cited provisions that the reference's own section refers to: a provision quoted because it depends
  // on a cited one.
  const others = turn.citations.filter((c) => c.kind !== "reference" && inAnswer(turn, c));
  const view = await fetchProvision(reference.doc_key, fragmentOf(reference.provision_id || reference.section_id)).catch(() => null);
  const links = (view && view.refers_to) || [];
  const cites = (c) => links.some((link) => link.provision_id === c.section_id || link.provision_id.startsWith(`${c.section_id}(`));
  return others.filter(cites);
}

async function referrers(turn, reference) {
  // The answer's cited provisions whose sections refer to the reference's section, as the reader lists them.
  const others = turn.citations.filter((c) => c.kind !== "reference" && inAnswer(turn, c));
  const views = await Promise.all(others.map((c) => fetchProvision(c.doc_key, fragmentOf(c.provision_id || c.section_id)).catch(() => null)));
  const section = reference.section_id || reference.provision_id;
  const within = (id) => id === section || id.startsWith(`${section}(`);
  const by = new Map();
  others.forEach((c, i) => {
    if (views[i] && (views[i].refers_to || []).some((link) => within(link.provision_id))) by.set(c.index, c);
  });
  return [...by.values()];
}

function definedTerm(quote) {
  // The term a definition citation defines: the quoted words its quote opens with ("“spouse” means …").
  const found = /^\s*["“‘']([^"“”‘’']+)["”’']/.exec(quote || "");
  return found ? found[1].trim() : "";
}

function readerHref(docKey, provisionId, quote = "") {
  const query = `?doc=${encodeURIComponent(docKey)}&provision=${encodeURIComponent(fragmentOf(provisionId))}`;
  return quote ? `${query}&quote=${encodeURIComponent(quote)}` : query;
}

function termLinks(text, definitions, link) {
  // text as nodes, each use of a defined term in it a link made by link(definition, words): whole words, the longest
  // term first, not the quoted term that opens a definition itself.
  const terms = [...(definitions || [])].filter((d) => d.term).sort((a, b) => b.term.length - a.term.length);
  if (!terms.length) return [text];
  const escaped = terms.map((d) => d.term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\w"“‘'-])(${escaped.join("|")})(?![\\w-])`, "gi");
  const parts = [];
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    const definition = terms.find((d) => d.term.toLowerCase() === match[1].toLowerCase());
    parts.push(text.slice(at, match.index), link(definition, match[1]));
    at = match.index + match[1].length;
  }
  parts.push(text.slice(at));
  return parts.filter((part) => part !== "");
}

function linkTerms(root, definitions, link) {
  // The defined terms in root's text (outside its links) become links to their definitions (termLinks).
  if (!(definitions || []).length) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) if (!walker.currentNode.parentElement.closest("a")) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = termLinks(node.nodeValue, definitions, link);
    if (parts.length > 1 || typeof parts[0] !== "string") node.replaceWith(...parts);
  }
}

function definitionLink(docKey, turn) {
  // A defined term links to its definition: the answer's own definition citation when it has one (its source card),
  // else the defining provision in the reader.
  return (definition, words) => el("a", {
    class: "defined-term", href: readerHref(docKey, definition.provision_id, definition.text),
    title: definition.text.length > 300 ? `${definition.text.slice(0, 300)}…` : definition.text,
    onclick: (event) => { event.preventDefault(); followDefinition(docKey, definition, turn); },
  }, words);
}

function followDefinition(docKey, definition, turn) {
  const term = definition.term.toLowerCase();
  const cited = turn && turn.citations.find((c) => c.kind === "definition" && c.doc_key === docKey && definedTerm(c.quote).toLowerCase() === term);
  const card = cited && turn.cards.get(cited.section_id || cited.provision_id);
  if (card) {
    const reader = $("#reader");
    if (reader.open) reader.close();
    card.node.setAttribute("tabindex", "-1");
    card.node.scrollIntoView({ block: "center" });
    card.node.focus({ preventScroll: true });
    card.node.classList.add("flash");
    setTimeout(() => card.node.classList.remove("flash"), 1500);
    return;
  }
  showProvision(docKey, fragmentOf(definition.provision_id), definition.text);
}

function renderSourceText(card, turn) {
  const first = card.citations[0];
  const quotes = card.citations.map((c) => c.quote);
  const text = $("blockquote", card.node);
  fetchProvision(first.doc_key, fragmentOf(first.provision_id || first.section_id))
    .then((view) => {
      const { frag, found } = highlighted(view.section.text, quotes, 280);
      text.replaceChildren(frag);
      text.dataset.quoteFound = String(found);
      // The defined terms in the quoted words link to their definitions, and so do they in the answer's sentences
      // that cite this section.
      for (const mark of text.querySelectorAll("mark")) linkTerms(mark, view.definitions, definitionLink(first.doc_key, turn));
      const key = first.section_id || first.provision_id;
      if (view.definitions.length && !turn.readerDefinitions.has(key)) {
        turn.readerDefinitions.set(key, view.definitions.map((d) => ({ ...d, doc_key: first.doc_key })));
        renderAnswer(turn);
      }
    })
    .catch((error) => {
      text.replaceChildren(...quotes.map((quote) => el("mark", {}, quote)), el("span", { class: "muted" }, ` (${error.message})`));
    });
}

function resetAnswer(turn) {
  turn.text = "";
  turn.citations = [];
  turn.cards.clear();
  turn.readerDefinitions.clear();
  $(".source-list", turn.node).replaceChildren();
  $(".sources", turn.node).hidden = true;
}

function finish(turn, final) {
  turn.final = final;
  turn.text = final.answer;
  const known = new Set(turn.citations.map((c) => c.index));
  turn.citations = final.citations;
  for (const citation of final.citations) if (!known.has(citation.index)) addSource(turn, citation);
  for (const card of turn.cards.values()) labelCard(card, turn);
  renderAnswer(turn);
  $(".answer", turn.node).dataset.state = "done";
  if (final.cached && !turn.warnings.some((w) => w.code === "cached_answer")) addWarning(turn, "cached_answer", "this question was answered and verified before; the same answer is shown.");
  if (!final.verified && !turn.warnings.length) addWarning(turn, "unverified_quote", "part of this answer could not be checked against its sources.");
  renderOutcome(turn);
  $(".turn-actions", turn.node).hidden = !turn.text;
}

// ---------- what kind of reply a turn is ----------

const OUTCOME_LABELS = {
  related: "Not a direct answer",
  not_found: "Not found in the sources",
  refused: "Refused: not a legal question",
};

function outcomeOf(turn) {
  // A greeting or a request for more detail is a plain reply; otherwise the server's own word when it sends one,
  // else read from the route and the final event.
  if (turn.route === "conversational" || turn.route === "clarify") return "reply";
  if (turn.final.outcome) return turn.final.outcome;
  if (turn.route === "blocked") return "refused";
  return turn.final.abstained ? "not_found" : "answered";
}

function renderOutcome(turn) {
  // A label for a reply that is not an answer, said once: the answer's own words explain it, so the box adds only
  // what they leave out (the searches, when the answer does not list them; the filters, when some are set).
  const outcome = outcomeOf(turn);
  turn.node.dataset.outcome = outcome;
  turn.node.classList.toggle("abstained", outcome === "not_found" || outcome === "related");
  turn.node.classList.toggle("related", outcome === "related");
  turn.node.classList.toggle("refused", outcome === "refused");
  // The closest provisions to a question nothing answers are never headed as the answer's sources.
  const heading = $(".sources h3", turn.node);
  if (heading && outcome === "related") heading.textContent = "Closest provisions (not an answer)";
  const box = $(".searched", turn.node);
  const label = OUTCOME_LABELS[outcome];
  if (!label) {
    box.replaceChildren();
    box.hidden = true;
    return;
  }
  const parts = [el("p", { class: "outcome-label" }, el("strong", {}, label))];
  if (outcome === "related") {
    parts.push(el("p", { class: "muted" }, "The provisions quoted above are the closest I found and may not settle your question: read them in full, or ask again naming the law or the one situation you mean."));
  }
  if (outcome === "not_found") {
    const queries = (turn.final.research || []).map((step) => step.query).filter(Boolean);
    const unsaid = queries.filter((q) => !turn.text.includes(q));
    if (unsaid.length) parts.push(el("p", { class: "muted" }, `What I searched for: ${unsaid.map((q) => `“${q}”`).join(", ")}.`));
    if (Object.keys(turn.filters || {}).length) parts.push(el("p", { class: "muted" }, "The filters you set narrowed the search; clearing them may find more."));
  }
  box.replaceChildren(...parts);
  box.hidden = false;
}

function fail(turn, message, retry = true) {
  turn.error = message;
  turn.node.classList.add("failed");
  $(".answer", turn.node).dataset.state = "error";
  const box = $(".searched", turn.node);
  box.replaceChildren(el("p", { class: "error-text", role: "alert" }, message));
  if (retry) box.append(el("button", { type: "button", class: "ghost retry", onclick: () => { turn.node.remove(); state.turns.splice(state.turns.indexOf(turn), 1); ask(turn.question); } }, "Try again"));
  box.hidden = false;
}

async function ask(question) {
  if (state.busy || !question.trim()) return;
  if (state.config.auth_required && !savedToken()) {
    showSignIn("Please sign in to ask a question.");
    return;
  }
  state.busy = true;
  $("#send").disabled = true;
  const following = isFollowing();
  const turn = addTurn(question.trim());
  turn.filters = filters();
  if (following) revealTurn(turn);
  setStatus(turn, "Searching the law…", true);
  const answer = $(".answer", turn.node);
  let ended = false;
  const controller = new AbortController();
  state.controller = controller;
  try {
    const response = await fetch("/api/v1/query/stream", {
      method: "POST",
      signal: controller.signal,
      headers: { "content-type": "application/json", accept: "text/event-stream", ...(await authHeaders()) },
      body: JSON.stringify({ q: turn.question, session_id: state.sessionId, ...turn.filters }),
    });
    if (response.status === 401) {
      saveToken(null);
      fail(turn, "Your sign-in has expired or is missing. Please sign in, then try again.");
      showSignIn("Please sign in again to continue.");
      return;
    }
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      fail(turn, `I could not ask that: ${plainRequestError(body, response.status)}`, response.status >= 500);
      return;
    }
    const feed = sseParser((name, data) => {
      const event = JSON.parse(data);
      if (name === "meta") {
        turn.route = event.route;
        setStatus(turn, "Writing the answer…", true);
      } else if (name === "status") {
        // A sentence is written and held until it is checked against the provisions it cites.
        if (event.stage === "checking") setStatus(turn, "Checking…", true);
      } else if (name === "token") {
        setStatus(turn, "Writing the answer…", true);
        turn.text += event.text;
        answer.dataset.state = "streaming";
        renderAnswer(turn);
      } else if (name === "citation") {
        turn.citations.push(event.citation);
        addSource(turn, event.citation);
        renderAnswer(turn);
      } else if (name === "warning") {
        if (event.code === "answer_revised") resetAnswer(turn);
        addWarning(turn, event.code, event.message);
      } else if (name === "final") {
        ended = true;
        finish(turn, event);
      } else if (name === "error") {
        ended = true;
        fail(turn, `Something went wrong while answering: ${event.message}`);
      }
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      feed(value);
    }
    if (!ended) fail(turn, "The connection closed before the answer was complete.");
  } catch (error) {
    if (controller.signal.aborted) fail(turn, "Stopped.", false);
    else if (!ended) fail(turn, "The connection to the service was lost. Check your connection and try again.");
  } finally {
    if (state.controller === controller) state.controller = null;
    setStatus(turn, "", false);
    turn.node.setAttribute("aria-busy", "false");
    if (answer.dataset.state !== "done" && answer.dataset.state !== "error") answer.dataset.state = "error";
    state.busy = false;
    $("#send").disabled = false;
    saveConversation();
  }
}

async function copyTurn(turn) {
  const lines = [turn.text.trim()];
  if (turn.citations.length) {
    lines.push("", "Sources");
    for (const c of turn.citations) {
      // A provision quoted because of its link to a cited one is named by that link's direction, as its card is.
      const linked = (turn.linkLines || {})[c.index] || linkText({ by: [], to: [] });
      const lead = c.kind === "reference" && !inAnswer(turn, c) ? `${linked}:` : `[${c.index}]`;
      lines.push(`${lead} ${c.cite_as || `${c.title}, ${c.section}`}${c.heading ? ` (${c.heading})` : ""}${c.consolidated ? `, as consolidated on ${c.consolidated}` : ""}: “${c.quote}”`);
    }
  }
  const text = lines.join("\n");
  const done = $(".copied", turn.node);
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = el("textarea", { class: "visually-hidden" });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  done.textContent = "Copied";
  setTimeout(() => { done.textContent = ""; }, 2500);
}

// ---------- keeping up with the conversation ----------

function isFollowing() {
  // The reader follows the conversation unless they scrolled up far enough that the latest turn is out of sight
  // below the window: then they are reading an earlier turn, and a new one must not pull the page away.
  const last = state.turns[state.turns.length - 1];
  return !last || last.node.getBoundingClientRect().top < window.innerHeight;
}

function revealTurn(turn) {
  const calm = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  turn.node.scrollIntoView({ block: "start", behavior: calm ? "auto" : "smooth" });
}

// ---------- the question box: its length, and refusals in plain words ----------

function characters(text) {
  return [...text].length; // code points, as the API counts them
}

function questionProblem(text) {
  const length = characters(text);
  if (length <= QUESTION_LIMIT) return "";
  return `Your question is ${length.toLocaleString("en")} characters long; the limit is ${QUESTION_LIMIT.toLocaleString("en")}. Please shorten it by ${(length - QUESTION_LIMIT).toLocaleString("en")}.`;
}

function updateCounter() {
  const text = $("#question").value;
  const length = characters(text);
  const counter = $("#counter");
  counter.hidden = length < COUNTER_FROM;
  counter.textContent = counter.hidden ? "" : `${length.toLocaleString("en")} / ${QUESTION_LIMIT.toLocaleString("en")}`;
  counter.classList.toggle("over", length > QUESTION_LIMIT);
  const note = $("#question-note");
  if (note.textContent && !questionProblem(text)) note.textContent = "";
}

function plainRequestError(body, status) {
  // What the API refused, in words a person reads: fields by their plain names, never the wire names.
  const error = (body && body.error) || {};
  const details = Array.isArray(error.details) ? error.details : [];
  const said = details.map((detail) => plainProblem(detail.field, detail.problem));
  if (said.length) return said.join(" ");
  if (status === 413) return "the question is too large to send.";
  if (status === 422 || status === 400) return "the service could not read the question.";
  return error.message || `the service answered HTTP ${status}.`;
}

function plainProblem(field, problem) {
  const name = FIELD_NAMES[String(field || "").split(".")[0]] || "Part of the question";
  const words = String(problem || "");
  const most = /at most (\d+) character/.exec(words);
  if (most) return `${name} is too long: the limit is ${Number(most[1]).toLocaleString("en")} characters.`;
  if (/at least 1 character|required|missing/i.test(words)) return `${name} is empty.`;
  if (/pattern|format|date/i.test(words)) return `${name} is not in the expected form.`;
  return `${name} was not accepted.`;
}

// ---------- the reader ----------

function sectionBlock(section, role, quote, view = null) {
  const head = el("h3", {}, [section.label, section.heading].filter(Boolean).join(" — "));
  const body = el("p", { class: "provision-text" });
  if (role === "current") {
    const { frag, found } = highlighted(section.text, quote);
    body.append(frag);
    body.dataset.quoteFound = String(found);
    if (view) {
      linkReferences(body, view.refers_to);
      linkTerms(body, view.definitions, definitionLink(view.doc_key, null));
    }
  } else {
    body.append(section.text);
  }
  const notes = section.notes && section.notes.length ? el("p", { class: "muted" }, section.notes.join(" ")) : null;
  return el("section", { class: `reader-section ${role}`, dataset: { sectionId: section.section_id } }, head, body, notes);
}

function linkReferences(root, links) {
  // The referring words in the section's text ("section 12", "subsection (3)") become links to the provisions they
  // name. root's text is the section's, so a reference's place (at) picks the link for those words there; the same
  // words again later go to the nearest reference before them that has those words.
  const found = (links || []).filter((link) => link.words);
  if (!found.length) return;
  const words = [...new Set(found.map((link) => link.words))].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(`(?<!\\w)(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})(?!\\w)`, "g");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  let offset = 0;
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.parentElement.closest("a")) nodes.push([node, offset]);
    offset += node.nodeValue.length;
  }
  for (const [node, start] of nodes) {
    const text = node.nodeValue;
    const parts = [];
    let at = 0;
    for (const match of text.matchAll(pattern)) {
      const same = found.filter((link) => link.words === match[1]);
      const before = same.filter((link) => (link.at || 0) <= start + match.index);
      const link = before.length ? before.reduce((a, b) => ((b.at || 0) > (a.at || 0) ? b : a)) : same[0];
      const docKey = link.provision_id.split("#")[0];
      parts.push(text.slice(at, match.index), el("a", {
        class: "reference", href: readerHref(docKey, link.provision_id), title: link.cite_as || link.title,
        onclick: (event) => { event.preventDefault(); showProvision(docKey, fragmentOf(link.provision_id), ""); },
      }, match[1]));
      at = match.index + match[1].length;
    }
    if (!parts.length) continue;
    parts.push(text.slice(at));
    node.replaceWith(...parts);
  }
}

// The provisions that refer to the section, each opening in the reader with its referring words marked.
function referredBlock(links) {
  if (!links.length) return null;
  const items = links.map((link) => {
    const docKey = link.provision_id.split("#")[0];
    const open = el("button", { type: "button", class: "ghost referred-link", onclick: () => showProvision(docKey, fragmentOf(link.provision_id), link.words) }, link.cite_as || `${link.title}, ${fragmentOf(link.provision_id)}`);
    return el("li", {}, open, el("span", { class: "muted" }, `: “${[link.relation, link.words].filter(Boolean).join(" ")}”`));
  });
  return el("section", { class: "reader-referred", "aria-label": "Referred to by" },
    el("h3", {}, "Referred to by"), el("ul", {}, ...items));
}

// The judgments that cite the section, each opening its citing paragraph in the reader with the citing words marked.
function casesBlock(cases) {
  if (!cases.length) return null;
  const items = cases.map((c) => {
    const docKey = c.provision_id.split("#")[0];
    const open = el("button", { type: "button", class: "ghost case-link", onclick: () => showProvision(docKey, fragmentOf(c.provision_id), c.words) }, c.title);
    const more = c.paragraphs.length > 1 ? ` (${c.paragraphs.length} paragraphs)` : "";
    return el("li", {}, open, el("span", { class: "muted" }, ` ${c.cite_as}${c.decided ? `, ${c.decided}` : ""}${more}: “${c.words}”`));
  });
  return el("section", { class: "reader-cases", "aria-label": "Cases that cite this section" },
    el("h3", {}, "Cases that cite this section"), el("ul", {}, ...items));
}

async function showProvision(docKey, fragment, quote) {
  const dialog = $("#reader");
  const body = $("#reader-body");
  body.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  if (!dialog.open) dialog.showModal();
  try {
    const view = await fetchProvision(docKey, fragment);
    state.reader = view;
    $("#reader-title").textContent = view.title + (view.chapter ? ` [${/^chapter/i.test(view.chapter) ? view.chapter : `Chapter ${view.chapter}`}]` : "");
    const repealed = view.repealed_by;
    const judgment = view.judgment;
    const version = view.version || {};
    $("#reader-meta").textContent = [
      repealed ? `Repealed by ${repealed.by_section} of the ${repealed.by_title}${repealed.date ? ` from ${repealed.date}` : ""}: what it says may no longer be the law.` : "",
      judgment ? [judgment.neutral_citation, judgment.court, judgment.decided, judgment.judges.join(", ")].filter(Boolean).join(" · ") : "",
      version.consolidated ? `As consolidated on ${version.consolidated}` : "",
      version.commenced ? `In force from ${version.commenced}` : "",
      view.section.part || "",
    ].filter(Boolean).join(" · ");
    body.replaceChildren(...[
      view.previous ? sectionBlock(view.previous, "previous") : null,
      sectionBlock(view.section, "current", quote, view),
      view.next ? sectionBlock(view.next, "next") : null,
      referredBlock(view.referred_by || []),
      casesBlock(view.cited_by_cases || []),
    ].filter(Boolean));
    $("#reader-prev").disabled = !view.previous;
    $("#reader-next").disabled = !view.next;
    const mark = $(".current mark", body) || $(".current", body);
    mark.scrollIntoView({ block: "center" });
  } catch (error) {
    body.replaceChildren(el("p", { class: "error-text", role: "alert" }, error.message));
  }
}

function openReader(citation) {
  showProvision(citation.doc_key, fragmentOf(citation.provision_id || citation.section_id), citation.quote);
}

function readerStep(direction) {
  const view = state.reader;
  const target = view && (direction < 0 ? view.previous : view.next);
  if (target) showProvision(view.doc_key, fragmentOf(target.section_id), "");
}

function openDeepLink() {
  const params = new URLSearchParams(location.search);
  const doc = params.get("doc");
  const provision = params.get("provision");
  if (doc && provision) showProvision(doc, provision, params.get("quote") || "");
}

// ---------- conversations kept in this browser ----------

function saveConversation() {
  const turns = state.turns.filter((t) => t.final).map((t) => ({ question: t.question, route: t.route, final: t.final }));
  if (!turns.length) return;
  sessionStorage.setItem(STORE.session, JSON.stringify({ id: state.sessionId, turns }));
  const history = loadHistory().filter((h) => h.id !== state.sessionId);
  history.unshift({ id: state.sessionId, title: turns[0].question.slice(0, 80), turns, at: Date.now() });
  localStorage.setItem(STORE.history, JSON.stringify(history.slice(0, 20)));
  renderHistory();
}

function loadHistory() {
  try {
    return JSON.parse(localStorage.getItem(STORE.history) || "[]");
  } catch {
    return [];
  }
}

function renderHistory() {
  const history = loadHistory().filter((h) => h.id !== state.sessionId);
  $("#history").hidden = !history.length;
  $("#history-list").replaceChildren(...history.map((h) => el("li", {},
    el("button", { type: "button", class: "ghost", onclick: () => restore(h) }, h.title))));
}

function restore(conversation) {
  startConversation(conversation.id);
  for (const saved of conversation.turns) {
    const turn = addTurn(saved.question);
    turn.route = saved.route || "";
    setStatus(turn, "", false);
    turn.node.setAttribute("aria-busy", "false");
    finish(turn, saved.final);
  }
  saveConversation();
}

function startConversation(id) {
  if (state.controller) state.controller.abort(); // the server stops working on an answer nobody will read
  state.sessionId = id || newSessionId();
  state.turns = [];
  $("#thread").replaceChildren($("#empty"));
  $("#empty").hidden = false;
  sessionStorage.removeItem(STORE.session);
  renderHistory();
}

// ---------- filters ----------

async function loadFilters() {
  if (state.config.auth_required && !savedToken()) return;
  try {
    const response = await fetch("/api/v1/documents", { headers: await authHeaders() });
    if (!response.ok) return;
    const body = await response.json();
    const select = $("#doc-type");
    const current = select.value;
    select.replaceChildren(el("option", { value: "" }, "Any"), ...body.doc_types.map((t) => el("option", { value: t }, t)));
    select.value = current;
  } catch {
    // Filters are optional; the page works without them.
  }
}

// ---------- start ----------

async function start() {
  try {
    const response = await fetch("/api/v1/web/config");
    if (response.ok) state.config = await response.json();
  } catch {
    // Without the config the page assumes no sign-in; a 401 later still leads to the sign-in dialog.
  }
  document.body.dataset.ready = "true";
  renderAccount();
  const question = $("#question");
  $("#ask").addEventListener("submit", (event) => {
    event.preventDefault();
    const problem = questionProblem(question.value);
    $("#question-note").textContent = problem;
    if (problem) return; // the question stays in the box, whole, for the reader to shorten
    if (!$("#ask").reportValidity()) return;
    const q = question.value;
    if (!q.trim() || state.busy) return;
    question.value = "";
    updateCounter();
    ask(q);
  });
  question.addEventListener("input", updateCounter);
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("#ask").requestSubmit();
    }
  });
  for (const button of document.querySelectorAll(".example")) {
    button.addEventListener("click", () => { question.value = button.textContent; $("#ask").requestSubmit(); });
  }
  $("#new-conversation").addEventListener("click", () => { startConversation(); question.focus(); });
  $("#sign-in").addEventListener("click", () => showSignIn("Sign in to ask questions."));
  $("#sign-out").addEventListener("click", () => { saveToken(null); showSignIn("You have signed out."); });
  $("#firebase-form").addEventListener("submit", signInFirebase);
  $("#dev-form").addEventListener("submit", signInDev);
  $("#reader-prev").addEventListener("click", () => readerStep(-1));
  $("#reader-next").addEventListener("click", () => readerStep(1));

  let saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(STORE.session) || "null");
  } catch {
    saved = null;
  }
  if (saved && saved.id) restore(saved);
  else startConversation();

  if (state.config.auth_required && !savedToken()) {
    showSignIn();
    return;
  }
  loadFilters();
  openDeepLink();
  question.focus();
}

document.addEventListener("DOMContentLoaded", start);
