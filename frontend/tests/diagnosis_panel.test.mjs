import assert from 'node:assert/strict';
import { test } from 'node:test';

import { configUrl, evidenceRows, rankRows } from '../static/js/panels/diagnosis_panel.js';

// An answer as GET /api/graphs/{graph}/diagnosis gives it for a NaN born on rank 1 of 2.
const answer = {
  summary: 'inf/NaN born at step 0 rank 1 in Functional.gelu.0.forward (output)',
  ranks: [
    { rank: 0, state: 'receiver', node: 'Distributed.all_reduce.0.forward', kind: 'output', collective: 'Distributed.all_reduce.0.forward' },
    { rank: 1, state: 'born', node: 'Functional.gelu.0.forward', kind: 'output', collective: 'Distributed.all_reduce.0.forward', collective_inputs_bad: true },
  ],
  evidence: [
    { key: 'output.0', kinds: ['nan'], max: 'nan', min: 'nan', dtype: 'torch.float32', note: null },
    { key: 'input.0', kinds: [], max: 1.5, min: -2, dtype: 'torch.float32', note: 'finite' },
  ],
};

test('the ranks table shows each rank state, node with its class, and collective', () => {
  assert.deepEqual(rankRows(answer), [
    ['0', 'receiver', 'Distributed.all_reduce.0.forward (output)', 'Distributed.all_reduce.0.forward'],
    ['1', 'born', 'Functional.gelu.0.forward (output)', 'Distributed.all_reduce.0.forward (inputs already bad)'],
  ]);
  assert.deepEqual(rankRows({}), []);
});

test('the evidence table names finite parameters as such', () => {
  assert.deepEqual(evidenceRows(answer), [
    ['output.0', 'nan', 'nan', 'nan', 'torch.float32', '–'],
    ['input.0', 'finite', '1.5', '-2', 'torch.float32', 'finite'],
  ]);
});

test('the config download encodes each segment of a graph id', () => {
  assert.equal(configUrl('runs/a b'), '/api/graphs/runs/a%20b/diagnosis/config.json');
});
