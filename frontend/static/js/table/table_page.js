// The Table page: every parameter row of a compare graph (msprobe compare's result table),
// in a virtual list, so 100,000 rows cost what the ~40 on screen cost. Sorting, the Result
// and name filters and the downloads are the server's (/table, /table-export): the page only
// asks for the pages in view. The view lives in the address bar (table_model.js).

import { createApi } from '../api.js';
import { levelColors, textOn } from '../colors.js';
import { debounce } from '../debounce.js';
import { el, setChildren } from '../dom.js';
import { formatCount } from '../format.js';
import { Page } from '../page.js';
import { buildUrlSearch } from '../url_state.js';
import { VirtualList } from '../widgets/virtual_list.js';
import { RowPages } from './row_pages.js';
import {
  MAX_XLSX_ROWS,
  RESULTS,
  buildTableSearch,
  columnLayout,
  nextSort,
  nodeHref,
  parseTableState,
  tableParams,
} from './table_model.js';

const ROW_HEIGHT = 24;
const PAGE_SIZE = 200;
const NAME_DELAY_MS = 250; // filter as the name is typed, once typing pauses
// What a pooled row element shows (its cells, their fills, its link), and each row's link:
// compared before writing, so an unchanged cell is never touched.
const DRAWN = new WeakMap();
const HREFS = new WeakMap();

export class TablePage extends Page {
  constructor(doc = document, { api = createApi() } = {}) {
    super(doc);
    this.api = api;
    this.state = parseTableState(globalThis.location.search);
    this.files = [];
    this.columns = [];
    this.layout = columnLayout([]);
    this.colors = {};
    this.total = null;
    this.loaded = false; // the current query's first page is here: rows may be asked for
    this.request = 0;
    this.rows = new RowPages((start, limit, signal) => this.fetchRows(start, limit, signal), {
      pageSize: PAGE_SIZE,
      onChange: () => this.list.schedule(), // drawn with the next frame, as a scroll is
      onError: (error) => this.showStatus(error.message, true),
    });
    this.list = new VirtualList(this.$('table-body'), {
      rowHeight: ROW_HEIGHT,
      createRow: () => el('a', { className: 'table-row' }),
      renderRow: (row, index) => this.renderRow(row, index),
      onRange: (first, last) => {
        if (this.loaded) this.rows.show(first, last);
      },
    });
  }

  async start() {
    this.applyLook();
    this.listen();
    try {
      this.files = (await this.api.listGraphs()).files.filter((file) => file.config?.graph_type === 'compare');
    } catch (error) {
      this.finish(error.message, true);
      return;
    }
    if (!this.files.length) {
      this.finish(this.t('table.noCompare'), true);
      return;
    }
    if (!this.file) this.state.graph = this.files[0].id;
    this.fileChosen();
    await this.query();
  }

  listen() {
    this.listenToLook();
    this.$('table-controls').addEventListener('submit', (event) => event.preventDefault());
    this.$('table-file').addEventListener('change', (event) => {
      this.state.graph = event.target.value;
      this.fileChosen();
      this.query();
    });
    for (const field of ['step', 'rank']) {
      this.$(`table-${field}`).addEventListener('change', (event) => {
        this.state[field] = Number(event.target.value);
        this.query();
      });
    }
    this.$('table-results').addEventListener('change', () => {
      const checked = new Set([...this.$('table-results').querySelectorAll('input:checked')].map((box) => box.value));
      this.state.results = RESULTS.filter((result) => checked.has(result));
      this.query();
    });
    const byName = debounce(() => this.query(), NAME_DELAY_MS);
    this.$('table-name').addEventListener('input', (event) => {
      this.state.name = event.target.value;
      byName();
    });
    this.$('table-errors-first').addEventListener('click', () => {
      Object.assign(this.state, { sort: 'Result', descending: false }); // by severity (server)
      this.query();
    });
    this.$('table-head-row').addEventListener('click', (event) => {
      const header = event.target.closest('[data-column]');
      if (!header) return;
      Object.assign(this.state, nextSort(this.state, header.dataset.column));
      this.query();
    });
    const body = this.$('table-body');
    const head = this.$('table-head');
    let left = 0;
    body.addEventListener('scroll', () => {
      if (body.scrollLeft !== left) head.scrollLeft = left = body.scrollLeft; // the header follows sideways
    }, { passive: true });
    // A cell's whole text as its tooltip, set on hover rather than for every cell drawn.
    body.addEventListener('mouseover', (event) => {
      const cell = event.target.closest('.table-cell');
      if (cell) cell.title = cell.scrollWidth > cell.clientWidth ? cell.textContent : '';
    });
  }

  applyLook() {
    super.applyLook();
    this.colors = levelColors(this.file?.config?.node_colors, this.theme);
    for (const chip of this.doc.querySelectorAll('#table-results .chip[data-level]')) {
      chip.style.backgroundColor = this.colors[chip.dataset.level] ?? '';
    }
    this.showCount();
    if (this.file) this.showLinks(); // their titles were just relabelled
    this.list.refresh();
  }

  get file() {
    return this.files.find((file) => file.id === this.state.graph) ?? null;
  }

  /** A file chosen: its step and rank kept when it has them, else its first ones. */
  fileChosen() {
    const config = this.file.config;
    if (!config.steps.includes(this.state.step)) this.state.step = config.steps[0] ?? 0;
    if (!config.ranks.includes(this.state.rank)) this.state.rank = config.ranks[0] ?? 0;
    this.applyLook(); // its colours
  }

  options(select, values, chosen) {
    setChildren(select, values.map((value) => el('option', { value: String(value), textContent: String(value) })));
    select.value = String(chosen);
  }

  syncControls() {
    const state = this.state;
    const config = this.file.config;
    this.options(this.$('table-file'), this.files.map((file) => file.id), state.graph);
    this.options(this.$('table-step'), config.steps, state.step);
    this.options(this.$('table-rank'), config.ranks, state.rank);
    for (const box of this.$('table-results').querySelectorAll('input')) box.checked = state.results.includes(box.value);
    if (this.$('table-name').value !== state.name) this.$('table-name').value = state.name;
    this.$('viewer-link').href = `/${buildUrlSearch({ graph: state.graph, step: state.step, rank: state.rank })}`;
    const search = buildTableSearch(state);
    if (search !== globalThis.location.search) history.replaceState(null, '', `${globalThis.location.pathname}${search}`);
  }

  fetchRows(start, limit, signal) {
    return this.api.table(this.state.graph, { ...tableParams(this.state), cursor: start, limit }, { signal });
  }

  /** Show the rows of the current view from the top: the first page, then what is scrolled to. */
  async query() {
    const ticket = ++this.request;
    this.doc.body.dataset.ready = 'false';
    this.loaded = false;
    this.rows.reset();
    this.syncControls();
    this.showLinks();
    let answer;
    try {
      answer = await this.rows.first();
    } catch (error) {
      if (ticket !== this.request || error?.name === 'AbortError') return;
      this.total = null;
      this.list.setCount(0);
      this.finish(error.message, true);
      return;
    }
    if (ticket !== this.request) return;
    this.setColumns(answer.columns);
    this.total = answer.total;
    this.loaded = true;
    this.list.host.scrollTop = 0;
    this.list.setCount(answer.total);
    this.showCount();
    this.showLinks();
    this.finish(answer.total ? '' : this.t('table.empty'));
  }

  finish(message, isError = false) {
    this.showStatus(message, isError);
    this.doc.body.dataset.ready = 'true';
  }

  setColumns(columns) {
    const same = columns.length === this.columns.length && columns.every((name, index) => name === this.columns[index]);
    if (same) {
      this.markSort();
      return;
    }
    this.columns = columns;
    this.layout = columnLayout(columns);
    const grid = this.$('table-grid');
    grid.style.setProperty('--table-columns', this.layout.template);
    grid.style.setProperty('--table-width', `${this.layout.width}px`);
    setChildren(
      this.$('table-head-row'),
      this.layout.columns.map((name) =>
        el('button', { type: 'button', className: 'table-th', role: 'columnheader', dataset: { column: name }, title: name },
          el('span', { textContent: name }), el('span', { className: 'arrow', 'aria-hidden': 'true' }))),
    );
    this.markSort();
  }

  markSort() {
    for (const header of this.$('table-head-row').children) {
      const sorted = header.dataset.column === this.state.sort;
      const direction = sorted ? (this.state.descending ? 'descending' : 'ascending') : 'none';
      header.setAttribute('aria-sort', direction);
      header.lastChild.textContent = sorted ? (this.state.descending ? '▼' : '▲') : '';
    }
  }

  /** Draw row `index` into a pooled element. It runs for every row in view on every frame of
   * a scroll, so it writes only what changed: a cell whose text, or a Result whose fill, is
   * the same is left alone (each write would restyle the cell). */
  renderRow(row, index) {
    let drawn = DRAWN.get(row);
    if (drawn?.layout !== this.layout) {
      const cells = this.layout.kinds.map((kind) => el('span', { className: `table-cell ${kind}` }));
      row.replaceChildren(...cells);
      drawn = { layout: this.layout, cells, fills: cells.map(() => ''), href: null };
      DRAWN.set(row, drawn);
    }
    const item = this.rows.row(index);
    row.classList.toggle('loading', !item);
    const href = item ? this.hrefOf(item) : null;
    if (href !== drawn.href) {
      if (href) row.href = href;
      else row.removeAttribute('href');
      drawn.href = href;
    }
    const { kinds, order } = this.layout;
    for (let column = 0; column < kinds.length; column++) {
      const cell = drawn.cells[column];
      const text = item ? item.cells[order[column]] : column === 0 ? '…' : '';
      if (cell.textContent !== text) cell.textContent = text;
      if (kinds[column] !== 'level') continue;
      // Only what needs a look is filled: a column of pass fills would drown the few others.
      const fill = (item && text !== 'pass' && this.colors[text]) || '';
      if (fill !== drawn.fills[column]) {
        cell.style.backgroundColor = fill;
        cell.style.color = fill ? textOn(fill) : '';
        drawn.fills[column] = fill;
      }
    }
  }

  hrefOf(item) {
    let href = HREFS.get(item);
    if (href === undefined) {
      href = nodeHref(this.state, item.node);
      HREFS.set(item, href);
    }
    return href;
  }

  showCount() {
    const count = this.$('table-count');
    if (this.total === null) {
      count.textContent = '';
      return;
    }
    const filtered = this.state.results.length > 0 || Boolean(this.state.name.trim());
    count.textContent = this.t(filtered ? 'table.countFiltered' : 'table.count', { count: formatCount(this.total) });
  }

  /** The downloads hold what is shown: the same filters and sort, every row of them. */
  showLinks() {
    const params = tableParams(this.state);
    const csv = this.$('table-csv');
    const xlsx = this.$('table-xlsx');
    csv.href = this.api.tableExportUrl(this.state.graph, params, 'csv');
    xlsx.href = this.api.tableExportUrl(this.state.graph, params, 'xlsx');
    const tooMany = this.total !== null && this.total > MAX_XLSX_ROWS;
    xlsx.setAttribute('aria-disabled', String(tooMany));
    xlsx.title = tooMany ? this.t('table.xlsxTooMany', { max: formatCount(MAX_XLSX_ROWS) }) : this.t('table.downloadTitle');
  }

  showStatus(text, isError = false) {
    const status = this.$('table-status');
    status.textContent = text;
    status.classList.toggle('table-status-error', isError);
  }
}
