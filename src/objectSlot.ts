/**
 * A value this package keeps on an object it is handed for one request (the
 * request itself, its response, its error): a property under a private
 * symbol. A `WeakMap` entry per request cost more than the rest of the
 * pass-through path (each insertion is a hash-table write the garbage
 * collector must also visit); a property costs a store. An object that
 * takes no new property (frozen, sealed) gets a `WeakMap` entry instead.
 * The symbol is not enumerable by `Object.keys`, `for...in` or
 * `JSON.stringify`; an object spread copies it, with the object it belongs to.
 */
export class ObjectSlot<T> {
  private readonly key: symbol;
  private readonly fallback = new WeakMap<object, T>();

  constructor(description: string) {
    this.key = Symbol(description);
  }

  get(target: object): T | undefined {
    const value = (target as Record<symbol, T | undefined>)[this.key];
    if (Object.isExtensible(target)) return value;
    // A value set after the object was frozen is newer than the property it kept.
    return this.fallback.get(target) ?? value;
  }

  set(target: object, value: T): void {
    if (Object.isExtensible(target)) (target as Record<symbol, T>)[this.key] = value;
    else this.fallback.set(target, value);
  }
}
