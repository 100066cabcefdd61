// The dtype-aware working of the selected node, for the detail panel: per parameter the
// measured difference d beside the noise band its dtypes and inputs explain, and why the
// node passes or introduces an error (GET .../rule-verdict). Text only, as the rest.

import { el } from '../dom.js';
import { formatNumber } from '../format.js';

/** Rows of the table from the API's answer: [{key, role, d, band, verdict, reason, introduces}]. */
export function ruleVerdictRows(found) {
  return (found?.params ?? []).map((param) => ({
    key: param.key,
    role: param.is_output ? 'output' : 'input',
    d: param.difference === null ? '–' : formatNumber(param.difference),
    band: param.band === null ? '–' : formatNumber(param.band),
    verdict: param.verdict,
    reason: param.reason,
    introduces: Boolean(param.introduces),
  }));
}

/** The summary line: the verdict, whether it is introduced here, and why. */
export function ruleVerdictSummary(found, t) {
  if (!found) return '';
  const stored = found.stored && found.stored !== found.verdict ? ` (${t('rules.stored', { level: found.stored })})` : '';
  const introduced = found.introduced ? ` · ${t('rules.introduced')}` : '';
  return `${found.verdict}${stored}${introduced}: ${found.reason}`;
}

export function renderRuleVerdict(found, t) {
  const head = el(
    'tr',
    {},
    ...['rules.param', 'rules.difference', 'rules.band', 'rules.verdict', 'rules.why'].map((key) => el('th', {}, t(key))),
  );
  const rows = ruleVerdictRows(found).map((row) =>
    el(
      'tr',
      { className: `rule-row rule-${row.verdict.replace(' ', '-')}${row.introduces ? ' introduces' : ''}` },
      el('td', {}, row.key),
      el('td', { className: 'num' }, row.d),
      el('td', { className: 'num' }, row.band),
      el('td', {}, row.verdict),
      el('td', {}, row.reason),
    ),
  );
  return el(
    'section',
    { className: 'detail-section', id: 'rule-verdict' },
    el('h3', {}, t('rules.title')),
    el('p', { className: 'rule-summary' }, ruleVerdictSummary(found, t)),
    found.note ? el('p', { className: 'muted small' }, found.note) : null,
    el('div', { className: 'table-scroll' }, el('table', { className: 'rule-table' }, el('thead', {}, head), el('tbody', {}, ...rows))),
  );
}
