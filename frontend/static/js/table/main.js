// Entry point of the Table page (templates/table.html).
import { TablePage } from './table_page.js';

const page = new TablePage(document);
globalThis.graphboardTable = page; // for the browser tests and the console
page.start();
