// The file chooser and the step / rank / micro-step selectors. It only shows choices and
// reports what the user picks; the app decides what to load.

import { el, setChildren } from '../dom.js';
import { formatCount } from '../format.js';
import { TARGET } from '../sides.js';

export class FilePanel {
  constructor(root, { t, onChange }) {
    this.t = t;
    this.onChange = onChange;
    this.fileSelect = root.querySelector('#file-select');
    this.stepSelect = root.querySelector('#step-select');
    this.rankSelect = root.querySelector('#rank-select');
    this.microSelect = root.querySelector('#micro-select');
    this.summary = root.querySelector('#file-summary');
    this.files = [];
    this.current = null;
    this.fileSelect.addEventListener('change', () => this.onChange({ graph: this.fileSelect.value }));
    this.stepSelect.addEventListener('change', () => this.onChange({ step: Number(this.stepSelect.value) }));
    this.rankSelect.addEventListener('change', () => this.onChange({ rank: Number(this.rankSelect.value) }));
    this.microSelect.addEventListener('change', () => this.onChange({ microStep: Number(this.microSelect.value) }));
  }

  setFiles(files) {
    this.files = files;
    if (!files.length) {
      setChildren(this.fileSelect, el('option', { value: '' }, this.t('file.none')));
      return;
    }
    setChildren(
      this.fileSelect,
      files.map((file) => el('option', { value: file.id, disabled: Boolean(file.error) }, file.id)),
    );
  }

  /** Reflect the view: file entry (GraphFileOut) and {graph, step, rank, microStep}. */
  show(file, view) {
    this.current = file;
    this.fileSelect.value = view.graph ?? '';
    const config = file?.config;
    const steps = config?.steps ?? [];
    const ranks = config?.ranks ?? [];
    setChildren(this.stepSelect, steps.map((step) => el('option', { value: String(step) }, String(step))));
    setChildren(this.rankSelect, ranks.map((rank) => el('option', { value: String(rank) }, String(rank))));
    const micro = config?.micro_steps ?? 0;
    const microOptions = [el('option', { value: '-1' }, this.t('file.allMicro'))];
    for (let i = 0; i < micro && micro > 1; i++) microOptions.push(el('option', { value: String(i) }, String(i)));
    setChildren(this.microSelect, microOptions);
    this.stepSelect.value = String(view.step);
    this.rankSelect.value = String(view.rank);
    this.microSelect.value = String(view.microStep ?? -1);
    this.microSelect.disabled = micro <= 1;
    this.stepSelect.disabled = steps.length <= 1;
    this.rankSelect.disabled = ranks.length <= 1;
    this.summary.textContent = this.describe(file, view);
  }

  describe(file, view) {
    if (!file) return '';
    if (file.error) return this.t('file.unreadable', { reason: file.error });
    const graph = file.graphs.find((g) => g.side === TARGET && g.step === view.step && g.rank === view.rank);
    const params = {
      type: file.config.graph_type,
      mode: file.config.data_mode ?? '–',
      nodes: formatCount(graph?.node_count ?? 0),
      unmatched: formatCount(graph?.unmatched ?? 0),
    };
    return this.t(file.config.graph_type === 'compare' ? 'file.summaryCompare' : 'file.summary', params);
  }
}
