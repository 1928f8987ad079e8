// JSON with exact 64-bit tokens. JSON.parse turns every number into a
// float, which rounds integers above 2^53; tokens, terms and indexes are
// unsigned 64-bit integers, so they are read here as bigint from the text
// itself. Node 20's JSON.parse reviver does not see the source text, hence
// this small parser.

/** Fields whose integer values are read as bigint, wherever they nest. */
export const BIGINT_FIELDS = new Set(['token', 'current_token', 'term', 'index']);

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const WS = /[ \t\n\r]*/y;

/**
 * Parses JSON text as JSON.parse does, except that an integer in a field
 * named in BIGINT_FIELDS becomes a bigint, exactly.
 * @param {string} text
 */
export function parseJSON(text) {
  const p = { text, i: 0 };
  const v = value(p, null);
  skipWS(p);
  if (p.i !== text.length) fail(p, 'unexpected text after the value');
  return v;
}

function value(p, key) {
  skipWS(p);
  const c = p.text[p.i];
  switch (c) {
    case '{': return object(p);
    case '[': return array(p);
    case '"': return string(p);
    case 't': return literal(p, 'true', true);
    case 'f': return literal(p, 'false', false);
    case 'n': return literal(p, 'null', null);
  }
  NUMBER.lastIndex = p.i;
  const m = NUMBER.exec(p.text);
  if (!m) fail(p, 'a value was expected');
  p.i = NUMBER.lastIndex;
  if (key !== null && BIGINT_FIELDS.has(key) && m[1] === undefined && m[2] === undefined) {
    return BigInt(m[0]);
  }
  return Number(m[0]);
}

function object(p) {
  p.i++; // {
  const entries = [];
  skipWS(p);
  if (p.text[p.i] === '}') {
    p.i++;
    return {};
  }
  for (;;) {
    skipWS(p);
    if (p.text[p.i] !== '"') fail(p, 'a key was expected');
    const k = string(p);
    skipWS(p);
    if (p.text[p.i] !== ':') fail(p, "':' was expected");
    p.i++;
    entries.push([k, value(p, k)]);
    skipWS(p);
    const c = p.text[p.i++];
    if (c === '}') break;
    if (c !== ',') fail(p, "',' or '}' was expected", -1);
  }
  // fromEntries defines own properties: a "__proto__" key stays a key.
  return Object.fromEntries(entries);
}

function array(p) {
  p.i++; // [
  const out = [];
  skipWS(p);
  if (p.text[p.i] === ']') {
    p.i++;
    return out;
  }
  for (;;) {
    out.push(value(p, null));
    skipWS(p);
    const c = p.text[p.i++];
    if (c === ']') return out;
    if (c !== ',') fail(p, "',' or ']' was expected", -1);
  }
}

function string(p) {
  const start = p.i;
  let i = start + 1;
  for (;;) {
    const c = p.text.charCodeAt(i);
    if (Number.isNaN(c)) fail(p, 'unterminated string');
    if (c === 0x22) break; // "
    i += c === 0x5c ? 2 : 1; // a backslash escapes the next character
  }
  p.i = i + 1;
  try {
    return JSON.parse(p.text.slice(start, p.i)); // escapes, decoded exactly
  } catch {
    fail({ text: p.text, i: start }, 'malformed string');
  }
}

function literal(p, word, v) {
  if (!p.text.startsWith(word, p.i)) fail(p, 'a value was expected');
  p.i += word.length;
  return v;
}

function skipWS(p) {
  WS.lastIndex = p.i;
  WS.exec(p.text);
  p.i = WS.lastIndex;
}

function fail(p, msg, back = 0) {
  throw new SyntaxError(`JSON at position ${p.i + back}: ${msg}`);
}

/**
 * Encodes a flat object as JSON: bigints as plain integers, undefined
 * fields left out.
 * @param {Record<string, unknown>} obj
 */
export function encodeJSON(obj) {
  const parts = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    parts.push(JSON.stringify(k) + ':' + (typeof v === 'bigint' ? v.toString() : JSON.stringify(v)));
  }
  return '{' + parts.join(',') + '}';
}

const MAX_U64 = (1n << 64n) - 1n;

/**
 * A token as a bigint: a bigint, a safe integer or a string of decimal
 * digits, from 1 to 2^64-1. Anything else is a TypeError, so that a token
 * rounded by a float never reaches the daemon.
 * @param {unknown} v
 * @param {string} [what]
 */
export function toToken(v, what = 'token') {
  let t;
  if (typeof v === 'bigint') t = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) t = BigInt(v);
  else if (typeof v === 'string' && /^[0-9]{1,20}$/.test(v)) t = BigInt(v);
  else {
    throw new TypeError(`${what} must be a bigint (or a safe integer, or a string of digits), got ${describe(v)}`);
  }
  if (t < 1n || t > MAX_U64) throw new RangeError(`${what} ${t} is out of range: it must be between 1 and 2^64-1`);
  return t;
}

function describe(v) {
  if (typeof v === 'number') return `the number ${v}${Number.isInteger(v) ? ' (above 2^53: it may have been rounded)' : ''}`;
  return typeof v === 'string' ? JSON.stringify(v).slice(0, 40) : typeof v;
}
