/**
 * A plain (non-wrapping) axis-aligned box in degrees; callers split boxes that cross the antimeridian.
 */
export type Box = { minLat: number; maxLat: number; minLon: number; maxLon: number };

type Entry<T> = { box: Box; value: T };

type Node<T> = {
  box: Box;
  parent: Node<T> | undefined;
  /** Leaves hold entries, inner nodes hold child nodes; all leaves are at the same depth. */
  leaf: boolean;
  children: (Node<T> | Entry<T>)[];
};

const MAX_CHILDREN = 9;
const MIN_CHILDREN = 4;

function emptyBox(): Box {
  return { minLat: Infinity, maxLat: -Infinity, minLon: Infinity, maxLon: -Infinity };
}

function area(box: Box): number {
  return (box.maxLat - box.minLat) * (box.maxLon - box.minLon);
}

function unionArea(a: Box, b: Box): number {
  return (
    (Math.max(a.maxLat, b.maxLat) - Math.min(a.minLat, b.minLat)) *
    (Math.max(a.maxLon, b.maxLon) - Math.min(a.minLon, b.minLon))
  );
}

function extend(target: Box, box: Box): void {
  target.minLat = Math.min(target.minLat, box.minLat);
  target.maxLat = Math.max(target.maxLat, box.maxLat);
  target.minLon = Math.min(target.minLon, box.minLon);
  target.maxLon = Math.max(target.maxLon, box.maxLon);
}

function covers(outer: Box, inner: Box): boolean {
  return (
    outer.minLat <= inner.minLat &&
    outer.maxLat >= inner.maxLat &&
    outer.minLon <= inner.minLon &&
    outer.maxLon >= inner.maxLon
  );
}

function boxOf(children: readonly { box: Box }[]): Box {
  const box = emptyBox();
  for (const child of children) extend(box, child.box);
  return box;
}

/**
 * Guttman's R-tree with quadratic split: incremental insert, removal of a given (box, value)
 * entry with re-insertion of underfull nodes, and point queries.
 */
export class RTree<T> {
  #root: Node<T> = { box: emptyBox(), parent: undefined, leaf: true, children: [] };

  insert(box: Box, value: T): void {
    this.#insertEntry({ box: { ...box }, value });
  }

  /** Removes one entry with exactly this box and value (compared with ===); says whether one was found. */
  remove(box: Box, value: T): boolean {
    const found = this.#findEntry(this.#root, box, value);
    if (found === undefined) return false;
    found.leaf.children.splice(found.index, 1);
    this.#condense(found.leaf);
    return true;
  }

  /** Values of all entries whose box contains the point (edges included), in no particular order. */
  search(lat: number, lon: number): T[] {
    const found: T[] = [];
    const pending: Node<T>[] = [this.#root];
    for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
      for (const child of node.children) {
        const { box } = child;
        if (lat < box.minLat || lat > box.maxLat || lon < box.minLon || lon > box.maxLon) continue;
        if (node.leaf) found.push((child as Entry<T>).value);
        else pending.push(child as Node<T>);
      }
    }
    return found;
  }

  /**
   * Throws if the tree breaks an R-tree invariant: boxes not covering their children, wrong
   * parent links, leaves at different depths, or node sizes out of [MIN_CHILDREN, MAX_CHILDREN].
   * Returns the number of entries. For tests and debugging.
   */
  checkInvariants(): number {
    let leafDepth: number | undefined;
    let entries = 0;
    const visit = (node: Node<T>, depth: number): void => {
      const isRoot = node === this.#root;
      if (node.children.length > MAX_CHILDREN || (!isRoot && node.children.length < MIN_CHILDREN)) {
        throw new Error(`node at depth ${depth} has ${node.children.length} children`);
      }
      for (const child of node.children) {
        if (!covers(node.box, child.box)) throw new Error(`node box at depth ${depth} does not cover a child`);
      }
      if (node.leaf) {
        if (leafDepth !== undefined && leafDepth !== depth) throw new Error('leaves are at different depths');
        leafDepth = depth;
        entries += node.children.length;
        return;
      }
      for (const child of node.children as Node<T>[]) {
        if (child.parent !== node) throw new Error(`wrong parent link at depth ${depth + 1}`);
        visit(child, depth + 1);
      }
    };
    visit(this.#root, 0);
    return entries;
  }

  #insertEntry(entry: Entry<T>): void {
    let node = this.#root;
    while (!node.leaf) {
      extend(node.box, entry.box);
      node = this.#chooseChild(node, entry.box);
    }
    extend(node.box, entry.box);
    node.children.push(entry);
    this.#splitOverfull(node);
  }

  /** The child needing the least enlargement to take the box; ties go to the smaller child. */
  #chooseChild(node: Node<T>, box: Box): Node<T> {
    let best: Node<T> | undefined;
    let bestEnlargement = Infinity;
    let bestArea = Infinity;
    for (const child of node.children as Node<T>[]) {
      const childArea = area(child.box);
      const enlargement = unionArea(child.box, box) - childArea;
      if (enlargement < bestEnlargement || (enlargement === bestEnlargement && childArea < bestArea)) {
        best = child;
        bestEnlargement = enlargement;
        bestArea = childArea;
      }
    }
    return best as Node<T>;
  }

  #splitOverfull(node: Node<T>): void {
    for (let current = node; current.children.length > MAX_CHILDREN; ) {
      const [kept, moved] = quadraticSplit(current.children);
      current.children = kept;
      current.box = boxOf(kept);
      const sibling: Node<T> = { box: boxOf(moved), parent: current.parent, leaf: current.leaf, children: moved };
      if (!sibling.leaf) for (const child of moved as Node<T>[]) child.parent = sibling;
      if (current.parent === undefined) {
        const children = [current, sibling];
        const root: Node<T> = { box: boxOf(children), parent: undefined, leaf: false, children };
        current.parent = root;
        sibling.parent = root;
        this.#root = root;
        return;
      }
      current.parent.children.push(sibling);
      current = current.parent;
    }
  }

  #findEntry(node: Node<T>, box: Box, value: T): { leaf: Node<T>; index: number } | undefined {
    if (!covers(node.box, box)) return undefined;
    if (node.leaf) {
      const index = node.children.findIndex(
        (entry) =>
          (entry as Entry<T>).value === value &&
          entry.box.minLat === box.minLat &&
          entry.box.maxLat === box.maxLat &&
          entry.box.minLon === box.minLon &&
          entry.box.maxLon === box.maxLon,
      );
      return index < 0 ? undefined : { leaf: node, index };
    }
    for (const child of node.children as Node<T>[]) {
      const found = this.#findEntry(child, box, value);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** After a removal: drops underfull nodes on the way up, shrinks boxes, and re-inserts the dropped entries. */
  #condense(leaf: Node<T>): void {
    const orphans: Entry<T>[] = [];
    let node = leaf;
    while (node.parent !== undefined) {
      const parent: Node<T> = node.parent;
      if (node.children.length < MIN_CHILDREN) {
        parent.children.splice(parent.children.indexOf(node), 1);
        collectEntries(node, orphans);
      } else {
        node.box = boxOf(node.children);
      }
      node = parent;
    }
    node.box = boxOf(node.children);
    while (!this.#root.leaf && this.#root.children.length === 1) {
      const onlyChild = this.#root.children[0] as Node<T>;
      onlyChild.parent = undefined;
      this.#root = onlyChild;
    }
    if (this.#root.children.length === 0) this.#root.leaf = true;
    for (const orphan of orphans) this.#insertEntry(orphan);
  }
}

function collectEntries<T>(node: Node<T>, into: Entry<T>[]): void {
  if (node.leaf) {
    into.push(...(node.children as Entry<T>[]));
    return;
  }
  for (const child of node.children as Node<T>[]) collectEntries(child, into);
}

/**
 * Splits MAX_CHILDREN + 1 items in two: seeds are the pair wasting the most area together,
 * then each next item is the one with the strongest preference, going to the group it
 * enlarges least, unless a group needs all remaining items to reach MIN_CHILDREN.
 */
function quadraticSplit<C extends { box: Box }>(items: C[]): [C[], C[]] {
  let seedA = 0;
  let seedB = 1;
  let worstWaste = -Infinity;
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      const a = (items[i] as C).box;
      const b = (items[j] as C).box;
      const waste = unionArea(a, b) - area(a) - area(b);
      if (waste > worstWaste) {
        worstWaste = waste;
        seedA = i;
        seedB = j;
      }
    }
  }
  const groupA = [items[seedA] as C];
  const groupB = [items[seedB] as C];
  const boxA = { ...(items[seedA] as C).box };
  const boxB = { ...(items[seedB] as C).box };
  const remaining = items.filter((_, index) => index !== seedA && index !== seedB);
  while (remaining.length > 0) {
    if (groupA.length + remaining.length === MIN_CHILDREN) {
      groupA.push(...remaining);
      break;
    }
    if (groupB.length + remaining.length === MIN_CHILDREN) {
      groupB.push(...remaining);
      break;
    }
    let pick = 0;
    let strongestPreference = -Infinity;
    for (let i = 0; i < remaining.length; i++) {
      const box = (remaining[i] as C).box;
      const preference = Math.abs(unionArea(boxA, box) - area(boxA) - (unionArea(boxB, box) - area(boxB)));
      if (preference > strongestPreference) {
        strongestPreference = preference;
        pick = i;
      }
    }
    const item = remaining.splice(pick, 1)[0] as C;
    const growthA = unionArea(boxA, item.box) - area(boxA);
    const growthB = unionArea(boxB, item.box) - area(boxB);
    const toA =
      growthA !== growthB
        ? growthA < growthB
        : area(boxA) !== area(boxB)
          ? area(boxA) < area(boxB)
          : groupA.length <= groupB.length;
    if (toA) {
      groupA.push(item);
      extend(boxA, item.box);
    } else {
      groupB.push(item);
      extend(boxB, item.box);
    }
  }
  return [groupA, groupB];
}
