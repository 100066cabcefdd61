import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rankBreakdown, rankDepartures } from '../static/js/panels/rank_stats.js';

// TP shards merged as msprobe merges them: max of Max, min of Min, mean of Means, root of the
// summed squared Norms.
const shard = (rank, max, min, mean, norm) => ({ rank, max, min, mean, norm });
const merged = (shards) => ({
  max: Math.max(...shards.map((s) => s.max)),
  min: Math.min(...shards.map((s) => s.min)),
  mean: shards.reduce((sum, s) => sum + s.mean, 0) / shards.length,
  norm: Math.sqrt(shards.reduce((sum, s) => sum + s.norm ** 2, 0)),
});
const row = (key, shards, side = 'target') => ({ key, [side]: { name: `n.${key}`, fields: {}, stats: merged(shards), ranks: shards } });

test('equal shards depart by nothing, and no rank is marked', () => {
  const shards = [shard(0, 2, -2, 0.5, 3), shard(1, 2, -2, 0.5, 3), shard(2, 2, -2, 0.5, 3)];
  const [entry] = rankBreakdown([row('output.0', shards)], 'target');
  assert.deepEqual(entry.ranks.map((r) => r.departure), [0, 0, 0]);
  assert.equal(entry.outlier, null);
});

test('the culprit is marked though the merged Max is its own', () => {
  const shards = [shard(0, 2, -2, 0.5, 3), shard(1, 2.1, -2, 0.5, 3), shard(4, 40, -2, 9, 60), shard(5, 2, -2.1, 0.5, 3.1)];
  const rows = [row('input.0', shards, 'golden'), { key: 'input.1', golden: { stats: { max: 1 }, ranks: null } }];
  assert.deepEqual(rankBreakdown(rows, 'target'), []);
  const [entry] = rankBreakdown(rows, 'golden');
  assert.equal(entry.key, 'input.0');
  assert.equal(entry.outlier, 4);
  assert.deepEqual(entry.ranks.map((r) => r.rank), [0, 1, 4, 5]);
  assert.ok(entry.ranks[2].departure > 10 * entry.ranks[1].departure);
});

test('two ranks: each departs from their midpoint alike, neither is marked', () => {
  const [entry] = rankBreakdown([row('output.0', [shard(0, 2, -2, 0.5, 3), shard(1, 40, -2, 9, 60)])], 'target');
  assert.equal(entry.outlier, null);
  assert.ok(entry.ranks[0].departure > 0.9 && entry.ranks[1].departure > 0.9);
});

test('ranks departing within the rounding of bfloat16 of each other: none is marked', () => {
  const shards = [shard(0, 2, -2, 0.5, 3), shard(1, 1, -2, 0.5, 3), shard(2, 3.001, -2, 0.5, 3)];
  assert.equal(rankBreakdown([row('output.0', shards)], 'target')[0].outlier, null);
});

test('a Mean near zero is measured against the range, not against itself', () => {
  const shards = [shard(0, 2, -2, 0.001, 3), shard(1, 2, -2, 0.003, 3)];
  // each is 0.001 from the midpoint 0.002: half of it, but 0.025% of the range 4
  assert.deepEqual(rankDepartures(shards, merged(shards)).map((d) => Math.round(d * 1e6)), [250, 250]);
});

test('text statistics are skipped; an infinity among numbers departs infinitely', () => {
  assert.deepEqual(rankDepartures([shard(0, 'N/A', null, null, null), shard(1, 'N/A', null, null, null)], {}), [null, null]);
  const found = rankDepartures([shard(0, 'inf', 0, 0, 0), shard(1, 1, 0, 0, 0), shard(2, 1, 0, 0, 0)], { max: 'inf' });
  assert.deepEqual(found, [Infinity, 0, 0]);
});
