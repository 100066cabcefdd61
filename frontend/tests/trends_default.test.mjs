import assert from 'node:assert/strict';
import { test } from 'node:test';

import { defaultStatistic } from '../static/js/trends/trends_page.js';

test('a compare opens on the excess where it holds dtype-aware verdicts, else on msprobe\'s error', () => {
  const compare = { graph_type: 'compare' };
  assert.equal(defaultStatistic({ config: compare, default_rules: 'dtype-aware' }), 'excess');
  assert.equal(defaultStatistic({ config: compare, default_rules: 'msprobe' }), 'error');
  assert.equal(defaultStatistic({ config: compare }), 'error'); // a server before default_rules
  assert.equal(defaultStatistic({ config: { graph_type: 'build' }, default_rules: 'msprobe' }), 'norm');
});
