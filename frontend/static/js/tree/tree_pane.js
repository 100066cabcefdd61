// One side's tree (target or golden): loads children page by page from /children, reveals
// nodes through /path, draws visible rows with a VirtualList, and handles mouse and keyboard.
// It reports user actions (select, toggle, context menu) to the app, which syncs the panes.

import { VirtualList } from '../widgets/virtual_list.js';
import { TreeModel } from './tree_model.js';
import { ROW_HEIGHT, createRowElement, renderGapRow, renderNodeRow } from './tree_rows.js';

export const FIRST_PAGE = 200; // what an expand shows at once
export const MORE_PAGE = 1000; // each further page while scrolling a wide level

export class TreePane {
  /**
   * @param {{side: 'target'|'golden', host: HTMLElement, api: object, t: Function,
   *   view: () => {mode: string, theme: string, levelColors: object, overflowColors: object},
   *   onSelect?: Function, onToggle?: Function, onContextMenu?: Function, onError?: Function}} options
   */
  constructor({ side, host, api, t, view, onSelect, onToggle, onContextMenu, onError }) {
    this.side = side;
    this.host = host;
    this.api = api;
    this.t = t;
    this.view = view;
    this.onSelect = onSelect ?? (() => {});
    this.onToggle = onToggle ?? (() => {});
    this.onContextMenu = onContextMenu ?? (() => {});
    this.onError = onError ?? ((error) => console.error(error));
    this.model = new TreeModel();
    this.context = null;
    this.generation = 0;
    this.selected = null;
    this.counterpart = null;
    this.loadingNodes = new Set();
    this.gapLoads = new Map(); // gap -> promise
    this.ready = Promise.resolve();
    this.drawnRows = null; // the rows as last drawn, to keep the view steady across loads

    host.setAttribute('role', 'tree');
    host.tabIndex = 0;
    this.list = new VirtualList(host, {
      rowHeight: ROW_HEIGHT,
      createRow: createRowElement,
      renderRow: (row, index) => this.renderRow(row, index),
      onRange: (first, last) => this.loadGapsInView(first, last),
      pinFirst: true, // the root stays in view however deep the tree is scrolled
    });
    this.empty = document.createElement('p');
    this.empty.className = 'tree-empty muted';
    this.empty.hidden = true;
    host.append(this.empty);
    this.bindEvents();
  }

  get key() {
    return { side: this.side, step: this.context.step, rank: this.context.rank };
  }

  // --- loading ---------------------------------------------------------------------------

  /** Show the root and its first page of children for `context` ({graph, step, rank,
   * microStep}); resolves when they are drawn. */
  load(context) {
    this.generation += 1;
    const generation = this.generation;
    this.context = context;
    this.model = new TreeModel();
    this.drawnRows = null;
    this.selected = null;
    this.counterpart = null;
    this.gapLoads.clear();
    this.loadingNodes.clear();
    this.empty.hidden = true;
    this.redraw();
    this.ready = (async () => {
      try {
        const page = await this.api.children(context.graph, this.key, {
          limit: FIRST_PAGE,
          microStep: context.microStep >= 0 ? context.microStep : null,
        });
        if (generation !== this.generation) return;
        this.model.setRoot(page.parent);
        const gap = this.model.firstGap(page.parent.name);
        if (gap) this.model.applyPage(gap, page.items, page.next_cursor);
      } catch (error) {
        if (generation !== this.generation) return;
        this.empty.textContent = error.status === 404 ? this.t('tree.empty') : error.message;
        this.empty.hidden = false;
        if (error.status !== 404) this.onError(error);
      }
      this.redraw();
    })();
    return this.ready;
  }

  clear(message = '') {
    this.generation += 1;
    this.context = null;
    this.model = new TreeModel();
    this.drawnRows = null;
    this.selected = null;
    this.counterpart = null;
    this.empty.textContent = message;
    this.empty.hidden = !message;
    this.redraw();
  }

  /** Fetch the page that fills `gap` (from `start`, default its beginning). One request per
   * gap at a time; callers share it. */
  fillGap(gap, start = gap.after, limit = MORE_PAGE) {
    if (this.gapLoads.has(gap)) return this.gapLoads.get(gap);
    const generation = this.generation;
    gap.loading = true;
    this.list.refresh();
    const promise = this.api
      .children(this.context.graph, this.key, {
        parent: gap.parent,
        cursor: start >= 0 ? start : null,
        limit,
        // The micro-step filter applies to the root's children only (as in msprobe).
        microStep: gap.parent === this.model.rootName && this.context.microStep >= 0 ? this.context.microStep : null,
      })
      .then((page) => {
        if (generation !== this.generation) return [];
        this.model.upsert(page.parent);
        return this.model.applyPage(gap, page.items, page.next_cursor, start);
      })
      .catch((error) => {
        gap.loading = false;
        if (generation === this.generation) this.onError(error);
        return [];
      })
      .finally(() => {
        this.gapLoads.delete(gap);
        if (generation === this.generation) this.redraw();
      });
    this.gapLoads.set(gap, promise);
    return promise;
  }

  /** The trailing gap of a level loads itself when scrolled into view (infinite scroll). A
   * gap in the middle (left by a jump) waits for a click: filling it from the top would keep
   * it in view and load the whole level. */
  loadGapsInView(first, last) {
    if (!this.context) return;
    const rows = this.model.rows();
    for (let index = first; index <= last && index < rows.length; index++) {
      const row = rows[index];
      if (row.kind === 'gap' && row.gap.before === null && !row.gap.loading) this.fillGap(row.gap);
    }
  }

  async expand(name, { user = false } = {}) {
    if (!this.model.isExpandable(name)) return;
    const generation = this.generation;
    if (this.model.needsChildren(name)) {
      this.loadingNodes.add(name);
      this.list.refresh();
      const gap = this.model.firstGap(name);
      await this.fillGap(gap, gap.after, FIRST_PAGE);
      this.loadingNodes.delete(name);
      if (generation !== this.generation) return;
    }
    if (this.model.setExpanded(name, true)) this.redraw();
    if (user) this.onToggle(this, name, true);
  }

  collapse(name, { user = false } = {}) {
    if (name === this.model.rootName) return;
    // Children stay loaded: expanding again is instant and keeps what was open below.
    if (this.model.setExpanded(name, false)) this.redraw();
    if (user) this.onToggle(this, name, false);
  }

  toggle(name, options = {}) {
    return this.model.isExpanded(name) ? this.collapse(name, options) : this.expand(name, options);
  }

  /** Make `child` (node data) part of `parent`'s loaded children, fetching the page that
   * starts at it when it lies in an unloaded stretch. */
  async ensureListed(parent, child) {
    for (let attempt = 0; attempt < 4; attempt++) {
      const entry = this.model.entries.get(parent);
      if (!entry || entry.listed.has(child.name)) return;
      const gap = this.model.gapFor(parent, child.node_order);
      if (!gap) return;
      if (this.gapLoads.has(gap)) {
        await this.gapLoads.get(gap);
        continue;
      }
      // A level that fits in one page is loaded whole; in a wider one, jump to the page that
      // starts at the child (the stretch before it stays a gap, loaded on request).
      const parentData = this.model.get(parent);
      if ((parentData?.child_count ?? 0) <= MORE_PAGE) await this.fillGap(gap, gap.after, MORE_PAGE);
      else await this.fillGap(gap, Math.max(gap.after, child.node_order - 1), FIRST_PAGE);
    }
  }

  /** Expand every ancestor of `name` and load it; resolves to its data, or null when this
   * graph has no such node. */
  async reveal(name) {
    await this.ready;
    if (!this.context) return null;
    const generation = this.generation;
    if (this.model.indexOf(name) >= 0) return this.model.get(name);
    let path;
    try {
      path = await this.api.path(this.context.graph, this.key, name);
    } catch (error) {
      if (error.status !== 404) this.onError(error);
      return null;
    }
    if (generation !== this.generation) return null;
    const chain = [...path.ancestors, path.node];
    for (let i = 1; i < chain.length; i++) {
      const parent = chain[i - 1].name;
      if (!this.model.has(parent)) return null; // outside this micro-step's root children
      await this.ensureListed(parent, chain[i]);
      if (generation !== this.generation) return null;
      this.model.setExpanded(parent, true);
    }
    this.redraw();
    return this.model.get(name);
  }

  /** Refresh the data of these nodes and their ancestors (roll-ups) after a (un)match. */
  async refreshNodes(names) {
    if (!this.context) return;
    const generation = this.generation;
    await Promise.all(
      names.slice(0, 50).map(async (name) => {
        try {
          const path = await this.api.path(this.context.graph, this.key, name);
          if (generation !== this.generation) return;
          for (const data of [...path.ancestors, path.node]) {
            if (this.model.has(data.name)) this.model.upsert(data);
          }
        } catch (error) {
          if (error.status !== 404) this.onError(error);
        }
      }),
    );
    this.list.refresh();
  }

  // --- selection ---------------------------------------------------------------------------

  /** Select a visible (or just revealed) node; `scroll`: 'center', 'nearest' or false. */
  select(name, { scroll = 'nearest', focus = false, notify = true, user = false } = {}) {
    this.selected = name;
    const index = this.model.indexOf(name);
    if (index >= 0 && scroll) this.list.scrollToIndex(index, scroll);
    this.list.refresh();
    this.updateActiveDescendant();
    if (focus) this.host.focus({ preventScroll: true });
    if (notify && name) this.onSelect(this, name, this.model.get(name), { user });
  }

  /** Mark the other pane's selection here, scrolling it into view when asked. */
  markCounterpart(name, { scroll = false } = {}) {
    this.counterpart = name;
    const index = name ? this.model.indexOf(name) : -1;
    if (index >= 0 && scroll) this.list.scrollToIndex(index, 'center');
    this.list.refresh();
  }

  selectedData() {
    return this.selected ? this.model.get(this.selected) : null;
  }

  // --- drawing -----------------------------------------------------------------------------

  /** Draw after a structure change. Rows loaded above the view must not push what the user
   * is looking at away: the selected row (or the top row) keeps its place on screen. */
  redraw() {
    const anchor = this.captureAnchor();
    const rows = this.model.rows();
    this.drawnRows = rows;
    this.list.setCount(rows.length);
    if (anchor) {
      const index = this.model.indexOf(anchor.name);
      if (index >= 0 && index !== anchor.index) {
        this.host.scrollTop = Math.max(0, index * ROW_HEIGHT - anchor.offset);
        this.list.render();
      }
    }
    this.updateActiveDescendant();
  }

  captureAnchor() {
    const rows = this.drawnRows;
    if (!rows || !rows.length || this.list.scale !== 1) return null;
    const top = this.list.topIndex();
    const bottom = top + this.list.visibleRows();
    let index = -1;
    for (let i = top; this.selected && i <= bottom && i < rows.length; i++) {
      if (rows[i].name === this.selected) {
        index = i;
        break;
      }
    }
    if (index < 0) {
      index = top;
      while (index < rows.length && rows[index].kind !== 'node') index += 1;
    }
    if (index >= rows.length || index < 0) return null;
    return { name: rows[index].name, index, offset: index * ROW_HEIGHT - this.host.scrollTop };
  }

  renderRow(row, index) {
    const item = this.model.rows()[index];
    row.id = `${this.side}-row-${index}`;
    if (!item) return;
    if (item.kind === 'gap') {
      renderGapRow(row, item.gap, item.depth, this.model.unloadedCount(item.gap.parent), this.t);
      return;
    }
    const data = this.model.get(item.name);
    const view = this.view();
    renderNodeRow(row, data, item.depth, {
      mode: view.mode,
      theme: view.theme,
      levelColors: view.levelColors,
      overflowColors: view.overflowColors,
      t: this.t,
      selected: item.name === this.selected,
      counterpart: item.name === this.counterpart,
      expanded: this.model.isExpanded(item.name),
      loading: this.loadingNodes.has(item.name),
    });
  }

  updateActiveDescendant() {
    const index = this.selected ? this.model.indexOf(this.selected) : -1;
    if (index >= 0) this.host.setAttribute('aria-activedescendant', `${this.side}-row-${index}`);
    else this.host.removeAttribute('aria-activedescendant');
  }

  // --- events ------------------------------------------------------------------------------

  rowAt(target) {
    const row = target.closest('.tree-row');
    if (!row || row.dataset.index === undefined) return null;
    return this.model.rows()[Number(row.dataset.index)] ?? null;
  }

  bindEvents() {
    this.host.addEventListener('click', (event) => {
      const item = this.rowAt(event.target);
      if (!item) return;
      if (item.kind === 'gap') {
        this.fillGap(item.gap);
        return;
      }
      if (event.target.closest('.twisty')) this.toggle(item.name, { user: true });
      this.select(item.name, { scroll: false, user: true });
      this.host.focus({ preventScroll: true });
    });
    this.host.addEventListener('dblclick', (event) => {
      const item = this.rowAt(event.target);
      if (item?.kind === 'node' && !event.target.closest('.twisty')) {
        this.toggle(item.name, { user: true });
      }
    });
    this.host.addEventListener('contextmenu', (event) => {
      const item = this.rowAt(event.target);
      if (item?.kind !== 'node') return;
      event.preventDefault();
      this.select(item.name, { scroll: false, user: true });
      this.onContextMenu(this, item.name, event.clientX, event.clientY);
    });
    this.host.addEventListener('keydown', (event) => this.onKey(event));
  }

  onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const rows = this.model.rows();
    if (!rows.length) return;
    let index = this.selected ? this.model.indexOf(this.selected) : -1;
    const name = index >= 0 ? this.selected : null;
    const page = this.list.visibleRows() - 1;
    const moveTo = (target) => {
      let next = Math.max(0, Math.min(rows.length - 1, target));
      const step = next >= index ? 1 : -1;
      while (rows[next] && rows[next].kind !== 'node') next += step; // gap rows are not stops
      if (!rows[next]) return;
      this.select(rows[next].name, { scroll: 'nearest', user: true });
    };
    switch (event.key) {
      case 'ArrowDown':
        moveTo(index + 1);
        break;
      case 'ArrowUp':
        moveTo(index < 0 ? 0 : index - 1);
        break;
      case 'PageDown':
        moveTo(index + page);
        break;
      case 'PageUp':
        moveTo(index - page);
        break;
      case 'Home':
        index = 0;
        moveTo(0);
        break;
      case 'End':
        moveTo(rows.length - 1);
        break;
      case 'ArrowRight':
        if (!name) return moveTo(0);
        if (this.model.isExpandable(name) && !this.model.isExpanded(name)) this.expand(name, { user: true });
        else if (this.model.isExpanded(name)) moveTo(index + 1);
        break;
      case 'ArrowLeft': {
        if (!name) return;
        if (this.model.isExpanded(name) && name !== this.model.rootName) this.collapse(name, { user: true });
        else {
          const parent = this.model.get(name)?.parent;
          if (parent && this.model.indexOf(parent) >= 0) this.select(parent, { scroll: 'nearest', user: true });
        }
        break;
      }
      case 'Enter':
      case ' ':
        if (name) this.toggle(name, { user: true });
        break;
      case 'ContextMenu': {
        if (!name) return;
        const element = this.list.elementAt(index);
        const box = (element ?? this.host).getBoundingClientRect();
        this.onContextMenu(this, name, box.left + 40, box.bottom);
        break;
      }
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation();
  }
}
