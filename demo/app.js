// The simulated device. It exchanges a judge token for an access token (kept in this
// closure only: never in storage, cookies or the page), reads the household from the rules
// resource, maps typed or spoken phrases to MCP tool calls with a small deterministic router
// (no language model) or, as an option, hands them to the assistant model (POST
// /demo/assistant, which runs hearth assistant on Bedrock), has the local demo device
// endpoint sign who is speaking, and shows every answer as a card built with textContent
// only, so returned text can never become markup.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const PROTOCOL = "2025-11-25";
  const WHY_HASH_FIELD = "trace_id";
  // How long the decision window keeps decisions (the why toolset's retention).
  const RETAINED_HOURS = 72;
  // The speaker picker's value for a host that signs nothing (Alexa+, Claude, ChatGPT): its
  // calls carry a household token and no attestation, so its orders wait for a phone.
  const HOST = "host";
  // The window the phone's pages open in: one phone, reused by every link.
  const PHONE_WINDOW = "hearth-phone";

  const state = {
    token: null,
    expiryTimer: null,
    household: null,
    turns: 0,
    rpcId: 0,
    lastTraceId: null,
    // The newest request proposed in this page: what a gullible assistant would try to
    // approve when someone merely claims authority.
    lastRequest: null,
    // Request id whose question was last read aloud to each member, and whether a guardian
    // is being asked (decide_request) or the proposer (confirm_purchase).
    questions: new Map(),
    receipts: [],
    // The household token of the host that signs nothing, fetched on its first turn.
    hostToken: null,
    audio: null,
    // Speech in flight: the /tts request still being fetched, and a counter that every stop
    // raises, so audio that arrives after a stop is never played.
    speechFetch: null,
    speechGeneration: 0,
    // The newest decision-log checkpoint this device has verified: every later trace must
    // extend it (see tlog.js).
    keptCheckpoint: null,
  };

  // ---- small DOM helpers: text only ----------------------------------------------------------
  function el(tag, options = {}, children = []) {
    const node = document.createElement(tag);
    if (options.className) node.className = options.className;
    if (options.text !== undefined) node.textContent = String(options.text);
    for (const [key, value] of Object.entries(options.data || {})) node.dataset[key] = value;
    for (const child of children) if (child) node.appendChild(child);
    return node;
  }

  function setStatus(text, isError = false) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", isError);
  }

  function money(cents) {
    return "$" + (Number(cents) / 100).toFixed(2);
  }

  // ---- connection ----------------------------------------------------------------------------
  async function connect(event) {
    event.preventDefault();
    stopSpeaking();
    const judgeToken = $("judge-token").value.trim();
    $("judge-token").value = "";
    disconnect("Connecting…");
    const response = await fetch("/oauth/judge", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ judge_token: judgeToken }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      setStatus("Could not connect: " + (body.error_description || body.error || response.status), true);
      return;
    }
    state.token = body.access_token;
    const seconds = Number(body.expires_in) || 3600;
    state.expiryTimer = setTimeout(() => disconnect("Your session expired. Paste the judge token again to reconnect.", true), seconds * 1000);
    try {
      await rpc("initialize", { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "hearth-demo", version: "1" } });
      await notify("notifications/initialized");
      // The rules name the household's members, so reading them needs a signed speaker: the
      // device offers the speakers it knows, and signs the first reading as its first member.
      const enrolled = await fetch("/demo/device", { headers: { "Authorization": "Bearer " + state.token } });
      const device = await enrolled.json();
      if (!enrolled.ok) throw new Error("the demo device is not available: " + (device.error || enrolled.status));
      const reading = { member: device.members[0].id, id: "connect-" + Date.now(), words: "what are the household rules" };
      const rules = await rpc("resources/read", { uri: "countersign://household/rules" }, await attestation(reading));
      state.household = JSON.parse(rules.json.result.contents[0].text);
    } catch (error) {
      disconnect("Could not start: " + error.message, true);
      return;
    }
    const speaker = $("speaker");
    speaker.replaceChildren();
    const owner = $("phone-owner");
    owner.replaceChildren();
    for (const member of state.household.members) {
      const label = member.name + " (" + member.role.replace("_", " ") + ")";
      speaker.appendChild(el("option", { text: label }));
      speaker.lastChild.value = member.id;
      owner.appendChild(el("option", { text: label }));
      owner.lastChild.value = member.id;
    }
    speaker.appendChild(el("option", { text: "A host that signs nothing (Alexa+, Claude, ChatGPT)" }));
    speaker.lastChild.value = HOST;
    state.hostToken = null;
    $("phone-inbox").replaceChildren();
    $("phone-status").textContent = "";
    for (const id of ["speaker", "words", "send", "phone-owner", "phone-setup"]) $(id).disabled = false;
    $("mic").disabled = !recognitionAvailable();
    setStatus("Connected to " + state.household.name + ". Token held in this page only; it expires in " + Math.round(seconds / 60) + " minutes.");
  }

  function disconnect(message, isError = false) {
    stopSpeaking();
    state.token = null;
    clearTimeout(state.expiryTimer);
    state.hostToken = null;
    for (const id of ["speaker", "words", "send", "mic", "phone-owner", "phone-setup"]) $(id).disabled = true;
    setStatus(message, isError);
  }

  // ---- MCP over Streamable HTTP (JSON responses) ----------------------------------------------
  async function post(path, body, extraHeaders = {}, signal = undefined) {
    if (!state.token) throw new Error("not connected");
    const response = await fetch(path, {
      method: "POST",
      signal,
      headers: Object.assign({
        "Authorization": "Bearer " + state.token,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
      }, extraHeaders),
      body: JSON.stringify(body),
    });
    if (response.status === 401 && extraHeaders.Authorization) {
      // The host's household token, not the page's session: drop it, and the next host turn
      // asks for a new one.
      state.hostToken = null;
      throw new Error("the host's household token was refused (expired or unlinked); try again");
    }
    if (response.status === 401) {
      disconnect("Your session expired or was revoked. Paste the judge token again to reconnect.", true);
      throw new Error("session expired");
    }
    return response;
  }

  async function rpc(method, params, headers) {
    const response = await post("/mcp", { jsonrpc: "2.0", id: ++state.rpcId, method, params }, headers);
    const text = await response.text();
    const json = JSON.parse(text);
    if (json.error) throw new Error(json.error.message);
    return { json, text };
  }

  async function notify(method) {
    await post("/mcp", { jsonrpc: "2.0", method });
  }

  // The local demo device signs what it heard; the page never sees the host key.
  async function attestation(turn) {
    const response = await post("/demo/device", {
      member_id: turn.member, turn_id: turn.id, utterances: [turn.words], answering: turn.answering || null,
    });
    const body = await response.json();
    if (!response.ok) throw new Error("the demo device could not sign: " + (body.error || response.status));
    return { "X-Countersign-Attestation": body.attestation, "X-Countersign-Signature": body.signature };
  }

  async function callTool(turn, name, args, attested) {
    const headers = turn.member === HOST
      ? { "Authorization": "Bearer " + await hostToken() }
      : attested ? await attestation(turn) : {};
    const { json, text } = await rpc("tools/call", { name, arguments: args }, headers);
    return { result: json.result, text };
  }

  // ---- the phone beside the speaker ---------------------------------------------------------
  // The household token a real host holds after account linking, minted by the local demo
  // server for its host household (POST /demo/host).
  async function hostToken() {
    if (state.hostToken) return state.hostToken;
    const response = await post("/demo/host", {});
    const body = await response.json();
    if (!response.ok) throw new Error("the demo host has no token: " + (body.error || response.status));
    state.hostToken = body.access_token;
    return state.hostToken;
  }

  // A link for the phone: its pages open in the phone's window, never in this page.
  function toPhone(text, url, testid) {
    const link = el("a", { text: "Open on the phone" });
    link.href = url;
    link.target = PHONE_WINDOW;
    link.rel = "opener";
    const item = el("li", { data: { testid } }, [el("span", { text: text }), el("br"), link]);
    $("phone-inbox").prepend(item);
    return item;
  }

  async function setUpPhone() {
    const owner = $("phone-owner").value;
    $("phone-setup").disabled = true;
    try {
      const response = await post("/demo/phone", { member_id: owner });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || String(response.status));
      toPhone("Create " + memberName(owner) + "'s passkey (this link works once, for 15 minutes).", body.url, "phone-invite");
      $("phone-status").textContent = "";
    } catch (error) {
      $("phone-status").textContent = "No passkey invite: " + error.message;
    } finally {
      $("phone-setup").disabled = !state.token;
    }
  }

  // ---- the intent router ---------------------------------------------------------------------
  const NUMBERS = { one: 1, a: 1, an: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12, couple: 2, dozen: 12 };
  const ANSWER = /^(yes|yeah|yep|sure|okay|ok|go ahead|do it|no|nope|cancel|don't|decline|approve|i approve)\b|\bi approve\b/i;

  function route(words) {
    const text = words.trim();
    let m;
    if ((m = /^(?:record|remember|note)\s+(?:that\s+)?(.+?)\s+because\s+(.+)$/i.exec(text))) return { kind: "record", action: m[1], reason: m[2] };
    if (/\bwhy\b/i.test(text)) return { kind: "why" };
    if ((m = /^ask (?:the guide|aion)\b[\s,:]*(.*)$/i.exec(text))) return { kind: "guide", question: m[1] || text };
    if (/what(?:'s| has)? changed/i.test(text)) return { kind: "changed" };
    if (/\btrace\b/i.test(text)) return { kind: "trace" };
    if (/\b(verify|check)\b.*\bledger\b/i.test(text)) return { kind: "verify" };
    if (/\breceipts?\b/i.test(text)) return { kind: "receipts" };
    if (/\bwaiting\b/i.test(text)) return { kind: "waiting" };
    if (/what did we buy|this week|\bactivity\b|\bspend/i.test(text)) return { kind: "activity" };
    if ((m = /^(?:search(?: for)?|find|look for)\s+(.+)$/i.exec(text))) return { kind: "search", query: m[1] };
    if (/\b(buy|order|purchase|get me|get the|get some)\b/i.test(text)) return { kind: "buy" };
    if (ANSWER.test(text) || /\bapprove\b/i.test(text)) return { kind: "answer" };
    return { kind: "unknown" };
  }

  function quantityIn(words) {
    const digits = /\b(\d{1,2})\b/.exec(words);
    if (digits) return Number(digits[1]);
    if (/half a dozen/i.test(words)) return 6;
    for (const token of words.toLowerCase().split(/[^a-z]+/)) {
      if (token in NUMBERS && !["a", "an"].includes(token)) return NUMBERS[token];
    }
    return 1;
  }

  function queryIn(words) {
    return words.replace(/\b(please|buy|order|purchase|get|me|some|the|a|an|of|packs?|boxes|box|from|\d+|one|two|three|four|five|six|seven|eight|nine|ten|couple|dozen)\b/gi, " ").replace(/\s+/g, " ").trim() || words;
  }

  function chooseVariant(product, words) {
    const said = new Set(words.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean));
    let best = product.variants[0], bestScore = 0;
    for (const variant of product.variants) {
      const score = variant.label.toLowerCase().split(/[^a-z0-9]+/).filter((t) => said.has(t)).length;
      if (score > bestScore) { best = variant; bestScore = score; }
    }
    return best;
  }

  // The assistant option: the model chooses the tools (hearth assistant, on the server), and
  // the page still plays the device: it remembers the question read aloud to each person.
  async function askAssistant(turn) {
    const question = state.questions.get(turn.member);
    const response = await post("/demo/assistant", {
      member_id: turn.member, words: turn.words, answering: question ? question.id : null,
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) return noteCard(turn, "The assistant could not answer: " + (body.error || response.status));
    if (body.question.kind === "asked") state.questions.set(turn.member, { id: body.question.request_id, guardian: false });
    if (body.question.kind === "settled") state.questions.delete(turn.member);
    return assistantCard(turn, body);
  }

  async function handle(words) {
    const member = $("speaker").value;
    const turn = { id: "demo-" + Date.now().toString(36) + "-" + (++state.turns), member, words };
    if ($("router").value === "assistant") {
      if (member === HOST) return noteCard(turn, "The assistant option plays a device that signs who speaks. Pick a member, or set Who picks the tools back to Phrase rules.");
      return askAssistant(turn);
    }
    const intent = route(words);
    // A household token names its household itself; the credential's turns name theirs.
    const household = member === HOST ? undefined : state.household.household_id;
    const name = memberName(member);
    switch (intent.kind) {
      case "record": {
        const { result, text } = await callTool(turn, "record_decision", {
          household_id: household, action: intent.action, reason: intent.reason, inputs: {}, approver: name,
        }, false);
        if (!result.isError) state.lastTraceId = result.structuredContent.trace_id;
        return recordCard(turn, result, text);
      }
      case "why": {
        const { result } = await callTool(turn, "explain_why", { household_id: household, question: words }, false);
        if (!result.isError) state.lastTraceId = result.structuredContent.trace_id;
        return whyCard(turn, result);
      }
      case "changed": {
        // Decisions are kept for 72 hours, so "what changed" covers exactly that window.
        const since = new Date(Date.now() - RETAINED_HOURS * 3600 * 1000);
        const { result } = await callTool(turn, "whats_changed", { household_id: household, since: since.toISOString() }, false);
        return changedCard(turn, result, since);
      }
      case "guide": {
        const { result } = await callTool(turn, "ask_aion", { question: intent.question }, false);
        return guideCard(turn, result);
      }
      case "trace": {
        if (!state.lastTraceId) return noteCard(turn, "Record or ask about a decision first; then ask for its trace.");
        const { result, text } = await callTool(turn, "get_trace", { household_id: household, trace_id: state.lastTraceId }, false);
        return traceCard(turn, result, text);
      }
      case "search": {
        const { result } = await callTool(turn, "search_products", { query: intent.query, max_results: 5 }, false);
        return searchCard(turn, "search_products", result);
      }
      case "buy": {
        const found = await callTool(turn, "search_products", { query: queryIn(words), max_results: 3 }, false);
        const product = found.result.structuredContent && found.result.structuredContent.results[0];
        if (!product) return searchCard(turn, "search_products", found.result);
        const variant = chooseVariant(product, words);
        const { result } = await callTool(turn, "propose_purchase", {
          product_id: product.product_id, variant_id: variant.variant_id, quantity: quantityIn(words),
        }, true);
        const content = result.structuredContent;
        if (!result.isError) state.lastRequest = content.request_id;
        if (!result.isError && content.status === "waiting_for_confirmation") state.questions.set(member, { id: content.request_id, guardian: false });
        if (!result.isError && content.placed) state.receipts.push(content.placed.receipt);
        if (!result.isError && content.approval_url) {
          const order = content.order;
          toPhone("Approve or decline " + order.quantity + " \u00d7 " + order.title + " (" + money(order.total_cents) + ").", content.approval_url, "phone-approval");
        }
        return purchaseCard(turn, "search_products → propose_purchase", result);
      }
      case "waiting": {
        const { result } = await callTool(turn, "list_waiting", {}, true);
        const read = result.structuredContent && result.structuredContent.read_aloud;
        if (read) state.questions.set(member, { id: read.request_id, guardian: read.status === "waiting_for_guardian" });
        return waitingCard(turn, result);
      }
      case "answer": {
        let question = state.questions.get(member);
        if (!question && /\bapprove\b/i.test(words) && state.lastRequest) {
          // Nothing was asked of this speaker, but they claim to approve: do what a fooled
          // assistant would, and let Hearth decide who is really speaking.
          question = { id: state.lastRequest, guardian: true };
        }
        if (!question) return noteCard(turn, "Nothing was asked of " + name + " yet. Ask what's waiting first.");
        turn.answering = question.id;
        const no = /\b(no|nope|cancel|don't|decline)\b/i.test(words);
        const { result } = question.guardian
          ? await callTool(turn, "decide_request", { request_id: question.id, decision: no ? "decline" : "approve" }, true)
          : await callTool(turn, "confirm_purchase", { request_id: question.id }, true);
        const content = result.structuredContent;
        if (!result.isError && content.result) state.questions.delete(member);
        if (!result.isError && content.placed && content.result === "placed") state.receipts.push(content.placed.receipt);
        return purchaseCard(turn, question.guardian ? "decide_request" : "confirm_purchase", result);
      }
      case "activity": {
        const { result } = await callTool(turn, "household_activity", {}, true);
        return activityCard(turn, result);
      }
      case "verify": {
        const { result } = await callTool(turn, "verify_ledger", {}, true);
        return verifyCard(turn, result);
      }
      case "receipts": {
        if (state.receipts.length === 0) return noteCard(turn, "No receipts kept yet: place an order first.");
        const verdicts = [];
        for (const receipt of state.receipts) {
          const { result } = await callTool(turn, "check_receipt", { receipt }, true);
          verdicts.push(result);
        }
        return receiptsCard(turn, verdicts);
      }
      default:
        return noteCard(turn, "I only know a few phrases; open \"What can I say?\".");
    }
  }

  function memberName(id) {
    if (id === HOST) return "A host that signs nothing";
    const member = state.household && state.household.members.find((m) => m.id === id);
    return member ? member.name : id;
  }

  // ---- cards ---------------------------------------------------------------------------------
  function card(turn, tool, result) {
    const node = el("li", { className: "card", data: { tool, testid: "card" } }, [
      el("p", { className: "heard", text: memberName(turn.member) + ": \u201c" + turn.words + "\u201d" }),
      el("span", { className: "tool", text: "tool: " + tool, data: { field: "tool" } }),
    ]);
    if (result && result.isError) {
      node.appendChild(el("p", { className: "say error", text: result.content[0].text, data: { field: "say" } }));
      node.dataset.error = "true";
    } else if (result && result.structuredContent && result.structuredContent.say) {
      node.appendChild(el("p", { className: "say", text: result.structuredContent.say, data: { field: "say" } }));
    }
    $("cards").prepend(node);
    return node;
  }

  function list(items, field) {
    return el("ul", { data: { field } }, items.map((item) => el("li", { text: item })));
  }

  function pairs(entries) {
    const dl = el("dl");
    for (const [term, value, field] of entries) {
      dl.appendChild(el("dt", { text: term }));
      dl.appendChild(el("dd", { text: value, data: field ? { field } : {} }));
    }
    return dl;
  }

  function noteCard(turn, message) {
    const node = card(turn, "none", null);
    node.appendChild(el("p", { className: "say", text: message, data: { field: "say" } }));
    return node;
  }

  function recordCard(turn, result) {
    const node = card(turn, "record_decision", result);
    if (result.isError) return node;
    const record = result.structuredContent;
    node.appendChild(el("p", { className: "say", text: "Recorded \u201c" + record.action + "\u201d.", data: { field: "say" } }));
    node.appendChild(pairs([["Reason", record.reason], ["Trace", record.trace_id.slice(0, 16) + "…", "trace"], ["Seq", record.seq]]));
    return node;
  }

  function whyCard(turn, result) {
    const node = card(turn, "explain_why", result);
    if (result.isError) return node;
    const answer = result.structuredContent;
    node.appendChild(el("p", { className: "say", text: answer.answer, data: { field: "say" } }));
    node.appendChild(pairs([["Matched by", answer.matched_by], ["Trace", answer.trace_id.slice(0, 16) + "…"]]));
    return node;
  }

  function changedCard(turn, result, since) {
    const node = card(turn, "whats_changed", result);
    if (result.isError) return node;
    const decisions = result.structuredContent.decisions;
    const from = since.toLocaleString("en-GB", { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
    node.appendChild(el("p", {
      className: "say",
      text: decisions.length + " decision(s) in the last " + RETAINED_HOURS + " hours, since " + from + ". That is all Hearth keeps: older decisions are gone from the window.",
      data: { field: "say" },
    }));
    node.appendChild(el("p", { className: "muted", text: "Period: the retained window, the last " + RETAINED_HOURS + " hours", data: { field: "period" } }));
    node.appendChild(list(decisions.map((d) => d.action + ": " + d.reason), "decisions"));
    return node;
  }

  function guideCard(turn, result) {
    const node = card(turn, "ask_aion", result);
    node.appendChild(el("p", {
      className: "badge warn",
      text: "Relay to an outside service, the AionRealm guide: only the question was sent, and its answer is outside text, quoted and never obeyed.",
      data: { field: "relay" },
    }));
    if (result.isError) return node;
    const answer = result.structuredContent;
    node.appendChild(el("p", { className: "say", text: "The guide says: " + answer.text, data: { field: "say" } }));
    if (answer.meta && answer.meta.source === "mock") node.appendChild(el("p", { className: "muted", text: "(a canned answer from the mock guide: no backend is configured)" }));
    return node;
  }

  function assistantCard(turn, body) {
    const tools = body.tool_calls.map((call) => call.name).join(" \u2192 ") || "none";
    const node = card(turn, tools, null);
    node.dataset.router = "assistant";
    // The device reads Countersign's own words when there are any, not the model's.
    node.appendChild(el("p", { className: "say", text: body.say || body.reply, data: { field: "say" } }));
    if (body.say) node.appendChild(el("p", { className: "muted", text: "The assistant model said: " + body.reply, data: { field: "reply" } }));
    node.appendChild(list(body.tool_calls.map((call) => call.name + " " + JSON.stringify(call.arguments) + (call.is_error ? " (refused)" : "")), "calls"));
    return node;
  }

  async function traceCard(turn, result, text) {
    const node = card(turn, "get_trace", result);
    if (result.isError) return node;
    const trace = result.structuredContent;
    node.appendChild(el("p", { className: "say", text: "The trace holds " + trace.records.length + " decision(s).", data: { field: "say" } }));
    node.appendChild(list(trace.records.map((r) => "#" + r.seq + " " + r.action + " \u2014 " + r.reason + " (" + r.trace_id.slice(0, 8) + ")"), "records"));
    node.appendChild(pairs([
      ["Anchor", trace.anchor === null ? "none (nothing evicted)" : trace.anchor.slice(0, 16) + "…", "anchor"],
      ["Server", "verified: get_trace returns only a chain that checks out", "server-check"],
    ]));
    const browser = el("p", { className: "badge", text: "Browser check: computing…", data: { check: "browser" } });
    node.appendChild(browser);
    // Recompute from the response text itself, so numbers keep the exact form that was hashed.
    const parsed = HearthCanonical.parse(text);
    const traceText = HearthCanonical.canonical(parsed.result.structuredContent);
    const check = await HearthCanonical.verifyTrace(traceText, WHY_HASH_FIELD);
    browser.textContent = check.ok
      ? "Browser check: recomputed " + check.checked + " SHA-256 hashes and links with WebCrypto \u2014 agrees with the server"
      : "Browser check FAILED: " + check.problem + " \u2014 disagrees with the server";
    browser.classList.add(check.ok ? "good" : "bad");
    browser.dataset.agrees = String(check.ok);
    const log = el("p", { className: "badge", text: "Log check: computing…", data: { check: "log" } });
    node.appendChild(log);
    const household = state.household.household_id;
    const history = async (fromSize) => {
      const asked = await callTool(turn, "prove_history", { household_id: household, log: "decisions", from_size: fromSize }, false);
      if (!asked.result.isError) return asked.result.structuredContent;
      // A kept checkpoint larger than the log: fetch the newest to show how it shrank.
      const newest = await callTool(turn, "prove_history", { household_id: household, log: "decisions", from_size: 0 }, false);
      if (newest.result.isError) throw new Error("the server proves no history");
      return newest.result.structuredContent;
    };
    const verdict = await HearthLog.checkTrace(trace, state.keptCheckpoint, history);
    state.keptCheckpoint = verdict.checkpoint;
    log.textContent = verdict.ok
      ? "Log check: " + verdict.text + " \u2014 verified in this browser with the published key"
      : "Log check FAILED: " + verdict.text;
    log.classList.add(verdict.ok ? "good" : "bad");
    log.dataset.agrees = String(verdict.ok);
    if (verdict.warning) {
      node.appendChild(el("p", { className: "badge warn", text: "Log warning: " + verdict.warning, data: { check: "log-warning" } }));
    }
    return node;
  }

  function searchCard(turn, tool, result) {
    const node = card(turn, tool, result);
    if (result.isError) return node;
    const items = el("ul", { data: { field: "results" } });
    for (const product of result.structuredContent.results) {
      const prices = product.variants.map((v) => v.label + " " + v.price).join(" · ");
      items.appendChild(el("li", {}, [
        el("strong", { text: product.title }),
        el("span", { text: " from " + product.merchant + ": " + prices }),
        el("div", { className: "untrusted", text: "Listing (seller's words): " + product.listing_text, data: { field: "listing" } }),
      ]));
    }
    node.appendChild(items);
    return node;
  }

  function outcomeBadge(value) {
    const tone = { placed: "good", needs_confirmation: "warn", needs_guardian: "warn", blocked: "bad", cancelled: "bad", declined: "bad", waiting_for_confirmation: "warn", waiting_for_guardian: "warn", needs_approval: "warn", waiting_for_approval: "warn", expired: "bad" }[value] || "";
    return el("span", { className: "badge " + tone, text: String(value).replaceAll("_", " "), data: { field: "outcome" } });
  }

  function purchaseCard(turn, tool, result) {
    const node = card(turn, tool, result);
    if (result.isError) return node;
    const content = result.structuredContent;
    node.appendChild(outcomeBadge(content.outcome || content.result || content.status));
    const order = content.order;
    node.appendChild(pairs([
      ["Order", order.quantity + " \u00d7 " + order.title + ", " + order.variant + " from " + order.merchant],
      ["Total", money(order.total_cents)],
      ["Request", content.request_id],
      ["Order number", content.placed ? content.placed.order_id : "\u2014", "order-id"],
    ]));
    if (content.reasons && content.reasons.length) node.appendChild(list(content.reasons, "reasons"));
    return node;
  }

  function waitingCard(turn, result) {
    const node = card(turn, "list_waiting", result);
    if (result.isError) return node;
    const read = result.structuredContent.read_aloud;
    if (read) node.appendChild(outcomeBadge(read.status));
    return node;
  }

  function activityCard(turn, result) {
    const node = card(turn, "household_activity", result);
    if (result.isError) return node;
    const a = result.structuredContent;
    const spent = a.spent_cents || 0;
    const share = Math.min(100, Math.round((spent / a.budget_cents) * 100));
    const bar = el("div", { className: "bar" + (spent > a.budget_cents ? " over" : "") }, [el("span")]);
    bar.firstChild.style.width = share + "%";
    node.appendChild(el("div", { className: "chart", data: { field: "chart" } }, [
      el("span", { text: "This week: " + money(spent) + " of " + money(a.budget_cents) + " (" + share + "%)", data: { field: "spend" } }),
      bar,
    ]));
    node.appendChild(list(a.placed.map((p) => p.order.title + " \u2014 " + money(p.order.total_cents) + " (" + memberName(p.requested_by) + ")"), "placed"));
    node.appendChild(pairs([
      ["Stopped", String(a.stopped.length)],
      ["Waiting", String(a.waiting.length)],
      ["Ledger", a.ledger.intact ? a.ledger.entries + " entries check out" : "altered at entry " + a.ledger.first_bad_entry, "ledger"],
    ]));
    return node;
  }

  function verifyCard(turn, result) {
    const node = card(turn, "verify_ledger", result);
    if (result.isError) return node;
    const check = result.structuredContent.check;
    node.appendChild(el("span", { className: "badge " + (check.intact ? "good" : "bad"), text: check.intact ? "intact" : "altered at entry " + check.first_bad_entry, data: { field: "outcome" } }));
    return node;
  }

  function receiptsCard(turn, results) {
    const node = card(turn, "check_receipt", null);
    node.appendChild(list(results.map((r) => r.isError ? r.content[0].text : r.structuredContent.say), "verdicts"));
    return node;
  }

  // ---- speech --------------------------------------------------------------------------------
  // Stops speech that is playing and speech still being fetched: Stop, turning speech off,
  // reconnecting and the microphone all call this.
  function stopSpeaking() {
    state.speechGeneration++;
    if (state.speechFetch) { state.speechFetch.abort(); state.speechFetch = null; }
    if (state.audio) { state.audio.pause(); URL.revokeObjectURL(state.audio.src); state.audio = null; }
    if (window.speechSynthesis) window.speechSynthesis.cancel();
  }

  async function speak(text) {
    if (!$("read-aloud").checked || !text) return;
    stopSpeaking();
    const generation = state.speechGeneration;
    const stopped = () => generation !== state.speechGeneration;
    const fetching = new AbortController();
    state.speechFetch = fetching;
    try {
      const response = await post("/tts", { text: text.slice(0, 300) }, {}, fetching.signal);
      if (stopped()) return;
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        $("speech-status").textContent = "Amazon Polly is unavailable (" + (body.reason || body.error || response.status) + "); using this browser's voice.";
        throw new Error("tts " + response.status);
      }
      const blob = await response.blob();
      if (stopped()) return;
      const audio = new Audio(URL.createObjectURL(blob));
      state.audio = audio;
      await audio.play();
    } catch (_error) {
      if (!stopped()) browserVoice(text);
    } finally {
      if (state.speechFetch === fetching) state.speechFetch = null;
    }
  }

  // Polly failed: an installed English voice, natural or neural ones first; none, no speech.
  function browserVoice(text) {
    if (!window.speechSynthesis) return;
    const voices = window.speechSynthesis.getVoices().filter((v) => /^en(-|_|$)/i.test(v.lang));
    const preferred = voices.find((v) => /natural|neural|enhanced|premium|google|siri/i.test(v.name))
      || voices.find((v) => /^en-US$/i.test(v.lang)) || voices[0];
    if (!preferred) return;
    const utterance = new SpeechSynthesisUtterance(text);
    utterance.voice = preferred;
    utterance.lang = preferred.lang;
    window.speechSynthesis.speak(utterance);
  }

  function recognitionAvailable() {
    return Boolean(window.SpeechRecognition || window.webkitSpeechRecognition);
  }

  function listen() {
    stopSpeaking();
    const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
    const recognition = new Recognition();
    recognition.lang = "en-US";
    recognition.interimResults = false;
    recognition.onresult = (event) => {
      $("words").value = event.results[0][0].transcript;
      $("talk").requestSubmit();
    };
    recognition.onerror = (event) => setStatus("The microphone did not hear anything (" + event.error + ").", true);
    try {
      recognition.start();
    } catch (error) {
      setStatus("The microphone could not start: " + error.message, true);
    }
  }

  // ---- wiring --------------------------------------------------------------------------------
  async function talk(event) {
    event.preventDefault();
    const words = $("words").value.trim();
    if (!words || !state.token) return;
    $("words").value = "";
    $("send").disabled = true;
    try {
      const node = await handle(words);
      const spoken = node && node.querySelector("[data-field=say]");
      if (spoken) speak(spoken.textContent);
    } catch (error) {
      noteCard({ member: $("speaker").value, words }, "Something went wrong: " + error.message);
    } finally {
      $("send").disabled = !state.token;
      document.body.dataset.busy = "false";
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("connect").addEventListener("submit", connect);
    $("talk").addEventListener("submit", (event) => { document.body.dataset.busy = "true"; talk(event); });
    $("stop").addEventListener("click", stopSpeaking);
    $("read-aloud").addEventListener("change", () => { if (!$("read-aloud").checked) stopSpeaking(); });
    $("mic").addEventListener("click", listen);
    $("phone-setup").addEventListener("click", setUpPhone);
  });
})();
