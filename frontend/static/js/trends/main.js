// Entry point of the Trends page (templates/trends.html).
import { adoptUrlToken } from '../api.js';
import { TrendsPage } from './trends_page.js';

adoptUrlToken(); // the token of the URL `graphboard serve` printed, kept for writes
const page = new TrendsPage(document);
globalThis.graphboardTrends = page; // for the browser tests and the console
page.start();
