// Which numbers the statistics chart plots: per statistic (Max, Min, Mean, Norm), the
// target and golden value of each input and output. No plotting here (testable in node).

import { parseNumber } from '../format.js';

export const CHART_STATS = ['Max', 'Min', 'Mean', 'Norm'];

/** rows: ParamRowOut[] -> {stats: [{stat, keys, target, golden}], empty} with only
 * parameters that have a number for the statistic on at least one side. */
export function statsSeries(rows) {
  const stats = CHART_STATS.map((stat) => {
    const keys = [];
    const target = [];
    const golden = [];
    for (const row of rows) {
      const t = parseNumber(row.target?.fields?.[stat]);
      const g = parseNumber(row.golden?.fields?.[stat]);
      const usable = (value) => value !== null && Number.isFinite(value);
      if (!usable(t) && !usable(g)) continue;
      keys.push(row.key);
      target.push(usable(t) ? t : null);
      golden.push(usable(g) ? g : null);
    }
    return { stat, keys, target, golden };
  });
  return { stats, empty: stats.every((series) => series.keys.length === 0) };
}
