/** The highest token: tokens are unsigned 64-bit integers. */
export const MAX_TOKEN: bigint;

/** A token below the highest one already used for key. Nothing was written. */
export class StaleTokenError extends Error {
  constructor(key: string, token: bigint, max: bigint);
  readonly code: 'stale_token';
  readonly key: string;
  readonly token: bigint;
  readonly max: bigint;
}

/** A sequencer refused before anything was written or any max moved. */
export class SequencerError extends Error {
  constructor(code: SequencerError['code'], message: string);
  readonly code: 'invalid_sequencer' | 'unsigned' | 'bad_signature' | 'wrong_lock';
}

export type Kind = 'lock' | 'shared' | 'semaphore' | 'election';

export interface Sequencer {
  kind: Kind;
  name: string;
  token: bigint;
}

export function parseToken(s: string): bigint;
export function checkToken(token: bigint | number): bigint;
export function parseSequencer(s: string): Sequencer;
export function formatSequencer(s: { kind?: Kind; name: string; token: bigint | string }): string;
export function parseVerifyKeys(text: string): Map<string, Buffer>;
export function loadVerifyKeys(path: string): Verifier;
export function scriptSHA(script: string): string;

export class Verifier {
  constructor(keys: Map<string, Uint8Array> | Record<string, Uint8Array>);
  verify(sequencer: string): Sequencer;
}

export class Guard {
  constructor(name: string, options?: { kind?: Kind; verifier?: Verifier });
  readonly name: string;
  readonly kind: Kind;
  token(sequencer: string): bigint;
}
