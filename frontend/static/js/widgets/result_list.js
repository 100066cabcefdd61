// A paged, virtualised list of nodes (filter results, search hits, unmatched nodes) with a
// count, the current position and previous / next. Pages are fetched with the server's
// cursor as the list is scrolled or stepped through; never all at once.

import { el } from '../dom.js';
import { formatCount } from '../format.js';
import { VirtualList } from './virtual_list.js';

const ROW_HEIGHT = 26;
const PAGE = 200;

export class ResultList {
  /**
   * @param {HTMLElement} host
   * @param {{t: Function, onPick: (item: object, index: number) => void,
   *   colorOf: (item: object) => string|null, label?: string}} options
   */
  constructor(host, { t, onPick, colorOf }) {
    this.t = t;
    this.onPick = onPick;
    this.colorOf = colorOf;
    this.fetchPage = null;
    this.items = [];
    this.total = 0;
    this.cursor = null;
    this.index = -1;
    this.loading = null;
    this.generation = 0;
    this.message = '';

    this.count = el('span', { className: 'result-count', 'aria-live': 'polite' });
    this.prevButton = el('button', { type: 'button', className: 'icon-button', onclick: () => this.step(-1) }, '↑');
    this.nextButton = el('button', { type: 'button', className: 'icon-button', onclick: () => this.step(1) }, '↓');
    this.header = el('div', { className: 'result-header' }, this.count, el('span', { className: 'spacer' }), this.prevButton, this.nextButton);
    this.scroller = el('div', { className: 'result-list', role: 'listbox', tabIndex: 0 });
    host.replaceChildren(this.header, this.scroller);
    this.list = new VirtualList(this.scroller, {
      rowHeight: ROW_HEIGHT,
      createRow: () =>
        el('div', { className: 'result-row', role: 'option' }, el('span', { className: 'chip' }), el('span', { className: 'result-name' })),
      renderRow: (row, index) => this.renderRow(row, index),
      onRange: (_first, last) => {
        if (last >= this.items.length - 1 && this.cursor !== null) this.loadMore();
      },
    });
    this.scroller.addEventListener('click', (event) => {
      const row = event.target.closest('.result-row');
      if (row?.dataset.index !== undefined) this.pick(Number(row.dataset.index));
    });
    this.scroller.addEventListener('keydown', (event) => {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        this.step(event.key === 'ArrowDown' ? 1 : -1);
        event.preventDefault();
      }
    });
    this.relabel();
  }

  /** Start a new query: `fetchPage(cursor)` resolves to {items, next_cursor, total};
   * null empties the list and shows `message`. */
  async reset(fetchPage, message = '') {
    this.generation += 1;
    this.fetchPage = fetchPage;
    this.items = [];
    this.total = 0;
    this.cursor = null;
    this.index = -1;
    this.loading = null;
    this.message = message;
    this.list.setCount(0);
    if (fetchPage) {
      this.message = 'common.loading';
      this.updateHeader();
      await this.loadMore(true);
    } else {
      this.updateHeader();
    }
    return this.lastPage;
  }

  loadMore(first = false) {
    if (this.loading) return this.loading;
    if (!this.fetchPage || (!first && this.cursor === null)) return Promise.resolve();
    const generation = this.generation;
    this.loading = this.fetchPage(first ? null : this.cursor)
      .then((page) => {
        if (generation !== this.generation) return;
        this.lastPage = page;
        this.items.push(...page.items);
        this.total = page.total ?? this.items.length;
        this.cursor = page.next_cursor ?? null;
        this.message = this.total ? '' : 'common.none';
      })
      .catch((error) => {
        if (generation === this.generation) this.message = error.message;
      })
      .finally(() => {
        if (generation !== this.generation) return;
        this.loading = null;
        this.list.setCount(this.items.length);
        this.updateHeader();
      });
    return this.loading;
  }

  async step(delta) {
    if (!this.items.length) return;
    let target = this.index + delta;
    if (target >= this.items.length && this.cursor !== null) await this.loadMore();
    if (target < 0) target = 0;
    if (target >= this.items.length) target = this.items.length - 1;
    this.pick(target);
  }

  pick(index) {
    const item = this.items[index];
    if (!item) return;
    this.index = index;
    this.list.scrollToIndex(index, 'nearest');
    this.list.refresh();
    this.updateHeader();
    this.onPick(item, index);
  }

  /** Point at `name` without notifying (the tree selected it). */
  highlight(name) {
    const index = this.items.findIndex((item) => item.name === name);
    if (index < 0) return;
    this.index = index;
    this.list.scrollToIndex(index, 'nearest');
    this.list.refresh();
    this.updateHeader();
  }

  renderRow(row, index) {
    const item = this.items[index];
    const [chip, name] = row.children;
    const color = this.colorOf(item);
    chip.style.backgroundColor = color ?? 'transparent';
    chip.classList.toggle('empty', !color);
    name.textContent = item.name;
    row.title = item.name;
    row.dataset.name = item.name;
    row.classList.toggle('current', index === this.index);
    row.setAttribute('aria-selected', String(index === this.index));
  }

  updateHeader() {
    if (this.message && !this.items.length) {
      // A label key, translated when drawn (so it follows the language), or a server message.
      this.count.textContent = this.t(this.message);
    } else {
      const total = formatCount(this.total);
      this.count.textContent =
        this.index >= 0 ? this.t('list.position', { index: formatCount(this.index + 1), total }) : total;
    }
    this.prevButton.disabled = this.index <= 0;
    this.nextButton.disabled = !this.items.length || (this.index >= this.total - 1);
  }

  relabel() {
    this.prevButton.title = this.t('common.previous');
    this.prevButton.setAttribute('aria-label', this.t('common.previous'));
    this.nextButton.title = this.t('common.next');
    this.nextButton.setAttribute('aria-label', this.t('common.next'));
    this.updateHeader();
    this.list.refresh();
  }
}
