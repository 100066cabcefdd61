// Entry point of the viewer page (loaded as a module by templates/index.html).
import { adoptUrlToken } from './api.js';
import { App } from './app.js';

adoptUrlToken(); // the token of the URL `graphboard serve` printed, kept for writes
const app = new App(document);
// One handle for debugging in the console and for browser tests; nothing else is global.
globalThis.graphboard = app;
app.start().then(() => {
  document.body.dataset.ready = 'true';
});
