// Precision and overflow filters: tick levels, get the matching nodes (server-side /filter,
// paged) in execution order, step through them; each pick reveals the node in its pane.

import { formatCount } from '../format.js';
import { TARGET } from '../sides.js';
import { ResultList } from '../widgets/result_list.js';

export class FilterPanel {
  constructor(root, { api, t, context, levelColors, overflowColors, onPick }) {
    this.api = api;
    this.t = t;
    this.context = context; // () => {graph, step, rank, file}
    this.levelColors = levelColors; // () => {pass, warning, error, unmatched}
    this.overflowColors = overflowColors; // () => {medium, high, critical}
    this.root = root;
    this.boxes = [...root.querySelectorAll('input[type=checkbox][data-kind]')];
    this.sideSelect = root.querySelector('#filter-side');
    this.leaves = root.querySelector('#filter-leaves');
    this.overflowSet = root.querySelector('#overflow-filters');
    this.precisionSet = root.querySelector('#precision-filters');
    this.results = new ResultList(root.querySelector('#filter-results'), {
      t,
      onPick: (item) => onPick(this.side, item.name),
      colorOf: (item) => (item.overflow && this.onlyOverflow() ? this.overflowColors()[item.overflow] : item.color),
    });
    for (const box of this.boxes) box.addEventListener('change', () => this.run());
    this.sideSelect.addEventListener('change', () => this.run());
    this.leaves.addEventListener('change', () => this.run());
  }

  get side() {
    return this.sideSelect.value;
  }

  checked(kind) {
    return this.boxes.filter((box) => box.dataset.kind === kind && box.checked).map((box) => box.value);
  }

  onlyOverflow() {
    return this.checked('overflow').length > 0 && !this.checked('precision').length && !this.checked('unmatched').length;
  }

  /** New file or graph: clear the ticks, recolour the chips, show the static counts. */
  reset() {
    for (const box of this.boxes) box.checked = false;
    const { file, step, rank } = this.context();
    const compare = file?.config?.graph_type === 'compare';
    const overflow = Boolean(file?.config?.overflow_check);
    this.precisionSet.disabled = !compare;
    this.overflowSet.disabled = !overflow;
    this.overflowSet.title = overflow ? '' : this.t('filter.noOverflow');
    this.sideSelect.disabled = !compare;
    if (!compare) this.sideSelect.value = TARGET;
    this.recolor();
    const stats = file?.graphs?.find((g) => g.side === this.side && g.step === step && g.rank === rank);
    // The file listing counts by msprobe's rules; under another rule set the counts come
    // from a one-row filter of every level, which counts by it (they stayed blank until a
    // box was ticked).
    const ours = (this.context().rules ?? 'msprobe') === 'msprobe';
    this.setCounts({
      pass: ours ? stats?.pass_count : null,
      warning: ours ? stats?.warning_count : null,
      error: ours ? stats?.error_count : null,
      unmatched: stats?.unmatched,
    });
    this.countTicket = (this.countTicket ?? 0) + 1;
    if (!ours && compare) this.ruleCounts(this.countTicket);
    this.results.reset(null, 'filter.choose');
  }

  /** The level counts under the current rule set, unless the view changed meanwhile. */
  async ruleCounts(ticket) {
    const { graph, step, rank } = this.context();
    if (!graph) return;
    try {
      const page = await this.api.filter(graph, { side: this.side, step, rank }, { precision: ['pass', 'warning', 'error'], leavesOnly: this.leaves.checked, limit: 1 });
      if (ticket === this.countTicket && page?.counts) this.setCounts(page.counts);
    } catch {
      // the counts stay blank; the first ticked box asks again and reports its own error
    }
  }

  /** Colour the level chips as the tree draws them (file table, theme). */
  recolor() {
    const colors = this.levelColors();
    const overflow = this.overflowColors();
    for (const chip of this.root.querySelectorAll('.chip[data-level]')) chip.style.backgroundColor = colors[chip.dataset.level] ?? '';
    for (const chip of this.root.querySelectorAll('.chip[data-overflow]')) chip.style.backgroundColor = overflow[chip.dataset.overflow];
  }

  setCounts(counts) {
    for (const [name, value] of Object.entries(counts)) {
      const cell = this.root.querySelector(`[data-count="${name}"]`);
      if (cell && value !== undefined) cell.textContent = value === null ? '' : formatCount(value);
    }
  }

  /** Tick boxes from code (tests, shortcuts) and run. */
  async choose({ precision = [], overflow = [], unmatched = false, side = null }) {
    for (const box of this.boxes) {
      box.checked =
        (box.dataset.kind === 'precision' && precision.includes(box.value)) ||
        (box.dataset.kind === 'overflow' && overflow.includes(box.value)) ||
        (box.dataset.kind === 'unmatched' && unmatched);
    }
    if (side) this.sideSelect.value = side;
    await this.run();
  }

  async run() {
    const { graph, step, rank } = this.context();
    const precision = this.checked('precision');
    const overflow = this.checked('overflow');
    const unmatched = this.checked('unmatched').length > 0;
    this.countTicket = (this.countTicket ?? 0) + 1; // a later answer's counts win
    if (!graph || (!precision.length && !overflow.length && !unmatched)) {
      if ((this.context().rules ?? 'msprobe') !== 'msprobe') this.ruleCounts(this.countTicket);
      await this.results.reset(null, 'filter.choose');
      return;
    }
    const key = { side: this.side, step, rank };
    const leavesOnly = this.leaves.checked;
    const page = await this.results.reset((cursor) =>
      this.api.filter(graph, key, { precision, overflow, unmatched, leavesOnly, cursor, limit: 200 }),
    );
    if (page?.counts) this.setCounts(page.counts);
  }

  next(delta) {
    return this.results.step(delta);
  }
}
