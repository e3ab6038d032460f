-- Queue entries (see src/entry.ts): "<depth> <hops> <flags> <url>", the depth possibly with its
-- seed's own limit ("<depth>/<max>"); a URL on the entry's host is stored as its path alone, its
-- scheme in the HTTPS_PATH flag bit.
local VERIFY = 16 -- UrlFlag.Verify
local HTTPS_PATH = 1024

-- The entry flagged Verify: its job asks PostgreSQL before fetching (the URL may be recorded).
local function entryWithVerify(entry)
  local depth, hops, flags, url = string.match(entry, '^([%d/]+) (%d+) (%d+) (.*)$')
  if not flags then return entry end
  return depth .. ' ' .. hops .. ' ' .. bit.bor(tonumber(flags), VERIFY) .. ' ' .. url
end

-- The entry's whole URL (a path made whole with its host and scheme), or nil if malformed.
local function entryUrl(host, entry)
  local flags, url = string.match(entry, '^[%d/]+ %d+ (%d+) (.*)$')
  if not flags then return nil end
  if string.sub(url, 1, 1) ~= '/' then return url end
  return (bit.band(tonumber(flags), HTTPS_PATH) ~= 0 and 'https://' or 'http://') .. host .. url
end
