// The paired input/output table as data (no DOM): which statistic and metric columns to
// show, one group per parameter, whether target and golden differ, and the worst cell.
// A scalar argument shows its value once, in the value column (see param_kind.js).

import { formatNumber, parseNumber, statNumber } from '../format.js';
import { TENSOR_STATS, shownFields } from '../param_kind.js';

const STAT_ORDER = ['dtype', 'shape', 'Max', 'Min', 'Mean', 'Norm', 'md5', 'requires_grad', 'value'];
const HIDDEN_FIELDS = new Set(['type', 'data_name', 'full_op_name']);
const NOT_METRICS = new Set(['Result', 'Err_message']);
// Where "worse" means "bigger": relative and absolute errors and diffs. (Cosine is the
// other way round, so it never takes part.)
const WORST_CANDIDATE = /RelativeErr|AbsErr|diff|EucDist|Err_ratio|err ratio/i;

function ordered(keys, preferred) {
  const present = new Set(keys);
  const first = preferred.filter((key) => present.has(key));
  const rest = [...present].filter((key) => !preferred.includes(key)).sort();
  return [...first, ...rest];
}

/** rows: ParamRowOut[] from /node. */
export function buildIoTable(rows) {
  const statKeys = new Set();
  const metricKeys = new Set();
  const shown = rows.map((row) => ({ target: shownFields(row.target?.fields ?? null), golden: shownFields(row.golden?.fields ?? null) }));
  for (const [index, row] of rows.entries()) {
    for (const fields of [shown[index].target, shown[index].golden]) {
      for (const key of Object.keys(fields ?? {})) if (!HIDDEN_FIELDS.has(key)) statKeys.add(key);
    }
    for (const key of Object.keys(row.comparison ?? {})) if (!NOT_METRICS.has(key)) metricKeys.add(key);
  }
  const statColumns = ordered([...statKeys], STAT_ORDER);
  const metricColumns = ordered([...metricKeys], []);
  const groups = rows.map((row, index) => {
    const { target, golden } = shown[index];
    const differs =
      !target || !golden || statColumns.some((column) => String(target[column] ?? '') !== String(golden[column] ?? ''));
    const result = row.result ? String(row.result).toLowerCase() : null;
    return {
      key: row.key,
      role: row.role,
      pairedBy: row.paired_by,
      target,
      golden,
      targetStats: row.target?.stats ?? null,
      goldenStats: row.golden?.stats ?? null,
      metrics: row.comparison ?? {},
      result,
      messages: row.messages ?? [],
      differs,
      flagged: result !== null && result !== 'pass',
      reference: referenceOf(row.reference),
    };
  });
  return { statColumns, metricColumns, groups, worst: worstCell(groups, metricColumns) };
}

/** A noise reference's (-nr) parameter as a third side: its fields in the table's columns
 * (statistics typed as the other sides'), and d_T / d_R / band / verdict; null without one. */
export function referenceOf(reference) {
  if (!reference) return null;
  const { stats } = reference;
  const shape = reference.shape === null || reference.shape === undefined ? null : `[${reference.shape.join(', ')}]`;
  return {
    fields: { dtype: reference.dtype, shape, Max: stats.max, Min: stats.min, Mean: stats.mean, Norm: stats.norm },
    stats,
    dTarget: reference.d_target,
    dReference: reference.d_reference,
    band: reference.band,
    verdict: reference.verdict,
  };
}

/** What a parameter's cell shows: Max, Min, Mean and Norm formatted from the typed `stats`
 * the server gives, any other field (and a statistic without a number) as its stored text. */
export function statText(fields, stats, column) {
  const value = fields?.[column];
  if (value === null || value === undefined || value === '') return '–';
  const typed = TENSOR_STATS.includes(column) ? statNumber(stats?.[column.toLowerCase()]) : null;
  return typed === null ? String(value) : formatNumber(typed);
}

/** {group, column} of the largest |value| among the error-like metrics, or null. */
export function worstCell(groups, metricColumns) {
  let worst = null;
  let worstValue = -1;
  for (const column of metricColumns.filter((name) => WORST_CANDIDATE.test(name))) {
    const relative = /Relative/i.test(column);
    groups.forEach((group, index) => {
      const value = parseNumber(group.metrics[column]);
      if (value === null || Number.isNaN(value) || value === 0) return; // nothing to point at
      // Relative errors rank ahead of absolute ones: they compare across magnitudes.
      const score = (relative ? 1e12 : 0) + Math.min(Math.abs(value), 1e11);
      if (score > worstValue) {
        worstValue = score;
        worst = { group: index, column };
      }
    });
  }
  return worst;
}

/** Groups to show: all, or only those whose statistics differ or whose result is not pass. */
export function visibleGroups(table, differencesOnly) {
  return table.groups
    .map((group, index) => ({ group, index }))
    .filter(({ group }) => !differencesOnly || group.flagged || (group.differs && group.result !== 'pass'));
}
