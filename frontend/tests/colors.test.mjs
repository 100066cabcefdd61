import assert from 'node:assert/strict';
import { test } from 'node:test';

import { OVERFLOW_COLORS, legendEntries, levelColors, nodeFill, overflowColors, textOn, themedFill } from '../static/js/colors.js';

const GRAPHBOARD_TABLE = {
  '#FFFCF3': { value: [0, 0.3], description: 'pass', accuracy_level: 'pass' },
  '#FFDC7F': { value: [0.3, 0.6], description: 'warn', accuracy_level: 'warning' },
  '#FF704D': { value: [0.6, 1], description: 'err', accuracy_level: 'error' },
  '#C7C7C7': { value: [], description: 'none', accuracy_level: 'unmatched node' },
};
// msprobe's own table: no accuracy_level, ranges in any key order.
const MSPROBE_TABLE = {
  '#C7C7C7': { value: [], description: 'no matching node' },
  '#FF0000': { value: [0.6, 1], description: 'high' },
  '#FFFFFF': { value: [0, 0.3], description: 'low' },
  '#FFFF00': { value: [0.3, 0.6], description: 'mid' },
};

test('legend entries follow the file table', () => {
  assert.deepEqual(legendEntries(GRAPHBOARD_TABLE).map((e) => [e.level, e.color]), [
    ['pass', '#FFFCF3'], ['warning', '#FFDC7F'], ['error', '#FF704D'], ['unmatched', '#C7C7C7'],
  ]);
  assert.deepEqual(levelColors(MSPROBE_TABLE), { pass: '#FFFFFF', warning: '#FFFF00', error: '#FF0000', unmatched: '#C7C7C7' });
});

test('a file without a table gets the default colours', () => {
  assert.equal(levelColors(null).error, '#FF704D');
});

test('fills: server colour for precision, level colour for overflow', () => {
  const node = { color: '#FF704D', overflow: 'critical' };
  assert.equal(nodeFill(node, 'precision'), '#FF704D');
  assert.equal(nodeFill(node, 'overflow'), OVERFLOW_COLORS.critical);
  assert.equal(nodeFill({ color: null, overflow: null }, 'overflow'), null);
});

test('text stays readable on dark fills', () => {
  assert.equal(textOn(OVERFLOW_COLORS.critical), '#ffffff');
  assert.equal(textOn('#FFFCF3'), '#1a1a1a');
  assert.equal(textOn('not a colour'), null);
});

const luminance = (hex) => {
  const value = parseInt(hex.slice(1), 16);
  return (0.299 * ((value >> 16) & 255) + 0.587 * ((value >> 8) & 255) + 0.114 * (value & 255)) / 255;
};

test('the dark theme dims near-white fills and keeps the others', () => {
  assert.equal(themedFill('#FFFCF3', 'light'), '#FFFCF3');
  const pass = themedFill('#FFFCF3', 'dark');
  assert.ok(luminance(pass) < 0.5, pass);
  assert.ok(luminance(pass) > luminance('#1e2126') + 0.15, pass); // still a fill on the panel
  assert.equal(textOn(pass), '#ffffff');
  for (const kept of ['#FFDC7F', '#FF704D', '#C7C7C7', '#1668DC']) assert.equal(themedFill(kept, 'dark'), kept);
  assert.equal(themedFill(null, 'dark'), null);
  assert.equal(levelColors(GRAPHBOARD_TABLE, 'dark').pass, pass);
  assert.equal(levelColors(GRAPHBOARD_TABLE, 'dark').error, '#FF704D');
  assert.ok(luminance(overflowColors('dark').medium) < 0.5);
  assert.equal(overflowColors('light').medium, OVERFLOW_COLORS.medium);
});
