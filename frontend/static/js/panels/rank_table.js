// The detail panel's per-rank section of a merged node: for each side and each parameter a
// parallel merge merged, the merged Max / Min / Mean / Norm and each rank's own beneath, the
// rank departing most from the ranks' median marked (rank_stats.js). Nothing when none merged.

import { el } from '../dom.js';
import { formatNumber, statNumber } from '../format.js';
import { RANK_FIELDS, rankBreakdown } from './rank_stats.js';

const HEADS = ['Max', 'Min', 'Mean', 'Norm'];

function percent(departure) {
  return Number.isFinite(departure) ? `${formatNumber(departure * 100)}%` : '∞';
}

function cells(stats) {
  return RANK_FIELDS.map((field) => el('td', { className: 'num' }, formatNumber(statNumber(stats?.[field]) ?? stats?.[field])));
}

function sideTable(entries, label, t) {
  const head = el(
    'tr',
    {},
    el('th', { scope: 'col' }, t('details.param')),
    el('th', { scope: 'col' }, t('details.rank')),
    HEADS.map((name) => el('th', { scope: 'col' }, name)),
    el('th', { scope: 'col' }, t('details.rankDeparture')),
  );
  const bodies = entries.map((entry) => {
    const merged = el('tr', { className: 'merged-row' }, el('th', { scope: 'rowgroup', rowspan: String(entry.ranks.length + 1) }, entry.key), el('td', {}, t('details.merged')), cells(entry.merged), el('td', {}, ''));
    const ranks = entry.ranks.map((rank) => {
      const outlier = rank.rank === entry.outlier;
      return el(
        'tr',
        { className: outlier ? 'rank-row rank-outlier' : 'rank-row', title: outlier ? t('details.rankOutlier') : null, dataset: { rank: String(rank.rank) } },
        el('td', {}, outlier ? `▲ ${rank.rank}` : String(rank.rank)),
        cells(rank),
        el('td', { className: 'num' }, rank.departure === null ? '–' : percent(rank.departure)),
      );
    });
    return el('tbody', {}, merged, ranks);
  });
  return el('div', { className: 'table-scroll' }, el('h4', {}, label), el('table', { className: 'io-table rank-table' }, el('thead', {}, head), bodies));
}

/** The per-rank section for a node detail's rows, or null when no parameter was merged. */
export function renderRankStats(rows, t) {
  const sides = [
    ['target', t('side.target')],
    ['golden', t('side.golden')],
  ]
    .map(([side, label]) => [rankBreakdown(rows, side), label])
    .filter(([entries]) => entries.length);
  if (!sides.length) return null;
  return el(
    'details',
    { className: 'detail-section rank-stats', open: true },
    el('summary', {}, t('details.ranks')),
    sides.map(([entries, label]) => sideTable(entries, label, t)),
  );
}
