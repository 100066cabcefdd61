// Manual matching: pick a target and a golden node (from the trees, or from the lists of
// unmatched nodes), match them with or without descendants, unmatch, undo; export and
// import msprobe's .vis.config. The app recolours the trees from the answers.

import { el, setChildren } from '../dom.js';
import { GOLDEN, OTHER, SIDES, TARGET } from '../sides.js';
import { ResultList } from '../widgets/result_list.js';
import { SuggestionsPanel } from './suggestions_panel.js';

export class MatchPanel {
  constructor(host, { api, t, context, onPick, onChanged, notify }) {
    this.host = host;
    this.api = api;
    this.t = t;
    this.context = context; // () => {graph, step, rank, file}
    this.onPick = onPick; // (side, name): reveal and select in the tree
    this.onChanged = onChanged; // ({targets, goldens}) after any change
    this.notify = notify;
    this.picks = { [TARGET]: null, [GOLDEN]: null };
    this.queue = Promise.resolve(); // the actions asked for, run one after another
    this.pending = 0;
    this.build();
  }

  build() {
    const t = this.t;
    this.targetField = el('output', { className: 'pick', id: 'match-target' });
    this.goldenField = el('output', { className: 'pick', id: 'match-golden' });
    this.descendants = el('input', { type: 'checkbox', id: 'match-descendants' });
    this.matchButton = el('button', { type: 'button', id: 'match-button', className: 'primary', onclick: () => this.match() }, t('match.match'));
    this.unmatchButton = el('button', { type: 'button', id: 'unmatch-button', onclick: () => this.unmatch() }, t('match.unmatch'));
    this.undoButton = el('button', { type: 'button', id: 'undo-button', onclick: () => this.undo() }, t('match.undo'));
    this.exportLink = el('a', { className: 'button-link', id: 'export-config', download: '' }, t('match.export'));
    this.importInput = el('input', { type: 'file', accept: '.json,.config,.vis.config,application/json', id: 'import-config', className: 'visually-hidden', onchange: (event) => this.importFile(event) });
    const importLabel = el('label', { className: 'button-link', htmlFor: 'import-config' }, t('match.import'));
    this.message = el('p', { className: 'match-message small', role: 'status' });
    this.notice = el('p', { className: 'muted small' });
    const useSelected = (side) => el('button', { type: 'button', className: 'small-button', onclick: () => this.useSelected(side) }, t('match.useSelected'));
    this.suggestionsHost = el('section', { className: 'suggestions', id: 'suggestions' });
    this.suggestions = new SuggestionsPanel(this.suggestionsHost, {
      api: this.api,
      t,
      context: () => this.context(),
      run: (action) => this.run(action),
      changed: (pairs) => this.changed(pairs),
      onPick: (side, name) => this.pickFromList(side, name),
      say: (text) => this.say(text),
    });
    this.targetList = el('div', { className: 'result-block short' });
    this.goldenList = el('div', { className: 'result-block short' });
    this.controls = el(
      'div',
      { className: 'match-controls' },
      el('div', { className: 'pick-row' }, el('span', { className: 'pick-label' }, t('match.target')), this.targetField, useSelected(TARGET)),
      el('div', { className: 'pick-row' }, el('span', { className: 'pick-label' }, t('match.golden')), this.goldenField, useSelected(GOLDEN)),
      el('label', { className: 'toggle' }, this.descendants, ' ', t('match.descendants')),
      el('div', { className: 'button-row' }, this.matchButton, this.unmatchButton, this.undoButton),
      el('div', { className: 'button-row' }, this.exportLink, importLabel, this.importInput),
      this.message,
      this.suggestionsHost,
      el('h4', {}, t('match.unmatchedTarget')),
      this.targetList,
      el('h4', {}, t('match.unmatchedGolden')),
      this.goldenList,
    );
    setChildren(this.host, el('h3', {}, t('match.title')), this.notice, this.controls);
    this.lists = {
      [TARGET]: new ResultList(this.targetList, { t, colorOf: (item) => item.color, onPick: (item) => this.pickFromList(TARGET, item.name) }),
      [GOLDEN]: new ResultList(this.goldenList, { t, colorOf: (item) => item.color, onPick: (item) => this.pickFromList(GOLDEN, item.name) }),
    };
    this.getSelection = () => null;
  }

  /** The app tells us how to read the current selection: () => {side, name, data}. */
  setSelectionSource(getSelection) {
    this.getSelection = getSelection;
  }

  /** New file, step or rank. */
  reset() {
    const { file, graph, step, rank } = this.context();
    const compare = file?.config?.graph_type === 'compare';
    const writable = Boolean(file?.writable);
    this.picks = { [TARGET]: null, [GOLDEN]: null };
    this.showPicks();
    this.message.textContent = '';
    this.controls.hidden = !compare;
    this.notice.textContent = !compare ? this.t('match.buildOnly') : writable ? '' : this.t('match.readOnly');
    for (const button of [this.matchButton, this.unmatchButton, this.undoButton]) button.disabled = !writable;
    this.importInput.disabled = !writable;
    if (compare && graph) this.exportLink.href = this.api.exportConfigUrl(graph, { step, rank });
    this.reloadLists();
    this.suggestions.reset(compare && writable);
  }

  reloadLists() {
    const { file, graph, step, rank } = this.context();
    if (!graph || file?.config?.graph_type !== 'compare') {
      for (const list of Object.values(this.lists)) list.reset(null, '');
      return Promise.resolve();
    }
    return Promise.all(
      SIDES.map((side) =>
        this.lists[side].reset((cursor) => this.api.filter(graph, { side, step, rank }, { unmatched: true, cursor, limit: 200 })),
      ),
    );
  }

  /** A node was selected in a tree: unmatched nodes fill their side's pick; a matched one
   * fills both with its pair (ready to unmatch). */
  selectionChanged(side, data) {
    if (!data || this.controls.hidden) return;
    if (data.matched === false) this.picks[side] = data.name;
    else if (data.matched && data.counterpart) {
      this.picks[side] = data.name;
      this.picks[OTHER[side]] = data.counterpart;
    }
    this.showPicks();
  }

  useSelected(side) {
    const selection = this.getSelection();
    if (selection && selection.side === side) {
      this.picks[side] = selection.name;
      this.showPicks();
    }
  }

  pickFromList(side, name) {
    this.picks[side] = name;
    this.showPicks();
    this.onPick(side, name);
  }

  setPick(side, name) {
    this.picks[side] = name;
    this.showPicks();
  }

  showPicks() {
    this.targetField.textContent = this.picks[TARGET] ?? '–';
    this.targetField.title = this.picks[TARGET] ?? '';
    this.goldenField.textContent = this.picks[GOLDEN] ?? '–';
    this.goldenField.title = this.picks[GOLDEN] ?? '';
  }

  /** Run the actions in the order they were asked for, each after the previous one's write
   * and refresh. The trees repaint before the lists of unmatched nodes finish reloading, so a
   * click can come while the previous action still runs: dropping it lost an undo clicked as
   * soon as the node turned grey, and starting it at once would let the older refresh land
   * after the newer write's. The panel is aria-busy while any action waits or runs. */
  run(action) {
    this.pending += 1;
    this.host.setAttribute('aria-busy', 'true');
    this.queue = this.queue.then(async () => {
      try {
        await action();
      } catch (error) {
        this.message.textContent = error.message;
        this.message.classList.add('error-text');
      } finally {
        this.pending -= 1;
        if (this.pending === 0) this.host.removeAttribute('aria-busy');
      }
    });
    return this.queue;
  }

  say(text) {
    this.message.classList.remove('error-text');
    this.message.textContent = text;
    this.notify?.(text);
  }

  describeSkipped(skipped) {
    if (!skipped?.length) return '';
    return ` · ${this.t('match.skipped', { count: skipped.length, reason: skipped[0].reason })}`;
  }

  match() {
    return this.pair((graph, body) => this.api.match(graph, body), 'match.done');
  }

  unmatch() {
    return this.pair((graph, body) => this.api.unmatch(graph, body), 'match.unmatched');
  }

  /** Match and unmatch alike: both picks needed, one request, the touched rows refreshed.
   * What it acts on is read at the click, not when its turn in the queue comes. */
  pair(request, doneKey) {
    const { graph, step, rank } = this.context();
    const { [TARGET]: target, [GOLDEN]: golden } = this.picks;
    const descendants = this.descendants.checked;
    return this.run(async () => {
      if (!target || !golden) {
        this.say(this.t('match.needBoth'));
        return;
      }
      const outcome = await request(graph, { step, rank, target, golden, descendants });
      this.say(this.t(doneKey, { count: outcome.pairs.length }) + this.describeSkipped(outcome.skipped));
      await this.changed(outcome.pairs.map((pair) => [pair.target, pair.golden]).concat([[target, golden]]));
    });
  }

  undo() {
    const { graph, step, rank } = this.context();
    return this.run(async () => {
      const outcome = await this.api.undo(graph, { step, rank });
      this.say(this.t('match.undone', { kind: outcome.undone.kind }));
      const pairs = outcome.undone.pairs.slice();
      if (outcome.undone.target && outcome.undone.golden) pairs.push([outcome.undone.target, outcome.undone.golden]);
      await this.changed(pairs);
    });
  }

  importFile(event) {
    const file = event.target.files?.[0];
    event.target.value = '';
    if (!file) return Promise.resolve();
    const { graph, step, rank } = this.context();
    const descendants = this.descendants.checked;
    return this.run(async () => {
      let config;
      try {
        config = JSON.parse(await file.text());
      } catch {
        config = null;
      }
      if (!config || typeof config !== 'object' || Array.isArray(config)) {
        this.say(this.t('match.badFile'));
        return;
      }
      const outcome = await this.api.importConfig(graph, { step, rank, descendants }, config);
      this.say(this.t('match.imported', { matched: outcome.matched, total: outcome.total }) + this.describeSkipped(outcome.failed));
      await this.changed(outcome.pairs.map((pair) => [pair.target, pair.golden]));
    });
  }

  async changed(pairs) {
    const targets = [...new Set(pairs.map((pair) => pair[0]).filter(Boolean))];
    const goldens = [...new Set(pairs.map((pair) => pair[1]).filter(Boolean))];
    await Promise.all([this.onChanged({ targets, goldens }), this.reloadLists(), this.suggestions.load()]);
  }
}

/** Rebuild the labels in a new language, keeping what was picked. */
MatchPanel.prototype.relabel = function relabel() {
  const picks = { ...this.picks };
  const message = this.message.textContent;
  this.build();
  this.reset();
  this.picks = picks;
  this.showPicks();
  this.message.textContent = message;
};
