// Durations: the daemon speaks Go duration strings ("15s", "1m30s"); the
// client also takes a number of milliseconds.

const UNIT_MS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)/y;

/**
 * Milliseconds of a Go duration string such as "15s", "1m30s" or "1.5s".
 * @param {string} s
 */
export function parseDuration(s) {
  if (typeof s !== 'string') throw new TypeError(`a duration must be a string such as "15s", got ${typeof s}`);
  if (s === '0') return 0;
  let ms = 0;
  let i = 0;
  while (i < s.length) {
    PART.lastIndex = i;
    const m = PART.exec(s);
    if (!m || m[1] === '' || m[1] === '.') throw new RangeError(`${JSON.stringify(s)} is not a duration such as "15s" or "1m30s"`);
    ms += Number(m[1]) * UNIT_MS[m[2]];
    i = PART.lastIndex;
  }
  if (i === 0) throw new RangeError(`${JSON.stringify(s)} is not a duration such as "15s" or "1m30s"`);
  return ms;
}

/**
 * The wire form of a duration option: a Go duration string is sent as it
 * is (the daemon checks its range), a number is milliseconds.
 * @param {string | number | undefined} v
 * @param {string} what the option's name, for the error
 */
export function wireDuration(v, what) {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`${what} must be a number of milliseconds >= 0, got ${v}`);
    return Number.isInteger(v) ? `${v}ms` : `${Math.round(v * 1000)}us`;
  }
  if (typeof v === 'string') {
    parseDuration(v); // a clear error here rather than a 400 later
    return v;
  }
  throw new TypeError(`${what} must be a duration string such as "15s" or a number of milliseconds, got ${typeof v}`);
}
