// The viewer: wires the store, the two tree panes and the panels together. It owns the rules
// that span modules: what a file change reloads, how the panes stay in sync, how a node is
// revealed, and what goes in the address bar.

import { createApi } from './api.js';
import { levelColors, overflowColors } from './colors.js';
import { applyTranslations, pickLanguage, translate } from './i18n.js';
import { ContextMenu } from './panels/context_menu.js';
import { DetailPanel } from './panels/detail_panel.js';
import { DiagnosisPanel } from './panels/diagnosis_panel.js';
import { FilePanel } from './panels/file_panel.js';
import { FilterPanel } from './panels/filter_panel.js';
import { HelpOverlay } from './panels/help_overlay.js';
import { renderLegend } from './panels/legend.js';
import { MatchPanel } from './panels/match_panel.js';
import { SearchPanel } from './panels/search_panel.js';
import { GOLDEN, OTHER, SIDES, TARGET } from './sides.js';
import { createStore } from './state.js';
import { STORAGE, save, saved } from './storage.js';
import { TreePane } from './tree/tree_pane.js';
import { buildUrlSearch, parseUrlState, rulesFor, rulesParam } from './url_state.js';

export class App {
  constructor(doc = document, { api = createApi() } = {}) {
    this.doc = doc;
    this.api = api;
    const prefersDark = globalThis.matchMedia?.('(prefers-color-scheme: dark)').matches;
    this.store = createStore({
      files: [],
      file: null,
      graph: null,
      step: 0,
      rank: 0,
      microStep: -1,
      selection: null, // {side, name}
      mode: 'precision',
      theme: saved(STORAGE.theme) ?? (prefersDark ? 'dark' : 'light'),
      lang: pickLanguage(saved(STORAGE.lang), navigator.languages ?? []),
      sync: saved(STORAGE.sync) !== 'false',
      rules: null, // the open file's: msprobe | dtype-aware (rulesFor)
    });
    // The rule set the address or the switch asked for; null: each file's default
    this.wantedRules = rulesParam(globalThis.location?.search ?? '');
    this.api.setRules?.(() => this.store.get().rules);
    this.t = (key, params) => translate(this.store.get().lang, key, params);
    this.plotlyUrl = doc.body.dataset.plotlyUrl || '';
    this.viewGeneration = 0;
    this.activeList = 'filter';
    this.statusTimer = 0;
    this.colorsFor = null; // see colors()
    this.ready = null;
  }

  // --- start -------------------------------------------------------------------------------

  start() {
    const doc = this.doc;
    const context = () => this.context();
    const colors = () => this.colors().level;
    const view = () => {
      const { mode, theme } = this.store.get();
      const { level, overflow } = this.colors();
      return { mode, theme, levelColors: level, overflowColors: overflow };
    };
    this.panes = {};
    for (const side of SIDES) {
      this.panes[side] = new TreePane({
        side,
        host: doc.querySelector(`#pane-${side} .tree-host`),
        api: this.api,
        t: this.t,
        view,
        onSelect: (pane, name, data, options) => this.onTreeSelect(pane, name, data, options),
        onToggle: (pane, name, expanded) => this.onTreeToggle(pane, name, expanded),
        onContextMenu: (pane, name, x, y) => this.openNodeMenu(pane.side, name, x, y),
        onError: (error) => this.showStatus(this.t('status.loadFailed', { message: error.message })),
      });
    }
    this.filePanel = new FilePanel(doc, { t: this.t, onChange: (change) => this.changeView(change) });
    const pick = (side, name) => this.selectNode(side, name, { scroll: 'center' });
    this.filterPanel = new FilterPanel(doc.querySelector('#panel-filter'), {
      api: this.api,
      t: this.t,
      context,
      levelColors: colors,
      overflowColors: () => this.colors().overflow,
      onPick: pick,
    });
    this.searchPanel = new SearchPanel(doc.querySelector('#panel-search'), { api: this.api, t: this.t, context, onPick: pick });
    this.matchPanel = new MatchPanel(doc.querySelector('#panel-match'), {
      api: this.api,
      t: this.t,
      context,
      onPick: pick,
      onChanged: (changed) => this.afterMatchChange(changed),
      notify: (text) => this.showStatus(text),
    });
    this.matchPanel.setSelectionSource(() => this.store.get().selection);
    this.detailPanel = new DetailPanel(doc.querySelector('#details'), {
      api: this.api,
      t: this.t,
      context,
      levelColors: colors,
      plotlyUrl: this.plotlyUrl,
      onPeers: (side, name, event) => {
        const box = event.target.getBoundingClientRect();
        this.openPeersMenu(side, name, box.left, box.bottom);
      },
      onGoTo: (side, name) => this.selectNode(side, name, { scroll: 'center' }),
      rules: () => this.store.get().rules,
    });
    this.bindRules();
    this.menu = new ContextMenu(doc.querySelector('#context-menu'), { t: this.t });
    this.help = new HelpOverlay(doc.querySelector('#help-overlay'), { t: this.t });
    this.diagnosis = new DiagnosisPanel(doc.querySelector('#diagnosis-overlay'), {
      api: this.api,
      t: this.t,
      context: () => this.context(),
      open: (view) => this.openView(view),
    });
    this.bindHeader();
    this.bindTabs();
    this.bindShortcuts();
    this.store.subscribe((state, changed) => this.onStateChange(state, changed));
    this.applyTheme();
    this.applyLanguage();
    globalThis.addEventListener('popstate', () => this.openFromUrl());
    this.ready = this.loadFiles().then(() => this.openFromUrl());
    return this.ready;
  }

  /** The level and overflow colours as the theme draws them; worked out once per file
   * table and theme, since every drawn tree row asks. */
  colors() {
    const { file, theme } = this.store.get();
    const table = file?.config?.node_colors;
    if (!this.colorsFor || this.colorsFor.table !== table || this.colorsFor.theme !== theme) {
      this.colorsFor = { table, theme, level: levelColors(table, theme), overflow: overflowColors(theme) };
    }
    return this.colorsFor;
  }

  context() {
    const state = this.store.get();
    return { graph: state.graph, step: state.step, rank: state.rank, microStep: state.microStep, file: state.file, rules: state.rules };
  }

  get compare() {
    return this.store.get().file?.config?.graph_type === 'compare';
  }

  async loadFiles() {
    try {
      const listing = await this.api.listGraphs();
      this.store.set({ files: listing.files });
      this.filePanel.setFiles(listing.files);
    } catch (error) {
      this.showStatus(this.t('status.loadFailed', { message: error.message }));
    }
  }

  /** Open the view the address bar describes (or the first readable file). */
  openFromUrl() {
    const wanted = parseUrlState(globalThis.location.search);
    this.wantedRules = rulesParam(globalThis.location.search);
    const files = this.store.get().files;
    const file = files.find((item) => item.id === wanted.graph && !item.error) ?? files.find((item) => !item.error && item.config?.graph_type === 'compare') ?? files.find((item) => !item.error);
    // A graph the address names but the server cannot open: say so, rather than show another.
    if (wanted.graph && file?.id !== wanted.graph) {
      const unreadable = files.some((item) => item.id === wanted.graph);
      this.showStatus(this.t(unreadable ? 'status.graphUnreadable' : 'status.noGraph', { graph: wanted.graph, shown: file?.id ?? '–' }));
    }
    if (!file) {
      this.filePanel.show(null, {});
      for (const pane of Object.values(this.panes)) pane.clear(this.t('file.none'));
      return Promise.resolve();
    }
    return this.openView({
      graph: file.id,
      step: wanted.step,
      rank: wanted.rank,
      microStep: wanted.micro ?? -1,
      node: file.id === wanted.graph ? wanted.node : null,
      side: wanted.side ?? TARGET,
    });
  }

  /** A selector changed: keep what still applies, reload the rest. */
  changeView(change) {
    const state = this.store.get();
    const next = { graph: state.graph, step: state.step, rank: state.rank, microStep: state.microStep, node: null, side: TARGET, ...change };
    if (change.graph && change.graph !== state.graph) Object.assign(next, { step: null, rank: null, microStep: -1 });
    // Keep the selected node across step / rank when the other graph has it too.
    if (!change.graph && state.selection) Object.assign(next, { node: state.selection.name, side: state.selection.side });
    return this.openView(next);
  }

  /**
   * Load a file at a step and rank, both panes, and then reveal and select `node`. Every
   * later step waits for the data it needs (no timers), and a newer call wins.
   */
  async openView({ graph, step, rank, microStep = -1, node = null, side = TARGET }) {
    const generation = ++this.viewGeneration;
    const files = this.store.get().files;
    let file = files.find((item) => item.id === graph) ?? null;
    if (!file) return;
    const config = file.config;
    const steps = config?.steps ?? [0];
    const ranks = config?.ranks ?? [0];
    const fileChanged = graph !== this.store.get().graph;
    const patch = {
      graph,
      file,
      step: steps.includes(step) ? step : steps[0],
      rank: ranks.includes(rank) ? rank : ranks[0],
      microStep: microStep ?? -1,
      selection: null,
      rules: rulesFor(this.wantedRules, file),
    };
    if (fileChanged) patch.mode = config?.graph_type !== 'compare' && config?.overflow_check ? 'overflow' : 'precision';
    this.store.set(patch);
    this.showRules(file);
    this.menu.close();
    const compare = config?.graph_type === 'compare';
    this.doc.querySelector('#panes').classList.toggle('single', !compare);
    this.doc.querySelector(`#pane-${GOLDEN}`).hidden = !compare;
    this.filePanel.show(file, this.store.get());
    this.detailPanel.showEmpty();
    const loads = [this.panes[TARGET].load(this.context())];
    if (compare) loads.push(this.panes[GOLDEN].load(this.context()));
    else this.panes[GOLDEN].clear();
    this.filterPanel.reset();
    this.searchPanel.reset();
    this.matchPanel.reset();
    this.renderLegend();
    this.writeUrl();
    await Promise.all(loads);
    if (generation !== this.viewGeneration) return;
    if (node) await this.selectNode(compare ? side : TARGET, node, { scroll: 'center' });
    file = null;
  }

  // --- selection and sync ------------------------------------------------------------------

  /** Reveal `name` in its pane (expanding ancestors, loading pages) and select it. */
  async selectNode(side, name, { scroll = 'center', focus = false } = {}) {
    const pane = this.panes[side];
    const generation = this.viewGeneration;
    const data = await pane.reveal(name);
    if (generation !== this.viewGeneration) return null;
    if (!data) {
      this.showStatus(this.t('status.notFound', { name }));
      return null;
    }
    pane.select(name, { scroll, focus, user: true });
    return data;
  }

  onTreeSelect(pane, name, data) {
    const other = this.panes[OTHER[pane.side]];
    other.selected = null;
    other.markCounterpart(null);
    this.store.set({ selection: { side: pane.side, name } });
    this.detailPanel.show(pane.side, name, data);
    this.matchPanel.selectionChanged(pane.side, data);
    this.filterPanel.results.highlight(name);
    this.searchPanel.results.highlight(name);
    if (this.compare && data?.counterpart) this.showCounterpart(pane.side, data.counterpart, this.store.get().sync);
  }

  /** Mark the counterpart in the other pane; with sync on, reveal it and scroll to it. */
  async showCounterpart(side, counterpart, reveal) {
    const other = this.panes[OTHER[side]];
    const generation = this.viewGeneration;
    if (reveal) await other.reveal(counterpart);
    if (generation !== this.viewGeneration) return;
    const selection = this.store.get().selection;
    if (selection?.side !== side) return; // the user moved on
    other.markCounterpart(counterpart, { scroll: reveal });
  }

  /** With sync on, the counterpart of an expanded / collapsed node follows. */
  async onTreeToggle(pane, name, expanded) {
    if (!this.store.get().sync || !this.compare) return;
    const data = pane.model.get(name);
    if (!data?.counterpart) return;
    const other = this.panes[OTHER[pane.side]];
    if (expanded) {
      if (!(await other.reveal(data.counterpart))) return;
      await other.expand(data.counterpart);
    } else if (other.model.has(data.counterpart)) {
      other.collapse(data.counterpart);
    }
  }

  // --- actions -----------------------------------------------------------------------------

  async goToFirstError() {
    const { graph, step, rank } = this.context();
    if (!graph) return;
    try {
      const located = await this.api.firstError(graph, { side: TARGET, step, rank });
      if (!located.node) return this.showStatus(this.t('actions.noFirstError'));
      await this.selectNode(TARGET, located.node.name, { scroll: 'center', focus: true });
    } catch (error) {
      this.showStatus(this.t('status.loadFailed', { message: error.message }));
    }
  }

  async drillToWorst(side = null, name = null) {
    const selection = this.store.get().selection;
    side = side ?? selection?.side;
    name = name ?? selection?.name;
    if (!name) return this.showStatus(this.t('actions.selectFirst'));
    const { graph, step, rank } = this.context();
    try {
      const located = await this.api.worst(graph, { side, step, rank }, name);
      if (!located.node) return this.showStatus(this.t('actions.noWorst'));
      await this.selectNode(side, located.node.name, { scroll: 'center', focus: true });
    } catch (error) {
      this.showStatus(this.t('status.loadFailed', { message: error.message }));
    }
  }

  selectCounterpart() {
    const selection = this.store.get().selection;
    if (!selection || !this.compare) return;
    const data = this.panes[selection.side].model.get(selection.name);
    if (data?.counterpart) this.selectNode(OTHER[selection.side], data.counterpart, { scroll: 'center', focus: true });
  }

  /** Switch to the peer's rank, wait for that rank's trees, then reveal and select it. */
  goToPeer(side, peer) {
    this.showStatus(this.t('status.rankSwitch', { rank: peer.rank }));
    return this.openView({ ...this.context(), rank: peer.rank, node: peer.name, side });
  }

  async afterMatchChange({ targets, goldens }) {
    await Promise.all([this.panes[TARGET].refreshNodes(targets), this.panes[GOLDEN].refreshNodes(goldens)]);
    const selection = this.store.get().selection;
    if (selection) {
      this.detailPanel.show(selection.side, selection.name, this.panes[selection.side].model.get(selection.name));
      const data = this.panes[selection.side].model.get(selection.name);
      this.panes[OTHER[selection.side]].markCounterpart(data?.counterpart ?? null);
    }
    // The file's counts changed: refresh the listing entry for the summary and filters.
    try {
      const entry = await this.api.graphConfig(this.store.get().graph);
      const files = this.store.get().files.map((item) => (item.id === entry.id ? entry : item));
      this.store.set({ files, file: entry });
      this.filePanel.show(entry, this.store.get());
    } catch {
      /* the summary stays as it was */
    }
  }

  // --- menus -------------------------------------------------------------------------------

  openNodeMenu(side, name, x, y) {
    const pane = this.panes[side];
    const data = pane.model.get(name);
    const items = [];
    if (data?.child_count) items.push({ label: this.t('menu.expand'), action: () => pane.toggle(name, { user: true }) });
    if (this.compare && data?.counterpart) items.push({ label: this.t('menu.counterpart'), action: () => this.selectNode(OTHER[side], data.counterpart) });
    if (data?.child_count) items.push({ label: this.t('menu.worst'), action: () => this.drillToWorst(side, name) });
    if (this.compare && this.store.get().file?.writable) {
      items.push({ label: this.t(side === TARGET ? 'menu.pickTarget' : 'menu.pickGolden'), action: () => this.matchPanel.setPick(side, name) });
    }
    items.push({ label: this.t('menu.copy'), action: () => navigator.clipboard?.writeText(name) });
    items.push({ separator: true }, { heading: this.t('menu.peers') });
    this.menu.show(x, y, items, this.peerItems(side, name));
  }

  openPeersMenu(side, name, x, y) {
    this.menu.show(x, y, [{ heading: this.t('menu.peers') }], this.peerItems(side, name));
  }

  /** Menu entries for the node's peers on other ranks, each with the peer's colour. */
  async peerItems(side, name) {
    const { graph, step, rank } = this.context();
    const found = await this.api.peers(graph, { side, step, rank }, name);
    const peers = found.peers.filter((peer) => peer.name);
    if (!peers.length) return [{ label: this.t('menu.noPeers'), disabled: true }];
    return peers.map((peer) => ({
      label: `${this.t('menu.peerRank', { rank: peer.rank })} · ${peer.name}${peer.verdict ? ` · ${peer.verdict}` : ''}`,
      title: peer.reason ?? peer.kind ?? '',
      color: peer.node?.color ?? null,
      className: 'peer-item',
      disabled: !peer.node,
      action: () => this.goToPeer(side, peer),
    }));
  }

  // --- header, tabs, shortcuts ---------------------------------------------------------------

  bindHeader() {
    const doc = this.doc;
    const sync = doc.querySelector('#sync-toggle');
    sync.checked = this.store.get().sync;
    sync.addEventListener('change', () => this.store.set({ sync: sync.checked }));
    doc.querySelector('#mode-precision').addEventListener('click', () => this.store.set({ mode: 'precision' }));
    doc.querySelector('#mode-overflow').addEventListener('click', () => this.store.set({ mode: 'overflow' }));
    doc.querySelector('#theme-toggle').addEventListener('click', () => this.toggleTheme());
    doc.querySelector('#lang-toggle').addEventListener('click', () => this.toggleLanguage());
    doc.querySelector('#help-toggle').addEventListener('click', () => this.help.toggle());
    doc.querySelector('#first-error').addEventListener('click', () => this.goToFirstError());
    doc.querySelector('#drill-worst').addEventListener('click', () => this.drillToWorst());
    doc.querySelector('#diagnose').addEventListener('click', () =>
      this.diagnosis.show().catch((error) => this.showStatus(this.t('status.loadFailed', { message: error.message }))),
    );
  }

  bindTabs() {
    const tabs = [...this.doc.querySelectorAll('[role=tab]')];
    const activate = (tab) => {
      for (const other of tabs) {
        const selected = other === tab;
        other.setAttribute('aria-selected', String(selected));
        other.tabIndex = selected ? 0 : -1;
        this.doc.getElementById(other.getAttribute('aria-controls')).hidden = !selected;
      }
      this.activeList = tab.id.replace('tab-', '');
      // Lists drawn while hidden have no height: redraw the now-visible ones.
      for (const list of [this.filterPanel.results, this.searchPanel.results, ...Object.values(this.matchPanel.lists)]) list.list.render();
    };
    for (const tab of tabs) {
      tab.addEventListener('click', () => activate(tab));
      tab.addEventListener('keydown', (event) => {
        const at = tabs.indexOf(tab);
        if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
        const next = tabs[(at + (event.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
        next.focus();
        activate(next);
      });
    }
    this.activateTab = (id) => activate(this.doc.getElementById(`tab-${id}`));
  }

  bindShortcuts() {
    this.doc.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        this.menu.close();
        this.help.close();
        return;
      }
      const target = event.target;
      const typing = target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'SELECT', 'TEXTAREA'].includes(target.tagName));
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      const actions = {
        '?': () => this.help.toggle(),
        '/': () => {
          this.activateTab('search');
          this.searchPanel.focus();
        },
        f: () => this.goToFirstError(),
        w: () => this.drillToWorst(),
        n: () => this.stepActiveList(1),
        N: () => this.stepActiveList(-1),
        c: () => this.selectCounterpart(),
        s: () => {
          this.store.set({ sync: !this.store.get().sync });
          this.doc.querySelector('#sync-toggle').checked = this.store.get().sync;
        },
        o: () => this.store.set({ mode: this.store.get().mode === 'precision' ? 'overflow' : 'precision' }),
        t: () => this.toggleTheme(),
        l: () => this.toggleLanguage(),
        '[': () => this.panes[TARGET].host.focus(),
        ']': () => this.compare && this.panes[GOLDEN].host.focus(),
      };
      const action = actions[event.key];
      if (!action) return;
      event.preventDefault();
      action();
    });
  }

  stepActiveList(delta) {
    if (this.activeList === 'search') return this.searchPanel.next(delta);
    return this.filterPanel.next(delta);
  }

  toggleTheme() {
    this.store.set({ theme: this.store.get().theme === 'dark' ? 'light' : 'dark' });
  }

  toggleLanguage() {
    this.store.set({ lang: this.store.get().lang === 'zh' ? 'en' : 'zh' });
  }

  // --- reacting to state ---------------------------------------------------------------------

  onStateChange(state, changed) {
    if (changed.has('theme')) {
      save(STORAGE.theme, state.theme);
      this.applyTheme();
      // Fills follow the theme: the tree, the legend, the filter's chips, the chart.
      for (const pane of Object.values(this.panes)) pane.list.refresh();
      this.renderLegend();
      this.filterPanel.recolor();
      if (this.detailPanel.detail) this.detailPanel.render();
    }
    if (changed.has('lang')) {
      save(STORAGE.lang, state.lang);
      this.applyLanguage();
    }
    if (changed.has('sync')) save(STORAGE.sync, String(state.sync));
    if (changed.has('mode')) {
      for (const [mode, id] of [['precision', '#mode-precision'], ['overflow', '#mode-overflow']]) {
        this.doc.querySelector(id).setAttribute('aria-checked', String(state.mode === mode));
      }
      this.renderLegend();
      for (const pane of Object.values(this.panes)) pane.list.refresh();
    }
    if (changed.has('selection')) this.writeUrl();
  }

  applyTheme() {
    this.doc.documentElement.dataset.theme = this.store.get().theme;
  }

  applyLanguage() {
    const lang = this.store.get().lang;
    this.doc.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
    this.doc.querySelector('#lang-toggle').textContent = lang === 'zh' ? 'EN' : '中';
    applyTranslations(this.doc, lang);
    this.renderLegend();
    const state = this.store.get();
    if (state.file) this.filePanel.show(state.file, state);
    for (const list of [this.filterPanel.results, this.searchPanel.results]) list.relabel();
    this.matchPanel.relabel();
    for (const pane of Object.values(this.panes)) pane.list.refresh();
    if (this.detailPanel.detail) this.detailPanel.render();
    else this.detailPanel.showEmpty();
    if (this.help.open) this.help.render();
  }

  renderLegend() {
    const state = this.store.get();
    renderLegend(this.doc.querySelector('#legend'), {
      nodeColors: state.file?.config?.node_colors,
      mode: state.mode,
      compare: this.compare,
      colors: this.colors(),
      t: this.t,
    });
    this.doc.querySelector('#mode-overflow').disabled = !state.file?.config?.overflow_check;
  }

  /** The "msprobe rules / dtype-aware" switch: the same file's verdicts under the other
   * rule set (stored at build time: nothing is rebuilt), the view reloaded in place. */
  bindRules() {
    const select = this.doc.querySelector('#rules-select');
    if (!select) return;
    select.addEventListener('change', () => {
      this.wantedRules = select.value === 'msprobe' ? 'msprobe' : 'dtype-aware';
      this.changeView({});
    });
  }

  /** The switch shows the rule set the file is read under; dtype-aware is offered only where
   * the file holds those verdicts (not msprobe's files, builds or md5 mode). */
  showRules(file) {
    const select = this.doc.querySelector('#rules-select');
    if (!select) return;
    const ours = select.querySelector('option[value="dtype-aware"]');
    if (ours) ours.disabled = file?.default_rules !== 'dtype-aware';
    select.value = this.store.get().rules;
  }

  writeUrl() {
    const state = this.store.get();
    if (!state.graph) return;
    const search = buildUrlSearch({
      graph: state.graph,
      step: state.step,
      rank: state.rank,
      node: state.selection?.name ?? null,
      side: state.selection?.side ?? null,
      micro: state.microStep,
      rules: state.rules !== rulesFor(null, state.file) ? state.rules : null, // the file's default left out
    });
    if (search !== globalThis.location.search) history.replaceState(null, '', `${globalThis.location.pathname}${search}`);
    const trends = this.doc.querySelector('#trends-link'); // the Trends page opens on this file
    if (trends) trends.href = `/trends${buildUrlSearch({ graph: state.graph, step: state.step, rank: state.rank })}`;
    const table = this.doc.querySelector('#table-link'); // the Table page opens on this graph
    if (table) table.href = `/table${buildUrlSearch({ graph: state.graph, step: state.step, rank: state.rank })}`;
  }

  showStatus(text) {
    const status = this.doc.querySelector('#status');
    status.textContent = text;
    status.classList.add('visible');
    clearTimeout(this.statusTimer);
    this.statusTimer = setTimeout(() => status.classList.remove('visible'), 4000);
  }
}
