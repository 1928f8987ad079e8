// Shared by the tests that run against the daemons of the Go harness
// (clients/harness_test.go), which sets SEQD_ADDR, SEQD_TEST_CONTROL and
// the SEQD_TEST_SECURE_* variables.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** The test option that skips a test when the daemons are not there. */
export const needsDaemons = {
  skip: process.env.SEQD_ADDR && process.env.SEQD_TEST_CONTROL
    ? false
    : 'needs the daemons of the Go harness: go test ./clients/ -run TestJSClient',
};

let counter = 0;

/** A lock name no other test (or earlier run) uses. */
export function uniqueName(what) {
  return `js/${what}/${process.pid}-${Date.now().toString(36)}-${counter++}`;
}

/** POSTs to the harness's control server: /break?kind=…&name=… or /restart. */
export async function control(path) {
  const res = await fetch(process.env.SEQD_TEST_CONTROL + path, { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new Error(`control ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

export function breakLease(kind, name) {
  return control(`/break?kind=${kind}&name=${encodeURIComponent(name)}`);
}

/** Resolves with performance.now() when signal aborts (at once if it has). */
export function abortedAt(signal) {
  if (signal.aborted) return Promise.resolve(performance.now());
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
}

/** Polls cond until it holds, or fails after timeoutMs saying what was awaited. */
export async function eventually(what, timeoutMs, cond) {
  const end = performance.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

export { sleep };
