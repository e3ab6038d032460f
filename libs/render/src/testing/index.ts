export { plainFetch, type SpaSite, startSpaSite, toFetched } from './spa-site.js';
