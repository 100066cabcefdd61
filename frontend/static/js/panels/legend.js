// The header legend: what each fill means in the current colour mode, what a module's badges
// count (leaves, where the filter counts every node), plus the row markers.

import { OVERFLOW_LEVELS, legendEntries } from '../colors.js';
import { el, setChildren } from '../dom.js';

/** `colors`: {level, overflow} as the theme draws them (the tree's fills). */
export function renderLegend(host, { nodeColors, mode, compare, colors, t }) {
  const items = [];
  if (mode === 'overflow') {
    for (const level of OVERFLOW_LEVELS) {
      items.push(legendItem(colors.overflow[level], t(`overflow.${level}`), ''));
    }
  } else if (compare) {
    for (const entry of legendEntries(nodeColors)) {
      const range = entry.range.length === 2 ? ` [${entry.range[0]}, ${entry.range[1]}]` : '';
      items.push(legendItem(colors.level[entry.level], t(`level.${entry.level}`), `${entry.description}${range}`));
    }
  }
  if (mode === 'overflow' || compare) {
    items.push(el('span', { className: 'legend-item badge-legend', title: t('legend.badgesTitle') }, el('span', { className: 'badge' }, 'n'), ' ', t('legend.badges')));
  }
  items.push(el('span', { className: 'legend-item', title: t('tree.introduced') }, el('span', { className: 'mark introduced error' }, '⚑'), ' ', t('tree.introduced')));
  if (compare) items.push(el('span', { className: 'legend-item', title: t('tree.manual') }, el('span', { className: 'mark manual' }, '✎'), ' ', t('tree.manual')));
  setChildren(host, items);
}

function legendItem(color, label, title) {
  const chip = el('span', { className: 'chip' });
  chip.style.backgroundColor = color;
  return el('span', { className: 'legend-item', title }, chip, ' ', label);
}
