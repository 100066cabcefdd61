// The rows of the Table page, fetched a page at a time around what is on screen: a sparse
// cache of pages (at most `keep` of them; those out of view longest are dropped first), each
// page asked for once, a page scrolled past before it arrived abandoned (its request
// aborted, so a fling through 100,000 rows leaves no queue of stale requests behind), and a
// late answer to a previous query (other filters or sort) thrown away.

function isAbort(error) {
  return error?.name === 'AbortError';
}

export class RowPages {
  /**
   * @param {(start: number, limit: number, signal: AbortSignal) => Promise<{columns: string[], items: object[], total: number}>} fetchPage
   * @param {{pageSize?: number, keep?: number, onChange?: () => void, onError?: (error: Error) => void}} options
   */
  constructor(fetchPage, { pageSize = 200, keep = 50, onChange = null, onError = null } = {}) {
    this.fetchPage = fetchPage;
    this.pageSize = pageSize;
    this.keep = keep;
    this.onChange = onChange;
    this.onError = onError;
    this.pages = new Map(); // page -> items, least recently shown first
    this.loading = new Map(); // page -> {controller, promise}
    this.wanted = new Set();
    this.total = null;
    this.columns = null;
    this.error = null;
  }

  /** Forget every row and abandon every request: the query changed. */
  reset() {
    for (const { controller } of this.loading.values()) controller.abort();
    this.loading.clear();
    this.pages.clear();
    this.wanted.clear();
    this.total = null;
    this.columns = null;
    this.error = null;
  }

  get held() {
    return this.pages.size;
  }

  /** The row at `index`, or null while its page is not here. */
  row(index) {
    return this.pages.get(Math.floor(index / this.pageSize))?.[index % this.pageSize] ?? null;
  }

  /** The first page of the query (its columns and total come with it). */
  first() {
    this.wanted = new Set([0]);
    return this.load(0);
  }

  /** Rows `first`..`last` are on screen: ask for their pages, abandon the others in flight. */
  show(first, last) {
    const wanted = new Set();
    for (let page = Math.floor(first / this.pageSize); page <= Math.floor(last / this.pageSize); page++) wanted.add(page);
    this.wanted = wanted;
    for (const [page, { controller }] of this.loading) {
      if (!wanted.has(page)) {
        controller.abort();
        this.loading.delete(page);
      }
    }
    for (const page of wanted) {
      const items = this.pages.get(page);
      if (items) {
        this.pages.delete(page); // most recently shown goes last
        this.pages.set(page, items);
      } else {
        this.load(page).catch(() => {}); // reported through onError
      }
    }
  }

  load(page) {
    const running = this.loading.get(page);
    if (running) return running.promise;
    const controller = new AbortController();
    const promise = this.fetchPage(page * this.pageSize, this.pageSize, controller.signal).then(
      (answer) => {
        if (controller.signal.aborted) throw Object.assign(new Error('abandoned'), { name: 'AbortError' });
        this.loading.delete(page);
        this.total = answer.total;
        this.columns = answer.columns;
        this.error = null;
        this.pages.set(page, answer.items);
        this.evict();
        this.onChange?.();
        return answer;
      },
      (error) => {
        if (this.loading.get(page)?.controller === controller) this.loading.delete(page);
        if (!isAbort(error) && !controller.signal.aborted) {
          this.error = error;
          this.onError?.(error);
        }
        throw error;
      },
    );
    this.loading.set(page, { controller, promise });
    return promise;
  }

  evict() {
    for (const page of this.pages.keys()) {
      if (this.pages.size <= this.keep) break;
      if (!this.wanted.has(page)) this.pages.delete(page);
    }
  }
}
