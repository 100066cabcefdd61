// The Diagnosis panel: where inf/NaN was born (the ranks' states, the node, its inputs and
// outputs), the first non-deterministic op or the first error, the guide's next step and the
// next dump's msprobe config.json (GET /api/graphs/{graph}/diagnosis). Opening it moves the
// viewer onto the answer's node; the card shows the evidence beside it.

import { el, setChildren } from '../dom.js';

function graphPath(graph) {
  return graph.split('/').map(encodeURIComponent).join('/');
}

/** The URL that downloads the next dump's config.json. */
export function configUrl(graph) {
  return `/api/graphs/${graphPath(graph)}/diagnosis/config.json`;
}

function shown(value) {
  if (value === null || value === undefined) return '–';
  return String(value);
}

/** Rows of the ranks' table: rank, state, node (class), first affected collective. */
export function rankRows(answer) {
  return (answer.ranks ?? []).map((rank) => [
    String(rank.rank),
    rank.state,
    rank.node ? `${rank.node} (${rank.kind})` : '–',
    rank.collective ? `${rank.collective}${rank.collective_inputs_bad ? ' (inputs already bad)' : ''}` : '–',
  ]);
}

/** Rows of the evidence table: parameter, non-finite kinds, max, min, dtype, note. */
export function evidenceRows(answer) {
  return (answer.evidence ?? []).map((item) => [
    item.key,
    item.kinds.length ? item.kinds.join(', ') : 'finite',
    shown(item.max),
    shown(item.min),
    shown(item.dtype),
    shown(item.note),
  ]);
}

function table(head, rows) {
  return el(
    'table',
    { className: 'diagnosis-table' },
    el('thead', {}, el('tr', {}, head.map((label) => el('th', { scope: 'col' }, label)))),
    el('tbody', {}, rows.map((row) => el('tr', {}, row.map((cell) => el('td', {}, cell))))),
  );
}

export class DiagnosisPanel {
  /**
   * @param {HTMLElement} host the overlay element
   * @param {{api: object, t: Function, context: () => {graph: string|null}, open: Function}} deps
   *   `open({graph, step, rank, node})` moves the viewer onto a node.
   */
  constructor(host, { api, t, context, open }) {
    this.host = host;
    this.api = api;
    this.t = t;
    this.context = context;
    this.openNode = open;
    this.answer = null;
    host.addEventListener('click', (event) => {
      if (event.target === host) this.close();
    });
    host.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        this.close();
        event.stopPropagation();
      }
    });
  }

  get open() {
    return !this.host.hidden;
  }

  async show() {
    const { graph } = this.context();
    if (!graph) return;
    this.answer = await this.api.diagnosis(graph);
    this.graph = graph;
    const answer = this.answer;
    if (answer.node !== null && answer.step !== null && answer.rank !== null) {
      await this.openNode({ graph, step: answer.step, rank: answer.rank, node: answer.node, side: answer.side });
    }
    this.render();
    this.host.hidden = false;
    this.closeButton.focus();
  }

  render() {
    const answer = this.answer;
    if (!answer) return;
    const t = this.t;
    const close = el('button', { type: 'button', className: 'icon-button close', onclick: () => this.close(), 'aria-label': t('common.close') }, '×');
    const parts = [close, el('h2', { id: 'diagnosis-title' }, t('diagnosis.title')), el('p', { className: 'diagnosis-summary' }, answer.summary)];
    if (answer.ranks?.length) {
      parts.push(table([t('file.rank'), t('diagnosis.state'), t('diagnosis.node'), t('diagnosis.collective')], rankRows(answer)));
    }
    if (answer.evidence?.length) {
      parts.push(table([t('diagnosis.parameter'), t('diagnosis.values'), 'Max', 'Min', 'dtype', ''], evidenceRows(answer)));
    }
    if (answer.by_design?.length) parts.push(el('p', { className: 'muted small' }, `${t('diagnosis.byDesign')}: ${answer.by_design.join(', ')}`));
    if (answer.advice) parts.push(el('p', { className: 'diagnosis-advice' }, `${t('diagnosis.next')}: ${answer.advice}`));
    if (answer.next_config) {
      parts.push(el('a', { className: 'button-link', href: configUrl(this.graph), download: 'config.json', id: 'diagnosis-config' }, t('diagnosis.download')));
    }
    setChildren(this.host, el('div', { className: 'overlay-card diagnosis-card' }, parts));
    this.closeButton = close;
  }

  close() {
    if (this.host.hidden) return;
    this.host.hidden = true;
  }
}
