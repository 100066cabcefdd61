// The state of one tree pane, without any DOM: which nodes are known, which are expanded,
// which stretches of each child list are loaded, and the flat list of visible rows.
//
// Children are fetched page by page (keyset paging on node_order), and a reveal may fetch a
// page in the middle of a long child list. So a child list is a sequence of loaded names and
// *gaps*: a gap stands for the children whose node_order lies in (after, before) that are not
// loaded yet (before = null: up to the end). Filling a gap fetches the page after `after`.

/** @typedef {{name: string, parent: string|null, node_order: number, child_count: number}} NodeData */
/** @typedef {{kind: 'gap', parent: string, after: number, before: number|null, loading: boolean}} Gap */
/** @typedef {{kind: 'node', name: string, depth: number} | {kind: 'gap', gap: Gap, depth: number}} Row */

export function makeGap(parent, after, before = null) {
  return { kind: 'gap', parent, after, before, loading: false };
}

export class TreeModel {
  constructor() {
    /** @type {Map<string, {data: NodeData, children: Array<string|Gap>|null, listed: Set<string>, expanded: boolean}>} */
    this.entries = new Map();
    this.rootName = null;
    this.structureVersion = 0; // bumped when the visible rows may change
    this._rows = null;
    this._rowIndex = null;
  }

  // --- nodes -------------------------------------------------------------------------------

  get(name) {
    return this.entries.get(name)?.data ?? null;
  }

  has(name) {
    return this.entries.has(name);
  }

  /** Store or refresh a node's data; its children and expansion are kept. */
  upsert(data) {
    const entry = this.entries.get(data.name);
    if (entry) {
      entry.data = data;
    } else {
      // listed: names already in `children`, so a page never adds a child twice.
      this.entries.set(data.name, { data, children: null, listed: new Set(), expanded: false });
    }
  }

  setRoot(data) {
    this.entries.clear();
    this.upsert(data);
    this.rootName = data.name;
    this.entries.get(data.name).expanded = true;
    this._changed();
  }

  isExpandable(name) {
    const data = this.get(name);
    return Boolean(data && data.child_count > 0);
  }

  isExpanded(name) {
    return Boolean(this.entries.get(name)?.expanded);
  }

  /** True when the node's children have never been fetched. */
  needsChildren(name) {
    const entry = this.entries.get(name);
    return Boolean(entry && entry.children === null && entry.data.child_count > 0);
  }

  setExpanded(name, expanded) {
    const entry = this.entries.get(name);
    if (!entry || entry.expanded === expanded) return false;
    if (expanded && entry.data.child_count === 0) return false;
    entry.expanded = expanded;
    this._changed();
    return true;
  }

  /** Loaded children in order (gaps skipped). */
  loadedChildren(name) {
    const children = this.entries.get(name)?.children ?? [];
    return children.filter((item) => typeof item === 'string');
  }

  // --- paging ------------------------------------------------------------------------------

  /** The gap in `parent`'s child list that a child with this node_order would fall into;
   * null when that stretch is loaded. A never-fetched list is one gap over everything. */
  gapFor(parent, order) {
    const entry = this.entries.get(parent);
    if (!entry) return null;
    if (entry.children === null) entry.children = [makeGap(parent, -1, null)];
    for (const item of entry.children) {
      if (typeof item === 'string') continue;
      if (order > item.after && (item.before === null || order < item.before)) return item;
    }
    return null;
  }

  /** The first unloaded stretch of `parent`'s children (the one a first expand fills). */
  firstGap(parent) {
    const entry = this.entries.get(parent);
    if (!entry) return null;
    if (entry.children === null) entry.children = [makeGap(parent, -1, null)];
    return entry.children.find((item) => typeof item !== 'string') ?? null;
  }

  /**
   * Put a fetched page into `gap`. The page holds the children with node_order > start in
   * order (start >= gap.after; start > gap.after when a reveal jumped into the middle),
   * and nextCursor says whether more follow. Returns the names added.
   */
  applyPage(gap, items, nextCursor, start = gap.after) {
    const entry = this.entries.get(gap.parent);
    if (!entry || entry.children === null) return [];
    const at = entry.children.indexOf(gap);
    if (at < 0) return []; // filled meanwhile (a stale response)
    const taken = [];
    let reachedLoaded = false;
    for (const item of items) {
      if (gap.before !== null && item.node_order >= gap.before) {
        reachedLoaded = true;
        break;
      }
      if (entry.listed.has(item.name)) continue;
      this.upsert(item);
      entry.listed.add(item.name);
      taken.push(item);
    }
    const replacement = [];
    if (start > gap.after && taken.length > 0) {
      replacement.push(makeGap(gap.parent, gap.after, taken[0].node_order));
    }
    for (const item of taken) replacement.push(item.name);
    const last = taken.length ? taken[taken.length - 1].node_order : start;
    if (taken.length === 0 && start > gap.after) {
      // Nothing new past `start`: keep the stretch before it unloaded.
      replacement.push(makeGap(gap.parent, gap.after, gap.before));
    } else if (!reachedLoaded && nextCursor !== null && nextCursor !== undefined) {
      replacement.push(makeGap(gap.parent, Math.max(nextCursor, last), gap.before));
    }
    entry.children.splice(at, 1, ...replacement);
    gap.loading = false;
    this._changed();
    return taken.map((item) => item.name);
  }

  /** How many of a node's children are not loaded yet. */
  unloadedCount(name) {
    const entry = this.entries.get(name);
    if (!entry) return 0;
    return Math.max(0, entry.data.child_count - entry.listed.size);
  }

  // --- visible rows ------------------------------------------------------------------------

  /** The rows on screen from the top, depth first through expanded nodes (cached). */
  rows() {
    if (this._rows) return this._rows;
    const rows = [];
    if (this.rootName !== null) {
      // An explicit stack: a 100k-wide level must not recurse 100k times.
      const stack = [{ name: this.rootName, depth: 0 }];
      while (stack.length) {
        const top = stack.pop();
        if (top.gap) {
          rows.push({ kind: 'gap', gap: top.gap, depth: top.depth });
          continue;
        }
        rows.push({ kind: 'node', name: top.name, depth: top.depth });
        const entry = this.entries.get(top.name);
        if (!entry || !entry.expanded || entry.children === null) continue;
        for (let i = entry.children.length - 1; i >= 0; i--) {
          const child = entry.children[i];
          stack.push(
            typeof child === 'string'
              ? { name: child, depth: top.depth + 1 }
              : { gap: child, depth: top.depth + 1 },
          );
        }
      }
    }
    this._rows = rows;
    return rows;
  }

  /** Row index of a node, or -1 when it is not visible. */
  indexOf(name) {
    if (!this._rowIndex) {
      this._rowIndex = new Map();
      this.rows().forEach((row, index) => {
        if (row.kind === 'node') this._rowIndex.set(row.name, index);
      });
    }
    return this._rowIndex.get(name) ?? -1;
  }

  _changed() {
    this.structureVersion += 1;
    this._rows = null;
    this._rowIndex = null;
  }
}
