// Which numbers the statistics chart plots: per statistic (Max, Min, Mean, Norm), the
// target and golden value of each tensor input and output. No plotting here (testable in node).

import { statNumber } from '../format.js';
import { TENSOR_STATS, isTensor } from '../param_kind.js';

export const CHART_STATS = TENSOR_STATS;

/** rows: ParamRowOut[] -> {stats: [{stat, keys, target, golden}], sides, empty} with only
 * parameters that have a number for the statistic on at least one side, and only tensors
 * (a scalar's "statistics" are copies of its value). `sides` names the sides with a number
 * anywhere ('target', 'golden'): an unmatched node has no golden to plot or to name. */
export function statsSeries(rows) {
  const usable = (value) => value !== null && Number.isFinite(value);
  // the typed statistics the server gives (never numbers read out of the display text)
  const number = (side, stat) => (isTensor(side?.fields) ? statNumber(side.stats?.[stat.toLowerCase()]) : null);
  const drawn = { target: false, golden: false };
  const stats = CHART_STATS.map((stat) => {
    const keys = [];
    const target = [];
    const golden = [];
    for (const row of rows) {
      const t = number(row.target, stat);
      const g = number(row.golden, stat);
      if (!usable(t) && !usable(g)) continue;
      keys.push(row.key);
      target.push(usable(t) ? t : null);
      golden.push(usable(g) ? g : null);
      drawn.target ||= usable(t);
      drawn.golden ||= usable(g);
    }
    return { stat, keys, target, golden };
  });
  const sides = Object.keys(drawn).filter((side) => drawn[side]);
  return { stats, sides, empty: sides.length === 0 };
}
