// Search as you type: the server searches names (/search, substring or regex, any case);
// requests are debounced and older answers dropped, results paged and stepped through.

import { debounce } from '../debounce.js';
import { TARGET } from '../sides.js';
import { ResultList } from '../widgets/result_list.js';

export const SEARCH_DELAY_MS = 200;

export class SearchPanel {
  constructor(root, { api, t, context, onPick }) {
    this.api = api;
    this.t = t;
    this.context = context;
    this.input = root.querySelector('#search-input');
    this.sideSelect = root.querySelector('#search-side');
    this.regex = root.querySelector('#search-regex');
    this.results = new ResultList(root.querySelector('#search-results'), {
      t,
      onPick: (item) => onPick(this.sideSelect.value, item.name),
      colorOf: (item) => item.color,
    });
    const later = debounce(() => this.run(), SEARCH_DELAY_MS);
    this.input.addEventListener('input', later);
    this.regex.addEventListener('change', () => this.run());
    this.sideSelect.addEventListener('change', () => this.run());
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        later.cancel();
        // Enter steps to the next hit (Shift+Enter: previous) once results are in.
        if (this.results.items.length && this.lastQuery === this.input.value.trim()) this.results.step(event.shiftKey ? -1 : 1);
        else this.run().then(() => this.results.step(1));
        event.preventDefault();
      }
    });
    this.results.reset(null, 'search.hint');
  }

  reset() {
    const compare = this.context().file?.config?.graph_type === 'compare';
    this.sideSelect.disabled = !compare;
    if (!compare) this.sideSelect.value = TARGET;
    return this.run();
  }

  async run() {
    const { graph, step, rank } = this.context();
    const q = this.input.value.trim();
    this.lastQuery = q;
    if (!graph || !q) {
      await this.results.reset(null, 'search.hint');
      return;
    }
    const key = { side: this.sideSelect.value, step, rank };
    const regex = this.regex.checked;
    await this.results.reset((cursor) => this.api.search(graph, key, { q, regex, cursor, limit: 200 }));
  }

  focus() {
    this.input.focus();
    this.input.select();
  }

  next(delta) {
    return this.results.step(delta);
  }
}
