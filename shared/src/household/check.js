// The household page checks, on the phone, every history entry it shows, with the demo's own
// verification code (demo/canonical.js and demo/tlog.js, loaded first) and no server help:
//
// - each log's retained records hash to what they say and link up (HearthCanonical), and
//   each is in the log under a checkpoint signed by a published log key, cosigned by the
//   witnesses the published policy asks for (HearthLog.checkWindow);
// - every entry the page shows is among those records, under the same words (a decision's
//   action; an order's product, quantity and prices);
// - on the first visit the phone pins, in this browser's storage, the log keys, the
//   witnesses and each log's newest checkpoint; on every later visit the log must extend the
//   pinned checkpoint (a consistency proof), and the pins move on.
//
// A failed check replaces the history with a warning that begins "This history cannot be
// trusted". A key or witness change the phone cannot account for is a warning the member may
// accept ("Trust this change"); a log reset the new log itself records is shown as a reset.
// Nothing here is marked as checked unless it was.
"use strict";

(function () {
  const main = document.querySelector('main[data-page="household"]');
  const status = document.getElementById("history-check");
  if (!main || !status) return;
  if (!window.HearthLog || !window.HearthCanonical) {
    status.dataset.verdict = "error";
    status.textContent = "Not checked: the page's checking code did not load. Reload the page in a minute.";
    return;
  }
  const pagePath = location.pathname.replace(/\/+$/, "");
  const base = pagePath.replace(/\/household$/, "");
  const storageKey = "hearth.pins." + main.dataset.household;
  const sections = [...document.querySelectorAll("[data-history]")];
  const logs = [...new Set(sections.flatMap((section) => section.dataset.history.split(" ")))];
  const NAMES = { decisions: "decisions log", ledger: "orders ledger" };
  const NEXT_STEP = "Do not rely on what this page showed until whoever runs Hearth has looked: "
    + "tell them what failed. This phone keeps what it saw before, so it warns again until then.";

  // A failed check: the history is replaced by the warning.
  class Untrusted extends Error {}
  // The page is older than the evidence it is checked against: it is loaded again, once.
  class Stale extends Error {}
  const RECHECKED = "hearth.rechecked";

  function readPins() {
    try {
      const pins = JSON.parse(localStorage.getItem(storageKey));
      return pins && pins.version === 1 ? pins : null;
    } catch (_) {
      return null;
    }
  }

  // Another tab may have pinned a later checkpoint of the same log meanwhile: it stays.
  function keep(pins) {
    const stored = readPins();
    for (const [log, pin] of Object.entries((stored && stored.logs) || {})) {
      const mine = pins.logs[log];
      if (mine && identity(mine.origin) === identity(pin.origin) && pin.size > mine.size) pins.logs[log] = pin;
    }
    localStorage.setItem(storageKey, JSON.stringify(pins));
  }

  // Every read asks the server again: the published keys may be cached for minutes, and a
  // rotation must be seen as soon as the checkpoints carry the new key.
  async function read(path, as) {
    const answer = await fetch(path, { credentials: "same-origin", cache: "no-cache" });
    const text = await answer.text();
    if (answer.ok) return as === "text" ? text : { body: JSON.parse(text), text };
    let message = "";
    try { message = JSON.parse(text).message || ""; } catch (_) { /* not JSON */ }
    if (answer.status === 409) throw new Untrusted(message.replace(/^This history cannot be trusted: /, ""));
    throw new Error(message || "Hearth did not answer. Reload the page in a minute.");
  }

  // The witnesses (name to key) and the rules over them (groups and quorum) of a policy text;
  // its log lines are the keys, pinned apart.
  function witnessShape(text) {
    const witnesses = {};
    const rules = [];
    for (const line of text.split("\n")) {
      const items = line.trim().split(/[ \t]+/).filter(Boolean);
      if (items[0] === "witness") witnesses[items[1]] = items[2];
      else if (items[0] === "group" || items[0] === "quorum") rules.push(items.join(" "));
    }
    return { witnesses, rules: rules.sort().join("\n") };
  }

  // A log's identity in an origin `<host>/hearth/<log id>/<kind>/<epoch>`, the host aside: a
  // deployment that changed its host names the same logs.
  function identity(origin) {
    return origin.split("/").slice(-3).join("/");
  }

  function logIdOf(origin) {
    return origin.split("/").slice(-3)[0];
  }

  const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
  // Cents as the page writes them (countersign::money::dollars).
  const dollars = (cents) => "$" + Math.floor(cents / 100) + "." + String(cents % 100).padStart(2, "0");
  const same = (a, b) => a.length === b.length && a.every((byte, i) => byte === b[i]);

  // What changed in the published keys since the pins, as warnings: a rotation is published
  // when a key this phone pinned is still published (signing, or verify-only after the
  // switch), and an earlier key is one this phone saw.
  function keyChanges(pinned, published) {
    const changes = [];
    if (!published.some((key) => pinned.includes(key.public_key))) {
      changes.push("The log's key changed, and no key this phone knew is published any more, so no announced rotation explains it.");
    }
    const unseen = published.filter((key) => key.verify_only && !pinned.includes(key.public_key));
    if (unseen.length) {
      changes.push("Hearth now also trusts an earlier log key this phone never saw (" + unseen.map((key) => key.name).join(", ") + ").");
    }
    return changes;
  }

  function witnessChanges(pinned, now) {
    const changes = [];
    const added = Object.keys(now.witnesses).filter((name) => pinned.witnesses[name] !== now.witnesses[name]);
    const removed = Object.keys(pinned.witnesses).filter((name) => pinned.witnesses[name] !== now.witnesses[name]);
    if (added.length) changes.push("A witness was added or its key changed: " + added.join(", ") + ".");
    if (removed.length) changes.push("A witness was removed or its key changed: " + removed.join(", ") + ".");
    if (pinned.rules !== now.rules) changes.push("The number of witnesses that must cosign changed.");
    return changes;
  }

  // The reset the new log records in its first entry, if it names the log this phone kept.
  // A decision log's first entry leaves its window within days; the ledger records the reset
  // too, and keeps it a year (`fromLedger`).
  async function recordedReset(log, evidence, window, kept, fromLedger) {
    const first = evidence.records.find((record) => window.proved.get(record[evidence.hash_field]) === 0) || {};
    const named = (id, origin) => id === logIdOf(kept.origin) || origin === kept.origin;
    if (log === "ledger" && first.kind === "log_reset" && named(first.previous_log_id, first.previous_origin)) {
      return { at: first.at, size: first.previous_size };
    }
    const inputs = first.inputs || {};
    if (log === "decisions" && first.action === "start a new decision log" && first.approver === "the operator"
        && named(inputs.previous_log_id, inputs.previous_origin)) {
      return { at: first.recorded_at, size: inputs.previous_size };
    }
    return log === "decisions" ? fromLedger(kept, window.checkpoint) : null;
  }

  // The ledger's record of a decision log reset: a proved entry naming the log this phone kept
  // and the one it now sees.
  function decisionResetIn(ledger, kept, now) {
    if (!ledger.window) return null;
    const entry = ledger.evidence.records.find((record) => record.kind === "decision_log_reset"
      && ledger.window.proved.has(record.entry_hash)
      && identity(record.origin) === identity(now.origin)
      && (record.previous_log_id === logIdOf(kept.origin) || record.previous_origin === kept.origin));
    return entry ? { at: entry.at, size: entry.previous_size } : null;
  }

  // A log whose window keeps nothing now (a decision window ends 72 hours after it began)
  // must still extend the checkpoint kept: its size then.
  async function stillExtends(log, kept, keys) {
    const name = NAMES[log];
    let history;
    try {
      history = (await read(pagePath + "/log/" + log + "/history?from_size=" + kept.size)).body;
    } catch (error) {
      if (error instanceof Untrusted) throw error;
      throw new Untrusted("the " + name + " this phone kept is gone (" + error.message.replace(/\.$/, "") + ")");
    }
    try {
      const newest = await HearthLog.verifiedCheckpoint(history.checkpoint, keys);
      if (identity(newest.origin) !== identity(kept.origin)) throw new Error("it is another log, and records no reset");
      await HearthLog.checkConsistency(kept.size, HearthLog.fromBase64(kept.root), newest.size, newest.root, history.consistency.map(HearthLog.fromBase64));
      return newest;
    } catch (error) {
      throw new Untrusted("the " + name + " does not extend what this phone saw before: " + error.message);
    }
  }

  // One log, checked: its records and proofs, and how they stand to the checkpoint kept.
  async function checkLog(log, kept, keys, policy, fromLedger) {
    const name = NAMES[log];
    for (let attempt = 0; attempt < 3; attempt++) {
      const { body: evidence, text } = await read(pagePath + "/log/" + log);
      const chain = await HearthCanonical.verifyTrace(text, evidence.hash_field);
      if (!chain.ok) throw new Untrusted("in the " + name + ", " + chain.problem);
      if (!evidence.checkpoint) {
        // Nothing signed to check against. That is a server without a log key, or a household
        // with nothing yet, unless this phone kept a signed checkpoint of this log: then the
        // log must still be there, extending it, and records must come with it.
        if (!kept) return { log, evidence, empty: !evidence.records.length, unsigned: evidence.records.length > 0 };
        if (evidence.records.length) throw new Untrusted("the " + name + " comes with no signed checkpoint, though this phone kept one");
        return { log, evidence, empty: true, newest: await stillExtends(log, kept, keys) };
      }
      let window;
      try {
        window = await HearthLog.checkWindow(evidence, keys, policy);
      } catch (error) {
        throw new Untrusted("in the " + name + ", " + error.message);
      }
      const now = window.checkpoint;
      const result = { log, evidence, window };
      if (!kept) return result;
      if (identity(kept.origin) !== identity(now.origin)) {
        result.reset = await recordedReset(log, evidence, window, kept, fromLedger);
        if (!result.reset) throw new Untrusted("a new " + name + " replaced the one this phone kept, and it records no reset");
        // A reset names the size the old log had: smaller than this phone saw, it was rolled
        // back first.
        if (!(result.reset.size >= kept.size)) {
          throw new Untrusted("the " + name + " was reset from " + (result.reset.size === undefined || result.reset.size === null
            ? "a log whose head was gone" : result.reset.size + " entries") + ", fewer than the " + kept.size + " this phone saw");
        }
        return result;
      }
      const keptRoot = HearthLog.fromBase64(kept.root);
      if (now.size < kept.size) {
        throw new Untrusted("the " + name + " shrank from " + kept.size + " to " + now.size
          + " entries: it was rolled back to an older state, or entries were removed");
      }
      result.extends = kept.size;
      if (now.size === kept.size) {
        if (!same(now.root, keptRoot)) throw new Untrusted("the " + name + " forked: two different logs of " + now.size + " entries");
        return result;
      }
      const { body: history } = await read(pagePath + "/log/" + log + "/history?from_size=" + kept.size);
      let newest;
      try {
        newest = await HearthLog.verifiedCheckpoint(history.checkpoint, keys);
        // The log moved on between the two reads: read both again.
        if (identity(newest.origin) !== identity(now.origin) || newest.size !== now.size) continue;
        await HearthLog.checkConsistency(kept.size, keptRoot, newest.size, newest.root, history.consistency.map(HearthLog.fromBase64));
      } catch (error) {
        throw new Untrusted("the " + name + " does not extend what this phone saw before: " + error.message);
      }
      if (!same(newest.root, now.root)) throw new Untrusted("the " + name + " forked: two different logs of " + now.size + " entries");
      return result;
    }
    throw new Error("The household's logs kept changing while this phone checked them. Reload the page.");
  }

  // Every entry the page shows must be a checked record with the same words; an entry from
  // before the log began is marked as not checked.
  function bindEntries(results) {
    let unchecked = 0;
    for (const item of document.querySelectorAll("[data-history] [data-log]")) {
      const result = results[item.dataset.log];
      const { evidence, window } = result;
      const field = evidence.hash_field;
      let records;
      let words;
      if (item.dataset.log === "decisions") {
        records = evidence.records.filter((record) => record[field] === item.dataset.entry);
        words = records[0] && records[0].action;
      } else {
        records = evidence.records.filter((record) => record.request_id === item.dataset.request);
        const proposal = records.find((record) => record.kind === "proposal");
        words = proposal && proposal.title;
        // The quantity and prices shown are the proposal's own.
        if (proposal && !item.textContent.includes(proposal.quantity + " \u00d7 " + dollars(proposal.unit_price_cents)
            + " = " + dollars(proposal.total_cents))) {
          throw new Untrusted("the page shows an order of the orders ledger at another quantity or price than its record");
        }
      }
      const shown = (item.querySelector("strong") || {}).textContent;
      if (!records.length || words === undefined) {
        // Recorded since the page was made, and the entry shown left the window: the page is
        // older than the evidence. It is made again once before this counts as a failure.
        if (!sessionStorage.getItem(RECHECKED)) throw new Stale();
        throw new Untrusted("the page shows an entry of the " + NAMES[item.dataset.log] + " that is not among its records");
      }
      // As the browser reads the page's text: line ends as line feeds, NUL replaced.
      words = words.replace(/\r\n?/g, "\n").replace(/\0/g, "\uFFFD");
      if (shown !== words) {
        throw new Untrusted("the page shows an entry of the " + NAMES[item.dataset.log] + " in other words than its record");
      }
      if (!window || records.some((record) => !window.proved.has(record[field]))) {
        unchecked += 1;
        const note = document.createElement("p");
        note.className = "meta";
        note.textContent = "Not checked on this phone: " + (window ? "kept from before the signed log began." : "this server signs no log.");
        item.append(note);
      }
    }
    return unchecked;
  }

  function untrusted(what) {
    for (const section of sections) {
      const warning = document.createElement("div");
      warning.className = "problem";
      warning.setAttribute("role", "alert");
      warning.dataset.verdict = "untrusted";
      const first = document.createElement("p");
      first.textContent = "This history cannot be trusted: " + what.replace(/\.$/, "") + ".";
      const next = document.createElement("p");
      next.textContent = NEXT_STEP;
      warning.append(first, next);
      section.replaceChildren(warning);
    }
    status.className = "problem";
    status.dataset.verdict = "untrusted";
    status.textContent = "Not checked: the history failed its check on this phone.";
  }

  function notice(className, text, action) {
    const note = document.createElement("div");
    note.className = className;
    note.dataset.notice = className;
    const words = document.createElement("p");
    words.textContent = text;
    note.append(words);
    if (action) {
      const actions = document.createElement("div");
      actions.className = "actions";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "deny";
      button.textContent = action.label;
      button.addEventListener("click", () => {
        action.run();
        note.remove();
      });
      actions.append(button);
      note.append(actions);
    }
    status.after(note);
  }

  const entries = (count) => count + (count === 1 ? " entry" : " entries");

  function summary(ran, results, cosigned) {
    const parts = ran.map((log) => {
      const result = results[log];
      if (result.newest) {
        return "the " + NAMES[log] + " (" + entries(result.newest.size) + ", none kept in its window now)";
      }
      if (result.empty) return "the " + NAMES[log] + " (nothing yet)";
      const size = result.window.checkpoint.size;
      const extended = result.extends !== undefined ? ", extending the " + result.extends + " this phone saw before" : "";
      return "the " + NAMES[log] + " (" + entries(size) + extended + ")";
    });
    const witnesses = cosigned.length ? ", cosigned by " + cosigned.join(", ") : "";
    return "Checked on this phone: " + parts.join(" and ") + ", signed by the published key" + witnesses
      + ". Every entry shown is in them.";
  }

  async function run() {
    const pins = readPins();
    const [keysText, policyText] = await Promise.all([
      read(base + "/.well-known/hearth/log-keys", "text"),
      read(base + "/.well-known/hearth/witness-policy", "text"),
    ]);
    const published = JSON.parse(keysText).keys;
    const keys = await HearthLog.importKeys(published);
    const parsed = await HearthLog.parsePolicy(policyText);
    const policy = parsed.quorum === null && parsed.witnesses.size === 0 ? null : parsed;
    const shape = witnessShape(policyText);
    const publicKeys = published.map((key) => key.public_key);
    const checking = {};
    const checked = (log) => {
      checking[log] = checking[log] || checkLog(log, pins && pins.logs[log], keys, policy, fromLedger);
      return checking[log];
    };
    const fromLedger = async (kept, now) => decisionResetIn(await checked("ledger"), kept, now);
    for (const log of logs) await checked(log);
    // The ledger may have been checked for a decision log's reset, on a view that shows none of
    // it: it is pinned, and named, like the others.
    const results = {};
    for (const log of Object.keys(checking)) results[log] = await checking[log];
    const ran = [...logs, ...Object.keys(results).filter((log) => !logs.includes(log))];
    if (ran.some((log) => results[log].unsigned)) {
      bindEntries(results);
      status.className = "meta";
      status.dataset.verdict = "unchecked";
      status.textContent = "Not checked: this server signs no log, so this phone cannot check this history.";
      return;
    }
    const unchecked = bindEntries(results);
    const next = {
      version: 1,
      keys: pins ? pins.keys : publicKeys,
      witnesses: pins ? pins.witnesses : shape,
      logs: Object.assign({}, pins && pins.logs),
    };
    for (const log of ran) {
      const result = results[log];
      const now = result.window ? result.window.checkpoint : result.newest;
      if (!now) continue;
      next.logs[log] = { origin: now.origin, size: now.size, root: toBase64(now.root) };
    }
    sessionStorage.removeItem(RECHECKED);
    const keyWarnings = pins ? keyChanges(pins.keys, published) : [];
    const witnessWarnings = pins && pins.witnesses ? witnessChanges(pins.witnesses, shape) : [];
    const cosigned = [...new Set(ran.flatMap((log) => (results[log].window ? results[log].window.cosigned : [])))].sort();
    if (keyWarnings.length || witnessWarnings.length) {
      // Checked only under keys or witnesses the member has not accepted: no mark, and the
      // pins stay where they were until they do.
      status.className = "warning";
      status.dataset.verdict = "unaccepted";
      status.textContent = "Not yet trusted: this history checks out under a change this phone has not accepted (below).";
      const accept = (change) => () => {
        keep(Object.assign(readPins(), change));
        location.reload();
      };
      if (keyWarnings.length) {
        notice("warning", keyWarnings.join(" ") + " If whoever runs Hearth did not announce a new key, ask them before you trust it.", {
          label: "Trust this change",
          run: accept({ keys: publicKeys }),
        });
      }
      if (witnessWarnings.length) {
        notice("warning", "The witnesses who vouch for this household's logs changed since this phone last looked. " + witnessWarnings.join(" ")
          + " If whoever runs Hearth did not announce it, ask them before you trust it.", {
          label: "Trust this change",
          run: accept({ witnesses: shape }),
        });
      }
    } else {
      // Changes the phone can account for move the pins on by themselves.
      next.keys = publicKeys;
      next.witnesses = shape;
      keep(next);
      status.className = "done";
      status.dataset.verdict = "checked";
      status.textContent = "\u2713 " + summary(ran, results, cosigned)
        + (unchecked ? " " + entries(unchecked) + " from before the signed log " + (unchecked === 1 ? "is" : "are") + " marked as not checked." : "");
    }
    for (const log of ran) {
      const reset = results[log].reset;
      if (!reset) continue;
      const when = reset.at ? new Date(reset.at).toLocaleString() : "a while ago";
      const before = reset.size ? " (it replaced one of " + reset.size + " entries)" : "";
      notice("notice", "Whoever runs Hearth started a new " + NAMES[log] + " on " + when + before
        + ". The new log records it as its first entry, so this phone now keeps the new one. Entries from before it are no longer proved.");
    }
  }

  run().catch((error) => {
    if (error instanceof Stale) {
      sessionStorage.setItem(RECHECKED, "1");
      location.reload();
    } else if (error instanceof Untrusted) {
      untrusted(error.message);
    } else {
      // What could not be checked is not shown.
      const why = error && error.message ? error.message : "the check could not run. Reload the page.";
      for (const section of sections) {
        const note = document.createElement("p");
        note.className = "meta";
        note.textContent = "This history is hidden until this phone can check it. Reload the page in a minute.";
        section.replaceChildren(note);
      }
      status.className = "meta";
      status.dataset.verdict = "error";
      status.textContent = "Not checked: " + why;
    }
  });
})();
