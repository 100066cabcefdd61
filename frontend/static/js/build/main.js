// Entry point of the Build page (templates/build.html).
import { BuildPage } from './build_page.js';

const page = new BuildPage(document);
globalThis.graphboardBuild = page; // for the browser tests and the console
page.start().then(() => {
  document.body.dataset.ready = 'true';
});
