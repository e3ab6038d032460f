export { deadPort, type ProxyServer, startMicrosocks, startSquid, stopProxies } from './proxy-servers.js';
