// Entry point of the viewer page (loaded as a module by templates/index.html).
import { App } from './app.js';

const app = new App(document);
// One handle for debugging in the console and for browser tests; nothing else is global.
globalThis.graphboard = app;
app.start().then(() => {
  document.body.dataset.ready = 'true';
});
