// The keyboard shortcut overlay ("?").

import { el, setChildren } from '../dom.js';

export const SHORTCUTS = [
  ['↑ ↓', 'help.navigate'],
  ['→', 'help.expand'],
  ['←', 'help.collapse'],
  ['Enter / Space / double-click', 'help.toggle'],
  ['PgUp PgDn Home End', 'help.pageJump'],
  ['[ ]', 'help.otherPane'],
  ['/', 'help.search'],
  ['f', 'help.firstError'],
  ['w', 'help.worst'],
  ['n / Shift+N', 'help.nextResult'],
  ['c', 'help.counterpart'],
  ['s', 'help.sync'],
  ['o', 'help.mode'],
  ['t', 'help.theme'],
  ['l', 'help.language'],
  ['Shift+F10 / right-click', 'help.menu'],
  ['?', 'help.help'],
  ['Esc', 'help.close'],
];

export class HelpOverlay {
  constructor(host, { t }) {
    this.host = host;
    this.t = t;
    this.returnFocus = null;
    host.addEventListener('click', (event) => {
      if (event.target === host) this.close();
    });
    host.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        this.close();
        event.stopPropagation();
      }
    });
  }

  get open() {
    return !this.host.hidden;
  }

  render() {
    const close = el('button', { type: 'button', className: 'icon-button close', onclick: () => this.close(), 'aria-label': this.t('common.close') }, '×');
    const rows = SHORTCUTS.map(([keys, label]) => el('tr', {}, el('th', { scope: 'row' }, el('kbd', {}, keys)), el('td', {}, this.t(label))));
    setChildren(
      this.host,
      el('div', { className: 'overlay-card' }, close, el('h2', { id: 'help-title' }, this.t('help.title')), el('table', { className: 'shortcuts' }, el('tbody', {}, rows))),
    );
    this.closeButton = close;
  }

  show() {
    this.returnFocus = document.activeElement;
    this.render();
    this.host.hidden = false;
    this.closeButton.focus();
  }

  close() {
    if (this.host.hidden) return;
    this.host.hidden = true;
    this.returnFocus?.focus?.();
  }

  toggle() {
    if (this.open) this.close();
    else this.show();
  }
}
