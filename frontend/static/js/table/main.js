// Entry point of the Table page (templates/table.html).
import { adoptUrlToken } from '../api.js';
import { TablePage } from './table_page.js';

adoptUrlToken(); // the token of the URL `graphboard serve` printed, kept for writes
const page = new TablePage(document);
globalThis.graphboardTable = page; // for the browser tests and the console
page.start();
