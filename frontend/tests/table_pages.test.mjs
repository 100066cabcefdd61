import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RowPages } from '../static/js/table/row_pages.js';

/** A server of `total` rows named by their position; it records each request and answers
 * when the test says so. */
function fakeServer(total) {
  const calls = [];
  const fetchPage = (start, limit, signal) =>
    new Promise((resolve, reject) => {
      const call = { start, limit, signal, answer: () => {
        const items = [];
        for (let index = start; index < Math.min(total, start + limit); index++) items.push({ node: `n${index}`, cells: [String(index)] });
        resolve({ columns: ['#'], items, total });
      }, fail: (error) => reject(error) };
      signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      calls.push(call);
    });
  return { calls, fetchPage };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('the rows in view are asked for a page at a time, each page once', async () => {
  const server = fakeServer(1000);
  const pages = new RowPages(server.fetchPage, { pageSize: 100 });
  pages.show(150, 230);
  pages.show(160, 240); // a scroll within the same pages asks for nothing more
  assert.deepEqual(server.calls.map((call) => call.start), [100, 200]);
  assert.equal(pages.row(150), null);
  server.calls[0].answer();
  await settle();
  assert.deepEqual(pages.row(150), { node: 'n150', cells: ['150'] });
  assert.equal(pages.row(230), null);
  assert.equal(pages.total, 1000);
});

test('pages scrolled past before they arrive are abandoned', async () => {
  const server = fakeServer(100_000);
  const pages = new RowPages(server.fetchPage, { pageSize: 100 });
  pages.show(0, 40);
  pages.show(50_000, 50_040);
  assert.equal(server.calls[0].signal.aborted, true);
  assert.equal(server.calls.at(-1).start, 50_000);
  server.calls.at(-1).answer();
  await settle();
  assert.equal(pages.row(50_000).node, 'n50000');
  assert.equal(pages.error, null, 'an abandoned page is no error');
});

test('at most `keep` pages are held, those out of view dropped first', async () => {
  const server = fakeServer(10_000);
  const pages = new RowPages(server.fetchPage, { pageSize: 10, keep: 3 });
  for (const start of [0, 10, 20, 30, 40]) {
    pages.show(start, start + 5);
    server.calls.at(-1).answer();
    await settle();
  }
  assert.equal(pages.held, 3);
  assert.equal(pages.row(0), null);
  assert.equal(pages.row(40).node, 'n40');
});

test('a new query forgets the old rows, and a late answer of the old one is dropped', async () => {
  const server = fakeServer(500);
  const changes = [];
  const pages = new RowPages(server.fetchPage, { pageSize: 100, onChange: () => changes.push(pages.total) });
  pages.show(0, 10);
  const old = server.calls[0];
  pages.reset();
  pages.show(0, 10);
  old.answer();
  await settle();
  assert.equal(pages.row(0), null);
  server.calls.at(-1).answer();
  await settle();
  assert.equal(pages.row(0).node, 'n0');
  assert.deepEqual(changes, [500]);
});

test('a failed page is reported once and asked for again on the next show', async () => {
  const server = fakeServer(500);
  const errors = [];
  const pages = new RowPages(server.fetchPage, { pageSize: 100, onError: (error) => errors.push(error.message) });
  pages.show(0, 10);
  server.calls[0].fail(new Error('503 table_too_slow'));
  await settle();
  assert.deepEqual(errors, ['503 table_too_slow']);
  pages.show(0, 10);
  assert.equal(server.calls.length, 2);
});

test('first() resolves with the first page of the query', async () => {
  const server = fakeServer(42);
  const pages = new RowPages(server.fetchPage, { pageSize: 100 });
  const first = pages.first();
  server.calls[0].answer();
  const answer = await first;
  assert.equal(answer.total, 42);
  assert.deepEqual(answer.columns, ['#']);
  assert.equal(pages.row(41).node, 'n41');
});
