// Assisted matching in the Match tab: the server's proposals for the grey nodes (target,
// golden, confidence, reason), each accepted or rejected, or all above a confidence accepted
// at once. Accepted pairs become manual matches, so the trees show them as matched by hand;
// a rejected pair is remembered by the file and not proposed again.

import { el, setChildren } from '../dom.js';
import { GOLDEN, TARGET } from '../sides.js';

export const SHOWN = 200; // rows drawn at once: the rest come with "accept all" or a refresh

/** What the list shows of the server's answer: the proposals at or above `minimum`, the
 * first `limit` of them, and how many there are in all. */
export function visibleSuggestions(suggestions, minimum, limit = SHOWN) {
  const above = suggestions.filter((item) => item.confidence >= minimum);
  return { rows: above.slice(0, limit), total: above.length };
}

export function percent(confidence) {
  return `${Math.round(confidence * 100)}%`;
}

export class SuggestionsPanel {
  /** `run(action)` queues an action behind the Match tab's others; `changed(pairs)` refreshes
   * the trees and lists after a write; `onPick(side, name)` reveals a node. */
  constructor(host, { api, t, context, run, changed, onPick, say }) {
    Object.assign(this, { host, api, t, context, run, changed, onPick, say });
    this.suggestions = [];
    this.fused = [];
    this.writable = false;
    this.build();
  }

  build() {
    const t = this.t;
    this.minimum = el('input', { type: 'number', id: 'suggest-min', min: '0', max: '1', step: '0.05', value: '0.6', className: 'suggest-min', onchange: () => this.draw() });
    this.acceptAllButton = el('button', { type: 'button', id: 'suggest-accept-all', className: 'primary', onclick: () => this.acceptAll() }, t('suggest.acceptAll'));
    this.refreshButton = el('button', { type: 'button', id: 'suggest-refresh', onclick: () => this.load() }, t('suggest.refresh'));
    this.count = el('p', { className: 'muted small', id: 'suggest-count' });
    this.list = el('ol', { className: 'suggestion-list', id: 'suggestion-list' });
    this.fusedTitle = el('h5', { hidden: true }, t('suggest.fused'));
    this.fusedList = el('ul', { className: 'suggestion-list', id: 'fused-list', hidden: true });
    setChildren(
      this.host,
      el('h4', {}, t('suggest.title')),
      el('div', { className: 'button-row' }, el('label', { className: 'toggle' }, t('suggest.minimum'), ' ', this.minimum), this.acceptAllButton, this.refreshButton),
      this.count,
      this.list,
      this.fusedTitle,
      this.fusedList,
    );
  }

  reset(writable) {
    this.writable = writable;
    this.acceptAllButton.disabled = !writable;
    return this.load();
  }

  async load() {
    const { file, graph, step, rank } = this.context();
    this.suggestions = [];
    this.fused = [];
    if (!graph || file?.config?.graph_type !== 'compare') {
      this.draw();
      return;
    }
    try {
      const found = await this.api.suggestions(graph, { step, rank, minConfidence: 0 });
      this.suggestions = found.suggestions;
      this.fused = found.fused ?? [];
    } catch (error) {
      this.count.textContent = error.message;
      this.list.replaceChildren();
      return;
    }
    this.draw();
  }

  minimumValue() {
    const value = Number(this.minimum.value);
    return Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0.6;
  }

  draw() {
    const { rows, total } = visibleSuggestions(this.suggestions, this.minimumValue());
    this.count.textContent = this.t('suggest.count', { shown: rows.length, total });
    this.list.replaceChildren(...rows.map((item) => this.row(item)));
    // fused nodes: one for several on the other side, shown for what they are, never paired
    const fused = visibleSuggestions(this.fused, this.minimumValue()).rows;
    this.fusedTitle.hidden = this.fusedList.hidden = fused.length === 0;
    this.fusedList.replaceChildren(
      ...fused.map((item) =>
        el(
          'li',
          { className: 'suggestion fused' },
          el('div', { className: 'suggestion-pair' }, item.target.join(', '), el('span', { className: 'muted' }, ' ⇉ '), item.golden.join(', ')),
          el('p', { className: 'muted small suggestion-reason' }, `${percent(item.confidence)} · ${item.reason}`),
        ),
      ),
    );
  }

  row(item) {
    const t = this.t;
    const node = (side, name) => el('button', { type: 'button', className: 'suggestion-node', title: name, onclick: () => this.onPick(side, name) }, name);
    return el(
      'li',
      { className: 'suggestion', dataset: { target: item.target, golden: item.golden } },
      el('div', { className: 'suggestion-pair' }, node(TARGET, item.target), el('span', { className: 'muted' }, ' ↔ '), node(GOLDEN, item.golden)),
      el('div', { className: 'suggestion-meta' },
        el('span', { className: 'suggestion-confidence', title: String(item.confidence) }, percent(item.confidence)),
        el('button', { type: 'button', className: 'small-button suggestion-accept', disabled: !this.writable, onclick: () => this.accept(item) }, t('suggest.accept')),
        el('button', { type: 'button', className: 'small-button suggestion-reject', disabled: !this.writable, onclick: () => this.reject(item) }, t('suggest.reject')),
      ),
      el('p', { className: 'muted small suggestion-reason' }, item.reason),
    );
  }

  accept(item) {
    const { graph, step, rank } = this.context();
    return this.run(async () => {
      const outcome = await this.api.acceptSuggestion(graph, { step, rank, target: item.target, golden: item.golden });
      this.say(this.t('match.done', { count: outcome.pairs.length }));
      await this.changed([[item.target, item.golden]]);
    });
  }

  reject(item) {
    const { graph, step, rank } = this.context();
    return this.run(async () => {
      await this.api.rejectSuggestion(graph, { step, rank, target: item.target, golden: item.golden });
      this.say(this.t('suggest.rejected'));
      await this.load();
    });
  }

  acceptAll() {
    const { graph, step, rank } = this.context();
    const minConfidence = this.minimumValue();
    return this.run(async () => {
      const outcome = await this.api.acceptAllSuggestions(graph, { step, rank, min_confidence: minConfidence });
      this.say(this.t('match.imported', { matched: outcome.matched, total: outcome.total }));
      await this.changed(outcome.pairs.map((pair) => [pair.target, pair.golden]));
    });
  }
}
