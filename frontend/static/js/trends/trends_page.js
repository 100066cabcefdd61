// The Trends page: one statistic of a file's modules across steps, ranks or passes, as a
// heatmap. The view lives in the address bar (?graph=&view=&statistic=&side=&pass=&depth=
// &step=&rank=&module=), so a reload or a shared link shows the same heatmap.

import { createApi } from '../api.js';
import { el, setChildren } from '../dom.js';
import { Page } from '../page.js';
import { GOLDEN, TARGET, parseSide } from '../sides.js';
import { buildUrlSearch, indexParam } from '../url_state.js';
import { cellCenter, renderHeatmap, rowLabel } from './heatmap_chart.js';

export const VIEWS = {
  'module-step': { rows: 'module', cols: 'step' },
  'module-rank': { rows: 'module', cols: 'rank' },
  'rank-step': { rows: 'rank', cols: 'step' },
  'module-pass': { rows: 'module', cols: 'pass' },
};
const COMPARE_ONLY = ['excess', 'error', 'level'];
const DIFFERENCE = 'diff'; // the side a heatmap may show besides the two: target minus golden
const PASSES = ['forward', 'backward', 'parameters_grad'];

/** The statistic a compare opens on: graphboard's excess over the noise band, which points
 * where the viewer's first error points, where the file holds dtype-aware verdicts; msprobe's
 * worst relative error where it does not (msprobe's files, md5 mode). */
export function defaultStatistic(file) {
  if (file?.config?.graph_type !== 'compare') return 'norm';
  return file.default_rules === 'dtype-aware' ? 'excess' : 'error';
}

/** The page's view from a query string; anything missing or unknown is null. */
export function parseTrendsState(search) {
  const params = new URLSearchParams(search);
  const view = params.get('view');
  const pass = params.get('pass');
  return {
    graph: params.get('graph') || null,
    view: Object.hasOwn(VIEWS, view ?? '') ? view : null,
    statistic: params.get('statistic') || null,
    side: params.get('side') === DIFFERENCE ? DIFFERENCE : parseSide(params.get('side')),
    pass: PASSES.includes(pass) ? pass : null,
    depth: indexParam(params.get('depth')),
    step: indexParam(params.get('step')),
    rank: indexParam(params.get('rank')),
    module: params.get('module') || null,
  };
}

/** The API's query for a view: only the parameters that view takes. */
export function heatmapParams(state) {
  const { rows, cols } = VIEWS[state.view];
  const params = { rows, cols, statistic: state.statistic };
  if (!COMPARE_ONLY.includes(state.statistic)) params.side = state.side;
  if (cols !== 'pass') params.pass = state.pass;
  if (rows === 'module' && state.depth !== null) params.depth = state.depth;
  if (rows === 'rank') params.module = state.module;
  if (rows !== 'step' && cols !== 'step') params.step = state.step;
  if (rows !== 'rank' && cols !== 'rank') params.rank = state.rank;
  return params;
}

/** The viewer's address for a clicked cell: that node, on that step and rank. */
export function cellTarget(state, answer, row, col) {
  const { rows, cols } = VIEWS[state.view];
  const node = answer.nodes[row]?.[col];
  if (!node) return null;
  const step = cols === 'step' ? answer.cols[col] : answer.step;
  const rank = rows === 'rank' ? answer.rows[row] : cols === 'rank' ? answer.cols[col] : answer.rank;
  const side = state.side === GOLDEN && !COMPARE_ONLY.includes(state.statistic) ? GOLDEN : TARGET;
  return `/${buildUrlSearch({ graph: state.graph, step, rank, node, side })}`;
}

export class TrendsPage extends Page {
  constructor(doc = document, { api = createApi() } = {}) {
    super(doc);
    this.api = api;
    this.plotlyUrl = doc.body.dataset.plotlyUrl || '';
    this.files = [];
    this.state = parseTrendsState(globalThis.location.search);
    this.answer = null;
    this.modules = []; // module rows of the last module heatmap: the rank x step choices
    this.depths = [];
    this.request = 0;
  }

  async start() {
    this.applyLook();
    this.listenToLook((what) => {
      if (what === 'lang') {
        this.syncControls();
        if (this.answer) this.showStatus(this.summary(this.answer));
      }
      this.draw();
    });
    const controls = {
      'trends-file': 'graph',
      'trends-view': 'view',
      'trends-statistic': 'statistic',
      'trends-side': 'side',
      'trends-pass': 'pass',
      'trends-depth': 'depth',
      'trends-step': 'step',
      'trends-rank': 'rank',
      'trends-module': 'module',
    };
    for (const [id, field] of Object.entries(controls)) {
      this.$(id).addEventListener('change', (event) => {
        const value = event.target.value;
        this.state[field] = ['depth', 'step', 'rank'].includes(field) ? (value === '' ? null : Number(value)) : value;
        if (field === 'statistic') this.defaulted = false;
        if (field === 'graph') this.fileChosen();
        this.refresh();
      });
    }
    try {
      this.files = (await this.api.listGraphs()).files.filter((file) => file.config);
    } catch (error) {
      this.showStatus(error.message, true);
      return;
    }
    if (!this.files.length) {
      this.showStatus(this.t('file.none'), true);
      return;
    }
    if (!this.files.some((file) => file.id === this.state.graph)) {
      this.state.graph = this.files[0].id;
      this.fileChosen();
    } else {
      this.fileChosen(true);
    }
    await this.refresh();
  }

  get file() {
    return this.files.find((file) => file.id === this.state.graph) ?? null;
  }

  /** A new file: keep what still applies, default the rest (a compare opens on its error). */
  fileChosen(keep = false) {
    const config = this.file.config;
    const compare = config.graph_type === 'compare';
    const state = this.state;
    if (!keep || !state.view) {
      state.view = config.steps.length > 1 ? 'module-step' : config.ranks.length > 1 ? 'module-rank' : 'module-pass';
    }
    const unavailable = state.statistic === 'excess' && this.file.default_rules !== 'dtype-aware';
    if (!state.statistic || unavailable || (!compare && COMPARE_ONLY.includes(state.statistic))) {
      state.statistic = defaultStatistic(this.file);
      this.defaulted = true; // a file built before the excess was stored: error instead
    }
    if (!state.side || (!compare && state.side !== TARGET)) state.side = TARGET;
    state.pass = state.pass ?? 'forward';
    if (!config.steps.includes(state.step)) state.step = config.steps[0] ?? 0;
    if (!config.ranks.includes(state.rank)) state.rank = config.ranks[0] ?? 0;
    if (!keep) {
      state.depth = null;
      state.module = null;
      this.modules = [];
      this.depths = [];
    }
  }

  options(select, items, chosen) {
    setChildren(select, items.map(([value, label]) => el('option', { value: String(value), textContent: label })));
    select.value = chosen === null || chosen === undefined ? '' : String(chosen);
  }

  syncControls() {
    const state = this.state;
    const config = this.file?.config;
    if (!config) return;
    const { rows, cols } = VIEWS[state.view];
    const compare = config.graph_type === 'compare';
    this.options(this.$('trends-file'), this.files.map((file) => [file.id, file.id]), state.graph);
    this.$('trends-view').value = state.view;
    this.$('trends-statistic').value = state.statistic;
    for (const option of this.$('trends-statistic').options) {
      option.disabled = (!compare && COMPARE_ONLY.includes(option.value)) || (option.value === 'excess' && this.file.default_rules !== 'dtype-aware');
    }
    this.$('trends-side').value = state.side;
    this.$('trends-pass').value = state.pass;
    const show = (id, shown) => {
      this.$(id).closest('label').hidden = !shown;
    };
    show('trends-side', compare && !COMPARE_ONLY.includes(state.statistic));
    show('trends-pass', cols !== 'pass');
    show('trends-depth', rows === 'module');
    show('trends-step', rows !== 'step' && cols !== 'step');
    show('trends-rank', rows !== 'rank' && cols !== 'rank');
    show('trends-module', rows === 'rank');
    this.options(
      this.$('trends-depth'),
      [['', this.t('trends.depth.layers')], ...this.depths.map((depth) => [depth, String(depth)])],
      state.depth,
    );
    this.options(this.$('trends-step'), config.steps.map((step) => [step, String(step)]), state.step);
    this.options(this.$('trends-rank'), config.ranks.map((rank) => [rank, String(rank)]), state.rank);
    this.options(this.$('trends-module'), this.modules.map((module) => [module, rowLabel(module)]), state.module);
    this.$('viewer-link').href = `/${buildUrlSearch({ graph: state.graph, step: state.step, rank: state.rank })}`;
  }

  writeUrl() {
    const params = new URLSearchParams({ graph: this.state.graph, view: this.state.view });
    for (const [name, value] of Object.entries(heatmapParams(this.state))) {
      if (!['rows', 'cols'].includes(name) && value !== null && value !== undefined) params.set(name, String(value));
    }
    const search = `?${params}`;
    if (search !== globalThis.location.search) history.replaceState(null, '', `${globalThis.location.pathname}${search}`);
  }

  /** The module rows of the current depth, for choosing the module of a rank x step view. */
  async loadModules() {
    const answer = await this.api.heatmap(this.state.graph, {
      ...heatmapParams({ ...this.state, view: 'module-step' }),
      statistic: this.file.config.graph_type === 'compare' ? 'level' : 'norm',
      side: undefined,
    });
    this.modules = answer.rows;
    this.depths = answer.depths;
  }

  async refresh() {
    const ticket = ++this.request;
    const state = this.state;
    this.doc.body.dataset.ready = 'false';
    this.showStatus(this.t('trends.loading'));
    try {
      if (VIEWS[state.view].rows === 'rank' && !this.modules.includes(state.module)) {
        if (!this.modules.length) await this.loadModules();
        if (!this.modules.includes(state.module)) state.module = this.modules[0] ?? null;
      }
      this.syncControls();
      const answer = await this.api.heatmap(state.graph, heatmapParams(state));
      if (ticket !== this.request) return;
      this.answer = answer;
      if (VIEWS[state.view].rows === 'module') {
        this.modules = answer.rows;
        this.depths = answer.depths;
      }
      this.syncControls();
      this.writeUrl();
      await this.draw();
      const empty = !answer.rows.length;
      this.showStatus(empty ? this.t('trends.empty') : this.summary(answer), false);
    } catch (error) {
      if (ticket !== this.request) return;
      if (this.defaulted && state.statistic === 'excess' && error.code === 'invalid_heatmap') {
        // graphboard's file built before the excess was stored: the page's own choice falls
        // back to msprobe's worst relative error (one asked for says why it is refused)
        this.defaulted = false;
        state.statistic = 'error';
        return this.refresh();
      }
      this.answer = null;
      setChildren(this.$('trends-chart'));
      this.showStatus(error.message, true);
    } finally {
      if (ticket === this.request) this.doc.body.dataset.ready = 'true';
    }
  }

  summary(answer) {
    const parts = [this.t('trends.size', { rows: answer.rows.length, cols: answer.cols.length })];
    if (answer.depth !== null) parts.push(this.t('trends.atDepth', { depth: answer.depth }));
    if (answer.step !== null) parts.push(`${this.t('file.step')} ${answer.step}`);
    if (answer.rank !== null) parts.push(`${this.t('file.rank')} ${answer.rank}`);
    return parts.join(' · ');
  }

  async draw() {
    if (!this.answer || !this.answer.rows.length) return;
    const host = this.$('trends-chart');
    try {
      await renderHeatmap(host, this.answer, {
        plotlyUrl: this.plotlyUrl,
        statistic: this.state.statistic,
        axes: VIEWS[this.state.view],
        t: (key, params) => this.t(key, params),
        onCell: ({ row, col }) => this.openCell(row, col),
      });
    } catch {
      this.showStatus(this.t('details.chartUnavailable'), true);
    }
  }

  openCell(row, col) {
    const target = this.answer && cellTarget(this.state, this.answer, row, col);
    if (target) globalThis.location.assign(target);
  }

  /** Where a cell is drawn, in page coordinates (the browser test clicks there). */
  cellCenter(row, col) {
    return cellCenter(this.$('trends-chart'), row, col);
  }

  showStatus(text, isError = false) {
    const status = this.$('trends-status');
    status.textContent = text;
    status.classList.toggle('trends-status-error', isError);
  }
}
