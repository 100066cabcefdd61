// The node menu (right-click, Shift+F10, or the details' "Peers…" button): expand, show the
// counterpart, drill to worst, pick for matching, copy, and the node's peers on other ranks
// with their colours (fetched from /peers when the menu opens).

import { el, setChildren } from '../dom.js';

export class ContextMenu {
  constructor(host, { t }) {
    this.host = host;
    this.t = t;
    this.returnFocus = null;
    document.addEventListener('pointerdown', (event) => {
      if (!this.host.hidden && !this.host.contains(event.target)) this.close();
    });
    host.addEventListener('keydown', (event) => this.onKey(event));
  }

  get open() {
    return !this.host.hidden;
  }

  /** items: [{label, action, disabled, color, className}] or {separator: true}; `peers`: a
   * promise of more items (appended when it resolves). */
  show(x, y, items, peers = null) {
    this.returnFocus = document.activeElement;
    this.generation = (this.generation ?? 0) + 1;
    const generation = this.generation;
    this.items = items;
    this.draw(items, peers ? [{ label: this.t('common.loading'), disabled: true }] : []);
    this.host.hidden = false;
    const box = this.host.getBoundingClientRect();
    this.host.style.left = `${Math.max(0, Math.min(x, window.innerWidth - box.width - 4))}px`;
    this.host.style.top = `${Math.max(0, Math.min(y, window.innerHeight - box.height - 4))}px`;
    this.focusItem(0);
    if (peers) {
      peers
        .then((more) => {
          if (generation === this.generation && this.open) this.draw(items, more);
        })
        .catch((error) => {
          if (generation === this.generation && this.open) this.draw(items, [{ label: error.message, disabled: true }]);
        });
    }
  }

  draw(items, extra) {
    const buttons = [...items, ...extra].map((item) => {
      if (item.separator) return el('div', { className: 'menu-separator', role: 'separator' });
      if (item.heading) return el('div', { className: 'menu-heading', role: 'presentation' }, item.heading);
      const chip = item.color !== undefined ? el('span', { className: 'chip' }) : null;
      if (chip) chip.style.backgroundColor = item.color ?? 'transparent';
      return el(
        'button',
        {
          type: 'button',
          role: 'menuitem',
          className: `menu-item ${item.className ?? ''}`,
          disabled: Boolean(item.disabled),
          title: item.title ?? '',
          onclick: () => {
            this.close();
            item.action?.();
          },
        },
        chip,
        item.label,
      );
    });
    const focused = this.host.contains(document.activeElement);
    setChildren(this.host, buttons);
    if (focused) this.focusItem(0);
  }

  menuItems() {
    return [...this.host.querySelectorAll('.menu-item:not([disabled])')];
  }

  focusItem(index) {
    const items = this.menuItems();
    if (items.length) items[(index + items.length) % items.length].focus();
  }

  onKey(event) {
    const items = this.menuItems();
    const at = items.indexOf(document.activeElement);
    if (event.key === 'ArrowDown') this.focusItem(at + 1);
    else if (event.key === 'ArrowUp') this.focusItem(at - 1);
    else if (event.key === 'Escape' || event.key === 'Tab') this.close();
    else return;
    event.preventDefault();
    event.stopPropagation();
  }

  close() {
    if (this.host.hidden) return;
    this.host.hidden = true;
    this.generation += 1;
    this.returnFocus?.focus?.({ preventScroll: true });
  }
}
