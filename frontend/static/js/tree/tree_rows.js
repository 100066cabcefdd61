// Drawing one tree row into a pooled element: twisty, name (filled with the node's colour),
// markers and roll-up badges. Everything from the file is set as text.

import { nodeFill, textOn, themedFill } from '../colors.js';
import { formatCount, shortLabel } from '../format.js';

export const ROW_HEIGHT = 24;
const INDENT = 16;

export function createRowElement() {
  const row = document.createElement('div');
  row.className = 'tree-row';
  row.setAttribute('role', 'treeitem');
  const twisty = document.createElement('span');
  twisty.className = 'twisty';
  twisty.setAttribute('aria-hidden', 'true');
  const label = document.createElement('span');
  label.className = 'label';
  const marks = document.createElement('span');
  marks.className = 'marks';
  const badges = document.createElement('span');
  badges.className = 'badges';
  row.append(twisty, label, marks, badges);
  return row;
}

function badge(text, color, title) {
  const element = document.createElement('span');
  element.className = 'badge';
  element.textContent = text;
  element.title = title;
  if (color) {
    element.style.backgroundColor = color;
    element.style.color = textOn(color) ?? '';
  }
  return element;
}

/** Fill `row` for a node row. `view`: {mode, theme, levelColors, overflowColors, t, selected,
 * counterpart, expanded, loading} (the colours already as `theme` draws them) */
export function renderNodeRow(row, data, depth, view) {
  const [twisty, label, marks, badges] = row.children;
  row.classList.remove('gap-row');
  row.style.paddingLeft = `${4 + depth * INDENT}px`;
  row.dataset.name = data.name;
  row.setAttribute('aria-level', String(depth + 1));
  row.setAttribute('aria-selected', String(view.selected));
  row.classList.toggle('selected', view.selected);
  row.classList.toggle('counterpart', view.counterpart);
  row.classList.toggle('unmatched', data.matched === false);
  const expandable = data.child_count > 0;
  if (expandable) row.setAttribute('aria-expanded', String(view.expanded));
  else row.removeAttribute('aria-expanded');
  twisty.textContent = expandable ? (view.loading ? '…' : view.expanded ? '▾' : '▸') : '';
  twisty.classList.toggle('leaf', !expandable);

  label.textContent = shortLabel(data.name, depth);
  label.title = data.name;
  const fill = themedFill(nodeFill(data, view.mode), view.theme);
  label.style.backgroundColor = fill ?? '';
  label.style.color = fill ? (textOn(fill) ?? '') : '';
  label.classList.toggle('filled', Boolean(fill));
  label.classList.toggle('module', data.type_name === 'module');
  label.classList.toggle('api-list', data.type_name === 'api_collection');

  marks.replaceChildren();
  if (data.introduced) {
    const mark = document.createElement('span');
    mark.className = `mark introduced ${data.introduced}`;
    mark.textContent = '⚑';
    mark.title = view.t('tree.introduced');
    marks.append(mark);
  }
  if (data.manual) {
    const mark = document.createElement('span');
    mark.className = 'mark manual';
    mark.textContent = '✎';
    mark.title = view.t('tree.manual');
    marks.append(mark);
  }

  badges.replaceChildren();
  if (!expandable) return;
  const rollup = data.rollup ?? {};
  if (view.mode === 'overflow') {
    if (rollup.overflow_leaves) {
      badges.append(
        badge(
          formatCount(rollup.overflow_leaves),
          view.overflowColors[rollup.worst_overflow],
          view.t('tree.overflowBadge', { count: rollup.overflow_leaves }),
        ),
      );
    }
    return;
  }
  if (rollup.error_leaves) {
    badges.append(badge(formatCount(rollup.error_leaves), view.levelColors.error, view.t('tree.errorBadge', { count: rollup.error_leaves })));
  }
  if (rollup.warning_leaves) {
    badges.append(badge(formatCount(rollup.warning_leaves), view.levelColors.warning, view.t('tree.warningBadge', { count: rollup.warning_leaves })));
  }
  if (rollup.unmatched_leaves) {
    badges.append(badge(formatCount(rollup.unmatched_leaves), view.levelColors.unmatched, view.t('tree.unmatchedBadge', { count: rollup.unmatched_leaves })));
  }
}

/** Fill `row` as the placeholder of children not loaded yet. */
export function renderGapRow(row, gap, depth, remaining, t) {
  const [twisty, label, marks, badges] = row.children;
  row.classList.add('gap-row');
  row.classList.remove('selected', 'counterpart', 'unmatched');
  row.style.paddingLeft = `${4 + depth * INDENT}px`;
  delete row.dataset.name;
  row.removeAttribute('aria-expanded');
  row.setAttribute('aria-level', String(depth + 1));
  row.setAttribute('aria-selected', 'false');
  twisty.textContent = '';
  label.textContent = gap.loading ? t('tree.loadingMore') : t('tree.loadMore', { count: formatCount(remaining) });
  label.title = '';
  label.style.backgroundColor = '';
  label.style.color = '';
  label.classList.remove('filled', 'module', 'api-list');
  marks.replaceChildren();
  badges.replaceChildren();
}
