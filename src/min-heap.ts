// A binary min-heap: the least item under an order in O(1), an item added or the least taken out in
// O(log n) comparisons. For collections that are only ever trimmed from one end.

export class MinHeap<T> {
  private readonly items: T[] = [];
  private readonly before: (a: T, b: T) => number;

  /** `before(a, b)` is negative when `a` comes first, as Array.prototype.sort's comparator. */
  constructor(before: (a: T, b: T) => number) {
    this.before = before;
  }

  get size(): number {
    return this.items.length;
  }

  /** The least item; undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const { items } = this;
    let at = items.length;
    items.push(item);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.before(items[parent] as T, item) <= 0) break;
      items[at] = items[parent] as T;
      at = parent;
    }
    items[at] = item;
  }

  /** Takes the least item out; undefined when empty. */
  pop(): T | undefined {
    const { items } = this;
    const least = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return least;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= items.length) break;
      const right = child + 1;
      if (right < items.length && this.before(items[right] as T, items[child] as T) < 0) {
        child = right;
      }
      if (this.before(last, items[child] as T) <= 0) break;
      items[at] = items[child] as T;
      at = child;
    }
    items[at] = last;
    return least;
  }

  /** Every item, the least first and the rest in no particular order: a copy. */
  toArray(): T[] {
    return this.items.slice();
  }
}
