// The selected node's details: the pair's names and verdict, the paired input/output table
// (target vs golden statistics, metrics, result, messages; worst cell marked; "differences
// only"), a statistics chart, call stacks and merge info. All file data is set as text.

import { renderStatsChart, purgeChart } from '../charts/stats_chart.js';
import { themedFill } from '../colors.js';
import { el, setChildren } from '../dom.js';
import { formatNumber } from '../format.js';
import { GOLDEN, TARGET } from '../sides.js';
import { buildIoTable, statText, visibleGroups } from './io_table.js';
import { renderRankStats } from './rank_table.js';
import { renderRuleVerdict } from './rule_verdict.js';

/** A column name with a break opportunity (<wbr>) between its words: at spaces and
 * underscores, and where a lower-case letter meets a capital ("MaxRelativeErr"). */
export function wordBreaks(name) {
  const parts = String(name).split(/(?<=[a-z])(?=[A-Z])|(?<=[_ ])/);
  return parts.flatMap((part, index) => (index ? [el('wbr'), part] : [part]));
}

export class DetailPanel {
  constructor(host, { api, t, context, levelColors, plotlyUrl, onPeers, onGoTo, rules = () => 'msprobe' }) {
    this.host = host;
    this.api = api;
    this.t = t;
    this.context = context;
    this.levelColors = levelColors;
    this.plotlyUrl = plotlyUrl;
    this.onPeers = onPeers;
    this.onGoTo = onGoTo;
    this.rules = rules;
    this.ruleVerdict = null; // the dtype-aware working of the node, when that rule set is on
    this.differencesOnly = false;
    this.detail = null;
    this.request = 0;
    this.chartHost = null;
    this.showEmpty();
  }

  showEmpty() {
    this.detail = null;
    purgeChart(this.chartHost);
    setChildren(this.host, el('p', { className: 'muted empty-detail' }, this.t('details.empty')));
  }

  /** Load and show `name` of `side`; answers to older selections are dropped. `row`, the
   * tree's row of the node when known: its level says whether the rule set judged it. */
  async show(side, name, row = null) {
    const request = ++this.request;
    const { graph, step, rank } = this.context();
    this.host.setAttribute('aria-busy', 'true');
    try {
      const key = { side, step, rank };
      // the target's judged nodes only: a row without a level (unmatched, nothing to judge)
      // or an API collection (its level is its children's) has no working, and asking would
      // be a 404 on every such click now that dtype-aware is the default
      const judged = side === TARGET && (!row || (row.level !== null && row.level !== undefined && row.type !== 9));
      const [detail, ruleVerdict] = await Promise.all([
        this.api.node(graph, key, name),
        this.rules() === 'dtype-aware' && judged ? this.api.ruleVerdict(graph, key, name).catch(() => null) : null,
      ]);
      if (request !== this.request) return;
      this.detail = detail;
      this.ruleVerdict = ruleVerdict;
      this.side = side;
      this.name = name;
      this.render();
    } catch (error) {
      if (request !== this.request) return;
      setChildren(this.host, el('p', { className: 'error-text' }, error.message));
    } finally {
      if (request === this.request) this.host.removeAttribute('aria-busy');
    }
  }

  render() {
    const detail = this.detail;
    if (!detail) return this.showEmpty();
    purgeChart(this.chartHost);
    const table = buildIoTable(detail.rows);
    this.chartHost = el('div', { className: 'chart', id: 'stats-chart' });
    const diffToggle = el('input', {
      type: 'checkbox',
      id: 'diff-only',
      checked: this.differencesOnly,
      onchange: (event) => {
        this.differencesOnly = event.target.checked;
        this.render();
      },
    });
    setChildren(
      this.host,
      this.renderHeader(detail),
      el(
        'section',
        { className: 'detail-section' },
        el('div', { className: 'section-head' }, el('h3', {}, this.t('details.compare')), el('label', { className: 'toggle' }, diffToggle, ' ', this.t('details.diffOnly'))),
        this.renderTable(table),
      ),
      renderRankStats(detail.rows, this.t), // a parallel merge's per-rank breakdown
      this.ruleVerdict ? renderRuleVerdict(this.ruleVerdict, this.t) : null,
      el('details', { className: 'detail-section', open: true }, el('summary', {}, this.t('details.chart')), this.chartHost),
      this.renderTexts(detail),
    );
    renderStatsChart(this.chartHost, detail.rows, {
      plotlyUrl: this.plotlyUrl,
      labels: { target: this.t('side.target'), golden: this.t('side.golden') },
    })
      .then((drawn) => {
        if (!drawn) this.chartHost.replaceChildren(el('p', { className: 'muted' }, this.t('details.noStats')));
      })
      .catch(() => this.chartHost.replaceChildren(el('p', { className: 'muted' }, this.t('details.chartUnavailable'))));
  }

  renderHeader(detail) {
    const colors = this.levelColors();
    const sideBlock = (sideOut, label, side) => {
      if (!sideOut) return el('div', { className: 'detail-side missing' }, el('span', { className: 'muted' }, `${label}: –`));
      const node = sideOut.node;
      const chip = el('span', { className: 'chip' });
      // The tree's fill for the node: node.color is the file's, so it is themed here.
      const color = node.color ? themedFill(node.color, document.documentElement.dataset.theme) : node.matched === false ? colors.unmatched : null;
      chip.style.backgroundColor = color ?? 'transparent';
      const name = el('button', { type: 'button', className: 'link node-link', title: node.name, onclick: () => this.onGoTo(side, node.name) }, node.name);
      const facts = [node.type_name, node.level ? this.t(`level.${node.level}`) : null, node.overflow ? `${this.t('header.overflow')}: ${this.t(`overflow.${node.overflow}`)}` : null]
        .filter(Boolean)
        .join(' · ');
      const peersButton =
        sideOut.matched_distributed || node.name.startsWith('Distributed.')
          ? el('button', { type: 'button', className: 'small-button', onclick: (event) => this.onPeers(side, node.name, event) }, this.t('details.peers'))
          : null;
      return el('div', { className: 'detail-side' }, el('span', { className: 'side-label' }, label), chip, name, el('span', { className: 'muted small' }, facts), peersButton);
    };
    return el(
      'header',
      { className: 'detail-header' },
      sideBlock(detail.target, this.t('side.target'), TARGET),
      sideBlock(detail.golden, this.t('side.golden'), GOLDEN),
    );
  }

  renderTable(table) {
    if (!table.groups.length) return el('p', { className: 'muted' }, this.t('details.noRows'));
    const { statColumns, metricColumns } = table;
    const colors = this.levelColors();
    // The verdict and its reason come right after the side, in view without scrolling; the
    // column names break between words (wordBreaks) so a column is as wide as its numbers.
    const head = el(
      'tr',
      {},
      el('th', { scope: 'col' }, this.t('details.param')),
      el('th', { scope: 'col' }, this.t('details.sideCol')),
      el('th', { scope: 'col' }, this.t('details.result')),
      el('th', { scope: 'col' }, this.t('details.messages')),
      statColumns.map((column) => el('th', { scope: 'col' }, wordBreaks(column))),
      metricColumns.map((column) => el('th', { scope: 'col', className: 'metric' }, wordBreaks(column))),
    );
    const bodies = visibleGroups(table, this.differencesOnly).map(({ group, index }) => {
      const both = group.target && group.golden;
      const span = both ? 2 : 1;
      const keyCell = el('th', { scope: 'rowgroup', rowspan: String(span + (group.reference ? 1 : 0)), title: group.pairedBy ? this.t('details.pairedBy', { how: group.pairedBy }) : '' }, group.key);
      const statCells = (fields, stats) =>
        statColumns.map((column) => {
          const differs = both && String(group.target[column] ?? '') !== String(group.golden[column] ?? '');
          return el('td', { className: differs ? 'num differs' : 'num' }, statText(fields, stats, column));
        });
      const metricCells = metricColumns.map((column) => {
        const isWorst = table.worst && table.worst.group === index && table.worst.column === column;
        const cell = el('td', { rowspan: String(span), className: isWorst ? 'num metric worst' : 'num metric' }, formatNumber(group.metrics[column]));
        if (isWorst) cell.title = this.t('details.worstCell');
        return cell;
      });
      const resultCell = el('td', { rowspan: String(span), className: `result ${group.result ?? ''}` }, group.result ? this.t(`level.${group.result}`) : '–');
      if (group.result && colors[group.result]) resultCell.style.backgroundColor = colors[group.result];
      const messageCell = el('td', { rowspan: String(span), className: 'messages' }, group.messages.join('\n'));
      const rows = [];
      const firstSide = group.target ? 'T' : 'G';
      rows.push(
        el(
          'tr',
          { className: group.target ? 'target-row' : 'golden-row' },
          keyCell,
          el('td', { className: 'side-cell' }, firstSide === 'T' ? this.t('details.targetShort') : this.t('details.goldenShort')),
          resultCell,
          messageCell,
          group.target ? statCells(group.target, group.targetStats) : statCells(group.golden, group.goldenStats),
          metricCells,
        ),
      );
      if (both) rows.push(el('tr', { className: 'golden-row' }, el('td', { className: 'side-cell' }, this.t('details.goldenShort')), statCells(group.golden, group.goldenStats)));
      if (group.reference) rows.push(this.referenceRow(group, statColumns, metricColumns.length + 2)); // -nr
      const body = el('tbody', { className: group.flagged ? `flagged ${group.result}` : '' }, rows);
      return body;
    });
    return el('div', { className: 'table-scroll' }, el('table', { className: 'io-table' }, el('thead', {}, head), bodies));
  }

  /** A noise reference's (-nr) row under a parameter's target and golden ones: its
   * statistics, then d_T against d_R and the band the verdict was judged by. */
  referenceRow(group, statColumns, span) {
    const { reference } = group;
    const working = this.t('details.referenceWorking', {
      dTarget: formatNumber(reference.dTarget),
      dReference: formatNumber(reference.dReference),
      band: formatNumber(reference.band),
    });
    return el(
      'tr',
      { className: 'reference-row' },
      el('td', { className: 'side-cell', title: this.t('details.reference') }, this.t('details.referenceShort')),
      statColumns.map((column) => el('td', { className: 'num' }, statText(reference.fields, reference.stats, column))),
      el('td', { colSpan: String(span), className: `reference-working ${reference.verdict ?? ''}` }, working),
    );
  }

  renderTexts(detail) {
    const block = (title, lines) =>
      el(
        'details',
        { className: 'detail-section text-block' },
        el('summary', {}, title),
        lines.length ? el('pre', {}, lines.join('\n')) : el('p', { className: 'muted' }, this.t('details.noStack')),
      );
    const parts = [];
    for (const [sideOut, label] of [
      [detail.target, this.t('side.target')],
      [detail.golden, this.t('side.golden')],
    ]) {
      if (!sideOut) continue;
      parts.push(block(`${this.t('details.stack')} · ${label}`, sideOut.stack));
      if (sideOut.parallel_merge_info?.length) parts.push(block(`${this.t('details.merge')} · ${label}`, sideOut.parallel_merge_info));
    }
    return el('div', { className: 'texts' }, parts);
  }
}
