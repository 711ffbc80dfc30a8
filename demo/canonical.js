// Canonical JSON and SHA-256 in the browser, byte for byte what Hearth hashes: Python's
// json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True) with floats in
// Python repr form. JSON.parse would lose "1.0" versus "1", so this parser keeps every number
// exactly as the server wrote it and re-formats it the way Python would.
"use strict";

(function () {
  class Num {
    constructor(text) { this.text = text; }
  }

  // A small JSON parser that returns numbers as Num (their source text).
  function parse(text) {
    let at = 0;
    const fail = (what) => { throw new Error("invalid JSON at " + at + ": " + what); };
    const space = () => { while (at < text.length && " \t\n\r".includes(text[at])) at++; };
    function value() {
      space();
      const c = text[at];
      if (c === "{") {
        at++; const object = {}; space();
        if (text[at] === "}") { at++; return object; }
        for (;;) {
          space(); const key = string(); space();
          if (text[at++] !== ":") fail("expected :");
          object[key] = value(); space();
          const next = text[at++];
          if (next === "}") return object;
          if (next !== ",") fail("expected , or }");
        }
      }
      if (c === "[") {
        at++; const array = []; space();
        if (text[at] === "]") { at++; return array; }
        for (;;) {
          array.push(value()); space();
          const next = text[at++];
          if (next === "]") return array;
          if (next !== ",") fail("expected , or ]");
        }
      }
      if (c === '"') return string();
      if (text.startsWith("true", at)) { at += 4; return true; }
      if (text.startsWith("false", at)) { at += 5; return false; }
      if (text.startsWith("null", at)) { at += 4; return null; }
      const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at));
      if (!match) fail("unexpected character");
      at += match[0].length;
      return new Num(match[0]);
    }
    function string() {
      if (text[at] !== '"') fail("expected string");
      const end = scanString(text, at);
      const literal = text.slice(at, end);
      at = end;
      return JSON.parse(literal);
    }
    const result = value(); space();
    if (at !== text.length) fail("trailing text");
    return result;
  }

  function scanString(text, start) {
    let i = start + 1;
    while (i < text.length) {
      if (text[i] === "\\") { i += 2; continue; }
      if (text[i] === '"') return i + 1;
      i++;
    }
    throw new Error("unterminated string");
  }

  // Python's repr of a float: shortest round-trip digits, fixed notation when the decimal
  // exponent is in [-4, 16), scientific ("1e+16", "1.5e-05") otherwise; always a "." or "e".
  function pythonFloat(text) {
    const x = Number(text);
    if (!Number.isFinite(x)) throw new Error("non-finite number");
    if (x === 0) return (Object.is(x, -0) ? "-" : "") + "0.0";
    const [mantissa, exponentText] = x.toExponential().split("e");
    const exponent = Number(exponentText);
    const negative = mantissa.startsWith("-");
    const digits = mantissa.replace("-", "").replace(".", "");
    let out;
    if (exponent >= -4 && exponent < 16) {
      if (exponent >= 0) {
        const whole = digits.length > exponent + 1 ? digits.slice(0, exponent + 1) : digits.padEnd(exponent + 1, "0");
        const fraction = digits.slice(exponent + 1) || "0";
        out = whole + "." + fraction;
      } else {
        out = "0." + "0".repeat(-exponent - 1) + digits;
      }
    } else {
      const body = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
      out = body + "e" + (exponent < 0 ? "-" : "+") + String(Math.abs(exponent)).padStart(2, "0");
    }
    return (negative ? "-" : "") + out;
  }

  function number(num) {
    return /[.eE]/.test(num.text) ? pythonFloat(num.text) : num.text;
  }

  // ensure_ascii: everything outside printable ASCII as \uXXXX (UTF-16 units, so characters
  // above U+FFFF become surrogate pairs), DEL included, as Python does.
  function quote(s) {
    let out = '"';
    for (const unit of s.split("")) {
      const code = unit.charCodeAt(0);
      if (unit === '"') out += '\\"';
      else if (unit === "\\") out += "\\\\";
      else if (unit === "\n") out += "\\n";
      else if (unit === "\r") out += "\\r";
      else if (unit === "\t") out += "\\t";
      else if (unit === "\b") out += "\\b";
      else if (unit === "\f") out += "\\f";
      else if (code < 0x20 || code > 0x7e) out += "\\u" + code.toString(16).padStart(4, "0");
      else out += unit;
    }
    return out + '"';
  }

  function canonical(value) {
    if (value === null) return "null";
    if (value === true) return "true";
    if (value === false) return "false";
    if (value instanceof Num) return number(value);
    if (typeof value === "string") return quote(value);
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    // Python sorts keys by code point; compare strings by code point, not UTF-16 unit.
    const keys = Object.keys(value).sort((a, b) => {
      const x = Array.from(a), y = Array.from(b);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const d = x[i].codePointAt(0) - y[i].codePointAt(0);
        if (d !== 0) return d;
      }
      return x.length - y.length;
    });
    return "{" + keys.map((k) => quote(k) + ":" + canonical(value[k])).join(",") + "}";
  }

  async function sha256Hex(text) {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // Verifies a trace as get_trace returns it (its JSON text): every record's hash over its
  // canonical form without the hash field, each link to the one before, the first to the
  // anchor, and consecutive seq. Returns {ok, checked, problem}.
  async function verifyTrace(traceText, hashField) {
    const trace = parse(traceText);
    const records = trace.records || [];
    let expectedPrev = trace.anchor === undefined ? null : trace.anchor;
    let expectedSeq = null;
    for (let i = 0; i < records.length; i++) {
      const record = Object.assign({}, records[i]);
      const claimed = record[hashField];
      delete record[hashField];
      const hash = await sha256Hex(canonical(record));
      if (hash !== claimed) return { ok: false, checked: i, problem: "record " + (i + 1) + " does not match its hash" };
      if ((record.prev === undefined ? null : record.prev) !== expectedPrev) {
        return { ok: false, checked: i, problem: "record " + (i + 1) + " does not link to the one before" };
      }
      const seq = Number(record.seq instanceof Num ? record.seq.text : record.seq);
      if (expectedSeq !== null && seq !== expectedSeq) return { ok: false, checked: i, problem: "record " + (i + 1) + " is out of sequence" };
      expectedPrev = claimed;
      expectedSeq = seq + 1;
    }
    return { ok: true, checked: records.length, problem: null };
  }

  window.HearthCanonical = { parse, canonical, pythonFloat, sha256Hex, verifyTrace };
})();
