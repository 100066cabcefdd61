// Entry point of the Build page (templates/build.html).
import { adoptUrlToken } from '../api.js';
import { BuildPage } from './build_page.js';

adoptUrlToken(); // the token of the URL `graphboard serve` printed, kept for writes
const page = new BuildPage(document);
globalThis.graphboardBuild = page; // for the browser tests and the console
page.start().then(() => {
  document.body.dataset.ready = 'true';
});
