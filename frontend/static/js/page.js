// What the Build, Trends and Table pages share: the theme and language (saved, as the
// viewer saves them, so every page opens the way the last one was left), their two header
// toggles, translation and element lookup. Each page extends Page and redraws what depends
// on the look in applyLook (after super.applyLook()) or in the listenToLook callback.

import { applyTranslations, pickLanguage, translate } from './i18n.js';
import { STORAGE, save, saved } from './storage.js';

export class Page {
  constructor(doc = document) {
    this.doc = doc;
    const prefersDark = globalThis.matchMedia?.('(prefers-color-scheme: dark)').matches;
    this.theme = saved(STORAGE.theme) ?? (prefersDark ? 'dark' : 'light');
    this.lang = pickLanguage(saved(STORAGE.lang), navigator.languages ?? []);
  }

  t(key, params) {
    return translate(this.lang, key, params);
  }

  $(id) {
    return this.doc.getElementById(id);
  }

  applyLook() {
    this.doc.documentElement.dataset.theme = this.theme;
    this.doc.documentElement.lang = this.lang === 'zh' ? 'zh-CN' : 'en';
    this.$('lang-toggle').textContent = this.lang === 'zh' ? 'EN' : '中';
    applyTranslations(this.doc, this.lang);
  }

  /** Wire the header's theme and language toggles; ``onChange(what)`` ('theme' or 'lang')
   * runs after the look is applied, for what a page draws itself. */
  listenToLook(onChange = () => {}) {
    this.$('theme-toggle').addEventListener('click', () => {
      this.theme = this.theme === 'dark' ? 'light' : 'dark';
      save(STORAGE.theme, this.theme);
      this.applyLook();
      onChange('theme');
    });
    this.$('lang-toggle').addEventListener('click', () => {
      this.lang = this.lang === 'zh' ? 'en' : 'zh';
      save(STORAGE.lang, this.lang);
      this.applyLook();
      onChange('lang');
    });
  }
}
