// In-process limiter for failed logins: at most `limit` failures per key within `windowMs`.
// (Per process: with several instances an attacker gets `instances x limit` attempts.)

export class FailureLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxKeys: number;
  readonly #hits = new Map<string, number[]>();

  constructor(limit: number, windowMs: number, maxKeys = 100_000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  #recent(key: string, now: number): number[] {
    const list = this.#hits.get(key);
    if (!list) return [];
    const from = now - this.#windowMs;
    const kept = list.filter((t) => t > from);
    if (kept.length) this.#hits.set(key, kept);
    else this.#hits.delete(key);
    return kept;
  }

  /** Seconds until another attempt is allowed, or 0 when allowed now. */
  retryAfter(key: string, now = Date.now()): number {
    const recent = this.#recent(key, now);
    if (recent.length < this.#limit) return 0;
    const oldestThatCounts = recent[recent.length - this.#limit];
    return Math.max(1, Math.ceil((oldestThatCounts + this.#windowMs - now) / 1000));
  }

  fail(key: string, now = Date.now()): void {
    if (!this.#hits.has(key) && this.#hits.size >= this.#maxKeys) this.sweep(now);
    if (!this.#hits.has(key) && this.#hits.size >= this.#maxKeys) {
      // Still full: drop the oldest entry (Map keeps insertion order).
      const first = this.#hits.keys().next();
      if (!first.done) this.#hits.delete(first.value);
    }
    const list = this.#recent(key, now);
    list.push(now);
    this.#hits.set(key, list);
  }

  reset(key: string): void {
    this.#hits.delete(key);
  }

  sweep(now = Date.now()): void {
    for (const key of [...this.#hits.keys()]) this.#recent(key, now);
  }
}
