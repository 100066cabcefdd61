import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MESSAGES, pickLanguage, translate } from '../static/js/i18n.js';

test('placeholders are filled', () => {
  assert.equal(translate('en', 'match.done', { count: 3 }), 'Matched 3 pair(s)');
  assert.equal(translate('zh', 'match.done', { count: 3 }), '已匹配 3 对');
});

test('a key missing in Chinese falls back to English, then to the key', () => {
  const messages = { en: { only: 'English only {x}' }, zh: {} };
  assert.equal(translate('zh', 'only', { x: 1 }, messages), 'English only 1');
  assert.equal(translate('zh', 'nowhere', {}, messages), 'nowhere');
  assert.equal(translate('fr', 'only', {}, messages), 'English only {x}');
});

test('every English label has a Chinese translation', () => {
  const missing = Object.keys(MESSAGES.en).filter((key) => !(key in MESSAGES.zh));
  assert.deepEqual(missing, []);
  const placeholders = (text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const key of Object.keys(MESSAGES.en)) {
    assert.deepEqual(placeholders(MESSAGES.zh[key]), placeholders(MESSAGES.en[key]), key);
  }
});

test('the starting language: saved, then browser, then English', () => {
  assert.equal(pickLanguage('zh', ['en-US']), 'zh');
  assert.equal(pickLanguage(null, ['zh-CN', 'en']), 'zh');
  assert.equal(pickLanguage('xx', ['de-DE']), 'en');
});
