// A list of fixed-height rows of which only those in view (plus a margin) exist in the DOM:
// the cost of drawing is the same for 20 rows as for 1,000,000. Rows are pooled elements
// that `renderRow(element, index)` fills; `onRange(first, last)` says what is on screen
// (to fetch the next page when a placeholder row comes into view). With `pinFirst`, row 0
// (a tree's root) stays at the top while the rest scroll under it, so it never leaves view.

// Browsers stop growing an element at ~16-33M px; past that, rows are scaled into it.
const MAX_SCROLL_HEIGHT = 8_000_000;

export class VirtualList {
  /**
   * @param {HTMLElement} host scrolling container (overflow: auto)
   * @param {{rowHeight: number, createRow: () => HTMLElement, renderRow: (el: HTMLElement, index: number) => void, onRange?: (first: number, last: number) => void, overscan?: number, pinFirst?: boolean}} options
   */
  constructor(host, { rowHeight, createRow, renderRow, onRange = null, overscan = 8, pinFirst = false }) {
    this.host = host;
    this.rowHeight = rowHeight;
    this.createRow = createRow;
    this.renderRow = renderRow;
    this.onRange = onRange;
    this.overscan = overscan;
    this.count = 0;
    this.pool = [];
    this.first = 0;
    this.last = -1;
    this.frame = 0;
    host.classList.add('vlist');
    this.spacer = document.createElement('div');
    this.spacer.className = 'vlist-spacer';
    this.layer = document.createElement('div');
    this.layer.className = 'vlist-layer';
    host.append(this.spacer, this.layer);
    this.pinned = pinFirst ? this.pinnedRow() : null;
    host.addEventListener('scroll', () => this.schedule(), { passive: true });
    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver(() => this.schedule()).observe(host);
    }
  }

  /** The sticky element that shows row 0 once the list is scrolled: it sits at the top of
   * the scrolled area and takes no room in it (its negative margin cancels its height). */
  pinnedRow() {
    const row = this.createRow();
    row.classList.add('vlist-row', 'vlist-pinned');
    BASE_CLASS.set(row, row.className);
    row.style.height = `${this.rowHeight}px`;
    row.style.marginBottom = `-${this.rowHeight}px`;
    row.hidden = true;
    this.host.prepend(row);
    return row;
  }

  /** Row 0 is drawn pinned (not in the layer) while the list is scrolled at all. */
  get pinning() {
    return this.pinned !== null && this.count > 0 && this.host.scrollTop > 0;
  }

  get scale() {
    const full = this.count * this.rowHeight;
    return full > MAX_SCROLL_HEIGHT ? MAX_SCROLL_HEIGHT / full : 1;
  }

  setCount(count) {
    this.count = count;
    this.spacer.style.height = `${Math.round(count * this.rowHeight * this.scale)}px`;
    this.render();
  }

  /** Redraw the rows in view (data changed, same count). */
  refresh() {
    this.render();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Index of the top row in view. */
  topIndex() {
    return Math.floor(this.host.scrollTop / (this.rowHeight * this.scale));
  }

  visibleRows() {
    return Math.max(1, Math.ceil(this.host.clientHeight / this.rowHeight));
  }

  render() {
    const scale = this.scale;
    const top = this.topIndex();
    const pinning = this.pinning;
    // A pinned row 0 is drawn once, in its sticky element: the layer starts after it.
    const first = Math.max(pinning ? 1 : 0, top - this.overscan);
    const last = Math.min(this.count - 1, top + this.visibleRows() + this.overscan);
    const needed = Math.max(0, last - first + 1);
    if (pinning) {
      this.pinned.hidden = false;
      this.pinned.dataset.index = '0';
      this.renderRow(this.pinned, 0);
    } else if (this.pinned && !this.pinned.hidden) {
      forget(this.pinned);
    }
    while (this.pool.length < needed) {
      const row = this.createRow();
      row.classList.add('vlist-row');
      BASE_CLASS.set(row, row.className);
      row.style.height = `${this.rowHeight}px`;
      this.layer.append(row);
      this.pool.push(row);
    }
    for (let i = 0; i < this.pool.length; i++) {
      const row = this.pool[i];
      if (i < needed) {
        row.hidden = false;
        row.dataset.index = String(first + i);
        this.renderRow(row, first + i);
      } else if (!row.hidden) {
        forget(row);
      }
    }
    // With scaling, the layer is placed where the scaled scroll position maps row `first`.
    const offset = scale === 1 ? first * this.rowHeight : this.host.scrollTop - (top - first) * this.rowHeight;
    this.layer.style.transform = `translateY(${Math.max(0, offset)}px)`;
    this.first = first;
    this.last = last;
    if (this.onRange && needed > 0) this.onRange(first, last);
  }

  /** Scroll so row `index` is in view: 'nearest' moves as little as possible, 'center' puts it
   * in the middle. Below a pinned row 0, "in view" starts one row down. */
  scrollToIndex(index, align = 'nearest') {
    if (index < 0 || index >= this.count) return;
    const unit = this.rowHeight * this.scale;
    const rowTop = index * unit;
    const height = this.host.clientHeight;
    let target = this.host.scrollTop;
    const covered = this.pinned && index > 0 ? this.rowHeight : 0;
    if (align === 'center') target = rowTop - height / 2 + this.rowHeight / 2;
    else if (rowTop < target + covered) target = rowTop - covered;
    else if (rowTop + this.rowHeight > target + height) target = rowTop + this.rowHeight - height;
    this.host.scrollTop = Math.max(0, target);
    this.render();
  }

  /** The pooled element showing row `index`, if it is drawn. */
  elementAt(index) {
    if (index === 0 && this.pinning) return this.pinned;
    return this.pool.find((row) => !row.hidden && row.dataset.index === String(index)) ?? null;
  }
}

// A pooled row's classes as created, before renderRow added state ('selected', …).
const BASE_CLASS = new WeakMap();

/** Hide a pooled row and drop what it last showed (id, data-*, state classes), so no hidden
 * row answers to a name, an index or a state that a visible one now holds. */
function forget(row) {
  row.hidden = true;
  row.className = BASE_CLASS.get(row) ?? row.className;
  row.removeAttribute('id');
  for (const key of Object.keys(row.dataset)) delete row.dataset[key];
}
