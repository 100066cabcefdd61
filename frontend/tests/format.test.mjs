import assert from 'node:assert/strict';
import { test } from 'node:test';

import { formatCount, formatNumber, paramKey, parseNumber, shortLabel, statNumber } from '../static/js/format.js';

test('parseNumber reads msprobe display strings', () => {
  assert.equal(parseNumber('1.5'), 1.5);
  assert.equal(parseNumber('0.001451%'), 0.001451);
  assert.equal(parseNumber('-2.2e-08'), -2.2e-8);
  assert.equal(parseNumber('inf'), Infinity);
  assert.equal(parseNumber('-Infinity'), -Infinity);
  assert.ok(Number.isNaN(parseNumber('NaN')));
  assert.equal(parseNumber('N/A'), null);
  assert.equal(parseNumber('True'), null);
  assert.equal(parseNumber(''), null);
  assert.equal(parseNumber(null), null);
  assert.equal(parseNumber(3), 3);
});

test('formatNumber is compact and keeps percent and special values', () => {
  assert.equal(formatNumber('1.7663722038269043'), '1.76637');
  assert.equal(formatNumber('2.2351741790771484e-08'), '2.235e-8');
  assert.equal(formatNumber('12345678'), '1.235e+7');
  assert.equal(formatNumber('0.001451%'), '0.001451%');
  assert.equal(formatNumber('0'), '0');
  assert.equal(formatNumber('inf'), '+Inf');
  assert.equal(formatNumber('nan'), 'NaN');
  assert.equal(formatNumber('N/A'), 'N/A');
  assert.equal(formatNumber('torch.float32'), 'torch.float32');
  assert.equal(formatNumber(null), '–');
});

test('formatCount groups thousands', () => {
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatCount(undefined), '0');
});

test('shortLabel keeps the tail of deep module names only', () => {
  assert.equal(shortLabel('Module.layer1.0.conv1.Conv2d.forward.0', 1), 'Module.layer1.0.conv1.Conv2d.forward.0');
  assert.equal(shortLabel('Module.a.b.c.layer1.conv1.Conv2d.forward.0', 3), 'conv1.Conv2d.forward.0');
  assert.equal(shortLabel('Module.a.b.layers.0.Block.forward.0', 2), 'layers.0.Block.forward.0');
  assert.equal(shortLabel('Functional.conv2d.0.forward', 4), 'Functional.conv2d.0.forward');
  assert.equal(shortLabel('Module.x.Linear.forward.0', 2), 'Module.x.Linear.forward.0');
});

test('paramKey drops the node name', () => {
  assert.equal(paramKey('Functional.gelu.0.forward.input.0', 'Functional.gelu.0.forward'), 'input.0');
  assert.equal(paramKey('other.input.0', 'Functional.gelu.0.forward'), 'other.input.0');
});

test('statNumber decodes the typed statistics of the node view, and nothing else', () => {
  assert.equal(statNumber(1.5), 1.5);
  assert.equal(statNumber(0), 0);
  assert.equal(statNumber('inf'), Infinity);
  assert.equal(statNumber('-inf'), -Infinity);
  assert.ok(Number.isNaN(statNumber('nan')));
  assert.equal(statNumber(null), null);
  assert.equal(statNumber(undefined), null);
  assert.equal(statNumber('1.5'), null); // display text is not a typed statistic
});
