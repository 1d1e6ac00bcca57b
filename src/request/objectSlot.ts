/** A slot's value with the object it was set on. */
interface Held<T> {
  readonly owner: object;
  readonly value: T;
}

/**
 * A value this package keeps on an object it is handed for one request (the
 * request itself, its response, its error): a property under a private
 * symbol. A `WeakMap` entry per request cost more than the rest of the
 * pass-through path (each insertion is a hash-table write the garbage
 * collector must also visit); a property costs a store. An object that
 * takes no new property (frozen, sealed) gets a `WeakMap` entry instead.
 * The symbol is not enumerable by `Object.keys`, `for...in` or
 * `JSON.stringify`. An object spread or `Object.assign` copies the property
 * but not the value, which names the object it was set on: a copy changed
 * on its way (another method or URL) must not answer for the original.
 */
export class ObjectSlot<T> {
  private readonly key: symbol;
  private readonly fallback = new WeakMap<object, T>();

  constructor(description: string) {
    this.key = Symbol(description);
  }

  /** The value last set on `target` itself, or `undefined` (a copy of an object has none of the original's). */
  get(target: object): T | undefined {
    // A value set (or cleared) after the object was frozen is newer than the property it kept.
    if (!Object.isExtensible(target) && this.fallback.has(target)) return this.fallback.get(target);
    const held = (target as Record<symbol, Held<T> | undefined>)[this.key];
    return held?.owner === target ? held.value : undefined;
  }

  /** Clears `target`'s value, if it has one; no object is made for it. */
  clear(target: object): void {
    if (!Object.isExtensible(target)) {
      this.fallback.set(target, undefined as T);
      return;
    }
    const holder = target as Record<symbol, Held<T> | undefined>;
    if (holder[this.key] !== undefined) holder[this.key] = undefined;
  }

  /** Sets `target`'s value, replacing any it had. */
  set(target: object, value: T): void {
    if (Object.isExtensible(target)) (target as Record<symbol, Held<T>>)[this.key] = { owner: target, value };
    else this.fallback.set(target, value);
  }
}
