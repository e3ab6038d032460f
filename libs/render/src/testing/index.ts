export { type FakeRender, FakeRenderer } from './fake-renderer.js';
export { plainFetch, type SpaSite, startSpaSite, toFetched } from './spa-site.js';
