// A list of fixed-height rows of which only those in view (plus a margin) exist in the DOM:
// the cost of drawing is the same for 20 rows as for 1,000,000. Rows are pooled elements
// that `renderRow(element, index)` fills; `onRange(first, last)` says what is on screen
// (to fetch the next page when a placeholder row comes into view).

// Browsers stop growing an element at ~16-33M px; past that, rows are scaled into it.
const MAX_SCROLL_HEIGHT = 8_000_000;

export class VirtualList {
  /**
   * @param {HTMLElement} host scrolling container (overflow: auto)
   * @param {{rowHeight: number, createRow: () => HTMLElement, renderRow: (el: HTMLElement, index: number) => void, onRange?: (first: number, last: number) => void, overscan?: number}} options
   */
  constructor(host, { rowHeight, createRow, renderRow, onRange = null, overscan = 8 }) {
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
    host.addEventListener('scroll', () => this.schedule(), { passive: true });
    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver(() => this.schedule()).observe(host);
    }
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
    const first = Math.max(0, top - this.overscan);
    const last = Math.min(this.count - 1, top + this.visibleRows() + this.overscan);
    const needed = Math.max(0, last - first + 1);
    while (this.pool.length < needed) {
      const row = this.createRow();
      row.classList.add('vlist-row');
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
        row.hidden = true;
        delete row.dataset.index;
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
   * in the middle. */
  scrollToIndex(index, align = 'nearest') {
    if (index < 0 || index >= this.count) return;
    const unit = this.rowHeight * this.scale;
    const rowTop = index * unit;
    const height = this.host.clientHeight;
    let target = this.host.scrollTop;
    if (align === 'center') target = rowTop - height / 2 + this.rowHeight / 2;
    else if (rowTop < target) target = rowTop;
    else if (rowTop + this.rowHeight > target + height) target = rowTop + this.rowHeight - height;
    this.host.scrollTop = Math.max(0, target);
    this.render();
  }

  /** The pooled element showing row `index`, if it is drawn. */
  elementAt(index) {
    return this.pool.find((row) => !row.hidden && row.dataset.index === String(index)) ?? null;
  }
}
