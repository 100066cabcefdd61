// Entry point of the Monitor trends page (templates/monitor.html).
import { MonitorPage } from './monitor_page.js';

const page = new MonitorPage(document);
globalThis.graphboardMonitor = page; // for the browser tests and the console
page.start();
