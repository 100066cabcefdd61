// Entry point of the Trends page (templates/trends.html).
import { TrendsPage } from './trends_page.js';

const page = new TrendsPage(document);
globalThis.graphboardTrends = page; // for the browser tests and the console
page.start();
