// What a webhook request's header names and values may be, shared by the webhook's config, its authentication
// and its compatible signatures.

/** RFC 7230 `token`: what a header name may be. */
export const headerTokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** A header value undici will send: no control characters besides tab, nothing outside Latin-1. */
export const headerValuePattern = /^[\t\x20-\x7e\x80-\xff]*$/

/** Set by Outflow itself (signature, framing) or refused by the HTTP client, so never taken from settings. */
export const reservedHeaders: ReadonlySet<string> = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'te',
  'trailer',
])
