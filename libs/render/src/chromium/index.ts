export { ChromiumRenderer, type ChromiumRendererOptions, DEFAULT_RENDER_IDLE_MS, DEFAULT_RENDER_TIMEOUT_MS } from './renderer.js';
export { BrowserPool, type BrowserPoolOptions, CHROMIUM_ARGS, DEFAULT_CHROMIUM_PATH, DEFAULT_POOL_OPTIONS, type PageLease, PoolClosedError, type PoolStats } from './pool.js';
export { findPidByArgument, processTree, processTreeCpuMs, processTreeMemoryBytes } from './proc.js';
