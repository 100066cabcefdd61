// The Build page: pick dump folders on the server (or upload archives), start a background
// build, follow its progress, then open the result in the viewer. Three states, as in the
// reference tool: the form, the progress (with the outcome), and back.

import { ApiError, TOKEN_KEY, createApi, storedToken } from '../api.js';
import { el, setChildren } from '../dom.js';
import { Page } from '../page.js';
import { save } from '../storage.js';
import {
  dumpOptions,
  followJob,
  jobRequest,
  monitorRunOptions,
  monitorVerdictRows,
  progressText,
  uploadForm,
  verdictRows,
} from './jobs.js';

const TABS = [
  ['tab-folders', 'panel-folders'],
  ['tab-upload', 'panel-upload'],
  ['tab-monitor', 'panel-monitor'],
];

export class BuildPage extends Page {
  constructor(doc = document, { api = createApi() } = {}) {
    super(doc);
    this.api = api;
    this.dumps = null; // the last /api/dumps answer
    this.monitorRuns = null; // the last /api/monitor/runs answer
    this.jobs = [];
    this.following = null; // AbortController of the job being followed
    this.lastStart = null; // re-sends the last request (Rebuild)
  }

  async start() {
    this.applyLook();
    this.listenToLook((what) => {
      if (what !== 'lang') return;
      this.renderDumps();
      this.renderMonitorRuns();
      this.renderJobs();
    });
    this.$('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      save(TOKEN_KEY, this.$('token-input').value.trim() || null);
      this.refresh();
    });
    this.$('token-forget').addEventListener('click', () => {
      save(TOKEN_KEY, null);
      this.$('token-input').value = '';
      this.refresh();
    });
    for (const [tab, panel] of TABS) {
      this.$(tab).addEventListener('click', () => this.showTab(tab, panel));
    }
    this.$('panel-folders').addEventListener('submit', (event) => {
      event.preventDefault();
      this.startFromFolders();
    });
    this.$('panel-upload').addEventListener('submit', (event) => {
      event.preventDefault();
      this.startFromUpload();
    });
    this.$('panel-monitor').addEventListener('submit', (event) => {
      event.preventDefault();
      this.startMonitor();
    });
    this.$('folder-refresh').addEventListener('click', () => this.refresh());
    this.$('back').addEventListener('click', () => this.showForm());
    this.$('rebuild').addEventListener('click', () => this.lastStart?.());
    this.$('token-input').value = storedToken() ?? '';
    await this.refresh();
  }

  showTab(tabId, panelId) {
    for (const [tab, panel] of TABS) {
      this.$(tab).setAttribute('aria-selected', String(tab === tabId));
      this.$(panel).hidden = panel !== panelId;
    }
  }

  setTokenStatus(key, isError = false) {
    const status = this.$('token-status');
    status.textContent = key ? this.t(key) : '';
    status.classList.toggle('error-text', isError);
  }

  /** Reload what needs the token: the dump folders and the recent jobs. */
  async refresh() {
    const state = (value) => {
      this.doc.body.dataset.token = value; // none | checking | ok | refused | error
    };
    if (!storedToken()) {
      state('none');
      this.setTokenStatus('build.tokenNeeded', true);
      this.dumps = null;
      this.monitorRuns = null;
      this.jobs = [];
      this.renderDumps();
      this.renderMonitorRuns();
      this.renderJobs();
      return;
    }
    state('checking');
    let outcome = 'ok';
    try {
      const [dumps, jobs, monitorRuns] = await Promise.all([
        this.api.listDumps(),
        this.api.listJobs({ limit: 20 }),
        this.api.listMonitorRuns(),
      ]);
      this.dumps = dumps;
      this.monitorRuns = monitorRuns;
      this.jobs = jobs.jobs;
      this.setTokenStatus('build.tokenAccepted');
      this.showFormError(null);
    } catch (error) {
      this.dumps = null;
      this.monitorRuns = null;
      this.jobs = [];
      outcome = error instanceof ApiError && error.status === 401 ? 'refused' : 'error';
      if (outcome === 'refused') this.setTokenStatus('build.tokenRefused', true);
      else this.setTokenStatus(null);
      this.showFormError(error);
    }
    this.renderDumps();
    this.renderMonitorRuns();
    this.renderJobs();
    state(outcome);
  }

  renderDumps() {
    const folders = this.dumps?.folders ?? [];
    const options = dumpOptions(folders, (key, params) => this.t(key, params));
    const choose = (select, withNone, items) => {
      const before = select.value;
      setChildren(
        select,
        withNone ? el('option', { value: '' }, this.t('build.none')) : null,
        items.map((item) => el('option', { value: item.value, disabled: item.disabled, title: item.title }, item.label)),
      );
      if ([...select.options].some((option) => option.value === before && !option.disabled)) select.value = before;
    };
    choose(this.$('folder-target'), false, options);
    choose(this.$('folder-golden'), true, options);
    choose(this.$('folder-reference'), true, options); // -nr
    const mappings = (this.dumps?.layer_mappings ?? []).map((path) => ({ value: path, label: path, disabled: false, title: '' }));
    choose(this.$('folder-mapping'), true, mappings);
    const usable = options.filter((option) => !option.disabled).length;
    let note = '';
    if (this.dumps && usable === 0) note = this.t('build.noFolders', { folder: this.doc.body.dataset.buildsFolder ?? '' });
    if (this.dumps?.truncated) note = this.t('build.truncated');
    this.$('folders-note').textContent = note;
    this.$('folder-start').disabled = usable === 0;
  }

  renderMonitorRuns() {
    const options = monitorRunOptions(this.monitorRuns?.runs ?? []);
    for (const select of [this.$('monitor-target'), this.$('monitor-golden')]) {
      const before = select.value;
      setChildren(select, options.map((item) => el('option', { value: item.value }, item.label)));
      if (options.some((item) => item.value === before)) select.value = before;
    }
    if (options.length > 1 && this.$('monitor-golden').value === this.$('monitor-target').value) {
      this.$('monitor-golden').value = options[1].value; // two runs, not one against itself
    }
    const none = this.monitorRuns && options.length === 0;
    this.$('monitor-note').textContent = none ? this.t('build.noMonitorRuns') : this.monitorRuns?.truncated ? this.t('build.truncated') : '';
    this.$('monitor-start').disabled = options.length === 0;
  }

  renderJobs() {
    const host = this.$('job-list');
    if (!this.jobs.length) {
      setChildren(host, el('p', { className: 'muted small' }, this.t('build.noJobs')));
      return;
    }
    const head = el(
      'tr',
      {},
      ['build.when', 'build.jobStatus', 'build.colTarget', 'build.colGolden', 'build.result'].map((key) => el('th', {}, this.t(key))),
    );
    const rows = this.jobs.map((job) =>
      el(
        'tr',
        { dataset: { job: job.id, status: job.status } },
        el('td', {}, new Date(job.created_at).toLocaleString(this.lang === 'zh' ? 'zh-CN' : 'en')),
        el('td', { className: `job-status job-${job.status}` }, this.t(`build.status.${job.status}`)),
        el('td', { className: 'job-path' }, job.target),
        el('td', { className: 'job-path' }, job.golden ?? '–'),
        el(
          'td',
          {},
          job.viewer_url
            ? el('a', { href: job.viewer_url }, this.t('build.open'))
            : el('span', { className: job.error ? 'error-text' : 'muted', title: job.error ?? '' }, job.error ? this.t('build.failedShort') : '…'),
        ),
      ),
    );
    setChildren(host, el('table', { className: 'job-table' }, el('thead', {}, head), el('tbody', {}, rows)));
  }

  showFormError(error) {
    const text = error ? (error instanceof ApiError ? error.message : String(error.message ?? error)) : '';
    this.$('form-error').textContent = text;
  }

  flags(prefix) {
    return { fuzzyMatch: this.$(`${prefix}-fuzzy`).checked, overflowCheck: this.$(`${prefix}-overflow`).checked };
  }

  async startFromFolders() {
    const values = {
      target: this.$('folder-target').value,
      golden: this.$('folder-golden').value,
      layerMapping: this.$('folder-mapping').value,
      noiseReference: this.$('folder-reference').value,
      ...this.flags('folder'),
    };
    if (!values.golden && (values.fuzzyMatch || values.layerMapping || values.noiseReference)) {
      this.showFormError(new Error(this.t('build.needsGolden')));
      return;
    }
    const body = jobRequest(values);
    this.lastStart = () => this.submit(() => this.api.startJob(body));
    await this.lastStart();
  }

  async startFromUpload() {
    const file = (id) => this.$(id).files?.[0] ?? null;
    const values = {
      target: file('upload-target'),
      golden: file('upload-golden'),
      layerMapping: file('upload-mapping'),
      ...this.flags('upload'),
    };
    if (!values.target) {
      this.showFormError(new Error(this.t('build.needsTarget')));
      return;
    }
    if (!values.golden && (values.fuzzyMatch || values.layerMapping)) {
      this.showFormError(new Error(this.t('build.needsGolden')));
      return;
    }
    this.lastStart = () => this.submit(() => this.api.upload(uploadForm(values)), 'build.uploading');
    await this.lastStart();
  }

  async startMonitor() {
    const body = { target: this.$('monitor-target').value, golden: this.$('monitor-golden').value };
    this.lastStart = () => this.submit(() => this.api.startMonitorJob(body));
    await this.lastStart();
  }

  /** Send the request that creates the job, then follow it. */
  async submit(create, waitingKey = 'build.starting') {
    this.showFormError(null);
    this.showProgress();
    this.$('job-state').textContent = this.t(waitingKey);
    let created;
    try {
      created = await create();
    } catch (error) {
      this.showForm();
      this.showFormError(error);
      return;
    }
    await this.follow(created.job_id);
  }

  showProgress() {
    this.following?.abort();
    this.$('form-card').hidden = true;
    this.$('progress-card').hidden = false;
    this.$('job-progress').value = 0;
    this.$('open-result').hidden = true;
    this.$('rebuild').hidden = true;
    setChildren(this.$('job-result'));
    this.doc.body.dataset.job = '';
    this.doc.body.dataset.jobStatus = '';
  }

  showForm() {
    this.following?.abort();
    this.following = null;
    this.$('progress-card').hidden = true;
    this.$('form-card').hidden = false;
  }

  async follow(jobId) {
    const controller = new AbortController();
    this.following = controller;
    this.doc.body.dataset.job = jobId;
    const render = (job) => {
      this.$('job-progress').value = job.progress;
      this.$('job-state').textContent = progressText(job, (key, params) => this.t(key, params));
    };
    let job;
    try {
      job = await followJob(this.api, jobId, { onUpdate: render, signal: controller.signal });
    } catch (error) {
      if (controller.signal.aborted) return;
      setChildren(this.$('job-result'), el('pre', { className: 'build-error' }, String(error.message ?? error)));
      return;
    }
    if (!job) return; // the user went back
    if (job.status === 'failed') {
      setChildren(
        this.$('job-result'),
        el('p', { className: 'error-text' }, this.t('build.failed')),
        el('pre', { className: 'build-error' }, job.error ?? ''),
      );
      this.$('rebuild').hidden = false;
    } else {
      await this.showVerdict(job);
    }
    this.doc.body.dataset.jobStatus = job.status;
    this.api.listJobs({ limit: 20 }).then(
      (answer) => {
        this.jobs = answer.jobs;
        this.renderJobs();
      },
      () => {},
    );
  }

  showMonitorVerdict(job, verdict) {
    const rows = monitorVerdictRows(verdict, (key, params) => this.t(key, params));
    const links = [
      ...(verdict.dump_config_url ? [el('a', { href: verdict.dump_config_url, download: 'config.json' }, this.t('build.dumpConfig'))] : []),
      ...verdict.graphs.map((graph) => el('a', { href: graph.url, title: graph.match }, `${this.t('build.stepGraphs')}: ${graph.graph}`)),
    ];
    setChildren(
      this.$('job-result'),
      el('p', {}, this.t('build.comparedIn', { graph: job.graph })),
      el('dl', { className: 'verdict' }, rows.flatMap(([label, value]) => [el('dt', {}, label), el('dd', {}, value)])),
      links.length ? el('p', { className: 'build-row' }, links) : null,
    );
  }

  async showVerdict(job) {
    const link = this.$('open-result');
    link.href = job.viewer_url;
    link.hidden = false;
    try {
      const verdict = await this.api.verdict(job.id);
      link.href = verdict.url; // opens the first error (a monitor job: the /monitor page)
      if (job.kind === 'monitor') {
        this.showMonitorVerdict(job, verdict);
        return;
      }
      const rows = verdictRows(verdict, (key, params) => this.t(key, params));
      setChildren(
        this.$('job-result'),
        el('p', {}, this.t('build.doneIn', { graph: job.graph })),
        el('dl', { className: 'verdict' }, rows.flatMap(([label, value]) => [el('dt', {}, label), el('dd', {}, value)])),
      );
    } catch (error) {
      setChildren(this.$('job-result'), el('p', { className: 'error-text' }, String(error.message ?? error)));
    }
  }
}
