// A merged node's per-rank statistics as data (no DOM): for each parameter a parallel merge
// merged (`ranks` of a side's fields, server/param_stats.py), the merged value and each rank's
// own, and the rank that stands out. The usual culprit of a TP run is one rank.
//
// A rank's departure is measured from the ranks' median of each statistic, not from the merged
// value: the merged Max is the largest rank's own, so a culprit with a huge Max would sit on it
// and every healthy rank would seem to depart. With two ranks the median is their midpoint and
// neither stands out by itself: the departures are shown, no rank is marked.

import { statNumber } from '../format.js';

export const RANK_FIELDS = ['max', 'min', 'mean', 'norm'];
// Departures closer than this are a tie: a shard's statistics are rounded to its dtype,
// bfloat16's relative step being the coarsest.
export const TIE = 2 ** -7;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

// A Mean near zero would make any departure of it huge: it is measured against the merged
// tensor's range when that is wider than the Mean itself.
function scaleOf(field, reference, merged) {
  if (field !== 'mean') return Math.abs(reference);
  const [max, min] = ['max', 'min'].map((name) => statNumber(merged?.[name]));
  const range = max !== null && min !== null && Number.isFinite(max - min) ? max - min : 0;
  return Math.max(Math.abs(reference), range);
}

function departure(value, reference, scale) {
  if (value === reference) return 0;
  if (!Number.isFinite(value) || !Number.isFinite(reference)) return Infinity;
  return Math.abs(value - reference) / Math.max(scale, Number.EPSILON);
}

/** Each rank's departure (same order as `ranks`): the largest over Max, Min, Mean and Norm
 * of its distance from the ranks' median, relative (0: none; null: no number to compare). */
export function rankDepartures(ranks, merged) {
  const worst = ranks.map(() => null);
  for (const field of RANK_FIELDS) {
    const values = ranks.map((rank) => statNumber(rank[field]));
    const numbers = values.filter((value) => value !== null && !Number.isNaN(value));
    if (numbers.length < 2) continue;
    const reference = median(numbers);
    const scale = scaleOf(field, reference, merged);
    values.forEach((value, index) => {
      if (value === null || Number.isNaN(value)) return;
      const found = departure(value, reference, scale);
      worst[index] = worst[index] === null ? found : Math.max(worst[index], found);
    });
  }
  return worst;
}

/** One entry per merged parameter of `side` ('target' | 'golden') of the node's rows:
 * { key, merged, ranks: [{ rank, max, min, mean, norm, departure }], outlier } where
 * `outlier` is the rank departing most (null when another departs within TIE of it). */
export function rankBreakdown(rows, side) {
  const found = [];
  for (const row of rows ?? []) {
    const fields = row[side];
    if (!fields?.ranks?.length) continue;
    const departures = rankDepartures(fields.ranks, fields.stats);
    const ranks = fields.ranks.map((rank, index) => ({ ...rank, departure: departures[index] }));
    const scored = ranks.filter((rank) => rank.departure !== null);
    let outlier = null;
    if (scored.length > 2) {
      const top = scored.reduce((best, rank) => (rank.departure > best.departure ? rank : best));
      if (scored.every((rank) => rank === top || rank.departure < top.departure - TIE)) outlier = top.rank;
    }
    found.push({ key: row.key, merged: fields.stats, ranks, outlier });
  }
  return found;
}
