// A device's own check of a household's transparency logs in the browser, shared by the
// demo's simulated device and the household page's phone: the checkpoint's Ed25519
// signature (WebCrypto) against a published key, its witnesses' cosignatures (C2SP
// tlog-cosignature v1) under the witness policy, every retained record's inclusion proof, and
// the consistency of the newest checkpoint with one kept from an earlier look (RFC 9162
// sections 2.1.3.2 and 2.1.4.2). What to keep is the caller's: the demo's device keeps the
// checkpoint in memory for the page's life, and names a new log id or epoch as a warning,
// since nothing proves the history before it; the household page pins it in the phone's
// storage (shared/src/household/check.js).
"use strict";

(function () {
  const encoder = new TextEncoder();

  function fromBase64(text) {
    const binary = atob(text);
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }

  function same(a, b) {
    return a.length === b.length && a.every((byte, i) => byte === b[i]);
  }

  async function sha256(bytes) {
    return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  }

  function join(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) { out.set(part, at); at += part.length; }
    return out;
  }

  const leafHash = (data) => sha256(join(Uint8Array.of(0), data));
  const nodeHash = (left, right) => sha256(join(Uint8Array.of(1), left, right));

  function fromHex(hex) {
    return Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));
  }

  // A signed note's text and signatures; the checkpoint's origin, size and root.
  function parseNote(note) {
    const split = note.lastIndexOf("\n\n");
    if (split < 0 || !note.endsWith("\n")) throw new Error("the checkpoint is not a signed note");
    const text = note.slice(0, split + 1);
    const signatures = note.slice(split + 2, -1).split("\n").map((line) => {
      const match = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
      if (!match) throw new Error("a malformed signature line");
      return { name: match[1], blob: fromBase64(match[2]) };
    });
    const lines = text.slice(0, -1).split("\n");
    if (lines.length !== 3 || !/^(0|[1-9][0-9]*)$/.test(lines[1])) throw new Error("the checkpoint is malformed");
    return { text, signatures, origin: lines[0], size: Number(lines[1]), root: fromBase64(lines[2]) };
  }

  // The keys of GET /.well-known/hearth/log-keys (under `base`, the deployment's base path),
  // ready for WebCrypto.
  async function loadKeys(base) {
    const answer = await fetch((base || "") + "/.well-known/hearth/log-keys");
    if (!answer.ok) throw new Error("the server publishes no log key");
    return importKeys((await answer.json()).keys);
  }

  // Published keys ({vkey} each, as /.well-known/hearth/log-keys lists them) for WebCrypto.
  function importKeys(keys) {
    return Promise.all(keys.map(async ({ vkey }) => {
      const [name, id, key] = [vkey.split("+")[0], vkey.split("+")[1], vkey.split("+").slice(2).join("+")];
      const raw = fromBase64(key).slice(1);
      const cryptoKey = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
      return { name, id: fromHex(id), key: cryptoKey };
    }));
  }

  // The checkpoint, if a published key's signature on it verifies.
  async function verifiedCheckpoint(note, keys) {
    const checkpoint = parseNote(note);
    for (const signature of checkpoint.signatures) {
      const key = keys.find((k) => k.name === signature.name && same(k.id, signature.blob.slice(0, 4)));
      if (!key) continue;
      const good = await crypto.subtle.verify({ name: "Ed25519" }, key.key, signature.blob.slice(4), encoder.encode(checkpoint.text));
      if (!good) throw new Error("the checkpoint's signature does not verify");
      return checkpoint;
    }
    throw new Error("the checkpoint carries no signature by the published key");
  }

  // The witness policy the server publishes (C2SP tlog-policy text), parsed, with each
  // witness's key ready for WebCrypto; null when it names no witness (its quorum is "none").
  async function loadPolicy(base) {
    const answer = await fetch((base || "") + "/.well-known/hearth/witness-policy");
    if (!answer.ok) throw new Error("the witness policy could not be read");
    const policy = await parsePolicy(await answer.text());
    return policy.quorum === null && policy.witnesses.size === 0 ? null : policy;
  }

  // The witnesses, groups and quorum of a policy text. The log lines are not needed here: the
  // log's key comes from /.well-known/hearth/log-keys.
  async function parsePolicy(text) {
    const witnesses = new Map();
    const groups = new Map();
    let quorum;
    for (const line of text.split("\n")) {
      const items = line.trim().split(/[ \t]+/).filter(Boolean);
      if (!items.length || items[0].startsWith("#")) continue;
      const [keyword, ...rest] = items;
      if (keyword === "witness") {
        const [name, vkey] = rest;
        const parts = vkey.split("+");
        const raw = fromBase64(parts.slice(2).join("+"));
        if (raw.length !== 33 || raw[0] !== 4) throw new Error("witness " + name + " has no cosignature key");
        const key = await crypto.subtle.importKey("raw", raw.slice(1), { name: "Ed25519" }, false, ["verify"]);
        witnesses.set(name, { keyName: parts[0], id: fromHex(parts[1]), key });
      } else if (keyword === "group") {
        const [name, threshold, ...members] = rest;
        const k = threshold === "all" ? members.length : threshold === "any" ? 1 : Number(threshold);
        groups.set(name, { k, members });
      } else if (keyword === "quorum") {
        quorum = rest[0] === "none" ? null : rest[0];
      }
    }
    if (quorum === undefined) throw new Error("the witness policy has no quorum");
    return { witnesses, groups, quorum };
  }

  // The policy's witnesses whose cosignature of `checkpoint` verifies (a timestamped Ed25519
  // signature over "cosignature/v1\ntime <t>\n" and the checkpoint), and whether they meet
  // its quorum. A line by another key is ignored; a bad one does not count.
  async function witnessesOf(checkpoint, policy) {
    const cosigned = new Set();
    for (const signature of checkpoint.signatures) {
      for (const [name, witness] of policy.witnesses) {
        const blob = signature.blob;
        if (signature.name !== witness.keyName || blob.length !== 76 || !same(blob.slice(0, 4), witness.id)) continue;
        const time = new DataView(blob.buffer, blob.byteOffset + 4, 8).getBigUint64(0);
        const message = encoder.encode("cosignature/v1\ntime " + time + "\n" + checkpoint.text);
        if (time > 0n && await crypto.subtle.verify({ name: "Ed25519" }, witness.key, blob.slice(12), message)) cosigned.add(name);
      }
    }
    const witnessed = (name) => {
      if (policy.witnesses.has(name)) return cosigned.has(name);
      const group = policy.groups.get(name);
      return Boolean(group) && group.members.filter(witnessed).length >= group.k;
    };
    return { cosigned: [...cosigned].sort(), met: policy.quorum === null || witnessed(policy.quorum) };
  }

  // What changed between the origin the device kept and a new one: the log id or the epoch.
  function newOrigin(kept, now) {
    const [keptLog, keptEpoch] = [kept.slice(0, kept.lastIndexOf("/")), kept.slice(kept.lastIndexOf("/") + 1)];
    const [nowLog, nowEpoch] = [now.slice(0, now.lastIndexOf("/")), now.slice(now.lastIndexOf("/") + 1)];
    return keptLog === nowLog
      ? "the log started epoch " + nowEpoch + " after epoch " + keptEpoch
      : "a new log replaced the one this device first saw";
  }

  async function rootFromInclusion(index, size, leaf, path) {
    if (index >= size) return null;
    let fn = index, sn = size - 1, r = leaf;
    for (const p of path) {
      if (sn === 0) return null;
      if (fn % 2 === 1 || fn === sn) {
        r = await nodeHash(p, r);
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      } else {
        r = await nodeHash(r, p);
      }
      fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
    }
    return sn === 0 ? r : null;
  }

  // Raises unless `proof` shows the tree (oldSize, oldRoot) is a prefix of (newSize, newRoot).
  async function checkConsistency(oldSize, oldRoot, newSize, newRoot, proof) {
    if (newSize < oldSize) throw new Error("the log shrank from " + oldSize + " to " + newSize + " entries");
    if (oldSize === newSize) {
      if (proof.length || !same(oldRoot, newRoot)) throw new Error("two different logs of " + oldSize + " entries: it forked");
      return;
    }
    if (oldSize === 0) return;
    const path = (oldSize & (oldSize - 1)) === 0 ? [oldRoot, ...proof] : [...proof];
    if (!path.length) throw new Error("the consistency proof is empty");
    let fn = oldSize - 1, sn = newSize - 1;
    while (fn % 2 === 1) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    let fr = path[0], sr = path[0];
    for (const c of path.slice(1)) {
      if (sn === 0) throw new Error("the consistency proof is too long");
      if (fn % 2 === 1 || fn === sn) {
        fr = await nodeHash(c, fr); sr = await nodeHash(c, sr);
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      } else {
        sr = await nodeHash(sr, c);
      }
      fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
    }
    if (sn !== 0) throw new Error("the consistency proof is too short");
    if (!same(fr, oldRoot)) throw new Error("the first " + oldSize + " entries were rewritten");
    if (!same(sr, newRoot)) throw new Error("the consistency proof does not reach the new root");
  }

  // Checks a window's signed checkpoint against `keys`, its witnesses' cosignatures under
  // `policy` (null: none asked for), and every inclusion proof, the newest being the log's
  // last leaf. Returns the checkpoint, the entries proved (by hash) and who cosigned; raises,
  // naming what failed, otherwise.
  async function checkWindow(trace, keys, policy) {
    if (!trace.checkpoint) throw new Error("the server signs no checkpoint");
    const now = await verifiedCheckpoint(trace.checkpoint, keys);
    let cosigned = [];
    if (policy) {
      const witnessed = await witnessesOf(now, policy);
      cosigned = witnessed.cosigned;
      const who = cosigned.join(", ") || "no known witness";
      if (!witnessed.met) throw new Error("witness quorum not met: cosigned by " + who);
    }
    const proofs = trace.inclusion_proofs || [];
    for (const proof of proofs) {
      const leaf = await leafHash(fromHex(proof.entry));
      const root = await rootFromInclusion(proof.index, now.size, leaf, proof.path.map(fromBase64));
      if (!root || !same(root, now.root)) throw new Error("entry " + proof.index + " is not in the signed log");
    }
    if (proofs.length && proofs[proofs.length - 1].index !== now.size - 1) {
      throw new Error("the newest entries were removed from the trace");
    }
    return { checkpoint: now, proved: new Map(proofs.map((proof) => [proof.entry, proof.index])), cosigned };
  }

  // Checks a trace's checkpoint and inclusion proofs, then the consistency with `kept` (the
  // checkpoint seen last, or null) through `proveHistory(fromSize)`. Returns {ok, text,
  // checkpoint}: the checkpoint to keep next, whatever the verdict.
  async function checkTrace(trace, kept, proveHistory) {
    try {
      if (!trace.checkpoint) return { ok: false, text: "the server signs no checkpoint", checkpoint: kept };
      const keys = await loadKeys();
      const window = await checkWindow(trace, keys, await loadPolicy());
      const now = window.checkpoint;
      const vouched = window.cosigned.length ? "; cosigned by " + window.cosigned.join(", ") : "";
      const proofs = window.proved.size;
      let since = "";
      let warning = null;
      if (kept && kept.origin !== now.origin) {
        // The device pinned the origin it saw; a new one proves nothing about the history
        // before it (an operator's log reset, or a fork a witness never saw).
        warning = newOrigin(kept.origin, now.origin) + ": nothing proves the history before it";
      } else if (kept) {
        const history = await proveHistory(kept.size);
        const newest = await verifiedCheckpoint(history.checkpoint, keys);
        if (newest.origin !== kept.origin) {
          warning = newOrigin(kept.origin, newest.origin) + ": nothing proves the history before it";
        } else {
          await checkConsistency(kept.size, kept.root, newest.size, newest.root, history.consistency.map(fromBase64));
          since = "; it extends the " + kept.size + " entries seen before";
        }
      }
      return {
        ok: true,
        warning,
        text: "signed checkpoint of " + now.size + " entries, " + proofs + " inclusion proof(s) checked" + vouched + since,
        checkpoint: now,
      };
    } catch (error) {
      return { ok: false, text: error.message, checkpoint: kept };
    }
  }

  window.HearthLog = {
    checkTrace, checkWindow, checkConsistency, rootFromInclusion, verifiedCheckpoint, parseNote, parsePolicy,
    witnessesOf, newOrigin, loadKeys, importKeys, fromBase64,
  };
})();
