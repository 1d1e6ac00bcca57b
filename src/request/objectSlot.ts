/**
 * A value this package keeps on an object it is handed for one request (the
 * request itself, its response, its error): a property under a private
 * symbol, with a second naming the object it was set on. A `WeakMap` entry
 * per request cost more than the rest of the pass-through path (each
 * insertion is a hash-table write the garbage collector must also visit),
 * and a holder object per value is one allocation more; two property
 * stores cost neither. An object that takes no new property (frozen,
 * sealed) gets a `WeakMap` entry instead. The symbols are not enumerable by
 * `Object.keys`, `for...in` or `JSON.stringify`. An object spread or
 * `Object.assign` copies both properties, but the copied owner names the
 * original: a copy changed on its way (another method or URL) must not
 * answer for the original.
 */
export class ObjectSlot<T> {
  private readonly key: symbol;
  private readonly ownerKey: symbol;
  private readonly fallback = new WeakMap<object, T>();

  constructor(description: string) {
    this.key = Symbol(description);
    this.ownerKey = Symbol(`${description} (owner)`);
  }

  /** The value last set on `target` itself, or `undefined` (a copy of an object has none of the original's). */
  get(target: object): T | undefined {
    // A value set (or cleared) after the object was frozen is newer than the property it kept.
    if (!Object.isExtensible(target) && this.fallback.has(target)) return this.fallback.get(target);
    const holder = target as Record<symbol, unknown>;
    return holder[this.ownerKey] === target ? (holder[this.key] as T | undefined) : undefined;
  }

  /** Clears `target`'s value, if it has one. */
  clear(target: object): void {
    if (!Object.isExtensible(target)) {
      this.fallback.set(target, undefined as T);
      return;
    }
    const holder = target as Record<symbol, unknown>;
    if (holder[this.ownerKey] === target) holder[this.key] = undefined;
  }

  /** Sets `target`'s value, replacing any it had. */
  set(target: object, value: T): void {
    if (!Object.isExtensible(target)) {
      this.fallback.set(target, value);
      return;
    }
    const holder = target as Record<symbol, unknown>;
    holder[this.key] = value;
    holder[this.ownerKey] = target;
  }
}
